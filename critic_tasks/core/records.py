"""Typed per-item records: what scoring one model output yields, before any aggregation.

Every protocol turns (item, output) into one of these and every metric family aggregates a list of them, in any
harness. ``scored`` says whether the record enters label-based metrics (it has a human label, a usable gold answer,
a judge score); ``deferred`` marks an item whose scoring was postponed (judging without a judge configured).
Harness adapters pass records across their boundary as plain dicts (``as_dict`` / ``from_dict``), so that logged
samples stay readable JSON.

``rate`` and ``domain_mean`` are the two averages the metric families build their numbers from. A results key and
the records it takes is a ``Metric`` (below), declared in each protocol's ``scoring.py`` beside the functions that
compute it; a record's row as one key's value is a ``KeyedRow``. ``digest``, ``all_identical`` and
``warn_identical`` say whether a sampled task's backend sampled (below).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
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


# ----------------------------------------------------------------------------- metric keys

# What a metric's value can be (``Metric.scale``): (low, high) and what to call it; None: text, not a number. A results
# file holding anything else (99999 for a rate, NaN, true) was not written by these tasks: the reports and the gate
# refuse it (``reports.results.check_values``). Interval bounds take their metric's scale.
JUDGE_SCALE = (1.0, 10.0)  # a judge's grade: CriticBench's subjective scores, the revision protocols' RQS / R_sub
SCALES: dict[str, tuple[tuple[float, float] | None, str]] = {
    "rate": ((0.0, 100.0), "a x100 rate"),  # shares, pass rates, accuracies, precision / recall / F1
    "correlation": ((-100.0, 100.0), "a x100 correlation"),
    "difference": ((-100.0, 100.0), "a x100 difference of two rates"),  # the judge-bias line length_bias
    # RewardBench 2's Ties score (and the mean of six holding it): x100 of weighted rates summing to 1 plus 0.01 x a
    # mean tanh, so -1 (every Ties prompt wrong, margins against) to 101 (every one right, wide margins)
    "margin_rate": ((-1.0, 101.0), "a x100 rate with a margin term of +-1"),
    "judge": (JUDGE_SCALE, "a 1-10 judge score"),
    "count": ((0.0, math.inf), "a count"),  # whole numbers: items, warnings, models
    "text": (None, "text"),  # a name or JSON text (the sandbox layer, the models behind a revision score)
}

WHEN = ("all", "scored", "deferred")  # which records a metric takes (``Metric.when``)


@dataclass(frozen=True)
class Metric:
    """One key of a task's results: the ``family`` of metric functions that computes it and the ``base`` value it
    reports (one function per pair: the protocol's ``scoring.METRICS``), which records it takes (``accepts``), its
    direction and its ``scale``. Each protocol declares its keys in its ``scoring.py``, beside those functions."""
    key: str
    family: str
    base: str = ""  # the family's output reported under this key (default: the key itself)
    when: str = "all"
    subset: tuple[str, str] | None = None  # (record field, value): only records of that breakdown group
    min_samples: int = 0  # only records with at least this many samples (pass@k)
    # its direction: True higher is better, False lower; None neither: a description (a count, a share, a text) or a
    # value best at ``best_at`` (a judge's first-slot share at 50, its length bias at 0), away from which either way
    # is worse
    higher_is_better: bool | None = True
    best_at: float | None = None
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
        if self.higher_is_better is not None and (self.best_at is not None or self.scale == "text"):
            raise ValueError(f"metric {self.key}: a {'text' if self.best_at is None else 'value best at a target'} "
                             "is neither better higher nor lower: higher_is_better=None")

    def accepts(self, record: Record) -> bool:
        """Does ``record`` enter this metric's aggregation?"""
        if record.deferred != (self.when == "deferred"):
            return False
        if self.when == "scored" and not record.scored:
            return False
        if self.subset is not None and record.breakdown(self.subset[0]) != self.subset[1]:
            return False
        return record.n_samples >= self.min_samples

    def row(self, value: dict, record: Record | None = None) -> KeyedRow:
        """``value`` (a record's row) as this key's value: it carries (family, base) to the one aggregation, and the
        record it was made from (``record``), so that the aggregation does not make it again."""
        return KeyedRow(value, (self.family, self.base), record)


def breakdown(family: str, base: str, field_name: str, values, when: str = "scored", **options) -> tuple[Metric, ...]:
    """``base`` per breakdown group: ``<base>_<value>`` over the records whose ``field_name`` is that value
    (``options``: the base's other settings: scale, valid_only)."""
    return tuple(Metric(f"{base}_{v}", family, base, when, subset=(field_name, v), **options) for v in values)


def bias_lines(family: str) -> tuple[Metric, ...]:
    """A pairwise task's judge-bias lines beside its position consistency (``core.metrics.bias``): the share of A/B
    verdicts naming the first-shown response (50: no slot preference), and the share choosing the longer response
    minus the labels' share on the same verdicts (0: as often as the labels). Each is best at that value: a judge
    favouring the second slot or the shorter response is as biased as one favouring the first or the longer."""
    return (Metric("first_position", family, higher_is_better=None, best_at=50.0),
            Metric("length_bias", family, when="scored", higher_is_better=None, best_at=0.0, scale="difference"))


class KeyedRow(dict):
    """A record's row (``Record.as_dict``) as one metric key's value in a harness: the row itself, which the harness
    logs as it is (lm-eval's ``--log_samples``: the record's plain JSON), and the (family, base) its key reports
    (``metric``), which an aggregation handed the values alone (lm-eval's) reads to know what to compute. An
    attribute, not a field, so the logged row stays the record's; it survives pickling (lm-eval's gather across
    ranks), not JSON. ``record``: the record the row was made from (None: make it again, ``Record.from_dict``)."""

    __slots__ = ("metric", "record")

    def __init__(self, row: dict, metric: tuple[str, str], record: Record | None = None):
        super().__init__(row)
        self.metric, self.record = metric, record


def keyed_rows(metrics: Sequence[Metric], record: Record) -> dict[str, KeyedRow]:
    """The record as the value of each of ``metrics`` that accepts it, by key: its row (``as_dict``), carrying the
    key's (family, base) and the record itself (``KeyedRow``)."""
    row = record.as_dict()
    return {m.key: m.row(row, record) for m in metrics if m.accepts(record)}


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


# every record kind, by its ``kind``: each protocol's scoring module adds its own (``register_record``)
RECORD_TYPES: dict[str, type[Record]] = {}
_FIELDS: dict[type[Record], frozenset[str]] = {}


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
