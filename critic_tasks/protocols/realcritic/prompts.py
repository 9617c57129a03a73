"""The critic's prompts for RealCritic: the authors' by default, ours as an explicit variant (the task option
``prompt``: ``authors`` | ``ours``; recorded in every document and in the results).

``authors`` (the default; Tang et al. 2025, ``tangzhy/RealCritic``): a system message and a user message, as their
``utils.construct_message`` builds them, with their templates read at run time from their ``utils.py`` at a pinned
commit (``protocols.authors``: a checkout named by ``REALCRITIC_DATA_DIR``, a mirror, the cache or GitHub; checked
by sha256), never copied here. The templates are Python literals in that file: read with ``ast`` (the file is
never executed). Which templates each mode asks follows their scripts (README, ``sh/*/run_*.sh``):

* cross-critique and self-critique: ``critic_and_correct`` (system) and ``critic_and_correct`` (user, with the
  question and the solution: the released ``reasoning``, or under self-critique the critic's own direct-CoT reply,
  stripped as ``math_eval.py`` strips a reply before saving it as ``reasoning``);
* direct CoT: ``direct-cot`` (system) and ``default-cot`` (user, the question).

``ours`` (the bundled sample's default, where the authors' file may not be at hand): one user message in our
wording (the paper's critic-and-correct setting: critique the solution step by step, then the corrected final answer
in ``\\boxed{}``; for the multiple-choice tasks the option letter only), no system message.

Fields: the question and the solution (``stages`` replaces the solution under self-critique and in later rounds).
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

from critic_tasks.core.errors import DataError
from critic_tasks.protocols import prompt_choice
from critic_tasks.protocols.authors import AuthorsFile
from critic_tasks.protocols.realcritic import data

DIRECT, SELF = data.DIRECT_DIMENSION, data.SELF_DIMENSION

AUTHORS, OURS = prompt_choice.AUTHORS, prompt_choice.OURS
PROMPT_KEY = prompt_choice.KEY
SYSTEM_KEY = "system_message"  # the document field the harnesses send as the system turn ("" for none)
USER_KEY = "user_message"  # the authors' user message, rendered when the documents are made
# utils.py at the commit whose file the shared checkout holds (SYSTEM_PROMPT_TEMPLATES, USER_PROMPT_TEMPLATE)
UTILS = AuthorsFile(data.REPO, "149f6a31da19827746585626157af0a83f8cc2f1", "utils.py",
                    "08e2868a238e22b76c78cf7735e1fb527b8dbf39cc60698242adad257036c07b", data.DATA_DIR_ENV)
# (system template, user template) of each mode, as the authors' scripts name them
TEMPLATES = {"critique": ("critic_and_correct", "critic_and_correct"), DIRECT: ("direct-cot", "default-cot")}


def resolve(value, data_dir=None) -> str:
    """The prompt of a run: the option as given, else ``ours`` on the bundled sample and ``authors`` elsewhere
    (``protocols.prompt_choice``)."""
    return prompt_choice.resolve(value, sample=data.resolve_data_dir(data_dir) == data.SAMPLE_DIR)


def _literal(node: ast.AST, where: str):
    """A string literal, or one with ``.strip()`` called on it (how utils.py writes its long templates)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "strip"
            and not node.args and not node.keywords):
        return _literal(node.func.value, where).strip()
    raise DataError(f"{where}: a template is not a string literal (line {getattr(node, 'lineno', '?')})")


def templates_from_source(source: str, where: str = UTILS.path) -> dict[str, dict[str, str]]:
    """``SYSTEM_PROMPT_TEMPLATES`` and ``USER_PROMPT_TEMPLATE`` of the authors' utils.py, read without running it."""
    found: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("SYSTEM_PROMPT_TEMPLATES", "USER_PROMPT_TEMPLATE")
                and isinstance(node.value, ast.Dict)):
            found[node.targets[0].id] = {_literal(k, where): _literal(v, where)
                                         for k, v in zip(node.value.keys, node.value.values)}
    for name in ("SYSTEM_PROMPT_TEMPLATES", "USER_PROMPT_TEMPLATE"):
        if name not in found:
            raise DataError(f"{where}: no {name} dictionary (another version of the authors' file?)")
    return found


@lru_cache(maxsize=None)
def authors_templates(data_dir: str | None = None) -> dict[str, dict[str, str]]:
    return templates_from_source(UTILS.text(data_dir), UTILS.path)


def authors_messages(doc: dict, data_dir: str | os.PathLike | None = None) -> tuple[str, str]:
    """(system message, user message) of a document as the authors' ``construct_message`` renders them."""
    found = authors_templates(data.checkout_root(data_dir, UTILS.path))
    system_name, user_name = TEMPLATES[DIRECT if doc.get("dimension") == DIRECT else "critique"]
    system, user = found["SYSTEM_PROMPT_TEMPLATES"][system_name], found["USER_PROMPT_TEMPLATE"][user_name]
    if doc.get("dimension") == DIRECT:
        return system, user.format(question=doc["question"])
    # math_eval.py saves a stage-1 reply as ``reasoning`` stripped; the released reasoning is used as it is
    solution = doc["solution"].strip() if doc.get("dimension") == SELF or doc.get("round", 1) > 1 else doc["solution"]
    return system, user.format(question=doc["question"], reasoning=solution)


def apply(docs: list[dict], prompt=None, data_dir=None) -> list[dict]:
    """Each document's ``prompt`` (the option, resolved), ``system_message`` and, for the authors' prompt, its user
    message (``user_message``), rendered now: a missing or altered utils.py stops the run before any generation."""
    chosen = resolve(prompt, data_dir)
    for doc in docs:
        doc[PROMPT_KEY] = chosen
        if chosen == AUTHORS:
            doc[SYSTEM_KEY], doc[USER_KEY] = authors_messages(doc, data_dir)
        else:
            doc[SYSTEM_KEY], doc[USER_KEY] = "", ""
    return docs


# ----------------------------------------------------------------------------- ours

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
    """The user message (the system message is the document's ``system_message``)."""
    if doc.get("stage_error"):  # a chained run whose prior run did not cover this item (see stages)
        raise DataError(doc["stage_error"])
    if prompt_choice.of(doc) == AUTHORS:
        if not doc.get(USER_KEY):
            raise DataError(f"realcritic {doc.get('task')}[{doc.get('idx')}]: the authors' prompt was not rendered "
                            "into this document (made by an older critic-tasks?); load the task again")
        return doc[USER_KEY]
    rule = _CHOICE_RULE if doc.get("multiple_choice") else _MATH_RULE
    if doc.get("dimension") == DIRECT:
        return _DIRECT.format(answer_rule=rule) + f"\n## Problem\n{doc['question']}\n\n## Your solution\n"
    return (_INSTRUCTIONS.format(answer_rule=rule) + f"\n## Problem\n{doc['question']}\n\n"
            + f"## Solution\n{doc['solution']}\n\n## Your critique\n")
