"""The nine CriticBench domains as rows of one table (Lan et al. 2024, "CriticEval").

Every dimension renders its prompt from the same template; a domain only
changes the section headers, which optional inputs it has, and what a good
response looks like. Headers keep the original toolkit's names so prompts stay
comparable with published numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from critic_tasks.core.errors import ConfigError


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


def resolve_domains(domains: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """``None`` / ``"all"`` -> every domain; otherwise validate the names given."""
    if domains is None or domains == "all":
        return DOMAIN_NAMES
    names = domains.split(",") if isinstance(domains, str) else list(domains)
    unknown = [n for n in names if n not in DOMAINS]
    if unknown:
        raise ConfigError(f"unknown CriticBench domain(s) {unknown}; known: {', '.join(DOMAIN_NAMES)}")
    return tuple(names)
