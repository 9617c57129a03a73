"""Pooled Spearman correlation on the paper's x100 scale (CriticBench feedback / meta-feedback).

    rho = pearson(rank(pred), rank(human)) * 100        (ties get average ranks)

Pooled means one correlation over every item of every domain, exactly as the
paper's Table 2 (not a mean of per-domain values). A constant side has no
defined correlation: we return 0.0 and say so, instead of NaN (which is not
valid JSON in harness outputs).

The ranks are average ranks (ties get the mean of the ranks they span), in numpy (also the bootstrap's, which
ranks each resample with ``resample_ranks``):

    rank(x_i) = #{j : x_j < x_i} + (#{j : x_j = x_i} + 1) / 2                 (1-based; scipy.stats.rankdata's
                                                                              "average" method, exactly)

Rows of resamples are ranked together without sorting any of them: the values are coded once by their sorted
distinct values (``numpy.unique``), each row's count per code is one ``numpy.bincount`` over all rows, and a value's
rank is read from its row's cumulative counts. Every number involved is an integer or a half, so the ranks are
exact, equal to ``scipy.stats.rankdata`` to the last bit; and this module needs no ``scipy.stats``, whose import
alone (~1 s) was a tenth of an lm-eval run's own time.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


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


def resample_ranks(values, indices: np.ndarray) -> np.ndarray:
    """Average ranks of ``values[indices]`` along the last axis: ``indices`` is a (B, m) array of positions into the
    1-D ``values`` (one resample per row), or 1-D (one row). Values must not be NaN.

    >>> resample_ranks([5, 1, 3], np.array([[0, 0, 1], [2, 1, 0]])).tolist()
    [[2.5, 2.5, 1.0], [2.0, 1.0, 3.0]]
    """
    x = np.asarray(values, dtype=float)
    idx = np.asarray(indices)
    rows = idx.reshape(-1, idx.shape[-1]) if idx.ndim else idx.reshape(1, 1)
    distinct, codes = np.unique(x, return_inverse=True)
    k = distinct.size
    coded = codes.reshape(-1)[rows]  # (B, m): each drawn value's code
    counts = np.bincount((coded + k * np.arange(len(rows))[:, None]).ravel(), minlength=k * len(rows))
    counts = counts.reshape(len(rows), k)
    below = np.cumsum(counts, axis=1) - counts  # per row: how many drawn values lie below each code
    ranks = np.take_along_axis(below, coded, axis=1) + (np.take_along_axis(counts, coded, axis=1) + 1) / 2
    return ranks.reshape(idx.shape)


def average_ranks(values) -> np.ndarray:
    """Average ranks of a 1-D sequence (``scipy.stats.rankdata(values)``).

    >>> average_ranks([10, 20, 20, 30]).tolist()
    [1.0, 2.5, 2.5, 4.0]
    """
    x = np.asarray(values, dtype=float)
    return resample_ranks(x, np.arange(x.size))


def rank_correlation(predictions, references) -> float:
    """Spearman's rho as ``scipy.stats.spearmanr(predictions, references).statistic`` computes it (the Pearson
    correlation of the average ranks, ``numpy.corrcoef`` over the two columns); NaN where an input holds NaN or is
    constant (no correlation defined).

    >>> rank_correlation([1, 2, 3], [1, 3, 2])
    0.5
    >>> rank_correlation([1, 1, 1], [1, 2, 3])
    nan
    """
    p, g = np.asarray(predictions, dtype=float), np.asarray(references, dtype=float)
    if np.isnan(p).any() or np.isnan(g).any():
        return float("nan")
    ranked = np.column_stack((average_ranks(p), average_ranks(g)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.corrcoef(ranked, rowvar=False)[1, 0])
