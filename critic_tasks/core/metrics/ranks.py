"""Average ranks (ties get the mean of the ranks they span), in numpy: the ranks Spearman's rho correlates.

    rank(x_i) = #{j : x_j < x_i} + (#{j : x_j = x_i} + 1) / 2                 (1-based; scipy.stats.rankdata's
                                                                              "average" method, exactly)

Rows of resamples are ranked together without sorting any of them: the values are coded once by their sorted
distinct values (``numpy.unique``), each row's count per code is one ``numpy.bincount`` over all rows, and a value's
rank is read from its row's cumulative counts. Every number involved is an integer or a half, so the ranks are
exact, equal to ``scipy.stats.rankdata`` to the last bit; and this module needs no ``scipy.stats``, whose import
alone (~1 s) was a tenth of an lm-eval run's own time.
"""

from __future__ import annotations

import numpy as np


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
