"""The nine CriticBench domains as rows of one table (Lan et al. 2024, "CriticEval"), and the critic prompts filled
from it: one template per dimension.

Every dimension renders its prompt from the same template; a domain only changes the section headers, which
optional inputs it has, and what a good response looks like (the loaders read the same rows: which inputs an item
must have, which files a domain has, how a revision is checked). Headers keep the original toolkit's names so
prompts stay comparable with published numbers. Wording is ours; the structure, section headers and output markers
follow CriticBench / CriticEval (arXiv:2402.13764) so that replies parse the same way and scores stay comparable:
``Decision: x`` (feedback, 1-7), ``Decision: A/B/C`` (comparison), ``Score: x`` (meta-feedback, 1-7).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from critic_tasks.core.errors import DataError


@dataclass(frozen=True)
class Domain:
    name: str
    task_noun: str  # how the prompt refers to the task input
    input_header: str
    response_header: str
    criteria: str
    has_article: bool = False
    has_unit_test: bool = False
    has_exec_result: bool = False
    # How a revision is checked objectively: "final_answer" (compared with ground_truth_answer), "program_value"
    # (a class Solution run in the sandbox, its value compared), "unit_test" (run with the item's tests);
    # None: the text domains, whose revisions a judge grades.
    correction_check: str | None = None
    has_correction_part: bool = True  # correction_part/{d}_feedback.json exists

    # derived from correction_check once, when the table is built (read for every checked item)
    objective_correction: bool = field(init=False)  # checked without a judge
    needs_gold_answer: bool = field(init=False)  # compared with ground_truth_answer (else run with its unit test)
    revision_is_code: bool = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "objective_correction", self.correction_check is not None)
        object.__setattr__(self, "needs_gold_answer", self.correction_check in ("final_answer", "program_value"))
        object.__setattr__(self, "revision_is_code", self.correction_check in ("program_value", "unit_test"))


_TEXT_CRITERIA = (
    "factual errors, logical errors or contradictions, hard-to-read or obscure passages, "
    "and whether it actually answers what was asked"
)

DOMAINS: dict[str, Domain] = {
    d.name: d
    for d in (
        Domain(
            "translate", "an English source text", "### Source:", "### Translation:",
            "accuracy of meaning, fluency, readability and translationese",
        ),
        Domain("chat", "a user instruction", "### Question:", "### Answer:", _TEXT_CRITERIA),
        Domain("qa", "a question", "### Question:", "### Answer:", _TEXT_CRITERIA),
        Domain(
            "summary", "an article and a question about it", "### Question:", "### Answer:",
            "faithfulness to the article, coverage of its key points, and concision",
            has_article=True,
        ),
        Domain(
            "harmlessness", "a conversation", "### Question:", "### Answer:",
            "harmful, unsafe, unethical or biased content, and whether it stays helpful",
        ),
        Domain(
            "math_cot", "a math question", "### Math Question:", "### Rationale:",
            "the correctness of every reasoning step and of the final answer",
            correction_check="final_answer",
        ),
        Domain(
            "math_pot", "a math question", "### Math Question:", "### Code:",
            "whether the program computes the right answer to the question",
            correction_check="program_value",
        ),
        Domain(
            "code_exec", "a coding problem", "### Code Question Context:", "### Code:",
            "functional correctness against the unit test, using the execution result shown",
            has_unit_test=True, has_exec_result=True, correction_check="unit_test",
            has_correction_part=False,
        ),
        Domain(
            "code_not_exec", "a coding problem", "### Code Question Context:", "### Code:",
            "functional correctness against the unit test, edge cases and clarity",
            has_unit_test=True, correction_check="unit_test",
        ),
    )
}

DOMAIN_NAMES: tuple[str, ...] = tuple(DOMAINS)
TEXT_DOMAINS = tuple(d for d in DOMAIN_NAMES if not DOMAINS[d].objective_correction)
OBJECTIVE_CORRECTION_DOMAINS = tuple(d for d in DOMAIN_NAMES if DOMAINS[d].objective_correction)


# ----------------------------------------------------------------------------- prompts


def _section(header: str, text: str) -> str:
    return f"{header}\n{text}\n"


def _inputs(domain: Domain, doc: dict) -> str:
    parts = []
    if domain.has_article:
        parts.append(_section("### Article:", doc["article"]))
    parts.append(_section(domain.input_header, doc["question"]))
    if domain.has_unit_test:
        parts.append(_section("### Unit Test:", doc["unit_test"]))
    return "".join(parts)


def _response(domain: Domain, doc: dict, suffix: str = "") -> str:
    key = f"generation{'_' + suffix.lower() if suffix else ''}"
    text = _section(f"{domain.response_header[:-1]}{' ' + suffix if suffix else ''}:", doc[key])
    if domain.has_exec_result:
        exec_key = f"exec_rest{'_' + suffix.lower() if suffix else ''}"
        text += _section(f"### Execution Result{' ' + suffix if suffix else ''}:", doc.get(exec_key) or "")
    return text


def _prompt(intro: str, body: str, ask: str) -> str:
    """Every critic prompt has the paper's three parts: what is given, the inputs, what to output."""
    return f"{intro}\n---\n{body}---\n{ask}"


def _single(d: Domain, doc: dict) -> str:
    return _inputs(d, doc) + _response(d, doc)


def _pair(d: Domain, doc: dict) -> str:
    return _inputs(d, doc) + _response(d, doc, "A") + _response(d, doc, "B")


_LIKERT_ASK = ("Write the rating on the first line exactly as `{marker}: x` (x is an integer from 1 to 7), "
               "then give a brief justification.")


def _one_response(d, instruction: str) -> str:
    """The opening of a prompt about one response: what the critic sees, and what it does with it."""
    return f"You will see {d.task_noun} and a response written for it. {instruction}, paying attention to {d.criteria}."


def _two_responses(d) -> str:
    """The opening of a prompt about two responses, A and B."""
    return f"You will see {d.task_noun} and two responses to it, A and B. Compare them, paying attention to {d.criteria}."


def feedback_prompt(doc: dict) -> str:
    d = DOMAINS[doc["domain"]]
    return _prompt(
        _one_response(d, "Judge how good the response is"),
        _single(d, doc),
        "Rate the response on a 1-7 Likert scale, where 1 means very poor and 7 means flawless. "
        + _LIKERT_ASK.format(marker="Decision"),
    )


def comparison_prompt(doc: dict) -> str:
    d = DOMAINS[doc["domain"]]
    return _prompt(
        _two_responses(d),
        _pair(d, doc),
        "Which response is better? Answer on the first line exactly as `Decision: A`, `Decision: B` or "
        "`Decision: C`: A if response A is clearly better, B if response B is clearly better, C if neither "
        "is clearly better than the other. Then give a brief justification.",
    )


def meta_prompt(doc: dict) -> str:
    d = DOMAINS[doc["domain"]]
    return _prompt(
        f"You will see {d.task_noun}, a response to it, a high-quality reference critique of that response, "
        "and a second critique to evaluate. Judge the second critique: are its points accurate, does it find "
        "the real flaws, are its suggestions useful and specific, and does it avoid nitpicking a good response?",
        _single(d, doc)
        + _section("### Reference high-quality Feedback", doc["ground_truth_feedback"])
        + _section("### Feedback To be Evaluated", doc["evaluated_feedback"]),
        "The reference critique deserves a 7. On the same 1-7 scale, rate the critique to be evaluated. "
        + _LIKERT_ASK.format(marker="Score"),
    )


def correction_prompt(doc: dict, with_feedback: bool = True) -> str:
    d = DOMAINS[doc["domain"]]
    fmt = (
        "Return the complete corrected program in a single ```python code block"
        + (" (keep `class Solution` with its `solution(self)` method)" if d.correction_check == "program_value" else "")
        + (" and do not include the unit test" if d.has_unit_test else "")
        + "."
        if d.revision_is_code
        else "End with the final answer on its own line as `#### RESULT: x`."
        if d.correction_check == "final_answer"
        else "Return only the revised response."
    )
    feedback = _section("### Feedback:", doc["feedback"]) if with_feedback else ""
    ask = "using the feedback" if with_feedback else "fixing any problems you find"
    return _prompt(
        f"You will see {d.task_noun} and a response written for it"
        + (", followed by feedback on that response" if with_feedback else "")
        + f". Revise the response {ask}, paying attention to {d.criteria}.",
        _single(d, doc) + feedback,
        f"Now write your revised response. {fmt}",
    )


def feedback_sub_prompt(doc: dict) -> str:
    """Subjective feedback: a free-text critique, graded later by a judge against the human one."""
    d = DOMAINS[doc["domain"]]
    return _prompt(
        _one_response(d, "Write a critique of the response"),
        _single(d, doc),
        "Point out each real problem, explain why it is a problem, and say how to fix it; acknowledge what is "
        "already right. If the response needs no revision, say so.",
    )


def comparison_sub_prompt(doc: dict) -> str:
    d = DOMAINS[doc["domain"]]
    return _prompt(
        _two_responses(d),
        _pair(d, doc),
        "Critique both responses, weighing the strengths and flaws of each, then say which one is better "
        "(or that neither is clearly better) and why.",
    )


PROMPTS = {
    ("feedback", "obj"): feedback_prompt, ("comparison", "obj"): comparison_prompt, ("meta", "obj"): meta_prompt,
    ("feedback", "sub"): feedback_sub_prompt, ("comparison", "sub"): comparison_sub_prompt,
    # SAvg's stage 1: the free-text critique the correction prompt's "### Feedback:" section then carries
    ("self_feedback", "obj"): feedback_sub_prompt,
}


def critic_prompt(doc: dict) -> str:
    """The prompt for any document produced by ``data`` (or the one another protocol attached to it)."""
    if doc.get("self_feedback_error"):  # SAvg: an item the stage-1 samples do not cover (see self_feedback)
        raise DataError(doc["self_feedback_error"])
    if doc.get("prompt"):
        return doc["prompt"]
    if doc["dimension"] == "correction":
        return correction_prompt(doc, with_feedback=doc.get("with_feedback", True))
    return PROMPTS[doc["dimension"], doc.get("fmt", "obj")](doc)
