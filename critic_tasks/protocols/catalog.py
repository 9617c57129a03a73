"""Every metric the registry's metric keys name, by (family, base) (``METRICS``), and ``metric_value``, the one step
from the records a key accepts to its value, which lm-eval's aggregations (``adapters/lm_eval/tasks/utils.py``) and
``engine.kind_metrics`` both take; the families' bootstrap intervals (``INTERVALS``, ``metric_interval``).

Each protocol's steps (load documents, prompt the critic, show the gold label, turn a reply into a record) are
declared with it in the registry (``registry.Protocol``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from critic_tasks.core.records import Record, warn_identical
from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.critiquellm import scoring as cq_scoring
from critic_tasks.protocols.metacritique import scoring as mc_scoring
from critic_tasks.protocols.revision import scoring as rv_scoring

FAMILIES: dict[str, Callable] = {**cb_scoring.FAMILIES, **cq_scoring.FAMILIES, **mc_scoring.FAMILIES,
                                 **rv_scoring.FAMILIES}
# family -> its bootstrap interval function (records, value, settings) -> (low, high) or None
INTERVALS: dict[str, Callable] = {**cb_scoring.INTERVALS, **cq_scoring.INTERVALS, **mc_scoring.INTERVALS,
                                  **rv_scoring.INTERVALS}


def _read_off(family: str, base: str) -> Callable[[Sequence[Record]], Any]:
    """``base`` read off its family's whole dictionary: the families not yet split into one function per value
    (CritiqueLLM's, MetaCritique's and the revision protocols', whose values share one pass over the records)."""
    def value(records):
        return FAMILIES[family](records).get(base)

    value.__name__ = f"{family}_{base}"
    return value


def _said(metric: Callable[[Sequence[Record]], Any]) -> Callable[[Sequence[Record]], Any]:
    """``identical_samples``, which also says, in one line, when a sampled task's backend did not sample (each key
    is computed once, so the line is said once)."""
    def value(records):
        warn_identical(records)
        return metric(records)

    value.__name__ = getattr(metric, "__name__", "identical_samples")
    return value


class _Metrics(dict):
    """(family, base) -> its value over the records one key accepts (None: absent, never NaN). CriticBench's compute
    one value each; a value of the other protocols' families is read off the family's dictionary (made on first
    lookup: the registry, not this module, lists which bases they report)."""

    def __missing__(self, key: tuple[str, str]) -> Callable[[Sequence[Record]], Any]:
        family, base = key
        if family not in FAMILIES:
            raise KeyError(key)
        value = _read_off(family, base)
        self[key] = _said(value) if base == "identical_samples" else value
        return self[key]


METRICS: dict[tuple[str, str], Callable[[Sequence[Record]], Any]] = _Metrics(
    {key: _said(fn) if key[1] == "identical_samples" else fn for key, fn in cb_scoring.METRICS.items()})


def metric_value(family: str, base: str, records: Sequence[Record]) -> Any:
    """``base`` of ``family`` over ``records`` (the records one metric key accepts): ``METRICS``' function, the one
    lm-eval's aggregations (``hooks.aggregation``) and ``engine.kind_metrics`` both call."""
    return METRICS[(family, base)](records)


def metric_interval(family: str, base: str, records: Sequence[Record], settings) -> tuple[float, float] | None:
    """The bootstrap interval of ``base`` of ``family`` over the same records (None: none, e.g. no records)."""
    return INTERVALS[family](records, base, settings) if records else None
