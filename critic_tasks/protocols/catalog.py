"""Every metric value the registry's metric keys name, by (family, base) (``METRICS``: one function each, from the
protocols' ``scoring.METRICS``), and ``metric_value``, the one step from the records a key accepts to its value,
which lm-eval's aggregations (``hooks.aggregation``, named in ``adapters/lm_eval/tasks/utils.py``) and
``engine.kind_metrics`` both take; each family's values at once (``FAMILIES``, built from the same functions) and
its bootstrap intervals (``INTERVALS``, ``metric_interval``).

Each protocol's steps (load documents, prompt the critic, show the gold label, turn a reply into a record) are
declared with it in the registry (``registry.Protocol``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from critic_tasks.core.records import Record, warn_identical
from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.critiquellm import scoring as cq_scoring
from critic_tasks.protocols.judgebench import scoring as jb_scoring
from critic_tasks.protocols.metacritique import scoring as mc_scoring
from critic_tasks.protocols.processbench import scoring as pb_scoring
from critic_tasks.protocols.realcritic import scoring as rc_scoring
from critic_tasks.protocols.revision import scoring as rv_scoring

FAMILIES: dict[str, Callable] = {**cb_scoring.FAMILIES, **cq_scoring.FAMILIES, **mc_scoring.FAMILIES,
                                 **rv_scoring.FAMILIES, **jb_scoring.FAMILIES,
                                 **pb_scoring.FAMILIES, **rc_scoring.FAMILIES}
# family -> its bootstrap interval function (records, value, settings) -> (low, high) or None
INTERVALS: dict[str, Callable] = {**cb_scoring.INTERVALS, **cq_scoring.INTERVALS, **mc_scoring.INTERVALS,
                                  **rv_scoring.INTERVALS, **jb_scoring.INTERVALS,
                                  **pb_scoring.INTERVALS, **rc_scoring.INTERVALS}


def _said(metric: Callable[[Sequence[Record]], Any]) -> Callable[[Sequence[Record]], Any]:
    """``identical_samples``, which also says, in one line, when a sampled task's backend did not sample (each key
    is computed once, so the line is said once)."""
    def value(records):
        warn_identical(records)
        return metric(records)

    value.__name__ = getattr(metric, "__name__", "identical_samples")
    return value


# (family, base) -> its value over the records one key accepts (None: absent, never NaN): each protocol's
# ``scoring.METRICS``, one function per value
METRICS: dict[tuple[str, str], Callable[[Sequence[Record]], Any]] = {
    key: _said(fn) if key[1] == "identical_samples" else fn
    for key, fn in {**cb_scoring.METRICS, **cq_scoring.METRICS, **mc_scoring.METRICS, **rv_scoring.METRICS,
                    **jb_scoring.METRICS, **pb_scoring.METRICS, **rc_scoring.METRICS}.items()}


def metric_value(family: str, base: str, records: Sequence[Record]) -> Any:
    """``base`` of ``family`` over ``records`` (the records one metric key accepts): ``METRICS``' function, the one
    lm-eval's aggregations (``hooks.aggregation``) and ``engine.kind_metrics`` both call."""
    return METRICS[(family, base)](records)


def metric_interval(family: str, base: str, records: Sequence[Record], settings) -> tuple[float, float] | None:
    """The bootstrap interval of ``base`` of ``family`` over the same records (None: none, e.g. no records)."""
    return INTERVALS[family](records, base, settings) if records else None
