"""Judge-bias lines of a pairwise task asked in both orders (CriticEval comparison, CritiqueLLM pairwise,
JudgeBench), x100, over the pairs whose two orders are both in the records.

With f the forward verdict, r the reverse verdict (each in the labels of its own order: A = the response shown
first), g the label of the forward order, swap(A) = B, swap(B) = A, swap(C) = C, and response 1 the one the forward
order shows first:

    first_position = 100 * #(A among the decided verdicts f, r) / #(decided verdicts f, r)     (decided: A or B)
    length_bias    = 100 * mean over the decided verdicts v in (f, swap(r)) of pairs whose label g is A or B and
                     whose two responses differ in length:  [v names the longer]  -  [g names the longer]

``first_position`` is 50 for a critic that does not care which slot a response is in (the two orders put each
response in the first slot once) and 100 for one that always names the first. ``length_bias`` is the share of the
critic's verdicts choosing the longer response minus the share of the labels choosing it, on the same verdicts (so
the two shares are over one set: the critic's ties and unread replies and the labels' ties leave both): 0 for a
critic that picks the longer response as often as the labels do, positive where it picks it more often; a critic
that always picks the longer scores 100 minus the labels' longer rate. Lengths are characters of the two responses'
texts (``response_lengths``, kept in each record as ``lengths``); a record without them (a log written before they
were kept) leaves its pair out. Both are pooled ratios over pairs (``pooled``) with no value (None) where nothing
counts, and their bootstrap intervals resample pairs with both counts together (``pooled_interval``).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from critic_tasks.core.metrics.bootstrap import BootstrapSettings, percentile_interval, ratio_replicates
from critic_tasks.core.metrics.pairwise import swap_verdict

DECIDED = ("A", "B")
BASES = ("first_position", "length_bias")


def response_lengths(first, second) -> tuple[int, int] | None:
    """The characters of the two responses as one order shows them (A, B); None where a text is missing.

    >>> response_lengths("ab", "abcd"), response_lengths("ab", None)
    ((2, 4), None)
    """
    return (len(first), len(second)) if isinstance(first, str) and isinstance(second, str) else None


def both_orders(records: Iterable) -> list[tuple]:
    """(forward verdict, reverse verdict, forward label, lengths of response 1 and 2) of each pair whose two orders
    are both among ``records`` (any records with ``pair_id``, ``order``, ``verdict``, ``gold`` and ``lengths``), in
    pair-id order; lengths None where neither order kept them."""
    by_id: dict[str, dict] = {}
    for r in records:
        pair = by_id.setdefault(r.pair_id, {"gold": r.gold, "lengths": None})
        pair[r.order] = r.verdict
        lengths = getattr(r, "lengths", None)
        if lengths is not None and pair["lengths"] is None:
            pair["lengths"] = tuple(lengths) if r.order == "forward" else (lengths[1], lengths[0])
    return [(p["forward"], p["reverse"], p["gold"], p["lengths"])
            for _, p in sorted(by_id.items()) if "forward" in p and "reverse" in p]


def first_slot_counts(forward: str | None, reverse: str | None) -> tuple[int, int]:
    """(verdicts naming the response shown first, decided verdicts) of one pair.

    >>> first_slot_counts("A", "A"), first_slot_counts("A", "B"), first_slot_counts("C", None)
    ((2, 2), (1, 2), (0, 0))
    """
    decided = [v for v in (forward, reverse) if v in DECIDED]
    return decided.count("A"), len(decided)


def longer_counts(forward: str | None, reverse: str | None, gold: str | None,
                  lengths: tuple[int, int] | None) -> tuple[int, int]:
    """(sum over the pair's decided verdicts of [verdict names the longer] - [label names the longer], how many
    verdicts count); (0, 0) where the label is a tie or missing, or the lengths are equal or unknown.

    Response 2 is longer and the label names response 1: a critic naming response 2 in both orders counts +1 twice;
    one naming response 1 forward and nothing reversed counts 0 once:

    >>> longer_counts("B", "A", "A", (3, 9)), longer_counts("A", None, "A", (3, 9)), longer_counts("A", "B", "C", (3, 9))
    ((2, 2), (0, 1), (0, 0))
    """
    if lengths is None or lengths[0] == lengths[1] or gold not in DECIDED:
        return 0, 0
    longer = "A" if lengths[0] > lengths[1] else "B"  # in the forward order's labels
    label_longer = gold == longer
    counted = [v for v in (forward, swap_verdict(reverse)) if v in DECIDED]  # the reverse verdict read forward
    return sum((v == longer) - label_longer for v in counted), len(counted)


def counts(base: str, pairs: Sequence[tuple]) -> list[tuple[int, int]]:
    """Each pair's (numerator, denominator) of ``base`` (first_position | length_bias)."""
    if base == "first_position":
        return [first_slot_counts(f, r) for f, r, _, _ in pairs]
    if base == "length_bias":
        return [longer_counts(f, r, g, lengths) for f, r, g, lengths in pairs]
    raise ValueError(f"unknown bias line {base!r}: expected one of {BASES}")


def pooled(per_pair: Sequence[tuple[int, int]]) -> float | None:
    """100 * sum of numerators / sum of denominators; None where no verdict counts.

    >>> pooled([(2, 2), (0, 1)]), pooled([(0, 0)])
    (66.66666666666667, None)
    """
    total = sum(d for _, d in per_pair)
    return 100.0 * sum(n for n, _ in per_pair) / total if total else None


def pooled_interval(per_pair: Sequence[tuple[int, int]],
                    settings: BootstrapSettings) -> tuple[float, float] | None:
    """The percentile bootstrap interval of ``pooled``: pairs resampled with their two counts together."""
    kept = [(n, d) for n, d in per_pair if d]  # a pair with nothing counted adds nothing to either sum
    if not kept:
        return None
    replicates = ratio_replicates([n for n, _ in kept], [d for _, d in kept], settings)
    low, high = percentile_interval(100.0 * replicates, settings.level)
    return low, high


def bias_value(base: str, records: Iterable) -> float | None:
    """``first_position`` or ``length_bias`` over the records one metric key accepts."""
    return pooled(counts(base, both_orders(records)))


def bias_interval(base: str, records: Iterable, settings: BootstrapSettings) -> tuple[float, float] | None:
    return pooled_interval(counts(base, both_orders(records)), settings)


def line(base: str) -> Callable[[Iterable], float | None]:
    """The metric function of one bias line, for a family's ``METRICS`` (the three pairwise families share it)."""
    counts(base, [])  # an unknown base fails here, when the family's table is built

    def value(records):
        return bias_value(base, records)

    value.__name__ = f"bias_{base}"
    return value
