"""Pairwise agreement with human preferences, asked in both orders (CritiqueLLM, Ke et al. 2023), x100.

Each pair is judged twice: forward (response 1 shown as A) and reverse (response 2 shown as A). With g the human
label for the forward order (A, B, or C for a tie), f and r the two verdicts, and swap(A)=B, swap(B)=A, swap(C)=C:

    consistency = mean[ f in {A,B,C}  and  r == swap(f) ]
    agreement   = mean[ f in {A,B,C}  and  r == swap(f)  and  f == g ]

as the paper's released evaluation script counts them: a pair agrees only if both orders give the human's
preference (a tie only when both say tie). An unparsed verdict (None) makes its pair inconsistent and not agreeing.
"""

from __future__ import annotations

from typing import Sequence

# the same order-swap and consistency rule as CriticBench's comparison (one definition: ``pairwise``)
from critic_tasks.core.metrics.pairwise import pair_consistent


def agreement_metrics(forward: Sequence[str | None], reverse: Sequence[str | None],
                      gold: Sequence[str]) -> dict[str, float]:
    """``agreement`` and ``consistency`` x100 over aligned pairs (0 for no pairs).

    Pair 1 (A, B) is consistent and agrees with A; pair 2 (C, C) is consistent but the human said A; pair 3 (B, B)
    names the same slot twice: consistency 2/3, agreement 1/3:

    >>> values = agreement_metrics(["A", "C", "B"], ["B", "C", "B"], ["A", "A", "B"])
    >>> {k: round(v, 2) for k, v in values.items()}
    {'agreement': 33.33, 'consistency': 66.67}
    """
    n = len(gold)
    if not (len(forward) == len(reverse) == n):
        raise ValueError("forward, reverse and gold must have one entry per pair")
    if n == 0:
        return {"agreement": 0.0, "consistency": 0.0}
    cons = [pair_consistent(f, r) for f, r in zip(forward, reverse)]
    return {"agreement": 100.0 * sum(c and f == g for c, f, g in zip(cons, forward, gold)) / n,
            "consistency": 100.0 * sum(cons) / n}
