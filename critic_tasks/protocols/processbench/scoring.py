"""ProcessBench scoring, harness-free: (document, reply) -> record, and records -> metrics (x100).

The record (``ProcessStepRecord``): the step index the critic named against the labelled earliest wrong step
(``NO_ERROR``, -1, for a solution whose every step is right), registered in ``core.records.RECORD_TYPES`` under its
``kind`` when this module is imported, so that ``Record.from_dict`` reads it back from logged samples.

The reply is read as the authors' ``run_eval.py`` reads it: the content of the *last* ``\\boxed{...}`` (no nested
braces), stripped, converted with Python's ``int``; anything else (no box, ``\\boxed{2.5}``, ``\\boxed{two}``) is
unparsed: a miss on every metric and a point off ``parse_rate``, never dropped. With k sampled replies (the paper's
majority voting, ``--use_voting``) the boxed texts that were found vote, the most common wins (the first seen among
equals), and that text is converted.

Per subset (one record per item; the authors' ``match`` is prediction == label):

* ``error_accuracy``   = 100 * mean(match) over the erroneous items (label != -1)
* ``correct_accuracy`` = 100 * mean(match) over the correct items (label == -1)
* ``f1``               = 2 * error_accuracy * correct_accuracy / (error_accuracy + correct_accuracy)
* ``average_f1``       = the unweighted mean of the subsets' ``f1`` (the paper's "Avg. F1")

Zheng et al. 2024, "ProcessBench: Identifying Process Errors in Mathematical Reasoning", arXiv:2412.06559, the
evaluation protocol and Table 3 (the main results); the released ``code/run_eval.py`` (acc1, acc2, f1).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from critic_tasks.core import records as core_records
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, mean_interval, percentile_interval, resample_indices
from critic_tasks.core.records import Metric, Record, all_identical, rate
from critic_tasks.protocols import prompt_choice

# ----------------------------------------------------------------------------- records


NO_ERROR = -1  # the label (and the answer) of a solution whose every step is right


@dataclass(frozen=True)
class ProcessStepRecord(Record):
    """``pred``: the index the reply gave (None: no ``\\boxed{}`` or not an integer: unparsed, counted as a miss);
    ``label``: the earliest wrong step, -1 when the solution is right (None: unlabelled, not scored). With k sampled
    replies (the paper's majority voting) ``pred`` is the vote and ``samples`` is k."""

    kind = "process_step"
    item: str = ""
    pred: int | None = None
    parsed: bool = False
    label: int | None = None
    n_steps: int = 0
    unparsed_reason: str = ""  # "no_boxed" | "not_integer" | "" (parsed)
    samples: int = 1
    parsed_samples: int = 1
    identical: bool = False  # k > 1 samples, all one text: the backend did not sample (core.records.all_identical)
    prompt: str = ""  # whose prompt the critic was asked with: authors | ours (protocols.prompt_choice)

    @property
    def scored(self) -> bool:
        return self.label is not None

    @property
    def n_samples(self) -> int:
        return self.samples

    @property
    def erroneous(self) -> bool:
        """The solution has a wrong step (the accuracy on erroneous samples counts it)."""
        return self.label is not None and self.label != NO_ERROR

    @property
    def match(self) -> bool:
        """The authors' ``match``: the prediction equals the label (an unparsed reply never does)."""
        return self.pred is not None and self.pred == self.label

    @property
    def in_range(self) -> bool:
        """The answer names -1 or a step the solution has."""
        return self.pred is not None and NO_ERROR <= self.pred < self.n_steps


core_records.register_record(ProcessStepRecord)


FAMILY = "process"
BOX_OPEN = "\\boxed{"


def boxed_contents(reply: str):
    """What ``re.findall(r"\\\\boxed\\{([^}]*)\\}", reply)`` (run_eval.py's ``extract_answer``) finds, in order, in
    one left-to-right pass: from each ``\\boxed{`` up to the first ``}`` after it, the search resuming after that
    brace (a box opened inside a box's text is part of that text). The regex retries the rest of the reply from
    every unclosed box, quadratic in a reply of many unclosed boxes; here a box with no ``}`` after it ends the
    search, since no later box can close either.

    >>> list(boxed_contents("\\\\boxed{1} \\\\boxed{\\\\boxed{2} x}"))
    ['1', '\\\\boxed{2']
    """
    start = 0
    while True:
        opened = reply.find(BOX_OPEN, start)
        if opened < 0:
            return
        closed = reply.find("}", opened + len(BOX_OPEN))
        if closed < 0:
            return
        yield reply[opened + len(BOX_OPEN):closed]
        start = closed + 1


def last_boxed(reply) -> str | None:
    """The stripped content of the reply's last ``\\boxed{}`` (None: no box, or no text at all)."""
    if not isinstance(reply, str):
        return None
    found = list(boxed_contents(reply))
    return found[-1].strip() if found else None


def as_index(text: str | None) -> int | None:
    """Python's ``int`` of the boxed text, as the authors convert it; None where it refuses."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:  # "2.5", "two", "", and digit strings longer than int() accepts
        return None


def read_index(reply) -> tuple[int | None, str]:
    """(the index, why it is missing: "no_boxed" | "not_integer" | "")."""
    text = last_boxed(reply)
    if text is None:
        return None, "no_boxed"
    value = as_index(text)
    return value, "" if value is not None else "not_integer"


def vote(replies: Sequence) -> tuple[int | None, str, int]:
    """The authors' majority vote over k replies: (index, why missing, replies with a box)."""
    boxed = [t for t in (last_boxed(r) for r in replies) if t is not None]
    if not boxed:
        return None, "no_boxed", 0
    winner = Counter(boxed).most_common(1)[0][0]  # ties: the first seen, as Counter keeps insertion order
    value = as_index(winner)
    return value, "" if value is not None else "not_integer", len(boxed)


def record(doc: dict, reply) -> ProcessStepRecord:
    """``reply``: one reply, or a list of k sampled replies (majority voting)."""
    if isinstance(reply, (list, tuple)):
        replies = list(reply)
        pred, reason, boxed = vote(replies)
        parsed_samples = sum(read_index(r)[0] is not None for r in replies)
    else:
        replies = [reply]
        pred, reason = read_index(reply)
        parsed_samples = int(pred is not None)
    return ProcessStepRecord(domain=doc["subset"], item=str(doc["id"]), pred=pred, parsed=pred is not None,
                             label=doc.get("label"), n_steps=int(doc["n_steps"]), unparsed_reason=reason,
                             samples=len(replies), parsed_samples=parsed_samples,
                             identical=all_identical(replies), prompt=str(doc.get(prompt_choice.KEY) or ""))


def gold_text(doc: dict) -> str:
    return str(doc["label"])


# ----------------------------------------------------------------------------- metrics (one function per value)


def _matches(records: Sequence[ProcessStepRecord], erroneous: bool) -> list[bool]:
    return [r.match for r in records if r.scored and r.erroneous == erroneous]


def error_accuracy(records: Sequence[ProcessStepRecord]) -> float | None:
    """Accuracy on the erroneous items: 100 * #(pred == label) / #(label != -1); None without such items.

    The critic must name exactly the earliest wrong step; an unparsed reply is a miss. (Zheng et al. 2024,
    run_eval.py's ``acc1``.)
    """
    flags = _matches(records, True)
    return rate(flags) if flags else None


def correct_accuracy(records: Sequence[ProcessStepRecord]) -> float | None:
    """Accuracy on the correct items: 100 * #(pred == -1) / #(label == -1); None without such items.

    (Zheng et al. 2024; run_eval.py's ``acc2``.)
    """
    flags = _matches(records, False)
    return rate(flags) if flags else None


def harmonic_mean(a: float, b: float) -> float:
    """2ab / (a + b); 0 when both are 0 (the limit; run_eval.py divides 0 by 0 and prints nan there).

    >>> harmonic_mean(50.0, 100.0)
    66.66666666666667
    >>> harmonic_mean(0.0, 0.0)
    0.0
    """
    return 2.0 * a * b / (a + b) if a + b > 0 else 0.0


def f1(records: Sequence[ProcessStepRecord]) -> float | None:
    """F1 = 2 * error_accuracy * correct_accuracy / (error_accuracy + correct_accuracy): the harmonic mean, so a
    critic that always answers -1 (or always a step) scores 0. None unless both classes have items.

    (Zheng et al. 2024, "F1"; run_eval.py's ``f1``.)
    """
    a1, a2 = error_accuracy(records), correct_accuracy(records)
    return None if a1 is None or a2 is None else harmonic_mean(a1, a2)


def _by_subset(records: Sequence[ProcessStepRecord]) -> dict[str, list[ProcessStepRecord]]:
    groups: dict[str, list[ProcessStepRecord]] = defaultdict(list)
    for r in records:
        groups[r.domain].append(r)
    return dict(sorted(groups.items()))


def average_f1(records: Sequence[ProcessStepRecord]) -> float | None:
    """The unweighted mean over subsets of each subset's F1 (the paper's "Avg. F1", Table 3): gsm8k's 400 items
    weigh as much as olympiadbench's 1000. Subsets lacking a class are left out; None when none remains."""
    values = [v for v in (f1(rs) for rs in _by_subset(records).values()) if v is not None]
    return sum(values) / len(values) if values else None


def parse_rate(records: Sequence[ProcessStepRecord]) -> float:
    """100 * share of replies whose last ``\\boxed{}`` holds an integer (the unparsed ones count as misses)."""
    return rate(r.parsed for r in records)


def out_of_range(records: Sequence[ProcessStepRecord]) -> float:
    """How many parsed answers name neither -1 nor a step of their solution (\\boxed{99} on 5 steps): misses, and a
    sign the critic did not read the tags."""
    return float(sum(r.parsed and not r.in_range for r in records))


# (family, base) -> the one value over the records a key accepts (None: absent)
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    (FAMILY, "error_accuracy"): error_accuracy,
    (FAMILY, "correct_accuracy"): correct_accuracy,
    (FAMILY, "f1"): f1,
    (FAMILY, "average_f1"): average_f1,
    (FAMILY, "parse_rate"): parse_rate,
    (FAMILY, "out_of_range"): out_of_range,
    (FAMILY, "prompt"): lambda records: prompt_choice.recorded(r.prompt for r in records),
}


def process_metrics(records: Sequence[ProcessStepRecord]) -> dict[str, float]:
    out = {base: fn(records) for (_, base), fn in METRICS.items()}
    return {k: v for k, v in out.items() if v is not None}


# ----------------------------------------------------------------------------- metric keys

# Per subset: F1 of the accuracies on erroneous and on correct solutions (the group averages the F1s).
KEYS = (Metric("f1", FAMILY, when="scored"), Metric("error_accuracy", FAMILY, when="scored"),
        Metric("correct_accuracy", FAMILY, when="scored"), Metric("parse_rate", FAMILY),
        Metric("out_of_range", FAMILY, scale="count", higher_is_better=False),
        # whose prompt: authors | ours (protocols.prompt_choice)
        Metric("prompt", FAMILY, scale="text", higher_is_better=None))

FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {FAMILY: process_metrics}


# ----------------------------------------------------------------------------- bootstrap intervals


def process_stratum(record: ProcessStepRecord, base: str) -> str:
    """``f1`` / ``average_f1``: the item's (subset, class), each resampled within itself (``_f1_replicates``); the
    accuracies (one class each): none."""
    return f"{record.domain}\x00{int(record.erroneous)}" if base in ("f1", "average_f1") else ""


def _f1_replicates(records: Sequence[ProcessStepRecord], settings: BootstrapSettings) -> np.ndarray | None:
    """B replicates of ``average_f1`` (one subset: of ``f1``). Each (subset, class) is resampled within itself, so
    every resample keeps the benchmark's fixed numbers of erroneous and correct items per subset."""
    scored = sorted((r for r in records if r.scored), key=lambda r: (r.domain, r.item))
    by_subset = _by_subset(scored)
    usable = [s for s, rs in by_subset.items() if {r.erroneous for r in rs} == {True, False}]
    if not usable:
        return None
    rows = [r for s in usable for r in by_subset[s]]
    strata = [process_stratum(r, "f1") for r in rows]
    match = np.array([100.0 * r.match for r in rows])
    blocks = resample_indices(strata, settings.resamples, np.random.default_rng(settings.seed))
    accuracy = {name: match[idx].mean(axis=1) for name, idx in zip(sorted(set(strata), key=str), blocks)}
    per_subset = []
    for subset in usable:
        a1, a2 = accuracy[f"{subset}\x001"], accuracy[f"{subset}\x000"]
        total = a1 + a2
        per_subset.append(np.divide(2.0 * a1 * a2, total, out=np.zeros_like(total), where=total > 0))
    return np.mean(per_subset, axis=0)


def process_interval(records: Sequence[ProcessStepRecord], base: str, settings: BootstrapSettings) -> tuple | None:
    """``error_accuracy`` / ``correct_accuracy``: that class's items resampled; ``f1`` / ``average_f1``: each
    (subset, class) resampled within itself (``_f1_replicates``). Other values get no interval."""
    if base in ("error_accuracy", "correct_accuracy"):
        flags = _matches(sorted(records, key=lambda r: (r.domain, r.item)), base == "error_accuracy")
        return mean_interval([100.0 * f for f in flags], None, settings) if flags else None
    if base in ("f1", "average_f1"):
        replicates = _f1_replicates(records, settings)
        return None if replicates is None else percentile_interval(replicates, settings.level)
    return None


INTERVALS: dict[str, Callable] = {FAMILY: process_interval}
# family -> (record, value) -> the stratum its interval resamples within
STRATA: dict[str, Callable] = {FAMILY: process_stratum}

__all__ = ["NO_ERROR", "record", "gold_text", "error_accuracy", "correct_accuracy", "f1", "average_f1",
           "parse_rate", "out_of_range", "METRICS", "FAMILIES", "INTERVALS", "STRATA", "process_interval",
           "process_stratum"]
