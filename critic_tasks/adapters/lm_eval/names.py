"""The names our filters and aggregations have in lm-eval's registries: what a YAML writes (``function:
critic_sandbox``, ``aggregation: critic_likert_spearman``), the way lm-eval's own YAML files write ``regex`` and
``mean``. Harness-free, so that the generator runs without lm-eval; ``hooks.register`` puts the objects under them.
"""

from __future__ import annotations

from critic_tasks import registry
from critic_tasks.engine import SCORERS

# The filter of each scorer that scores a whole task at once (``function: critic_sandbox``), and self-consistency's.
FILTER_NAMES = {f"critic_{name}": name for name, scorer in SCORERS.items() if not scorer.per_reply}
KEEP_SAMPLES = "critic_keep_samples"


def aggregation_name(family: str, base: str) -> str:
    """``base`` of ``family``: ``critic_likert_spearman``."""
    return f"critic_{family}_{base}"


def metric_aggregation_name(metric: registry.Metric) -> str:
    """The aggregation a metric's YAML entry names: ``critic_likert_spearman`` (an interval bound has none: no
    interval is an lm-eval metric key)."""
    if metric.ci:
        raise ValueError(f"{metric.key}: an interval bound, not an lm-eval metric (reports.results computes it)")
    return aggregation_name(metric.family, metric.base)
