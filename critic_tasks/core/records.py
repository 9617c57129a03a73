"""Typed per-item records: what scoring one model output yields, before any aggregation.

Every protocol turns (item, output) into one of these and every metric family aggregates a list of them, in any
harness. ``scored`` says whether the record enters label-based metrics (it has a human label, a usable gold answer,
a judge score); ``deferred`` marks an item whose scoring was postponed (judging without a judge configured).
Harness adapters pass records across their boundary as plain dicts (``as_dict`` / ``from_dict``), so that logged
samples stay readable JSON.

A ``Metric`` (declared in ``critic_tasks.registry``) is one results key and the records it takes (``accepts``);
``rate`` and ``domain_mean`` are the two averages the families build their numbers from. ``digest``,
``all_identical`` and ``warn_identical`` say whether a sampled task's backend sampled (below).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, ClassVar, Hashable, Iterable, Sequence

log = logging.getLogger("critic_tasks")


@dataclass(frozen=True)
class Record:
    kind: ClassVar[str] = ""
    domain: str

    @property
    def scored(self) -> bool:
        return True

    @property
    def deferred(self) -> bool:
        return False

    @property
    def n_samples(self) -> int:
        return 1

    def breakdown(self, field_name: str) -> Any:
        """The value of the breakdown field a per-group metric is keyed by (quality, difficulty, ...)."""
        return getattr(self, field_name)

    def as_dict(self) -> dict:
        return {"kind": self.kind, **vars(self)}  # the fields are flat values and tuples: no deep copy needed

    @staticmethod
    def from_dict(data: "dict | Record") -> "Record":
        """The record back from ``as_dict`` (or from its JSON: lists become tuples again); extra keys are ignored."""
        if isinstance(data, Record):
            return data
        cls = RECORD_TYPES[data["kind"]]
        return cls(**{k: (tuple(v) if type(v) is list else v) for k, v in data.items() if k in _FIELDS[cls]})


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


@dataclass(frozen=True)
class CheckOutcome:
    """How one revision fared: ``status`` is passed, wrong_answer, no_result, failed, timeout, error, unparsed,
    invalid, no_calls (the tests never called the revised code) or tests_not_finished (they stopped before the
    last); ``detail`` holds the parsed answer or the program's last error line."""

    parsed: bool
    passed: bool
    status: str
    detail: str = ""
    isolation: str = ""  # the sandbox layer that ran the program, when one ran
    truncated: bool = False  # cut off by the token budget: an unclosed code block, or a reply ending mid-sentence
    digest: str = ""  # a fingerprint of the reply (``digest`` below): were an item's k samples one text?


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


@dataclass(frozen=True)
class RatingRecord(Record):
    """A critic's rating of one response against the human score (CritiqueLLM pointwise). With k sampled
    critiques (self-consistency), ``pred`` is the mean of the parsed ratings and ``samples`` is k."""

    kind: ClassVar[str] = "rating"
    pred: float = 0.0  # the parsed rating (or the mean of the parsed samples); the failure value when none parsed
    parsed: bool = False
    gold: float | None = None
    question: str = ""  # text-level correlations group the responses to one question
    model: str = ""  # system-level correlations group by the model that wrote the response
    category: str = ""
    samples: int = 1
    parsed_samples: int = 1
    identical: bool = False  # k > 1 samples, all the same text: the backend did not sample (``all_identical``)
    variant: str = ""  # the prompt variant the critic was asked with (protocols.variants)

    @property
    def scored(self) -> bool:
        return self.gold is not None

    @property
    def n_samples(self) -> int:
        return self.samples


@dataclass(frozen=True)
class PreferenceRecord(Record):
    """One order of a pairwise preference (CritiqueLLM pairwise): the verdict A/B/C given for that order."""

    kind: ClassVar[str] = "preference"
    pair_id: str = ""
    order: str = "forward"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None  # the human preference for the *forward* order
    category: str = ""
    variant: str = ""  # the prompt variant the critic was asked with
    # characters of the responses this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


@dataclass(frozen=True)
class AIURecord(Record):
    """A judge's MetaCritique verdicts on one critique: one per extracted AIU (precision: factual?) and one per
    reference AIU (recall: entailed?), each True/False or None when the judge's reply gave none for that unit.

    ``n_aius`` is None when the AIUs could not be extracted (call failed, or the reply listed none and did not say
    "None"); such a critique is a counted failure (``error`` says why), not scored."""

    kind: ClassVar[str] = "aiu"
    item: str = ""
    aius: tuple[str, ...] = field(default_factory=tuple)
    n_aius: int | None = None
    precision: tuple[bool | None, ...] = field(default_factory=tuple)
    recall: tuple[bool | None, ...] = field(default_factory=tuple)
    error: str | None = None
    cached: bool = False
    is_deferred: bool = False
    extraction_text: str | None = None  # the judge's reply to the extraction step, for inspection
    echoed: int = 0  # verdicts counted False: the judge's line for the unit only repeated the critique's (issue 27)
    # what the judge's server said answered its calls for this critique (``model``, ``system_fingerprint``: one
    # value, or the sorted distinct values where its calls differ; None: it said nothing); no metric reads it
    judge_served: dict | None = field(default=None, compare=False)

    @property
    def scored(self) -> bool:
        if self.is_deferred or self.n_aius is None:
            return False
        precision_ok = self.n_aius == 0 or any(v is not None for v in self.precision)
        return precision_ok and any(v is not None for v in self.recall)

    @property
    def deferred(self) -> bool:
        return self.is_deferred


@dataclass(frozen=True)
class FeedbackTextRecord(Record):
    """A free-text critique that is kept, not scored (CriticBench SAvg's stage 1): was anything written?"""

    kind: ClassVar[str] = "feedback_text"
    parsed: bool = False  # the critique is not empty


@dataclass(frozen=True)
class RevisionRecord(Record):
    """What a critique did to the revisions of one initial response (MultiCritique, RCO): per reviser, whether its
    revision passed the item's check (None: no check, no revision, or the item is ``invalid``); the judge's 1-10
    quality score of the first reviser's revision (``rqs``); and its preference for that revision over the initial
    response, one value per judged order (1 win, 0.5 tie, 0 loss; None unreadable). ``judge_asked`` /
    ``judge_parsed`` count the judgments; ``reviser_failed`` the revisions whose call failed. ``rqs`` holds
    MultiCritique's R_sub too (a 1-10 grade, against the reference revision on the paper variant)."""

    kind: ClassVar[str] = "revision"
    item: str = ""
    group: str = ""
    checked: bool = False  # the item has a gold answer or a test
    revisers: tuple[str, ...] = field(default_factory=tuple)
    revisions: tuple[str | None, ...] = field(default_factory=tuple)
    passed: tuple[bool | None, ...] = field(default_factory=tuple)
    invalid: bool = False
    rqs: float | None = None
    prefs: tuple[float | None, ...] = field(default_factory=tuple)
    judge_asked: int = 0
    judge_parsed: int = 0
    reviser_failed: int = 0
    error: str | None = None
    is_deferred: bool = False
    # judgments counted the minimum (1, or the revision's loss): the judge gave no verdict of its own and repeated
    # one the critique or its revision states (issue 27); they are in judge_parsed
    judge_echoed: int = 0
    models: str = ""  # JSON: the revisers, the judge and the prompt versions (pipeline.models)
    variant: str = ""  # the prompt variant (protocols.variants)
    failure_rule: str = ""  # what a missing verdict or revision counts as (revision.data.FAILURE_RULES; "": exclude)
    # JSON: role -> where its prompt text came from ("released: <file>", "paraphrase", "ours"; prompts.sources)
    prompt_source: str = ""

    @property
    def scored(self) -> bool:
        return not self.is_deferred

    @property
    def deferred(self) -> bool:
        return self.is_deferred

    @property
    def failed(self) -> bool:
        """A reviser or judge call failed, or a judgment was unreadable: counted, and retried on the next run."""
        return self.reviser_failed > 0 or self.judge_parsed < self.judge_asked


RECORD_TYPES: dict[str, type[Record]] = {
    cls.kind: cls for cls in (LikertRecord, VerdictRecord, CorrectionRecord, JudgedRecord, RatingRecord,
                              PreferenceRecord, AIURecord, FeedbackTextRecord, RevisionRecord)
}
_FIELDS = {cls: frozenset(f.name for f in dataclasses.fields(cls)) for cls in RECORD_TYPES.values()}


def register_record(cls: type[Record]) -> type[Record]:
    """Add a protocol's record class to ``RECORD_TYPES`` under its ``kind`` (usable as a class decorator), so that
    ``Record.from_dict`` reads it back from logged samples like the core kinds: a protocol package registers its
    own kind instead of the core importing every protocol. A second class under a known kind is an error."""
    known = RECORD_TYPES.get(cls.kind)
    if known is not None and known is not cls:
        raise RuntimeError(f"record kind {cls.kind!r} is registered twice ({known.__module__}, {cls.__module__})")
    RECORD_TYPES[cls.kind] = cls
    _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return cls


def canonical(records) -> list:
    """Records in a fixed order (by their fields' text, in field order), so that a bootstrap interval depends on the
    records and the seed, not on the order a harness hands them over (lm-eval and the offline scorer differ)."""
    return sorted(records, key=lambda r: tuple(str(v) for v in vars(r).values()))


# ----------------------------------------------------------------------------- metrics over records

# What a metric's value can be (``Metric.scale``): (low, high) and what to call it; None: text, not a number. A results
# file holding anything else (99999 for a rate, NaN, true) was not written by these tasks: the reports and the gate
# refuse it (``reports.results.check_values``). Interval bounds take their metric's scale.
JUDGE_SCALE = (1.0, 10.0)  # a judge's grade: CriticBench's subjective scores, the revision protocols' RQS / R_sub
SCALES: dict[str, tuple[tuple[float, float] | None, str]] = {
    "rate": ((0.0, 100.0), "a x100 rate"),  # shares, pass rates, accuracies, precision / recall / F1
    "correlation": ((-100.0, 100.0), "a x100 correlation"),
    "difference": ((-100.0, 100.0), "a x100 difference of two rates"),  # the judge-bias line length_bias
    "judge": (JUDGE_SCALE, "a 1-10 judge score"),
    "count": ((0.0, math.inf), "a count"),  # whole numbers: items, warnings, models
    "text": (None, "text"),  # a name or JSON text (the sandbox layer, the models behind a revision score)
}


WHEN = ("all", "scored", "deferred")  # which records a metric takes (``Metric.when``)


@dataclass(frozen=True)
class Metric:
    key: str
    family: str
    base: str = ""  # the family's output reported under this key (default: the key itself)
    when: str = "all"
    subset: tuple[str, str] | None = None  # (record field, value): only records of that breakdown group
    min_samples: int = 0  # only records with at least this many samples (pass@k)
    higher_is_better: bool = True
    ci: str = ""  # "low" | "high": this key is a bound of the bootstrap interval of (family, base) on the same records
    scale: str = "rate"  # a key of SCALES
    valid_only: bool = False  # computed over the items that could be checked: ``invalid_items`` counts the others

    def __post_init__(self):
        object.__setattr__(self, "base", self.base or self.key)
        if self.scale not in SCALES:
            raise ValueError(f"metric {self.key}: scale={self.scale!r}, expected one of {tuple(SCALES)}")
        if self.when not in WHEN:
            raise ValueError(f"metric {self.key}: when={self.when!r}, expected one of {WHEN}")
        if self.ci not in ("", "low", "high"):
            raise ValueError(f"metric {self.key}: ci={self.ci!r}, expected 'low' or 'high'")

    def accepts(self, record: Record) -> bool:
        """Does ``record`` enter this metric's aggregation?"""
        if record.deferred != (self.when == "deferred"):
            return False
        if self.when == "scored" and not record.scored:
            return False
        if self.subset is not None and record.breakdown(self.subset[0]) != self.subset[1]:
            return False
        return record.n_samples >= self.min_samples


def rate(flags: Iterable[bool]) -> float:
    """The share of true flags, x100 (0 for no flags).

    >>> rate([True, False, True, True])
    75.0
    >>> rate([])
    0.0
    """
    flags = list(flags)
    return 100.0 * sum(flags) / len(flags) if flags else 0.0


def domain_mean(pairs: Iterable[tuple[Hashable, float]]) -> float | None:
    """``pairs``: (domain, item value); the unweighted mean of the per-domain means (the paper's "average over
    domains, unweighted": a domain with few items weighs as much as one with many; Lan et al. 2024, Tables 2 and
    3), or None without items.

    math's two items average 0.5, chat's one 1.0; the domains weigh the same: (0.5 + 1.0) / 2:

    >>> domain_mean([("math", 1.0), ("math", 0.0), ("chat", 1.0)])
    0.75
    >>> domain_mean([]) is None
    True
    """
    by_domain: dict[Hashable, list[float]] = defaultdict(list)
    for domain, value in pairs:
        by_domain[domain].append(value)
    means = [sum(v) / len(v) for v in by_domain.values()]
    return sum(means) / len(means) if means else None


# ----------------------------------------------------------------------------- did the backend sample?
# The k replies of one item, compared.
#
# A sampled task (CritiqueLLM's self-consistency, the correction's pass@k) asks each item k times. A backend that does
# not vary them (a server that honours one fixed seed, a model served greedily whatever the request says) returns one
# reply k times, and the metric silently rests on one sample. The records keep whether an item's k replies were all one
# text (``identical``): the self-consistency record from the texts themselves, the correction record from a short
# digest of each reply kept in its check outcome (the record keeps no reply text). The results count those items
# (``identical_samples``) and the run says so in one warning line.


def digest(text: str | None) -> str:
    """A short fingerprint of one reply ('' for a failed call: there is no text to compare)."""
    # surrogatepass: a reply may hold a lone surrogate ("\\ud800"), which strict UTF-8 refuses to encode
    return "" if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def all_identical(keys: Sequence) -> bool:
    """k > 1 replies (or their digests), every one present and all the same. A failed call (None, or an empty
    digest) leaves the question open: such an item is not counted."""
    return len(keys) > 1 and all(k not in (None, "") for k in keys) and len(set(keys)) == 1


def warn_identical(records: Iterable) -> None:
    """One warning line when items of a sampled task got k identical replies (records with ``identical``)."""
    sampled = [r for r in records if r.n_samples > 1]
    same = sum(bool(getattr(r, "identical", False)) for r in sampled)
    if same:
        log.warning("critic_tasks: %d of %d items got %d identical samples: the backend returned one reply k times "
                    "(it did not sample; check do_sample / temperature and a fixed seed); pass@k and self-consistency "
                    "rest on fewer samples than asked", same, len(sampled), sampled[0].n_samples)
