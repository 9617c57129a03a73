"""The critic's prompt for ProcessBench: the authors' template (the default) or our wording of the same fields.

The paper's critic-model setting (Zheng et al. 2024): one user turn holding the math problem and the solution, each
step wrapped in ``<paragraph_i>`` ... ``</paragraph_i>`` tags indexed from 0 and separated by a blank line; the
critic reviews the steps one by one and returns the index of the earliest wrong step, or -1 when it finds none,
inside ``\\boxed{}``. The reply is read at its last ``\\boxed{}``.

* ``authors`` (``protocols.prompt_choice``): ``code/templates/critique_template.txt`` (read at run time:
  ``data.TEMPLATE``) rendered as ``run_eval.py``'s ``prepare_input_boxed`` renders it: the file's text stripped, the
  tagged steps joined and stripped, then ``str.format`` with ``problem`` and ``tagged_response`` (so the template's
  ``{{}}`` becomes ``{}``).
* ``ours``: ``INSTRUCTION`` below, the same fields and order in our words.
"""

from __future__ import annotations

from critic_tasks.protocols import prompt_choice
from critic_tasks.protocols.processbench import data

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


def authors_prompt(doc: dict) -> str:
    """``prepare_input_boxed``'s user message for ``doc``, from the authors' template."""
    tagged_response = "".join(f"<paragraph_{i}>\n{step}\n</paragraph_{i}>\n\n" for i, step in enumerate(doc["steps"]))
    # run_eval.py reads the file in text mode (universal newlines) and strips it
    template = data.template(doc).replace("\r\n", "\n").replace("\r", "\n").strip()
    return template.format(problem=doc["problem"], tagged_response=tagged_response.strip())


def our_prompt(doc: dict) -> str:
    return INSTRUCTION.format(problem=doc["problem"], tagged_steps=tagged_steps(doc["steps"]))


def critic_prompt(doc: dict) -> str:
    """The document's prompt, in the wording its ``prompt`` choice names."""
    return authors_prompt(doc) if prompt_choice.of(doc) == prompt_choice.AUTHORS else our_prompt(doc)
