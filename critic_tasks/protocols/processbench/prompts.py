"""The critic's prompt for ProcessBench (our wording; the paper's fields and its ``\\boxed{}`` answer).

The paper's critic-model setting (Zheng et al. 2024; the released ``critique_template.txt``): one user
turn holding the math problem and the solution, each step wrapped in ``<paragraph_i>`` ... ``</paragraph_i>`` tags
indexed from 0 and separated by a blank line; the critic reviews the steps one by one and returns the index of the
earliest wrong step, or -1 when it finds none, inside ``\\boxed{}``. The reply is read at its last ``\\boxed{}``.
"""

from __future__ import annotations

INSTRUCTION = """Below are a math problem and a proposed solution. The solution is divided into paragraphs; each \
paragraph is wrapped in tags carrying its index, counting from 0.

[Math Problem]

{problem}

[Solution]

{tagged_steps}

Check the solution one paragraph at a time, in order. If a paragraph contains an error, give the index of the \
first paragraph that is wrong. If every paragraph is correct, give -1.

Write your final answer (the index alone) inside \\boxed{{}}, for example \\boxed{{2}} or \\boxed{{-1}}."""


def tagged_steps(steps: list[str]) -> str:
    """The steps as the paper shows them: ``<paragraph_i>\\n{step}\\n</paragraph_i>``, blank lines between."""
    return "\n\n".join(f"<paragraph_{i}>\n{step}\n</paragraph_{i}>" for i, step in enumerate(steps)).strip()


def critic_prompt(doc: dict) -> str:
    return INSTRUCTION.format(problem=doc["problem"], tagged_steps=tagged_steps(doc["steps"]))
