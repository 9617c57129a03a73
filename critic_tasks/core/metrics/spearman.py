"""Pooled Spearman correlation on the paper's x100 scale (CriticBench feedback / meta-feedback).

    rho = pearson(rank(pred), rank(human)) * 100        (ties get average ranks)

Pooled means one correlation over every item of every domain, exactly as the
paper's Table 2 (not a mean of per-domain values). A constant side has no
defined correlation: we return 0.0 and say so, instead of NaN (which is not
valid JSON in harness outputs).
"""

from __future__ import annotations

import math
from typing import Sequence

from critic_tasks.core.metrics.ranks import rank_correlation


def spearman_x100(predictions: Sequence[float], references: Sequence[float]) -> tuple[float, str | None]:
    """Return ``(rho * 100, warning)``; ``warning`` is None unless rho was undefined.

    Three items, ranks (1, 2, 3) against (1, 3, 2): d = (0, -1, 1), rho = 1 - 6 * 2 / (3 * 8) = 0.5:

    >>> spearman_x100([1, 2, 3], [1, 3, 2])
    (50.0, None)
    >>> rho, warning = spearman_x100([2, 1], [1, 2])
    >>> round(rho, 9), warning
    (-100.0, None)
    >>> spearman_x100([4, 4, 4], [1, 2, 3])
    (0.0, 'constant predictions over 3 items: Spearman undefined, reported 0')
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions vs {len(references)} references")
    for side, values in (("predictions", predictions), ("human scores", references)):
        if not all(math.isfinite(v) for v in values):
            # a NaN would make the correlation undefined and be reported as a number: a parser let it through
            raise ValueError(f"non-finite value among the {side} ({next(v for v in values if not math.isfinite(v))}): "
                             "scores must be finite (an unreadable score is unparsed, not NaN)")
    if len(predictions) < 2:
        return 0.0, f"Spearman needs at least 2 items, got {len(predictions)}; reported 0"
    if len(set(predictions)) < 2 or len(set(references)) < 2:
        side = "predictions" if len(set(predictions)) < 2 else "human scores"
        return 0.0, f"constant {side} over {len(predictions)} items: Spearman undefined, reported 0"
    rho = rank_correlation(predictions, references)  # scipy.stats.spearmanr's statistic, bit for bit
    if math.isnan(rho):  # defensive: scipy found no variance after all
        return 0.0, "Spearman undefined (no variance), reported 0"
    return float(rho) * 100.0, None


def likert_score(spearman: float) -> float:
    """The paper's normalisation of a x100 correlation onto 0..100: (rho + 100) / 2.

    >>> likert_score(50.0), likert_score(-100.0), likert_score(100.0)
    (75.0, 0.0, 100.0)
    """
    return (spearman + 100.0) / 2.0
