"""The metric families every protocol's registry metrics name (``FAMILIES``), their bootstrap intervals
(``INTERVALS``), and a dimension's metric keys computed outside lm-eval (``dimension_metrics``).

Each protocol's steps (load documents, prompt the critic, show the gold label, turn a reply into a record) are
declared with it in the registry (``registry.Protocol``).
"""

from __future__ import annotations

from typing import Callable

from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.critiquellm import scoring as cq_scoring
from critic_tasks.protocols.metacritique import scoring as mc_scoring
from critic_tasks.protocols.revision import scoring as rv_scoring

FAMILIES: dict[str, Callable] = {**cb_scoring.FAMILIES, **cq_scoring.FAMILIES, **mc_scoring.FAMILIES,
                                 **rv_scoring.FAMILIES}
# family -> its bootstrap interval function (records, value, settings) -> (low, high) or None
INTERVALS: dict[str, Callable] = {**cb_scoring.INTERVALS, **cq_scoring.INTERVALS, **mc_scoring.INTERVALS,
                                  **rv_scoring.INTERVALS}


def dimension_metrics(dimension, records, intervals=None) -> dict[str, float]:
    """The registry's metric keys for ``dimension`` (a ``registry.Dimension``; those with a value), from the family a
    live run uses, as a run outside lm-eval reports them (OpenCompass's evaluator, ``critic-eval score / judge /
    rescore``).

    One run of the family over all records reports the breakdown keys (``spearman_low``, ...) itself; a live
    lm-eval run routes records key by key (``Metric.accepts``) and gets the same values. Interval keys
    (``spearman_ci_low``, ...) are computed on the records their metric accepts, as lm-eval routes them
    (``intervals``: a ``BootstrapSettings``, default from CRITIC_CI_*; disabled: no interval keys)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    records = list(records)
    values = FAMILIES[dimension.metrics[0].family](records)
    out = {m.key: values[m.key] for m in dimension.metrics if m.key in values}
    settings = settings_from_env() if intervals is None else intervals
    if settings.enabled:
        for m in dimension.metrics:
            if m.ci == "low" and m.key.removesuffix("_ci_low") in out:
                ci = INTERVALS[m.family]([r for r in records if m.accepts(r)], m.base, settings)
                if ci is not None:
                    out[m.key], out[m.key.removesuffix("_low") + "_high"] = ci
    return out
