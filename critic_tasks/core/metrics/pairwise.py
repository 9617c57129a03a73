"""Order-swapped comparison accuracy (CriticBench comparison dimension), x100.

Each pair is asked twice: forward (A, B) and reverse (B, A). With gold label g
for the forward order, f the forward verdict and r the reverse verdict, and
swap(A)=B, swap(B)=A, swap(C)=C:

    accuracy        = mean[ f != r  and  f == g  and  r == swap(g) ]      (the paper's rule, Lan et al. 2024 §4.1)
    accuracy_loose  = mean[ f, r in {A,B,C}  and  f != r  and  f == g ]   (the released toolkit's rule)
    consistency     = mean[ f, r in {A,B,C}  and  r == swap(f) ]

Under the paper's rule a pair counts only if the two verdicts differ and both match the label, so a gold tie
(C, whose swap is C) never counts; the toolkit's rule, with which the published leaderboard was computed, also
accepts "A then C" for gold A. A missing (unparsed) verdict makes the pair wrong and inconsistent.
"""

from __future__ import annotations

from typing import Sequence

VALID = {"A", "B", "C"}
SWAP = {"A": "B", "B": "A", "C": "C"}


def swap_verdict(verdict: str | None) -> str | None:
    """The same judgement after the two responses trade places.

    >>> swap_verdict("A"), swap_verdict("C"), swap_verdict(None)
    ('B', 'C', None)
    """
    return SWAP.get(verdict) if verdict else None


def pair_correct(forward: str | None, reverse: str | None, gold: str) -> bool:
    """The paper's rule: both orders give the gold verdict.

    >>> pair_correct("A", "B", "A"), pair_correct("A", "C", "A"), pair_correct("C", "C", "C")
    (True, False, False)
    """
    return forward != reverse and forward == gold and reverse == swap_verdict(gold)


def pair_correct_loose(forward: str | None, reverse: str | None, gold: str) -> bool:
    """The toolkit's rule: the forward verdict is gold and the reverse one differs.

    >>> pair_correct_loose("A", "C", "A"), pair_correct_loose("A", None, "A")
    (True, False)
    """
    return forward in VALID and reverse in VALID and forward != reverse and forward == gold


def pair_consistent(forward: str | None, reverse: str | None) -> bool:
    """The reverse verdict is the swap of the forward one.

    >>> pair_consistent("A", "B"), pair_consistent("C", "C"), pair_consistent("A", "A")
    (True, True, False)
    """
    return forward in VALID and reverse == swap_verdict(forward)


def pairwise_metrics(
    forward: Sequence[str | None], reverse: Sequence[str | None], gold: Sequence[str]
) -> dict[str, float]:
    """All three rates x100 over aligned lists of pairs.

    Gold A three times; pair 1 (A, B) counts everywhere, pair 2 (A, C) only loosely, pair 3 (B, A) is consistent
    but wrong: accuracy 1/3, accuracy_loose 2/3, consistency 2/3:

    >>> values = pairwise_metrics(["A", "A", "B"], ["B", "C", "A"], ["A", "A", "A"])
    >>> {k: round(v, 2) for k, v in values.items()}
    {'accuracy': 33.33, 'accuracy_loose': 66.67, 'consistency': 66.67}
    """
    n = len(gold)
    if not (len(forward) == len(reverse) == n):
        raise ValueError("forward, reverse and gold must have one entry per pair")
    if n == 0:
        return {"accuracy": 0.0, "accuracy_loose": 0.0, "consistency": 0.0}
    return {
        "accuracy": 100.0 * sum(map(pair_correct, forward, reverse, gold)) / n,
        "accuracy_loose": 100.0 * sum(map(pair_correct_loose, forward, reverse, gold)) / n,
        "consistency": 100.0 * sum(map(pair_consistent, forward, reverse)) / n,
    }
