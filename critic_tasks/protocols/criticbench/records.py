"""CriticBench's records: a Likert score (feedback, meta-feedback), one order's verdict (comparison), an item's
revisions checked (correction), a judge's grade (the judge-scored tasks) and SAvg's stage-1 critique.

Registered in ``core.records.RECORD_TYPES`` under their ``kind`` (``register_record``), so that ``Record.from_dict`` reads
them back from logged samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from critic_tasks.core.records import Record, register_record


@register_record
@dataclass(frozen=True)
class LikertRecord(Record):
    """A score on a Likert scale against a human score (CriticBench feedback and meta-feedback)."""

    kind: ClassVar[str] = "likert"
    pred: float = 0.0  # the parsed score, or the scale midpoint when unparsed (so it is never dropped)
    parsed: bool = False
    gold: float | None = None
    quality: str | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


@register_record
@dataclass(frozen=True)
class VerdictRecord(Record):
    """One order of a pairwise comparison: the verdict A/B/C given for that order (None when unparsed)."""

    kind: ClassVar[str] = "verdict"
    pair_id: str = ""
    order: str = "forward"  # "forward" | "reverse"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None  # the gold verdict of the *forward* order
    difficulty: str | None = None
    rule: str = "paper"  # whose comparison rule gives the headline score: "paper" or "toolkit"
    # characters of the responses this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


@register_record
@dataclass(frozen=True)
class CorrectionRecord(Record):
    """All samples of one item's revision (one per sample when pass@k is estimated)."""

    kind: ClassVar[str] = "correction"
    quality: str | None = None
    passed: tuple[bool, ...] = field(default_factory=tuple)
    parsed: tuple[bool, ...] = field(default_factory=tuple)
    invalid: bool = False
    truncated: tuple[bool, ...] = field(default_factory=tuple)
    isolation: tuple[str, ...] = field(default_factory=tuple)  # the sandbox layers that ran its programs, if any
    identical: bool = False  # k > 1 samples, all the same text: the backend did not sample (``all_identical``)
    # each sample's check outcome (``CheckOutcome`` as a dict: status, detail, the sandbox layer), for --log_samples
    # and the invalid items' log lines; no metric reads them, and two records differing only here are equal
    checks: tuple[dict, ...] = field(default_factory=tuple, compare=False)

    @property
    def scored(self) -> bool:
        return not self.invalid

    @property
    def n_samples(self) -> int:
        return len(self.passed)


@register_record
@dataclass(frozen=True)
class JudgedRecord(Record):
    """A judge's grade of one output (None when the call failed or the reply had no score; the error says which)."""

    kind: ClassVar[str] = "judged"
    group: str | None = None
    score: float | None = None
    error: str | None = None
    cached: bool = False
    judge_text: str | None = None
    item: str = ""
    is_deferred: bool = False
    # the judge gave no grade of its own and repeated one the graded text states: ``score`` is the scale's minimum
    echoed: bool = False
    # whose rule an ungraded item (``score`` None) follows in the metrics: "" ours, counted at the scale's minimum;
    # "toolkit" the released toolkit's (CRITICBENCH_PROTOCOL=toolkit), left out as its evaluators leave it out
    rule: str = ""
    # what the judge's server said answered (its ``model``, ``system_fingerprint``; None: it said nothing); no metric
    # reads it, so two records differing only here are equal
    judge_served: dict | None = field(default=None, compare=False)

    @property
    def scored(self) -> bool:
        return self.score is not None and not self.is_deferred

    @property
    def deferred(self) -> bool:
        return self.is_deferred


@register_record
@dataclass(frozen=True)
class FeedbackTextRecord(Record):
    """A free-text critique that is kept, not scored (CriticBench SAvg's stage 1): was anything written?"""

    kind: ClassVar[str] = "feedback_text"
    parsed: bool = False  # the critique is not empty
