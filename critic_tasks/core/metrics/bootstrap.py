"""Bootstrap confidence intervals, vectorised: all resamples of a metric in one numpy array.

The percentile bootstrap (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13): draw B resamples of
the n units with replacement, compute the statistic on each (theta*_1 .. theta*_B) and report the alpha/2 and
1 - alpha/2 quantiles of theta* as the interval at level 1 - alpha (numpy's linear quantile):

    resample         idx_b = n draws from the n units, uniform, with replacement       (b = 1..B)
    stratified       each stratum s (a domain) draws n_s units from its own n_s units, so it keeps its size
    mean / rate      theta*_b = mean_i x[idx_b,i]
    domain mean      theta*_b = mean_s ( mean_i x[idx_b^s,i] )                        (the paper's unweighted mean
                                                                                     of domain means; strata = domains)
    pooled Spearman  theta*_b = 100 * pearson(rank(p[idx_b]), rank(g[idx_b]))        (ties averaged; a resample with
                                                                                     a constant side gives 0, as the
                                                                                     point estimate does)

A unit is what the metric's own arithmetic counts once: an item, or a comparison pair with both of its orders (the
caller passes one value per pair). Resamples are drawn from ``numpy.random.default_rng(seed)``, so the same seed
gives the same interval. All B resamples are one (B, n) index array; the ranks of all of them come from one pass of
``ranks.resample_ranks`` (equal to ``scipy.stats.rankdata`` along axis 1, without sorting each row); nothing loops
over resamples in Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.metrics.spearman import resample_ranks
from critic_tasks.core.settings import read_flag, read_number

ENV_SWITCH, ENV_RESAMPLES, ENV_LEVEL, ENV_SEED = "CRITIC_CI", "CRITIC_CI_RESAMPLES", "CRITIC_CI_LEVEL", "CRITIC_CI_SEED"


@dataclass(frozen=True)
class BootstrapSettings:
    resamples: int = 1000
    level: float = 0.95
    seed: int = 0
    enabled: bool = True

    def __post_init__(self):
        if self.resamples < 1:
            raise ConfigError(f"{ENV_RESAMPLES}={self.resamples}: the number of bootstrap resamples must be >= 1")
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"{ENV_LEVEL}={self.level}: the interval level must be between 0 and 1 (e.g. 0.95)")


def settings_from_env(env=None) -> BootstrapSettings:
    """``CRITIC_CI`` (on | off; default on), ``CRITIC_CI_RESAMPLES`` (1000), ``CRITIC_CI_LEVEL`` (0.95),
    ``CRITIC_CI_SEED`` (0); a bad value is one ConfigError naming the variable.

    >>> settings_from_env({})
    BootstrapSettings(resamples=1000, level=0.95, seed=0, enabled=True)
    >>> settings_from_env({"CRITIC_CI": "off", "CRITIC_CI_RESAMPLES": "200"})
    BootstrapSettings(resamples=200, level=0.95, seed=0, enabled=False)
    """
    return BootstrapSettings(resamples=read_number(ENV_RESAMPLES, env), level=read_number(ENV_LEVEL, env),
                             seed=read_number(ENV_SEED, env), enabled=read_flag(ENV_SWITCH, env))


def resample_indices(strata: Sequence[Hashable], resamples: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One (B, n_s) index array per stratum (in sorted stratum order), each drawing from its own positions.

    >>> blocks = resample_indices(["a", "b", "a"], 4, np.random.default_rng(0))
    >>> [b.shape for b in blocks], set(blocks[0].ravel().tolist()) <= {0, 2}, set(blocks[1].ravel().tolist())
    ([(4, 2), (4, 1)], True, {1})
    """
    labels = np.asarray(strata, dtype=object)
    blocks = []
    for stratum in sorted(set(labels.tolist()), key=str):
        positions = np.flatnonzero(labels == stratum)
        blocks.append(positions[rng.integers(0, len(positions), size=(resamples, len(positions)))])
    return blocks


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """The (1 - level) / 2 and (1 + level) / 2 quantiles of the replicates (numpy's linear quantile).

    >>> percentile_interval(np.arange(5), 0.5)  # the 25th and 75th percentiles of 0..4
    (1.0, 3.0)
    """
    alpha = 1.0 - level
    low, high = np.quantile(np.asarray(replicates, dtype=float), [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


# A family's strata (each protocol's ``scoring.STRATA``, collected as ``registry.STRATA``): (record, the family's
# value) -> the stratum its interval resamples the record's unit within, '' for none. `critic-eval compare` draws
# its paired resamples within the same strata as the metric's own interval.


def unstratified(record, base: str) -> str:
    """No strata: every unit is drawn from all of them."""
    return ""


def by_pair(record, base: str) -> str:
    """A comparison pair's orders resampled together (``pair_id``): the unit of the pairwise families' intervals."""
    return f"pair {record.pair_id}" if getattr(record, "pair_id", "") else ""


def by_prompt(record, base: str) -> str:
    """A prompt's comparisons (or answers) resampled together (``prompt_id``)."""
    return f"prompt {record.prompt_id}" if getattr(record, "prompt_id", "") else ""


def by_domain(record, base: str) -> str:
    """Each domain (task, subset) resampled within itself: the value is a mean of the domains' means."""
    return record.domain


def mean_interval(values: Sequence[float], strata: Sequence[Hashable] | None = None,
                  settings: BootstrapSettings = BootstrapSettings()) -> tuple[float, float] | None:
    """Interval of ``mean(values)``, or with ``strata`` of the unweighted mean of the strata's means (each stratum
    resampled within itself). None without values.

    Every resample of a constant has the same mean; with strata, the two domains weigh the same, (1 + 3) / 2:

    >>> mean_interval([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> mean_interval([1.0, 1.0, 3.0], strata=["a", "a", "b"])
    (2.0, 2.0)
    >>> mean_interval([]) is None
    True
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return None
    rng = np.random.default_rng(settings.seed)
    blocks = resample_indices(np.zeros(x.size) if strata is None else strata, settings.resamples, rng)
    replicates = np.mean([x[idx].mean(axis=1) for idx in blocks], axis=0)
    return percentile_interval(replicates, settings.level)


def ratio_replicates(numerators: Sequence[float], denominators: Sequence[float],
                     settings: BootstrapSettings = BootstrapSettings()) -> np.ndarray:
    """The B bootstrap replicates of sum(numerators) / sum(denominators) (a pooled, micro-averaged rate), units
    resampled with their two counts together; 0 where a resample's denominator is 0. The same ``settings`` draw the
    same units for any two ratios over the same units, so replicates of two ratios can be combined (F1 of P and R).

    >>> ratio_replicates([1, 2], [2, 4], BootstrapSettings(resamples=3)).tolist()  # every unit is a half
    [0.5, 0.5, 0.5]
    """
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    rng = np.random.default_rng(settings.seed)
    (idx,) = resample_indices(np.zeros(num.size), settings.resamples, rng)
    top, bottom = num[idx].sum(axis=1), den[idx].sum(axis=1)
    return np.divide(top, bottom, out=np.zeros_like(top), where=bottom > 0)


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    num = (a * b).sum(axis=1)
    out = np.zeros(len(a))
    ok = denom > 1e-12 * np.maximum(1.0, np.abs(num))
    out[ok] = num[ok] / denom[ok]
    return np.clip(out, -1.0, 1.0)


def spearman_replicates(predictions: Sequence[float], references: Sequence[float],
                        settings: BootstrapSettings = BootstrapSettings()) -> np.ndarray:
    """The B bootstrap replicates of the pooled Spearman x100 (items resampled, prediction and label together).

    Predictions in the labels' order: each resample is +100, or 0 where it drew one item only (a constant side):

    >>> replicates = spearman_replicates([1, 2, 3], [10, 20, 30], BootstrapSettings(resamples=50))
    >>> replicates.shape, sorted(set(replicates.round(6).tolist())) in ([0.0, 100.0], [100.0])
    ((50,), True)
    """
    p, g = np.asarray(predictions, dtype=float), np.asarray(references, dtype=float)
    if p.shape != g.shape:
        raise ValueError(f"{p.size} predictions vs {g.size} references")
    rng = np.random.default_rng(settings.seed)
    (idx,) = resample_indices(np.zeros(p.size), settings.resamples, rng)
    return 100.0 * _rowwise_pearson(resample_ranks(p, idx), resample_ranks(g, idx))


def spearman_interval(predictions: Sequence[float], references: Sequence[float],
                      settings: BootstrapSettings = BootstrapSettings()) -> tuple[float, float] | None:
    """Interval of the pooled Spearman x100; None with fewer than 2 items (no correlation to resample).

    >>> spearman_interval([3, 1, 2], [3, 1, 2])[1]
    100.0
    >>> spearman_interval([1], [1]) is None
    True
    """
    if len(predictions) < 2:
        return None
    return percentile_interval(spearman_replicates(predictions, references, settings), settings.level)
