"""Pure metric functions, one per module (the formula is in each module's docstring)."""

from critic_tasks.metrics.comparison import comparison_metrics
from critic_tasks.metrics.pass_at_k import pass_at_k
from critic_tasks.metrics.spearman import likert_score, spearman_x100

__all__ = ["comparison_metrics", "likert_score", "pass_at_k", "spearman_x100"]
