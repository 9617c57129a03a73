"""Pure metric functions, one per module (the formula is in each module's docstring); the two averages every
family builds on (``rate``, ``domain_mean``) are in ``core.records``, beside the records they average."""

from critic_tasks.core.metrics.agreement import agreement_metrics
from critic_tasks.core.metrics.correlation import correlations, system_level, text_level
from critic_tasks.core.metrics.pairwise import pairwise_metrics
from critic_tasks.core.metrics.pass_at_k import pass_at_k
from critic_tasks.core.metrics.prf import precision_recall_f1
from critic_tasks.core.metrics.spearman import likert_score, spearman_x100

__all__ = ["agreement_metrics", "correlations", "likert_score", "pairwise_metrics", "pass_at_k",
           "precision_recall_f1", "spearman_x100", "system_level", "text_level"]
