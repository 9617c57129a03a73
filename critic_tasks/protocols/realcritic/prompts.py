"""The critic's prompt for RealCritic (our wording; the paper's critic-and-correct setting, Tang et al. 2025,
Section 3: the critic is shown a question and one solution, critiques the solution step by step, and ends with the
corrected final answer in ``\\boxed{}``, the answer its critique leads to, which is what gets graded).

Fields: the question and the solution (the released ``reasoning``; under self-critique the critic's own direct-CoT
reply, in round k of a multi-round run round k-1's reply: ``stages``). For the multiple-choice tasks the box holds the
option letter only. The direct-CoT documents (stage 1 of self-critique) ask the question alone, the paper's Direct CoT
baseline.
"""

from __future__ import annotations

from critic_tasks.core.errors import DataError
from critic_tasks.protocols.realcritic.stages import DIRECT

_INSTRUCTIONS = """You are reviewing a solution to the problem below. Check it step by step: say for each step \
whether it is right, and where it is wrong, say why and what it should be. Do not trust the solution's final answer; \
work out what the answer should be from your own checking.

After your critique, give the final answer to the problem as you now believe it to be: the solution's answer if you \
found it right, your corrected answer if not. {answer_rule}
"""
_MATH_RULE = "Write it once, at the end, as \\boxed{ANSWER}, with only the answer inside the box."
_CHOICE_RULE = ("Write it once, at the end, as \\boxed{X}, where X is the letter of the correct option and nothing "
                "else.")


_DIRECT = """Solve the problem below. Reason step by step, then give your final answer. {answer_rule}
"""


def critic_prompt(doc: dict) -> str:
    if doc.get("stage_error"):  # a chained run whose prior run did not cover this item (see stages)
        raise DataError(doc["stage_error"])
    rule = _CHOICE_RULE if doc.get("multiple_choice") else _MATH_RULE
    if doc.get("dimension") == DIRECT:
        return _DIRECT.format(answer_rule=rule) + f"\n## Problem\n{doc['question']}\n\n## Your solution\n"
    return (_INSTRUCTIONS.format(answer_rule=rule) + f"\n## Problem\n{doc['question']}\n\n"
            + f"## Solution\n{doc['solution']}\n\n## Your critique\n")
