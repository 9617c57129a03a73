"""RealCritic scoring, harness-free: (document, reply) -> record, and records -> metrics (x100).

The record (``RealCriticRecord``): the corrected answer the critic gave, graded against the gold. ``domain`` is the
task (``arc-challenge``, ``gsm8k``, ...); ``prior_correct``: whether the solution shown to the critic was right,
graded by the same rule as the corrected answer (``shown_correct``; the file's ``previous_score`` is kept in the
document). Registered in ``core.records.RECORD_TYPES`` under its ``kind`` when this
module is imported, so that ``Record.from_dict`` reads it back from logged samples.

Reading the corrected answer: the content of the reply's last ``\\boxed{...}`` (balanced braces), as the authors'
answer extraction reads it (Qwen2.5-Math's ``extract_answer``). No box, or an empty one, is no answer. For the
multiple-choice tasks the box must name one option letter: a box that is just a letter (``B``, ``(b)``,
``\\text{B}``), else the capital letters A-E standing alone in it — one distinct letter is the answer, none is
``no_option``, two different ones are ``ambiguous`` (the authors' ``choice_answer_clean`` takes the last of them;
we refuse to pick for a critic that named two). An unread answer is graded wrong and counted in ``parse_rate``,
never dropped.

Grading: the multiple-choice tasks compare the letter with the gold letter; the others compare the answer with the
gold by ``core.answers.answers_match`` (a numeric gold as a number, any other as an expression by math-verify,
bounded in time) where the authors use their ``grader.math_equal`` (sympy / latex2sympy). A gold math-verify
cannot read is matched by its text only (``grade``) and counted in ``unreadable_golds``.

Metrics (the authors' ``evaluate.py``: ``acc`` and ``critic_information``), per task, and over several tasks the
unweighted mean of the per-task values (the paper's average column):

    accuracy            = 100 * mean over items [corrected answer == gold]
    correct_to_incorrect = 100 * #(solution right, corrected answer wrong) / #(solution right)   (broken)
    incorrect_to_correct = 100 * #(solution wrong, corrected answer right) / #(solution wrong)   (fixed)
    solution_accuracy   = 100 * mean over items [solution right]          (regraded by our rule: the baseline)
    parse_rate          = 100 * mean over replies [an answer was read]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from critic_tasks.core import records as core_records
from critic_tasks.core.answers import answers_match, match_without_math_verify, mv_could_equal
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, by_domain, mean_interval
from critic_tasks.core.records import Metric, Record, rate
from critic_tasks.protocols import variants
from critic_tasks.protocols.realcritic import authors_grading, data
from critic_tasks.protocols.realcritic.data import OPTION_LETTERS

# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class RealCriticRecord(Record):
    """``answer``: the corrected final answer read from the reply (None: none read); ``correct``: it equals the
    gold (an unread answer is wrong, never dropped); ``unparsed_reason``: ``no_boxed`` (no ``\\boxed{}``),
    ``empty`` (an empty box), ``no_option`` (a multiple-choice box naming no option letter), ``ambiguous`` (a box
    naming two different letters), or "" when read; ``gold_readable``: math-verify could read the gold (False: it
    was matched by its text only)."""

    kind = "realcritic"
    item_id: str = ""
    answer: str | None = None
    parsed: bool = False
    correct: bool = False
    prior_correct: bool = False
    unparsed_reason: str = ""
    gold_readable: bool = True
    prompt: str = ""  # the prompt the critic was asked with (authors | ours; "" in a document made before the option)
    grading: str = ""  # the reading rule (authors | strict)


core_records.register_record(RealCriticRecord)


_BOX = "\\boxed{"
_LONE_LETTER = re.compile(r"(?<![\w\\])([A-E])(?!\w)")
_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*|[{}()\[\]\s.:$]")


def last_boxed(reply: str | None) -> str | None:
    """The content of the last ``\\boxed{...}`` whose braces close, or None.

    >>> last_boxed(r"so \\boxed{1} then \\boxed{\\frac{1}{2}}."), last_boxed(r"\\boxed{3"), last_boxed(None)
    ('\\\\frac{1}{2}', None, None)
    """
    if not isinstance(reply, str):
        return None
    found, start = None, reply.find(_BOX)
    while start != -1:
        depth, j = 1, start + len(_BOX)
        while j < len(reply) and depth:
            depth += {"{": 1, "}": -1}.get(reply[j], 0)
            j += 1
        if depth == 0:
            found = reply[start + len(_BOX): j - 1]
        start = reply.find(_BOX, j)
    return found


def option_letter(content: str) -> tuple[str | None, str]:
    """(the option letter a box names or None, why not: ``no_option`` | ``ambiguous`` | "").

    >>> option_letter("(b)"), option_letter(r"\\text{C}"), option_letter("C) guanine"), option_letter("A or B")
    (('B', ''), ('C', ''), ('C', ''), (None, 'ambiguous'))
    """
    bare = _WRAPPERS.sub("", content)
    if len(bare) == 1 and bare.upper() in OPTION_LETTERS:
        return bare.upper(), ""
    letters = set(_LONE_LETTER.findall(content))
    if len(letters) > 1:
        return None, "ambiguous"
    return (letters.pop(), "") if letters else (None, "no_option")


# ----------------------------------------------------------------------------- the two reading rules

GRADING_KEY = "grading"  # the task option, the document field and the results key
AUTHORS_RULE, STRICT_RULE = "authors", "strict"
GRADINGS = (AUTHORS_RULE, STRICT_RULE)


def resolve_grading(value, data_dir=None) -> str:
    """The reading rule of a run: the option as given, else ``strict`` on the bundled sample (which needs no
    authors' file) and ``authors`` everywhere else."""
    if value in (None, ""):
        return STRICT_RULE if data.resolve_data_dir(data_dir) == data.SAMPLE_DIR else AUTHORS_RULE
    if value not in GRADINGS:
        raise ConfigError(f"realcritic: {GRADING_KEY}={value!r}: expected one of {', '.join(GRADINGS)}")
    return str(value)


def apply_grading(docs: list[dict], value=None, data_dir=None) -> list[dict]:
    """Each document's reading rule (``grading``) and, under the authors', their reading of its gold
    (``authors_gold``): their unit list is read now, so a missing parser.py stops the run before any generation."""
    chosen = resolve_grading(value, data_dir)
    if chosen == AUTHORS_RULE:
        authors_grading.use_source(data_dir)
    for doc in docs:
        doc[GRADING_KEY] = chosen
        doc["authors_gold"] = authors_grading.gold_answer(doc) if chosen == AUTHORS_RULE else ""
    return docs


def rule_of(doc: dict) -> str:
    """A document's reading rule (one made before the option was read strictly, as then)."""
    return doc.get(GRADING_KEY) or STRICT_RULE


def read(doc: dict, reply) -> tuple[str | None, str]:
    """(the answer a reply gives under the document's rule or None, why none: see ``read_answer``; the authors'
    rule: ``no_answer`` for an empty reply, ``empty`` when their reader found nothing)."""
    if rule_of(doc) == AUTHORS_RULE:
        answer = authors_grading.read_answer(reply, doc["task"], doc["gold"])
        return (answer, "") if answer else (None, "no_answer" if answer is None else "empty")
    return read_answer(reply, doc["multiple_choice"])


def read_answer(reply, multiple_choice: bool) -> tuple[str | None, str]:
    """The strict rule: (the corrected final answer or None, why not: ``no_boxed`` | ``empty`` | ``no_option`` |
    ``ambiguous``)."""
    content = last_boxed(reply)
    if content is None:
        return None, "no_boxed"
    if not content.strip():
        return None, "empty"
    return option_letter(content) if multiple_choice else (content.strip(), "")


def _same_text(answer: str, gold: str) -> bool:
    return re.sub(r"\s+", "", answer).lower() == re.sub(r"\s+", "", gold).lower()


def grade(answer: str | None, doc: dict) -> tuple[bool, bool]:
    """(the corrected answer equals the document's gold, the gold could be read as an answer). A gold math-verify
    cannot read (a few released golds are whole derivations) is matched only by its text, the first rule of the
    authors' ``math_equal`` (case and spaces aside): strict, never a free pass, and counted (``unreadable_golds``).
    Under the authors' rule: their ``math_equal`` against their reading of the gold."""
    if rule_of(doc) == AUTHORS_RULE:
        return (answer is not None and authors_grading.equal(answer, doc["authors_gold"])), True
    if doc["multiple_choice"]:
        return answer == doc["gold"], True
    try:
        return (answer is not None and answers_match(answer, doc["gold"])), True
    except ValueError:
        return answer is not None and _same_text(answer, doc["gold"]), False


def grade_without_symbolic(answer: str | None, doc: dict, gold_readable: bool) -> bool | None:
    """``grade``'s verdict where it needs no symbolic comparison (the rules each grader applies first: a missing
    answer, the same text, two numbers, a letter), None where ``grade`` would make one; ``gold_readable``: the
    second value ``grade`` gives for this document (whether math-verify reads its gold; the caller's to know once)."""
    if rule_of(doc) == AUTHORS_RULE:
        return authors_grading.decided(answer, doc["authors_gold"])
    if doc["multiple_choice"]:
        return answer == doc["gold"]
    if not gold_readable:
        return answer is not None and _same_text(answer, doc["gold"])
    return match_without_math_verify(answer, doc["gold"])


def could_match(answer: str, doc: dict) -> bool:
    """For a pair ``grade_without_symbolic`` left open: False only where ``grade`` is False, without its symbolic
    comparison (each grader's necessary condition, argued rule by rule where it is defined: the answer's and the
    gold's values at one point too far apart for any rule of that grader; ``authors_grading.could_equal``,
    ``core.answers.mv_could_equal``); True where the grader must decide."""
    if rule_of(doc) == AUTHORS_RULE:
        return authors_grading.could_equal(answer, doc["authors_gold"])
    return mv_could_equal(answer, doc["gold"])


def reading_of(doc: dict) -> tuple:
    """What ``read`` reads of a document besides the reply: two documents alike here read any reply alike (under
    the authors' rule their task and whether their gold is an option letter or letters; else the question form)."""
    if rule_of(doc) == AUTHORS_RULE:
        return AUTHORS_RULE, doc["task"], doc["gold"] in authors_grading.LETTERS, authors_grading.all_letters(doc["gold"])
    return STRICT_RULE, doc["multiple_choice"]


def shown_answer_reply(doc: dict) -> str:
    """The reply of a critic that accepts the shown solution: its answer boxed."""
    return f"\\boxed{{{doc['solution_answer']}}}"


def shown_correct(doc: dict) -> bool:
    """Whether the solution shown to the critic was right, graded by the rule that grades the critic's corrected
    answer: its answer read and graded as the reply ``shown_answer_reply`` (a critic that only copies the shown
    answer back then breaks and fixes nothing, issue 44). The file's ``previous_score`` comes from the authors'
    grader in their environment and is kept in the document, not used. A chained run (self-critique, a later round)
    shows an earlier reply: its answer, read from that reply (``solution_read``), is graded as it is, as the authors
    grade a stage-1 reply's answer into ``previous_score``."""
    if isinstance(doc.get("prior_correct"), bool):
        return doc["prior_correct"]
    graded = grade(shown_reading(doc), doc)[0]
    doc["prior_correct"] = graded  # graded once per document
    return graded


def shown_reading(doc: dict) -> str | None:
    """The shown solution's answer as ``shown_correct`` grades it."""
    if doc.get("solution_read"):
        return doc["solution_answer"] or None
    return read(doc, shown_answer_reply(doc))[0]


def record(doc: dict, reply) -> RealCriticRecord:
    """``reply``: the critic's text (a list of samples: the first is read; one turn asks once)."""
    text = reply[0] if isinstance(reply, (list, tuple)) and reply else reply
    answer, reason = read(doc, text)
    correct, gold_readable = grade(answer, doc)
    if answer is not None and "solution_answer" in doc and answer == shown_reading(doc):
        # the pair the shown solution was graded on: its verdict, not a second grading's (a symbolic step bounded in
        # time can decide one pair both ways under load: a copy-back critic broke a right solution, red team)
        correct = shown_correct(doc)
    return RealCriticRecord(domain=doc["task"], item_id=str(doc["idx"]), answer=answer, parsed=answer is not None,
                            correct=correct, prior_correct=shown_correct(doc), unparsed_reason=reason,
                            gold_readable=gold_readable, prompt=str(doc.get("prompt") or ""), grading=rule_of(doc))


def gold_text(doc: dict) -> str:
    return doc["gold"]


# ----------------------------------------------------------------------------- metrics

def _by_task(records: Sequence[RealCriticRecord]) -> dict[str, list[RealCriticRecord]]:
    tasks: dict[str, list[RealCriticRecord]] = {}
    for r in records:
        tasks.setdefault(r.domain, []).append(r)
    return tasks


def _macro(records, per_task: Callable[[list[RealCriticRecord]], float | None]) -> float | None:
    values = [v for v in (per_task(rs) for rs in _by_task(records).values()) if v is not None]
    return sum(values) / len(values) if values else None


def _transition(records: list[RealCriticRecord], prior: bool) -> float | None:
    shown = [r for r in records if r.prior_correct == prior]
    return rate(r.correct != prior for r in shown) if shown else None


def accuracy(records: Sequence[RealCriticRecord]) -> float | None:
    """RealCritic accuracy (Tang et al. 2025, Section 3; ``evaluate.py``'s ``acc``): 100 * the share of items whose
    corrected final answer equals the gold; over several tasks the unweighted mean of the tasks' accuracies (the
    paper's average). An unread answer is wrong. None without records."""
    return _macro(records, lambda rs: rate(r.correct for r in rs))


def correct_to_incorrect(records: Sequence[RealCriticRecord]) -> float | None:
    """100 * #(solution right, corrected answer wrong) / #(solution right): how often the critic broke a right
    solution (``evaluate.py``'s ``correct_to_incorrect_ratio``); mean over tasks; None without a right solution."""
    return _macro(records, lambda rs: _transition(rs, True))


def incorrect_to_correct(records: Sequence[RealCriticRecord]) -> float | None:
    """100 * #(solution wrong, corrected answer right) / #(solution wrong): how often the critic fixed a wrong
    solution (``evaluate.py``'s ``incorrect_to_correct_ratio``); mean over tasks; None without a wrong solution."""
    return _macro(records, lambda rs: _transition(rs, False))


def solution_accuracy(records: Sequence[RealCriticRecord]) -> float | None:
    """100 * the share of items whose shown solution was right (graded by the run's rule; ``shown_correct``): the
    accuracy before the critique, the line a critic must beat; mean over tasks."""
    return _macro(records, lambda rs: rate(r.prior_correct for r in rs))


def unreadable_golds(records: Sequence[RealCriticRecord]) -> float:
    """How many items' golds math-verify could not read (matched by their text only; see ``grade``)."""
    return float(sum(not r.gold_readable for r in records))


def parse_rate(records: Sequence[RealCriticRecord]) -> float:
    """100 * the share of replies from which a corrected answer was read."""
    return rate(r.parsed for r in records)


# Each (family, base) a registry metric names: its one value over the records a key accepts (None: absent).
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    ("realcritic", "accuracy"): accuracy,
    ("realcritic", "correct_to_incorrect"): correct_to_incorrect,
    ("realcritic", "incorrect_to_correct"): incorrect_to_correct,
    ("realcritic", "solution_accuracy"): solution_accuracy,
    ("realcritic", "parse_rate"): parse_rate,
    ("realcritic", "unreadable_golds"): unreadable_golds,
    ("realcritic", "prompt"): lambda records: variants.recorded(r.prompt for r in records) or None,
    ("realcritic", "grading"): lambda records: variants.recorded(r.grading for r in records) or None,
}


def realcritic_metrics(records: Sequence) -> dict[str, float]:
    out = {base: fn(records) for (_, base), fn in METRICS.items()}
    return {k: v for k, v in out.items() if v is not None}


# ----------------------------------------------------------------------------- metric keys

# Per task: accuracy of the corrected answers, how often a right solution was broken and a wrong one fixed (the group
# averages the tasks' accuracies, the paper's average).
KEYS = (Metric("accuracy", "realcritic", when="scored"),
        Metric("correct_to_incorrect", "realcritic", when="scored", higher_is_better=False),
        Metric("incorrect_to_correct", "realcritic", when="scored"),
        Metric("solution_accuracy", "realcritic", when="scored"), Metric("parse_rate", "realcritic"),
        Metric("unreadable_golds", "realcritic", scale="count", higher_is_better=False),
        # text: the prompt the critic was asked with (authors | ours)
        Metric("prompt", "realcritic", scale="text", higher_is_better=None),
        # text: the reading rule of the replies (authors | strict)
        Metric("grading", "realcritic", scale="text", higher_is_better=None))
# Direct CoT (the question alone): the accuracy of its answers; the released solution's grade means nothing here.
DIRECT_KEYS = tuple(m for m in KEYS if m.base in ("accuracy", "parse_rate", "unreadable_golds", "prompt", "grading"))

FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {"realcritic": realcritic_metrics}


def realcritic_interval(records: Sequence[RealCriticRecord], base: str,
                        settings: BootstrapSettings) -> tuple[float, float] | None:
    """``accuracy`` / ``correct_to_incorrect`` / ``incorrect_to_correct``: percentile bootstrap over items,
    resampled within each task (strata), of the unweighted mean of the tasks' values
    (``core.metrics.bootstrap.mean_interval``)."""
    if base == "accuracy":
        chosen = list(records)
    elif base in ("correct_to_incorrect", "incorrect_to_correct"):
        chosen = [r for r in records if r.prior_correct == (base == "correct_to_incorrect")]
    else:
        return None
    if not chosen:
        return None
    flip = base != "accuracy"
    values = [100.0 * ((r.correct != r.prior_correct) if flip else r.correct) for r in chosen]
    return mean_interval(values, [r.domain for r in chosen], settings)


# family -> (records, the family's value, settings) -> (low, high) or None where the value has no interval
INTERVALS: dict[str, Callable] = {"realcritic": realcritic_interval}
# family -> (record, value) -> the stratum its interval resamples within: the task (a mean of the tasks' values)
STRATA: dict[str, Callable] = {"realcritic": by_domain}
