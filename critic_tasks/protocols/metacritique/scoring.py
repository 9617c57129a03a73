"""MetaCritique scoring: judged critiques (``AIURecord``) -> metrics, x100.

The record (``AIURecord``, made by ``judge``): a judge's verdicts on one critique's atomic information units,
registered in ``core.records.RECORD_TYPES`` under its ``kind`` (``register_record``), so that ``Record.from_dict``
reads it back from logged samples.

``precision`` / ``recall`` / ``f1`` (critique level, macro) and ``precision_micro`` / ``recall_micro`` /
``f1_micro`` (AIU level) from ``core.metrics.prf`` over every judged critique, a unit without a readable verdict
counting False (the minimum: a critique that makes the judge's reply unreadable gains nothing by it, issue 34) and a
critique whose AIUs could not be extracted having none (precision 0); ``judge_parse_rate``: share of asked verdicts
that were readable (a failed AIU extraction counts as one unreadable verdict); ``judge_failed``: critiques the
judge could not score (AIUs unknown, or no readable verdict on a side that has units), in the values at the minimum
as above; ``judge_echoed``: critiques with a verdict counted False because the judge only repeated a verdict
line the critique (or its units) wrote, with none of its own (a forged list: judged, never left out);
``empty_critiques``: scored critiques with no AIU (precision 0 by our rule, ``core.metrics.prf``);
``judge_deferred``: critiques generated without a judge configured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

import numpy as np

from critic_tasks.core.metrics import bootstrap, precision_recall_f1
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, mean_interval, percentile_interval, ratio_replicates
from critic_tasks.core.metrics.prf import f1
from critic_tasks.core.records import Metric, Record, canonical, register_record

# ----------------------------------------------------------------------------- records


@register_record
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


AIU_VALUES = ("precision", "recall", "f1", "precision_micro", "recall_micro", "f1_micro")


def _done(records: Sequence[AIURecord]) -> list[AIURecord]:
    return [r for r in records if not r.deferred]


def aiu_deferred(records: Sequence[AIURecord]) -> float | None:
    """Critiques generated without a judge configured (absent when none is)."""
    deferred = len(records) - len(_done(records))
    return float(deferred) if deferred else None


def _over_done(value: Callable[[list[AIURecord]], float]) -> Callable[[Sequence[AIURecord]], float | None]:
    """An AIU value over the judged (not deferred) critiques; absent where every critique is deferred."""
    def over(records):
        done = _done(records)
        return value(done) if done else None

    over.__name__ = value.__name__
    return over


@_over_done
def aiu_judge_parse_rate(done):
    """Readable verdicts of those asked (a failed AIU extraction counts as one unreadable verdict)."""
    asked = sum(len(r.precision) + len(r.recall) + (r.n_aius is None) for r in done)
    readable = sum(v is not None for r in done for v in (*r.precision, *r.recall))
    return 100.0 * readable / asked if asked else 100.0


def _prf(key: str) -> Callable[[Sequence[AIURecord]], float | None]:
    """One of ``AIU_VALUES`` (``core.metrics.prf``: the six share one pass over the labels)."""
    def value(done):
        return precision_recall_f1(*_labels(done))[key]

    value.__name__ = f"aiu_{key}"
    return _over_done(value)


# Each (family, base) the registry's metrics name: its one value over the records a key accepts (None: absent).
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    ("aiu", "judge_deferred"): aiu_deferred,
    ("aiu", "judge_parse_rate"): aiu_judge_parse_rate,
    ("aiu", "judge_failed"): _over_done(lambda done: float(sum(not r.scored for r in done))),
    ("aiu", "empty_critiques"): _over_done(lambda done: float(sum(r.n_aius == 0 for r in done if r.scored))),
    ("aiu", "judge_echoed"): _over_done(lambda done: float(sum(r.echoed > 0 for r in done))),
    **{("aiu", key): _prf(key) for key in AIU_VALUES},
}


def aiu_metrics(records: Sequence[AIURecord]) -> dict[str, float]:
    """Every AIU value (``METRICS``) over one pool of judged critiques."""
    out = {base: fn(records) for (_, base), fn in METRICS.items()}
    return {k: v for k, v in out.items() if v is not None}


def _labels(records: Sequence[AIURecord]) -> tuple[list[list[bool]], list[list[bool]]]:
    """Per critique, its precision and recall labels: an unreadable verdict (None) counts False, the minimum."""
    return [[v is True for v in r.precision] for r in records], [[v is True for v in r.recall] for r in records]


# ----------------------------------------------------------------------------- metric keys

# Every judged critique: one the judge could not score counts its unreadable verdicts False (issue 34).
KEYS = (*(Metric(k, "aiu") for k in AIU_VALUES),
        Metric("judge_parse_rate", "aiu"), Metric("judge_failed", "aiu", higher_is_better=False, scale="count"),
        Metric("judge_echoed", "aiu", higher_is_better=False, scale="count"),
        Metric("empty_critiques", "aiu", higher_is_better=False, scale="count"),
        Metric("judge_deferred", "aiu", when="deferred", higher_is_better=False, scale="count"))

FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {"aiu": aiu_metrics}


def aiu_interval(records: Sequence[AIURecord], base: str, settings: BootstrapSettings) -> tuple | None:
    """Judged critiques resampled: the macro values' per-critique P / R / F1 averaged, the micro values' units
    pooled over the drawn critiques (P and R from the same draws, so F1 of each resample's P and R)."""
    done = [r for r in canonical(records) if not r.deferred]
    if not done or base not in AIU_VALUES:
        return None
    p, r_ = _labels(done)
    if not base.endswith("_micro"):
        ps = [sum(x) / len(x) if x else 0.0 for x in p]
        rs = [sum(x) / len(x) if x else 0.0 for x in r_]
        values = {"precision": ps, "recall": rs, "f1": list(map(f1, ps, rs))}[base]
        return mean_interval([100.0 * v for v in values], None, settings)
    pm = ratio_replicates([sum(x) for x in p], [len(x) for x in p], settings)
    rm = ratio_replicates([sum(x) for x in r_], [len(x) for x in r_], settings)
    with np.errstate(invalid="ignore", divide="ignore"):
        fm = np.where((pm > 0) & (rm > 0), 2 * pm * rm / (pm + rm), 0.0)
    replicates = {"precision_micro": pm, "recall_micro": rm, "f1_micro": fm}[base]
    return percentile_interval(100.0 * replicates, settings.level)


# family -> (records, the family's value, settings) -> (low, high) or None where the value has no interval
INTERVALS: dict[str, Callable] = {"aiu": aiu_interval}
# family -> (record, value) -> the stratum its interval resamples within: none (critiques)
STRATA: dict[str, Callable] = {"aiu": bootstrap.unstratified}
