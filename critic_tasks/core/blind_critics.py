"""Critics that read nothing, in the answer shapes several protocols share: ratings on a scale, verdicts on a pair.

The chance line of a task (``critic_tasks.chance``) is what such critics score; a protocol's own chance module
(``protocols/<name>/chance.py``, named by its ``registry.Protocol``) builds its critics' replies and floor from the
pieces here, so that the orchestration never asks which protocol it is looking at.

* Canned replies: ``rating_replies`` (the midpoint, the bottom, a seeded random value, every value in one reply),
  ``length_ratings`` (the longer / shorter the rated text, the higher the rating: content-blind, not label-blind),
  ``verdict_replies`` (a tie, A, a seeded random verdict, every verdict in one reply).
* The comparison floor, exactly: ``FLOOR_CRITICS`` (each a distribution over a pair's (forward, reverse) verdicts),
  ``shown_pairs`` (each pair once, with its two responses' lengths), ``expected_pairwise`` (each critic's expected
  rate per rule, in fractions), ``best_of`` (the floor and the critic that sets it).
* The comparison family, exactly: ``blind_table_values`` (every verdict table over the blind features of one prompt:
  which slot shows the pair's first text by a hash, and which slot shows the longer text), ``best_tables`` (the
  tables that set a metric's best).
* The rating floor: ``rating_floor`` (0 for a correlation, 50 for its (x + 100) / 2 score, unless rating by length
  does better on the task's data); ``best_length_ratings``: the rating by length (longer or shorter rated higher)
  whose Spearman with the labels is the best of every monotone map of length onto the scale (``best_monotone_blocks``).
* Ratings by length for grouped correlations (CritiqueLLM's text and system level): ``best_text_level_blocks``
  (Spearman / Kendall, any number of levels), ``best_text_level_pearson`` (Pearson, integer ratings),
  ``text_level_pearson_bound`` (Pearson over real ratings: the bound, and a map that comes to it where one does),
  ``best_system_level_map``, ``best_text_level_threshold`` (two levels).
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

Rule = Callable[[str | None, str | None, str | None], bool]  # (forward verdict, reverse verdict, gold) -> counted


# ----------------------------------------------------------------------------- canned replies


def rating_replies(form: str, low: int, high: int, n: int, rng: random.Random) -> dict[str, list[str]]:
    """``constant`` (the scale's midpoint), ``always_first`` (its bottom), ``random`` (a uniform value from ``rng``)
    and ``every_label`` (every value of the scale in one reply), each written as ``form.format(value)``."""
    mid = (low + high) // 2
    return {"constant": [form.format(mid)] * n, "always_first": [form.format(low)] * n,
            "random": [form.format(rng.randint(low, high)) for _ in range(n)],
            "every_label": ["\n".join(form.format(v) for v in range(low, high + 1))] * n}


def length_ratings(form: str, low: int, high: int, texts: Sequence[str]) -> dict[str, list[str]]:
    """Two raters that read nothing but length: the longer the rated text, the higher (``longer``) or the lower
    (``shorter``) the rating, spread over the whole scale by the rank of its length among the distinct lengths."""
    lengths = [len(t) for t in texts]
    distinct = sorted(set(lengths))
    rank = {n: i / max(1, len(distinct) - 1) for i, n in enumerate(distinct)}
    longer = [round(low + rank[n] * (high - low)) for n in lengths]
    return {"longer": [form.format(v) for v in longer], "shorter": [form.format(low + high - v) for v in longer]}


def _average_ranks(values: Sequence[float]) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    sorted_values = np.asarray(values, dtype=float)[order]
    ranks = np.empty(len(values))
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = (start + end + 1) / 2
            start = end
    return ranks


def best_monotone_blocks(lengths: Sequence[int], labels: Sequence[float], levels: int) -> tuple[float, list[int]]:
    """The best Spearman (x100, 0 where undefined) with ``labels`` of a rating that is a non-decreasing function of
    ``lengths`` onto ``levels`` values, and each item's level (0-based) in that rating.

    Spearman is the Pearson correlation of average ranks, so such a rating is worth only its partition of the
    sorted distinct lengths into at most ``levels`` consecutive blocks: with nt items and the labels' centred ranks
    y, a block of the items ranked C_i+1 .. C_j by length adds N = a * sum(y) and D = n * a^2 to the numerator and to
    the rating's sum of squares, a = (C_i + C_j - nt) / 2 its centred average rank, n = C_j - C_i; rho = N /
    sqrt(D * sum(y^2)). The best ratio lies on the upper concave hull of the partitions' (D, N) points (a point off
    it is beaten by the tangent argument: N <= r* sqrt(D) <= r* sqrt(D*) / 2 + r* D / (2 sqrt(D*))), whose vertices
    each maximise N - lambda * D for some lambda > 0: a dynamic programme over blocks per lambda, lambdas found by
    splitting the hull between two vertices at the slope of their chord until no new vertex appears."""
    total = len(lengths)
    if total < 2 or len(set(labels)) < 2:
        return 0.0, [0] * total
    label_ranks = _average_ranks(labels)
    centred = label_ranks - (total + 1) / 2
    syy = float(centred @ centred)
    distinct = sorted(set(lengths))
    index = {n: i for i, n in enumerate(distinct)}
    m = len(distinct)
    counts = np.zeros(m)
    sums = np.zeros(m)
    for n, y in zip(lengths, centred):
        counts[index[n]] += 1
        sums[index[n]] += y
    cum_c = np.concatenate([[0.0], np.cumsum(counts)])
    cum_s = np.concatenate([[0.0], np.cumsum(sums)])
    a = (cum_c[:, None] + cum_c[None, :] - total) / 2  # block (i, j]: its centred average rank
    size = cum_c[None, :] - cum_c[:, None]
    block_n = a * (cum_s[None, :] - cum_s[:, None])
    block_d = size * a * a
    allowed = np.triu(np.ones((m + 1, m + 1), dtype=bool), 1)

    def solve(lam: float) -> tuple[float, float, tuple[int, ...]]:
        gain = np.where(allowed, block_n - lam * block_d, -np.inf)
        best = np.full(m + 1, -np.inf)
        best[0] = 0.0
        layers, choices = [], []
        for _ in range(min(levels, m)):
            options = best[:, None] + gain
            choice = options.argmax(axis=0)
            best = options[choice, np.arange(m + 1)]
            layers.append(best)
            choices.append(choice)
        k = int(np.argmax([layer[m] for layer in layers]))
        cuts, j = [m], m
        for layer in range(k, -1, -1):
            j = int(choices[layer][j])
            cuts.append(j)
        cuts = tuple(reversed(cuts))
        n_sum = sum(block_n[i, j] for i, j in zip(cuts, cuts[1:]))
        d_sum = sum(block_d[i, j] for i, j in zip(cuts, cuts[1:]))
        return float(n_sum), float(d_sum), cuts

    found: dict[tuple[int, ...], tuple[float, float]] = {}

    def hull(left, right, depth=0):  # left: the larger lambda (smaller D)
        (n1, d1, c1), (n2, d2, c2) = left, right
        if c1 == c2 or d2 <= d1 or depth > 60:
            return
        lam = (n2 - n1) / (d2 - d1)
        mid = solve(lam)
        found[mid[2]] = mid[:2]
        if mid[0] - lam * mid[1] > n1 - lam * d1 + 1e-9 * (1 + abs(n1) + lam * d1):
            hull(left, mid, depth + 1)
            hull(mid, right, depth + 1)

    scale = float(block_d.max()) or 1.0
    ends = [solve(0.0), solve(1e6 * float(np.abs(block_n).max() + 1) / 1e-9 / scale)]
    for end in ends:
        found[end[2]] = end[:2]
    hull(ends[1], ends[0])
    best_rho, best_cuts = 0.0, (0, m)
    for cuts, (n_sum, d_sum) in found.items():
        if d_sum > 0 and n_sum / np.sqrt(d_sum * syy) > best_rho:
            best_rho, best_cuts = n_sum / np.sqrt(d_sum * syy), cuts
    level_of = np.searchsorted(np.asarray(best_cuts[1:]), np.arange(m), side="right")
    return 100.0 * best_rho, [int(level_of[index[n]]) for n in lengths]


def best_length_ratings(form: str, low: int, high: int, texts: Sequence[str],
                        labels: Sequence[float | None]) -> dict[str, list[str]]:
    """``longer`` / ``shorter``: the ratings by length (the longer, or the shorter, the text, the higher) whose
    Spearman with the labels (the items with one) is the best of every monotone map of length onto ``low`` ..
    ``high`` (``best_monotone_blocks``); an item without a label is rated as the labelled lengths next below it
    (above it, where none is below). Without two distinct labels: ``length_ratings``."""
    known = [(len(t), float(y)) for t, y in zip(texts, labels) if y is not None]
    if len({y for _, y in known}) < 2:
        return length_ratings(form, low, high, texts)
    out = {}
    for name, sign in (("longer", 1), ("shorter", -1)):
        signed = [sign * n for n, _ in known]
        _, levels = best_monotone_blocks(signed, [y for _, y in known], high - low + 1)
        steps = sorted(set(zip(signed, levels)))
        ratings = []
        for text in texts:
            below = [lv for n, lv in steps if n <= sign * len(text)]
            ratings.append(low + (below[-1] if below else steps[0][1]))
        out[name] = [form.format(v) for v in ratings]
    return out


def verdict_replies(say: Callable[[str], str], n: int, rng: random.Random) -> dict[str, list[str]]:
    """``constant`` (a tie), ``always_first`` (A), ``random`` (a uniform verdict from ``rng``), ``every_label``
    (every verdict in one reply); ``say`` writes a verdict of the house alphabet (A, B, C = tie) as the protocol's
    parser reads it."""
    return {"constant": [say("C")] * n, "always_first": [say("A")] * n,
            "random": [say(rng.choice("ABC")) for _ in range(n)],
            "every_label": ["\n".join(say(v) for v in "ABC")] * n}


# ----------------------------------------------------------------------------- the comparison floor

# The content-blind critics whose best *expected* score is the floor of a comparison metric. Each sees a prompt at a
# time, never which order it is in, and reads nothing of quality: per pair, a distribution over (forward verdict,
# reverse verdict). A stateless critic can still answer the same in both orders by hashing the two texts, so the
# consistent ones are fair game.
FLOOR_CRITICS = ("coin", "label_prior", "always_tie", "always_first", "always_second", "longer", "shorter",
                 "uniform", "label_prior_each_order")
_VERDICTS = ("A", "B", "C")


def shown_pairs(docs: Sequence[dict], shown: Callable[[dict], tuple[str, str]]) -> list[dict]:
    """Each pair once (by ``pair_id``): its forward-order gold (``preference``), which orders it was asked in
    (``order``), and its two responses' lengths (response 1 is the one the forward order shows as A; ``shown``: a
    document's two responses as its prompt shows them, A then B)."""
    pairs: dict = {}
    for d in docs:
        order = d.get("order", "forward")
        a, b = shown(d)
        first, second = (a, b) if order == "forward" else (b, a)
        pair = pairs.setdefault(str(d.get("pair_id")), {"gold": d.get("preference"), "orders": set(),
                                                        "lengths": (len(first), len(second))})
        pair["orders"].add(order)
    return list(pairs.values())


def _outcomes(critic: str, lengths: tuple[int, int], tie_share: Fraction) -> list[tuple[Fraction, str, str]]:
    """``critic``'s (probability, forward verdict, reverse verdict) on one pair. A consistent critic's content
    verdict (response 1 / response 2 / tie) reads A / B / C forward and B / A / C reversed. The label prior is the
    gold verdicts' share over every prompt shown: a tie ``tie_share``, A and B alike (a pair is asked both ways)."""
    certain = Fraction(1)
    one, two, tie = (certain, "A", "B"), (certain, "B", "A"), (certain, "C", "C")
    side = (1 - tie_share) / 2
    prior = {"A": side, "B": side, "C": tie_share}
    if critic == "coin":
        return [(Fraction(1, 2), "A", "B"), (Fraction(1, 2), "B", "A")]
    if critic == "label_prior":
        return [(side, "A", "B"), (side, "B", "A"), (tie_share, "C", "C")]
    if critic == "always_tie":
        return [tie]
    if critic in ("always_first", "always_second"):
        verdict = "A" if critic == "always_first" else "B"
        return [(certain, verdict, verdict)]
    if critic in ("longer", "shorter"):
        first, second = lengths if critic == "longer" else (-lengths[0], -lengths[1])
        return [one if first > second else two if second > first else tie]  # equal lengths: a tie
    if critic == "uniform":
        return [(Fraction(1, 9), f, r) for f in _VERDICTS for r in _VERDICTS]
    if critic == "label_prior_each_order":
        return [(prior[f] * prior[r], f, r) for f in _VERDICTS for r in _VERDICTS]
    raise ValueError(f"unknown floor critic {critic!r}")


def expected_pairwise(pairs: Sequence[dict], rules: dict[str, Rule]) -> dict[str, dict[str, float]]:
    """Each floor critic's expected score x100 on each rate (``rules``: the per-pair rule a metric averages over
    pairs), exactly: the rates are means over pairs, so the expectation is the mean over pairs of each outcome's
    probability times the pair's rule (in fractions: a floor of 100 is 100, not 100 plus a rounding error). A pair
    asked in one order only has no verdict for the other (as the scorer counts it)."""
    tie_share = Fraction(sum(p["gold"] == "C" for p in pairs), max(1, sum(p["gold"] is not None for p in pairs)))
    out: dict[str, dict[str, float]] = {}
    for critic in FLOOR_CRITICS:
        totals = dict.fromkeys(rules, Fraction(0))
        for pair in pairs:
            for prob, forward, reverse in _outcomes(critic, pair["lengths"], tie_share):
                forward = forward if "forward" in pair["orders"] else None
                reverse = reverse if "reverse" in pair["orders"] else None
                for key, rule in rules.items():
                    totals[key] += prob * bool(rule(forward, reverse, pair["gold"]))
        out[critic] = {key: float(100 * total / max(1, len(pairs))) for key, total in totals.items()}
    return out


# ----------------------------------------------------------------------------- the family of verdict tables

# A blind critic sees one prompt: two texts in slots A and B. Without reading their quality it can still tell which
# slot shows the longer text (A longer, B longer, equal lengths) and, by hashing the two texts, which slot shows the
# pair's "first" text (a fixed but content-blind order of the pair: the same in both orders, so a critic keyed on it
# answers consistently; it is independent of the gold, so it names the better text on a fair coin). A deterministic
# blind critic is a table from these 2 x 3 features to a verdict A / B / C: 3^6 = 729 tables. They hold the constant
# verdicts, the positional ones, the longer / shorter answer, the consistent coin, and any verdict by length that
# differs by slot. The order (forward / reverse) is not a feature: the pair rule's gold rides on it (RM-Bench's and
# RewardBench's forward order always shows the chosen response as A), so a critic keyed on it reads the label.
#
# Mixtures, exactly: a metric that is a mean over pairs of a per-pair rule is linear in a per-pair mixture, so mixing
# two tables by a hash of the pair scores between them (the best is an endpoint). Mixing per prompt (each of a pair's
# two prompts picks table X with share 1 - p, Y with p, independently) is not linear: the expected pair score is
# (1 - p)^2 s(X) + p (1 - p) (s(Z1) + s(Z2)) + p^2 s(Y), where Z1 and Z2 answer the hashed-first prompt with one
# table and the other prompt with the other. Z1 and Z2 are tables of the family, and the four weights sum to 1, so
# the polynomial never exceeds the best table: over every share, the family's maximum is a table's score.
SIGNS = ("A longer", "B longer", "equal")
SLOTS = ("first shown as A", "first shown as B")
TABLES = tuple(itertools.product("ABC", repeat=len(SLOTS) * len(SIGNS)))


def table_name(table: Sequence[str]) -> str:
    """``table[slot * 3 + sign]`` written out, e.g. ``blind table: first shown as A -> A/B/C, first shown as B ->
    A/B/C (A longer/B longer/equal)``."""
    halves = (f"{slot} -> {'/'.join(table[3 * i:3 * i + 3])}" for i, slot in enumerate(SLOTS))
    return f"blind table: {', '.join(halves)} ({'/'.join(SIGNS)})"


def _sign(shown_a: int, shown_b: int) -> int:
    return 0 if shown_a > shown_b else 1 if shown_b > shown_a else 2


def blind_table_values(pairs: Sequence[dict], rules: dict[str, Rule]) -> dict[str, dict[str, Fraction]]:
    """Every table's expected score x100 on each rate (``rules``), exactly (fractions): per pair, the hashed-first
    text is response 1 or response 2 with probability 1/2 each; the forward prompt shows response 1 as A, the
    reverse one as B. Pairs are grouped by what the tables can tell apart (gold, lengths' sign, orders asked)."""
    groups: dict[tuple, int] = {}
    for pair in pairs:
        key = (pair["gold"], _sign(*pair["lengths"]), frozenset(pair["orders"]))
        groups[key] = groups.get(key, 0) + 1
    half = Fraction(1, 2)
    out: dict[str, dict[str, Fraction]] = {}
    for table in TABLES:
        totals = dict.fromkeys(rules, Fraction(0))
        for (gold, sign, orders), count in groups.items():
            reverse_sign = (1, 0, 2)[sign]
            for first_is_response_1 in (True, False):
                # forward: response 1 in slot A; the hashed-first text is in A iff it is response 1
                forward = table[3 * (0 if first_is_response_1 else 1) + sign] if "forward" in orders else None
                reverse = table[3 * (1 if first_is_response_1 else 0) + reverse_sign] if "reverse" in orders else None
                for key, rule in rules.items():
                    totals[key] += half * count * bool(rule(forward, reverse, gold))
        out[table_name(table)] = {key: 100 * total / max(1, len(pairs)) for key, total in totals.items()}
    return out


def best_tables(values: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The tables (of ``values``: table -> metric -> value) that set some metric's best, with all their values; the
    first table in ``TABLES`` order wins a tie."""
    keys = next(iter(values.values()), {})
    chosen = {max(values, key=lambda name: values[name][key]) for key in keys}
    return {name: {k: float(v) for k, v in values[name].items()} for name in values if name in chosen}


def best_of(floors: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, str]]:
    """Per metric, the best expected value among the critics and the critic that sets it (the critics' order
    breaks ties)."""
    chance: dict[str, float] = {}
    by: dict[str, str] = {}
    for key in next(iter(floors.values()), {}):
        best = max(floors, key=lambda critic: floors[critic][key])
        chance[key], by[key] = floors[best][key], best
    return chance, by


# ----------------------------------------------------------------------------- the rating floor


def two_constant_mixtures(labels: Sequence[float]) -> list[float]:
    """The exact expected Spearman x100 with ``labels`` of a mixture of two constant ratings, given that k of the
    n items got the higher one (k = 0 .. n), the k drawn blind to the labels (a hash: every k-subset alike).

    A two-level rating's average ranks take two values fixed by k, so the rating's sum of squares is fixed by k and
    only the numerator sum_i x_i y_i (y: the labels' centred ranks) varies with the draw: its expectation is
    sum_i E[x_i] y_i, E[x_i] = (k x_high + (n - k) x_low) / n, the mean of the centred ranks, 0. A mixture at share
    p draws k ~ Binomial(n, p), so its expectation is a convex combination of these values (k = 0 and n: a constant
    rating, 0 by the metric's convention) and no share beats the largest; each is 0 up to rounding."""
    total = len(labels)
    if total < 2 or len(set(labels)) < 2:
        return [0.0] * (total + 1)
    centred = _average_ranks(labels) - (total + 1) / 2
    syy = float(centred @ centred)
    out = [0.0]
    for k in range(1, total):
        low, high = (k + 1) / 2 - (total + 1) / 2, k + (total - k + 1) / 2 - (total + 1) / 2
        expected_x = (k * high + (total - k) * low) / total  # each item's expected centred rank over the draws
        sxx = k * high * high + (total - k) * low * low
        out.append(100.0 * float(expected_x * centred.sum()) / float(np.sqrt(sxx * syy)))
    return out + [0.0]


def rating_floor(keys: Sequence[str], values: dict[str, dict[str, float]]) -> tuple[dict, dict]:
    """The floor of each correlation key in ``keys`` (``spearman``, ``text_*`` / ``system_*``, and ``score`` =
    (x + 100) / 2): a rating that reads nothing is independent of the labels, so its expected correlation is 0
    (every permutation of its ratings is as likely; a constant one's is 0 by the metric's convention), 50 on the
    score; a rating by length alone (``values["longer"]`` / ``["shorter"]``, run through the scorer) reads no
    content either, and scores what it scores."""
    chance: dict[str, float] = {}
    by: dict[str, str] = {}
    for key in keys:
        chance[key] = 50.0 if key == "score" else 0.0
        by[key] = "any rating independent of the labels"
        for rater in ("longer", "shorter"):
            if values.get(rater, {}).get(key) is not None and values[rater][key] > chance[key]:
                chance[key], by[key] = values[rater][key], f"rating by length ({rater} rated higher)"
    return chance, by


# ----------------------------------------------------------------------------- ratings by length, grouped metrics

def _used_groups(lengths: Sequence[int], labels: Sequence[float], groups: Sequence) -> dict:
    """Group -> its items' indices, for the groups a text-level coefficient averages (two or more items, labels that
    differ: ``correlation.per_question``'s rule; the others are skipped whatever the ratings)."""
    by: dict = {}
    for i, g in enumerate(groups):
        by.setdefault(g, []).append(i)
    return {g: idx for g, idx in by.items() if len(idx) >= 2 and len({labels[i] for i in idx}) >= 2}


# seconds the integer programme of ``best_text_level_blocks`` may take: two responses a question (the released files)
# solve at once; many questions of four or more responses with lengths that interleave can take far longer
BLOCKS_SECONDS = 60.0


def best_text_level_blocks(lengths: Sequence[int], labels: Sequence[float], groups: Sequence,
                           coefficient: str) -> tuple[float, list[int], bool]:
    """The best text-level ``coefficient`` (``spearman`` or ``kendall``: the mean over groups of the per-group
    coefficient, ``correlation.text_level``) of a rating that is a non-decreasing function of ``lengths`` onto any
    number of values, and each item's level (0-based) in that rating.

    Both coefficients read only the order of the ratings, so such a rating is worth its partition of the sorted
    distinct lengths into consecutive blocks: a cut or not in each gap between two neighbouring lengths. A group sees
    only whether each gap between its own neighbouring lengths holds a cut (its pattern), and its coefficient is a
    function of that pattern (all merged: a constant rating, 0). The best partition is an integer programme, solved
    exactly (HiGHS through ``scipy.optimize.milp``, no gap allowed): a binary per global gap (cut), a binary per
    group and pattern (one pattern per group), and the pattern's gap j is cut exactly when one of the global gaps it
    spans is (at least every one of them, at most their sum); maximise the sum of the chosen patterns' values.
    The value is recomputed from the levels with ``correlation.text_level``; the third value says whether HiGHS
    proved it the maximum within ``BLOCKS_SECONDS`` (False: the best partition it found by then, or every gap cut
    where it found none: a member either way)."""
    from scipy import optimize, sparse

    from critic_tasks.core.metrics.correlation import correlations, text_level

    used = _used_groups(lengths, labels, groups)
    distinct = sorted({lengths[i] for idx in used.values() for i in idx})
    position = {n: i for i, n in enumerate(distinct)}
    gaps = max(0, len(distinct) - 1)
    rows, cols, data, lower, upper = [], [], [], [], []
    values: list[float] = []
    patterns: list[tuple] = []  # (group, mask) of each pattern variable, after the gap variables
    row = 0

    def constrain(entries, low, high):
        nonlocal row
        for col, coef in entries:
            rows.append(row)
            cols.append(col)
            data.append(coef)
        lower.append(low)
        upper.append(high)
        row += 1

    for g, idx in used.items():
        own = sorted({position[lengths[i]] for i in idx})
        inner = len(own) - 1
        if inner == 0:
            continue  # one length: rated alike whatever the map (0)
        first = gaps + len(patterns)
        for mask in range(1 << inner):
            level_of = {p: bin(mask & ((1 << j) - 1)).count("1") for j, p in enumerate(own)}
            found = correlations([float(level_of[position[lengths[i]]]) for i in idx], [labels[i] for i in idx])
            values.append(found[coefficient] if found else 0.0)
            patterns.append((g, mask))
        constrain([(first + mask, 1.0) for mask in range(1 << inner)], 1, 1)
        for j in range(inner):
            chosen = [(first + mask, 1.0) for mask in range(1 << inner) if mask >> j & 1]
            spanned = range(own[j], own[j + 1])
            for gap in spanned:
                constrain([*chosen, (gap, -1.0)], 0, np.inf)
            constrain([*chosen, *((gap, -1.0) for gap in spanned)], -np.inf, 0)
    levels_of_gaps = [0] * gaps
    proven = True
    if patterns:
        size = gaps + len(patterns)
        matrix = sparse.csr_array((data, (rows, cols)), shape=(row, size))
        found = optimize.milp(np.concatenate([np.zeros(gaps), -np.asarray(values)]), integrality=np.ones(size),
                              bounds=optimize.Bounds(0, 1),
                              constraints=optimize.LinearConstraint(matrix, lower, upper),
                              options={"mip_rel_gap": 0.0, "time_limit": BLOCKS_SECONDS})
        # no partition found in time: every gap cut (the lengths' own order), a member as good as any to fall back on
        levels_of_gaps = [1] * gaps if found.x is None else [int(round(v)) for v in found.x[:gaps]]
        proven = found.status == 0
    level = np.concatenate([[0], np.cumsum(levels_of_gaps)]).astype(int) if distinct else np.zeros(0, int)
    # an item outside the averaged questions is rated as the lengths next below it (the lowest rating below them
    # all), so the rating stays a monotone map of length over every item (the system level reads them all)
    below = np.searchsorted(np.asarray(distinct), np.asarray(lengths), side="right") - 1
    item_levels = [int(level[max(0, int(j))]) if distinct else 0 for j in below]
    if not used:
        return 0.0, item_levels, True
    scored = [i for idx in used.values() for i in idx]
    value = text_level([float(item_levels[i]) for i in scored], [labels[i] for i in scored],
                       [groups[i] for i in scored])[coefficient]
    return value, item_levels, proven


def _increment_patterns(inner: int, span: int) -> np.ndarray:
    """Every vector of ``inner`` non-negative integers summing to at most ``span`` (stars and bars: C(span + inner,
    inner) rows), the all-zero one first."""
    rows = [np.diff(np.asarray((-1, *bars))) - 1 for bars in itertools.combinations(range(span + inner), inner)]
    return np.asarray(rows, dtype=int).reshape(-1, inner)


def _pattern_pearsons(positions: Sequence[int], labels: Sequence[float], patterns: np.ndarray) -> np.ndarray:
    """Pearson x100 of each increment pattern's ratings with ``labels`` (an item at own position p is rated the sum
    of the pattern's first p increments), 0 where the ratings are constant (``text_level`` counts such a question
    as 0)."""
    levels = np.concatenate([np.zeros((len(patterns), 1), dtype=int), np.cumsum(patterns, axis=1)], axis=1)
    x = levels[:, np.asarray(positions)].astype(float)
    x -= x.mean(axis=1, keepdims=True)
    y = np.asarray(labels, dtype=float)
    y = y - y.mean()
    spread = np.sqrt((x * x).sum(axis=1)) * np.sqrt(y @ y)
    return np.where(spread > 0, 100.0 * (x @ y) / np.where(spread > 0, spread, 1.0), 0.0)


# patterns (binaries) the text-level Pearson programme may hold: 2 x 11,440 per question of eight distinct lengths
# (AlignBench's eight models) would build a programme HiGHS cannot close; past this the best two-level map stands
PATTERNS_LIMIT = 200_000


def best_text_level_pearson(lengths: Sequence[int], labels: Sequence[float], groups: Sequence,
                            span: int) -> tuple[float, list[int], str | None]:
    """The best text-level Pearson (the mean over groups of the per-group Pearson, ``correlation.text_level``) of a
    rating that is a non-decreasing function of ``lengths`` onto the integers 0 .. ``span`` (``lengths`` signed by
    the caller), each item's rating in that map, and None where HiGHS proved it the maximum, else why not (a member
    still: the better of the best map found within ``BLOCKS_SECONDS`` and the best two-level map,
    ``best_text_level_threshold``; more than ``PATTERNS_LIMIT`` patterns: the latter, unsolved).

    Such a map is an integer increment D_g >= 0 at each gap g between the sorted distinct lengths, sum D <= span. A
    group sees only the sums of D over the gaps between its own neighbouring lengths (its pattern e: non-negative
    integers, sum <= span), and its Pearson is a function of e alone (all zero: rated alike, 0). So the best map is a
    linear integer programme (``scipy.optimize.milp``, no gap allowed): D integer; a binary per group and pattern, one
    chosen per group; each of the group's gap sums of D equals the chosen pattern's entry (one equality per group and
    own gap); maximise the sum of the chosen patterns' Pearsons. A group of k distinct lengths has C(span + k - 1,
    k - 1) patterns (span 9: 10, 55, 220, 715 for k = 2 .. 5), except that a group of two distinct lengths is rated
    two values whatever they are, so its Pearson reads only whether its one gap sum is 0: two patterns (sum 0; sum
    between 1 and span). Global gaps that the same set of group gaps spans are interchangeable (only their sum is
    seen) and are merged into one variable. The value is recomputed from the ratings with
    ``correlation.text_level``."""
    from scipy import optimize, sparse

    from critic_tasks.core.metrics.correlation import text_level

    used = _used_groups(lengths, labels, groups)
    distinct = sorted({lengths[i] for idx in used.values() for i in idx})
    position = {n: i for i, n in enumerate(distinct)}
    gaps = max(0, len(distinct) - 1)
    own_gaps: list[tuple[int, int]] = []  # each group gap's global gaps (first, last + 1)
    group_patterns: list[tuple[list[int], np.ndarray, np.ndarray]] = []  # its own gaps (indices), patterns, values
    for idx in used.values():
        own = sorted({position[lengths[i]] for i in idx})
        if len(own) < 2:
            continue  # one length: rated alike whatever the map (0)
        where = {p: j for j, p in enumerate(own)}
        patterns = _increment_patterns(len(own) - 1, 1 if len(own) == 2 else span)
        values = _pattern_pearsons([where[position[lengths[i]]] for i in idx], [labels[i] for i in idx], patterns)
        group_patterns.append((list(range(len(own_gaps), len(own_gaps) + len(own) - 1)), patterns, values))
        own_gaps.extend((own[j], own[j + 1]) for j in range(len(own) - 1))
    # merge the global gaps spanned by the same group gaps: only their sum is seen
    spanned_by: dict[int, list[int]] = {g: [] for g in range(gaps)}
    for r, (low, high) in enumerate(own_gaps):
        for g in range(low, high):
            spanned_by[g].append(r)
    classes: dict[tuple, list[int]] = {}
    for g in range(gaps):
        if spanned_by[g]:
            classes.setdefault(tuple(spanned_by[g]), []).append(g)
    members = list(classes.values())
    in_gap: dict[int, list[int]] = {}  # group gap -> the merged variables it sums
    for c, rows in enumerate(classes):
        for r in rows:
            in_gap.setdefault(r, []).append(c)
    increments = [0] * gaps
    unproven = None
    count = sum(len(p) for _, p, _ in group_patterns)
    if count > PATTERNS_LIMIT:
        unproven = f"{count} patterns, over {PATTERNS_LIMIT}: the best two-level map"
    elif group_patterns:
        entries: list[tuple[int, int, float]] = []
        lower: list[float] = []
        upper: list[float] = []

        def constrain(terms, low, high):
            entries.extend((len(lower), col, coef) for col, coef in terms)
            lower.append(low)
            upper.append(high)

        constrain([(c, 1.0) for c in range(len(members))], 0, span)
        col = len(members)
        for rows, patterns, _ in group_patterns:
            chosen = range(col, col + len(patterns))
            constrain([(z, 1.0) for z in chosen], 1, 1)
            sums = [[(c, 1.0) for c in in_gap[r]] for r in rows]
            if len(rows) == 1 and len(patterns) == 2:  # two lengths: the second pattern is any sum from 1 to span
                constrain([*sums[0], (col + 1, -1.0)], 0, np.inf)
                constrain([*sums[0], (col + 1, -float(span))], -np.inf, 0)
            else:
                for j, terms in enumerate(sums):
                    constrain([*terms, *((z, -float(patterns[z - col, j])) for z in chosen if patterns[z - col, j])],
                              0, 0)
            col += len(patterns)
        values = np.concatenate([v for _, _, v in group_patterns])
        matrix = sparse.csr_array(([e[2] for e in entries], ([e[0] for e in entries], [e[1] for e in entries])),
                                  shape=(len(lower), col))
        found = optimize.milp(np.concatenate([np.zeros(len(members)), -values]), integrality=np.ones(col),
                              bounds=optimize.Bounds(0, np.concatenate([np.full(len(members), span),
                                                                        np.ones(len(values))])),
                              constraints=optimize.LinearConstraint(matrix, lower, upper),
                              # presolve reduces nothing here and took 3 of 11 s on 12 questions of four
                              options={"mip_rel_gap": 0.0, "time_limit": BLOCKS_SECONDS, "presolve": False})
        if found.x is not None:
            for c, gaps_of_class in enumerate(members):
                increments[gaps_of_class[0]] = int(round(found.x[c]))
        if found.status != 0:
            unproven = f"the best found in {BLOCKS_SECONDS:g} s"
    level = np.concatenate([[0], np.cumsum(increments)]).astype(int) if distinct else np.zeros(0, int)
    # an item outside the averaged questions is rated as the lengths next below it (the lowest rating below them
    # all), so the rating stays a monotone map of length over every item (the system level reads them all)
    below = np.searchsorted(np.asarray(distinct), np.asarray(lengths), side="right") - 1
    item_levels = [int(level[max(0, int(j))]) if distinct else 0 for j in below]
    if not used:
        return 0.0, item_levels, None
    scored = [i for idx in used.values() for i in idx]
    value = text_level([float(item_levels[i]) for i in scored], [labels[i] for i in scored],
                       [groups[i] for i in scored])["pearson"]
    if unproven is not None:  # not proven best: a two-level map (0 / span) may still do better
        two_value, two_levels = best_text_level_threshold(lengths, labels, groups, "pearson")
        if two_value > value:
            value, item_levels = two_value, [span * v for v in two_levels]
    return value, item_levels, unproven

def text_level_pearson_bound(lengths: Sequence[int], labels: Sequence[float],
                             groups: Sequence) -> tuple[float, list[float] | None, bool]:
    """The most a rating that is a non-decreasing function of ``lengths`` onto real values can score on the
    text-level Pearson (x100); where maps come as close to it as one likes, such a map (each item's rating, in
    [0, 1]), else None; and whether that map reaches it exactly (False: it comes close, the bound is a supremum).

    Each group alone: its centred ratings are B s, B's column j the centred step "above its own gap j", s >= 0 its
    own increments, and the best cosine with its centred labels h is |P| / |h|, P the projection of h on the cone
    {B s : s >= 0} (``scipy.optimize.nnls``), reached only along that projection's increments s* (B has full column
    rank; a cosine equals |P| / |h| only at multiples of P). The mean over groups is the bound: no map does better on
    any group. Maps approach it where global increments t(eps) = t_0 + eps t_1 + eps^2 t_2 + ..., every t_k >= 0,
    give each group with a positive best a leading term along its s* (and never touch a group whose best is 0):
    as eps goes to 0 each group's ratings turn to its best. Layer by layer, a linear programme
    (``scipy.optimize.linprog``) finds the t_k that brings the most groups not yet placed to multiples c_q s* of
    their s* while leaving the others not yet placed untouched (feasible t_k form a cone: maximising the sum of
    min(c_q, 1) places at once every group that any t_k can); the layers end when every group is placed (the bound
    holds as a supremum; one layer: reached), or when one places none (None: the bound may be out of reach). The map
    returned takes the eps of 1e-3, 1e-4, ... 1e-6 that comes closest (eps^(K-1) >= 1e-12, so that 15 decimals of a
    reply hold its smallest steps); its value is recomputed by the caller."""
    from scipy import optimize, sparse

    used = _used_groups(lengths, labels, groups)
    distinct = sorted({lengths[i] for idx in used.values() for i in idx})
    position = {n: i for i, n in enumerate(distinct)}
    gaps = max(0, len(distinct) - 1)
    bests: list[float] = []
    placing: list[tuple[list[tuple[int, int]], np.ndarray | None]] = []  # own gaps' global spans, s* (None: best 0)
    for idx in used.values():
        own = sorted({position[lengths[i]] for i in idx})
        if len(own) < 2:
            bests.append(0.0)
            continue
        steps = np.asarray([[float(position[lengths[i]] > p) for p in own[:-1]] for i in idx])
        steps -= steps.mean(axis=0)
        centred = np.asarray([labels[i] for i in idx], dtype=float)
        centred -= centred.mean()
        increments, _ = optimize.nnls(steps, centred)
        positive = bool(np.any(increments > 0))
        bests.append(100.0 * float(np.linalg.norm(steps @ increments) / np.linalg.norm(centred)) if positive else 0.0)
        spans = [(own[j], own[j + 1]) for j in range(len(own) - 1)]
        placing.append((spans, increments / increments.max() if positive else None))
    bound = float(np.mean(bests)) if bests else 0.0
    if gaps == 0:
        return bound, None, False
    waiting = [q for q, (_, star) in enumerate(placing) if star is not None]
    untouched = [q for q, (_, star) in enumerate(placing) if star is None]
    layers: list[np.ndarray] = []
    while waiting:
        rows, cols, data, equations = [], [], [], 0
        for q in waiting + untouched:
            spans, star = placing[q]
            for j, (low, high) in enumerate(spans):
                for g in range(low, high):
                    rows.append(equations), cols.append(g), data.append(1.0)
                if q in waiting:
                    rows.append(equations), cols.append(gaps + waiting.index(q)), data.append(-float(star[j]))
                equations += 1
        n = len(waiting)
        equal = sparse.csr_array((data, (rows, cols)), shape=(equations, gaps + 2 * n))
        # maximise the sum of min(c_q, 1) (u_q <= c_q, u_q <= 1): a point of the cone placing one more group only
        # adds, so the optimum places every group any layer can place
        capped = sparse.hstack([sparse.csr_array((n, gaps)), -sparse.eye_array(n), sparse.eye_array(n)])
        found = optimize.linprog(np.concatenate([np.zeros(gaps + n), -np.ones(n)]), A_eq=equal,
                                 b_eq=np.zeros(equations), A_ub=capped, b_ub=np.zeros(n),
                                 bounds=[(0, None)] * (gaps + n) + [(0, 1)] * n, method="highs")
        if found.status != 0:
            return bound, None, False
        placed = [q for k, q in enumerate(waiting) if found.x[gaps + n + k] > 0.5]
        if not placed:
            return bound, None, False
        layer = np.maximum(found.x[:gaps], 0.0)
        layers.append(layer / layer.max())
        waiting = [q for q in waiting if q not in placed]
    below = np.searchsorted(np.asarray(distinct), np.asarray(lengths), side="right") - 1

    def rating(eps: float) -> list[float]:
        steps = sum(eps ** k * layer for k, layer in enumerate(layers)) if layers else np.zeros(gaps)
        level = np.concatenate([[0.0], np.cumsum(steps)])
        level = level / level[-1] if level[-1] > 0 else level
        return [float(level[max(0, int(j))]) for j in below]

    if len(layers) <= 1:
        return bound, rating(1.0), True
    from critic_tasks.core.metrics.correlation import text_level

    scored = [i for idx in used.values() for i in idx]

    def value(ratings: list[float]) -> float:
        return text_level([ratings[i] for i in scored], [labels[i] for i in scored],
                          [groups[i] for i in scored])["pearson"]

    # the last layer's steps are eps^(K-1) of the first: kept above 1e-12 so that a reply's decimals still carry them
    small = [k for k in range(3, 7) if k * (len(layers) - 1) <= 12] or [12 / (len(layers) - 1)]
    return bound, max((rating(10.0 ** -k) for k in small), key=value), False

def best_system_level_map(lengths: Sequence[int], labels: Sequence[float], groups: Sequence) -> tuple[float, list[float]]:
    """The best system-level Pearson (x100; ``correlation.system_level``: each group's mean rating against its mean
    label, across groups) of a rating that is a non-decreasing function of ``lengths`` onto real values, and each
    item's rating (in [0, 1]).

    Such a rating is a constant plus t_g >= 0 times the step "length above gap g", summed over the gaps between the
    sorted distinct lengths, so the groups' centred mean ratings are S t, S's column g the groups' centred shares of
    items above gap g. Pearson is the cosine of S t with the centred mean labels h, and the best cosine over the cone
    {S t : t >= 0} is that of h's projection onto the cone (a convex cone's projection P has h . P = |P|^2, and no
    member's cosine exceeds |P| / |h|): non-negative least squares (``scipy.optimize.nnls``, an active-set method
    that ends at the exact minimiser) finds it. The maximum is recomputed from the ratings with ``system_level``."""
    from scipy import optimize

    from critic_tasks.core.metrics.correlation import system_level

    names = list(dict.fromkeys(groups))
    distinct = sorted(set(lengths))
    position = {n: i for i, n in enumerate(distinct)}
    members = {g: [i for i, x in enumerate(groups) if x == g] for g in names}
    means = np.asarray([np.mean([labels[i] for i in members[g]]) for g in names])
    ratings = [0.0] * len(lengths)
    if len(names) < 2 or len(distinct) < 2 or len(set(means.tolist())) < 2:
        return 0.0, ratings
    above = np.asarray([[np.mean([position[lengths[i]] > gap for i in members[g]]) for gap in range(len(distinct) - 1)]
                        for g in names])
    steps, _ = optimize.nnls(above - above.mean(axis=0), means - means.mean())
    if not np.any(steps > 0):
        return 0.0, ratings
    level = np.concatenate([[0.0], np.cumsum(steps)])
    level = level / level[-1]
    ratings = [float(level[position[n]]) for n in lengths]
    return system_level(ratings, labels, groups)["pearson"], ratings


def best_text_level_threshold(lengths: Sequence[int], labels: Sequence[float], groups: Sequence,
                              coefficient: str) -> tuple[float, list[int]]:
    """The best text-level ``coefficient`` of a two-level rating by length (the higher rating from a threshold on,
    ``lengths`` signed by the caller), and each item's level (0 / 1). A two-level rating's correlations do not
    depend on which two values it uses (Pearson is unchanged by an increasing affine map), so the threshold is all
    there is: each group's coefficient is fixed while the threshold stays inside one gap between its own
    neighbouring lengths (0 outside them: rated alike), so the groups' values are added per global gap with a
    difference array and the best gap is read off. The maximum is recomputed with ``correlation.text_level``."""
    from critic_tasks.core.metrics.correlation import correlations, text_level

    used = _used_groups(lengths, labels, groups)
    distinct = sorted({lengths[i] for idx in used.values() for i in idx})
    position = {n: i for i, n in enumerate(distinct)}
    totals = np.zeros(len(distinct) + 1)
    for idx in used.values():
        own = sorted({position[lengths[i]] for i in idx})
        for j in range(len(own) - 1):
            found = correlations([float(position[lengths[i]] > own[j]) for i in idx], [labels[i] for i in idx])
            value = found[coefficient] if found else 0.0
            totals[own[j]] += value
            totals[own[j + 1]] -= value
    if len(distinct) < 2:
        return 0.0, [0] * len(lengths)
    gap = int(np.argmax(np.cumsum(totals)[:len(distinct) - 1]))
    item_levels = [int(n > distinct[gap]) for n in lengths]
    scored = [i for idx in used.values() for i in idx]
    value = text_level([float(item_levels[i]) for i in scored], [labels[i] for i in scored],
                       [groups[i] for i in scored])[coefficient]
    return value, item_levels
