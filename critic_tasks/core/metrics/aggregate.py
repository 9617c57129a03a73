"""The two averages every CriticBench number is built from, on the x100 scale where it is a share.

    rate(flags)            = 100 * (number of true flags) / (number of flags)       (0 for no flags)
    domain_mean(groups)    = mean over domains d of ( mean over the items of d )     (None for no items)

``domain_mean`` is the paper's "average over domains, unweighted": a domain with few items weighs as much as one
with many (Lan et al. 2024, Tables 2 and 3).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Iterable


def rate(flags: Iterable[bool]) -> float:
    """The share of true flags, x100 (0 for no flags).

    >>> rate([True, False, True, True])
    75.0
    >>> rate([])
    0.0
    """
    flags = list(flags)
    return 100.0 * sum(flags) / len(flags) if flags else 0.0


def domain_mean(pairs: Iterable[tuple[Hashable, float]]) -> float | None:
    """``pairs``: (domain, item value); the unweighted mean of the per-domain means, or None without items.

    math's two items average 0.5, chat's one 1.0; the domains weigh the same: (0.5 + 1.0) / 2:

    >>> domain_mean([("math", 1.0), ("math", 0.0), ("chat", 1.0)])
    0.75
    >>> domain_mean([]) is None
    True
    """
    by_domain: dict[Hashable, list[float]] = defaultdict(list)
    for domain, value in pairs:
        by_domain[domain].append(value)
    means = [sum(v) / len(v) for v in by_domain.values()]
    return sum(means) / len(means) if means else None
