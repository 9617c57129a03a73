"""RewardBench 2's canned critics and floors (``critic_tasks.chance``). Each canned critic answers a four-way
document with a letter and a rating document with a rating:

    constant      no letter ("effectively a tie": 0.25)          the midpoint, 5, for every answer
    always_first  [[A]]                                          the bottom, 1
    random        a uniform letter (seeded)                      a uniform rating 1-10 (seeded)
    every_label   [[A]] [[B]] [[C]] [[D]] in one reply (reads A)  1 .. 10 in one reply (reads 10)
    longer        the first of the longest answers shown         by the length of the answer among its prompt's
    shorter       the first of the shortest answers shown        answers (``blind_critics.length_ratings``)

The floor of ``score`` and of each subset is the best expected value over a stated, exact family of critics that
read nothing of quality (issue 44.3): on a four-way prompt, no verdict (0.25), always slot k (each of A-D: the
shuffle sets where the winner is shown, so the slots need not score alike), the slot of the k-th longest answer
shown (k = 1-4; the first such slot on equal lengths), and a uniform letter (0.25 exactly); on a rating prompt, a
constant rating (every constant scores alike: the metrics read only differences of ratings), the ratings by length
(longer / shorter rated higher), and independent uniform ratings (1 / n per prompt of n answers rated, and on Ties
the expectation of ``process_single_model``, ``uniform_ties``, enumerated over each prompt's worst / best correct and
best incorrect rating), and on Ties every monotone map of the answer's length onto the ratings a reply can produce
(1-10, and an unread reply, which the scorer rates UNREAD_RATING = -1, as a possible lowest level), longer or
shorter rated higher (``best_ties_map``: the Ties rule reads the ratings' spacing, so the best is an integer
programme, solved exactly by HiGHS or, past ``TIES_MAP_SECONDS``, the best found, named "not proven" with the bound;
no letter and the midpoint elsewhere). Each deterministic critic's value is its replies run through the scorer.
One critic answers every subset (``score`` is the mean of the subsets' values under one critic), or one member the
four-way prompts and another the rated ones (``by_mode``: a reply may depend on the request's form). Every subset's
value is a mean over prompts of a per-prompt result (Ties: over its numbers, each a reference and a tied prompt),
so a critic that picks its member per prompt (per number on Ties) by a hash with share p scores linearly in p and
the best mixture is an endpoint: the line is the best member. A rating critic that mixes members answer by answer
within one prompt is outside the family (its rating vectors are not a member's).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import random
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from critic_tasks.core import blind_critics
from critic_tasks.protocols.rewardbench2 import scoring
from critic_tasks.protocols.rewardbench2.authors_prompts import LETTERS
from critic_tasks.protocols.rewardbench2.data import FOUR_WAY, SUBSETS, TIES

LOW, HIGH = 1, 10
NO_LETTER = "The answers are equally good."
FLOOR_CRITICS = ("constant", "always_first", "always_B", "always_C", "always_D", "uniform", "longer", "shorter")


def labelled(kind, docs: Sequence[dict]) -> bool:
    return any(d.get("preference") is not None for d in docs)


def _by_length(docs: Sequence[dict], longer: bool) -> list[str]:
    """Each document's reply by length: the first of the longest (shortest) answers shown, or a rating by the
    answer's length among its prompt's answers."""
    sign = 1 if longer else -1
    by_prompt: dict[str, list[int]] = {}
    for i, d in enumerate(docs):
        if d["mode"] != FOUR_WAY:
            by_prompt.setdefault(str(d["prompt_id"]), []).append(i)
    out = [""] * len(docs)
    for positions in by_prompt.values():
        rated = blind_critics.length_ratings("{}", LOW, HIGH, [str(docs[i]["response"]) for i in positions])
        for i, reply in zip(positions, rated["longer" if longer else "shorter"]):
            out[i] = reply
    for i, d in enumerate(docs):
        if d["mode"] == FOUR_WAY:
            lengths = [sign * len(str(t)) for t in d["answers_shown"]]
            out[i] = f"[[{LETTERS[lengths.index(max(lengths))]}]]"
    return out


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    def each(letter, rating):
        return [letter() if d["mode"] == FOUR_WAY else rating() for d in docs]

    return {"constant": each(lambda: NO_LETTER, lambda: "5"),
            "always_first": each(lambda: "[[A]]", lambda: "1"),
            "random": each(lambda: f"[[{rng.choice(LETTERS)}]]", lambda: str(rng.randint(LOW, HIGH))),
            "every_label": each(lambda: "\n".join(f"[[{x}]]" for x in LETTERS),
                                lambda: "\n".join(str(v) for v in range(LOW, HIGH + 1))),
            "longer": _by_length(docs, True), "shorter": _by_length(docs, False)}


# ----------------------------------------------------------------------------- the uniform critic on Ties


def _min_max(count: int) -> dict[tuple[int, int], float]:
    """P(min = a, max = b) of ``count`` independent uniform ratings LOW..HIGH."""
    size = HIGH - LOW + 1

    def within(a, b):
        return ((b - a + 1) / size) ** count if b >= a else 0.0

    return {(a, b): within(a, b) - within(a + 1, b) - within(a, b - 1) + within(a + 1, b - 1)
            for a in range(LOW, HIGH + 1) for b in range(a, HIGH + 1)}


def _stats(correct: int, incorrect: int) -> dict[tuple, float]:
    """The distribution of one prompt's (accurate, spread, margin) under uniform ratings."""
    top_incorrect = {v: (v / HIGH) ** incorrect - ((v - 1) / HIGH) ** incorrect for v in range(LOW, HIGH + 1)}
    out: dict[tuple, float] = {}
    for (a, b), p in _min_max(correct).items():
        for v, q in top_incorrect.items():
            key = (a - v > 0, b - a if correct > 1 else None, a - v)
            out[key] = out.get(key, 0.0) + p * q
    return out


def uniform_ties(prompts: dict[str, dict[str, tuple[int, int]]]) -> float | None:
    """The expected Ties score (x100) of independent uniform ratings: ``prompts`` maps each number to its ref /
    tied prompts' (correct, incorrect) counts. None where no number has both (no score)."""
    dists = {n: {kind: _stats(*counts) for kind, counts in kinds.items()} for n, kinds in prompts.items()}

    def accuracy(kind):
        got = [sum(p for (acc, _, _), p in d[kind].items() if acc) for d in dists.values() if kind in d]
        return sum(got) / len(got) if got else 0.0

    paired = [(d["ref"], d["tied"]) for d in dists.values() if "ref" in d and "tied" in d]
    if not paired:
        return None
    preferred = preferred_hard = margin = 0.0
    for ref, tied in paired:
        ref_margins: dict[int, float] = {}
        for (_, _, m), p in ref.items():
            ref_margins[m] = ref_margins.get(m, 0.0) + p
        for (_, spread, m_tied), q in tied.items():
            preferred += q * (m_tied > spread)
            for m_ref, p in ref_margins.items():
                low = min(m_ref, m_tied)
                preferred_hard += p * q * (low > spread)
                value = math.tanh(scoring._over_zero(low, spread) - 1)
                margin += p * q * (0.0 if math.isnan(value) else value)
    n = len(paired)
    parts = (accuracy("tied"), accuracy("ref"), preferred / n, preferred_hard / n, margin / n)
    return 100.0 * sum(w * x for w, x in zip(scoring.TIES_WEIGHTS, parts))


def _ties_counts(docs: Sequence[dict]) -> dict[str, dict[str, tuple[int, int]]]:
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for d in docs:
        if d["subset"] == TIES and d["answer_index"] == 0:
            kind, _, number = str(d["prompt_id"]).partition(":")
            out.setdefault(number, {})[kind] = (int(d["num_correct"]), int(d["answers"]) - int(d["num_correct"]))
    return out


def _uniform(docs: Sequence[dict]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for d in docs:
        if d["subset"] == TIES:
            continue
        if d["mode"] == FOUR_WAY:
            by.setdefault(d["subset_slug"], []).append(0.25)
        elif d["answer_index"] == 0:
            by.setdefault(d["subset_slug"], []).append(1 / int(d["answers"]))
    out = {slug: 100.0 * sum(v) / len(v) for slug, v in by.items()}
    ties = uniform_ties(_ties_counts(docs))
    if ties is not None:
        out[SUBSETS[TIES]] = ties
    return out


# ----------------------------------------------------------------------------- Ties: monotone maps of the length

# seconds each direction's integer programme (``best_ties_maps``) may take; the sample's Ties solve at once
TIES_MAP_SECONDS = 60.0
UNREAD_REPLY = "No rating."  # read as no rating: the scorer rates it UNREAD_RATING, the lowest level a map can use
GAIN_SCALE = 1e4  # the gains' scale in the search: HiGHS's absolute gap (1e-6) is then 1e-10 of a Ties point
SPAN = HIGH - scoring.UNREAD_RATING  # the widest difference of two ratings a reply can produce (-1 .. 10)


def ties_prompts(docs: Sequence[dict]) -> dict[str, tuple[list[int], int]]:
    """Each Ties prompt whose answers are all among ``docs`` (as the scorer counts them): its answers' lengths in
    answer order (the correct ones first) and how many are correct."""
    prompts: dict[str, dict] = {}
    for d in docs:
        if d["subset"] == TIES and d["mode"] != FOUR_WAY:
            item = prompts.setdefault(str(d["prompt_id"]), {"answers": int(d["answers"]), "lengths": {},
                                                            "num_correct": int(d["num_correct"])})
            item["lengths"][int(d["answer_index"])] = len(str(d["response"]))
    return {pid: ([item["lengths"][i] for i in range(item["answers"])], item["num_correct"])
            for pid, item in prompts.items() if set(item["lengths"]) == set(range(item["answers"]))}


def ties_value(prompts: dict[str, tuple[list[int], int]], rating_of: Callable[[int], int]) -> float | None:
    """The Ties score (x100) of rating each answer ``rating_of(its length)``: each prompt's (accurate, spread,
    margin) by the scorer's ``prompt_stats``, the score by its ``ties_score``."""
    units: dict[str, dict[str, tuple]] = {}
    for pid, (lengths, correct) in prompts.items():
        kind, _, number = pid.partition(":")
        units.setdefault(number, {})[kind] = scoring.prompt_stats([rating_of(n) for n in lengths], correct)
    value = scoring.ties_score(list(units.values()))
    return None if value is None else 100.0 * value


@dataclass(frozen=True)
class TiesMap:
    """A monotone map of the answer's length onto the ratings: ``ratings[j]`` from the key ``keys[j]`` on, the key
    being the length (``longer`` rated higher) or minus it (``shorter``), the first rating below the first key too;
    its Ties score (x100), and whether it was proven the best (False: the best found in ``TIES_MAP_SECONDS``)."""

    direction: str
    keys: tuple[int, ...]
    ratings: tuple[int, ...]
    value: float
    proven: bool = True
    bound: float | None = None  # not proven: HiGHS's bound on the best (x100)

    def rating(self, length: int) -> int:
        key = length if self.direction == "longer" else -length
        return self.ratings[max(0, bisect.bisect_right(self.keys, key) - 1)]


class _Programme:
    """A maximised integer programme, built a column and a row at a time (``scipy.optimize.milp``, HiGHS)."""

    def __init__(self):
        self.low: list[float] = []
        self.high: list[float] = []
        self.integer: list[int] = []
        self.gain: list[float] = []
        self.entries: list[tuple[int, int, float]] = []
        self.row_low: list[float] = []
        self.row_high: list[float] = []

    def column(self, low: float, high: float, gain: float = 0.0, integer: bool = True) -> int:
        self.low.append(low)
        self.high.append(high)
        self.gain.append(gain)
        self.integer.append(int(integer))
        return len(self.low) - 1

    def row(self, terms: Sequence[tuple[int, float]], low: float = -np.inf, high: float = np.inf) -> None:
        self.entries.extend((len(self.row_low), col, coef) for col, coef in terms)
        self.row_low.append(low)
        self.row_high.append(high)

    def maximise(self, seconds: float):
        """HiGHS's result, its objective and bound in the gains' units. HiGHS stops at an absolute gap of 1e-6 even
        with no relative gap allowed, and two margin terms' tanh can differ by less: the gains are scaled by
        GAIN_SCALE for the search (a gap of 1e-10 in the gains' units)."""
        from scipy import optimize, sparse

        rows, cols, data = zip(*self.entries)
        matrix = sparse.csr_array((data, (rows, cols)), shape=(len(self.row_low), len(self.low)))
        found = optimize.milp(-GAIN_SCALE * np.asarray(self.gain), integrality=np.asarray(self.integer),
                              bounds=optimize.Bounds(self.low, self.high),
                              constraints=optimize.LinearConstraint(matrix, self.row_low, self.row_high),
                              options={"mip_rel_gap": 0.0, "time_limit": seconds})
        if found.mip_dual_bound is not None:
            found.mip_dual_bound = found.mip_dual_bound / GAIN_SCALE
        return found


def _tied_states(incorrect: int, low: int, high: int) -> list[tuple[int, int]]:
    """Every (margin, spread) a prompt can take under a monotone map onto ratings at most SPAN apart, from the order
    of the keys of its best incorrect answer and of its worst (``low``) and best (``high``) correct ones."""
    out = []
    for spread in range(SPAN + 1 if high > low else 1):
        for margin in range(-SPAN, SPAN + 1):
            if incorrect < low:
                fits = margin >= 0 and margin + spread <= SPAN
            elif incorrect == low:
                fits = margin == 0
            elif incorrect < high:
                fits = -spread <= margin <= 0
            elif incorrect == high:
                fits = margin == -spread
            else:
                fits = margin <= -spread
            if fits:
                out.append((margin, spread))
    return out


def _margin_bounds(incorrect: int, low: int) -> tuple[int, int]:
    """The range of a prompt's margin under a monotone map, from the order of its best incorrect and worst correct
    answers' keys."""
    return (0, SPAN) if incorrect < low else (0, 0) if incorrect == low else (-SPAN, 0)


def _hard_and_margin(margin: int, spread: int, paired: int) -> float:
    """What a number adds (x100) to the preferred-hard and margin terms, from its min margin and its tied prompt's
    spread (a division by 0 as the scorer reads it)."""
    tanh = math.tanh(scoring._over_zero(margin, spread) - 1)
    return (100.0 * scoring.TIES_WEIGHTS[3] * (margin > spread)
            + 100.0 * scoring.TIES_WEIGHTS[4] * (0.0 if math.isnan(tanh) else tanh)) / paired


def best_ties_map(prompts: dict[str, tuple[list[int], int]], direction: str,
                  seconds: float | None = None) -> TiesMap | None:
    """The best Ties score (x100) of a rating that is a monotone map of the answer's length (``longer`` or
    ``shorter`` rated higher) onto the ratings a reply can produce (1 .. 10, and UNREAD_RATING for a reply without
    one), and the map. None where no number has both prompts (no score).

    A prompt's stats under such a map are read at three keys: its worst and best correct answers' and its best
    incorrect answer's (key: the length, or minus it), so the map is its ratings x_k at the sorted distinct keys of
    those (any other answer's rating lies between them), monotone, each -1 or 1 .. 10 (a binary per key says which),
    the lowest -1 or 1 (the rule reads only differences, so a map above 1 shifts down). A margin and a spread are
    differences of two x_k. An integer programme (HiGHS through ``scipy.optimize.milp``, no gap allowed), maximising
    the score exactly: per tied prompt with a reference, a binary per (margin, spread) it can take (one taken, the
    two equal to the x_k's differences) carries its accuracy and preferred terms; where the reference's margin is at
    least the tied one's under every map (its correct answer's key at least the tied worst correct one's, its best
    incorrect key at most the tied one), the min margin is the tied margin and the same binary carries the
    preferred-hard and margin terms; otherwise the reference's margin is a chain of binaries (at least t, each t),
    and the hard and margin terms, nondecreasing in the min margin at a fixed spread, are their value at the lowest
    margin plus each step's rise on a continuous w (at most the tied binary's share of margins at least t at that
    spread, at most the reference's chain at t). Every other accuracy is a binary at most the prompt's margin (only
    where the keys let the margin be positive: it is then at least 0 under every map). The map found is scored
    again through the scorer (``ties_value``). ``proven`` says whether HiGHS proved it the maximum in ``seconds``;
    where it did not, the map is the better of the one it found and the best two-level map (a threshold at each
    key), and ``bound`` HiGHS's bound on the best: a member either way."""
    seconds = TIES_MAP_SECONDS if seconds is None else seconds
    sign = 1 if direction == "longer" else -1
    keyed = {pid: ([sign * n for n in lengths[:correct]], [sign * n for n in lengths[correct:]])
             for pid, (lengths, correct) in prompts.items()}
    points = {pid: (min(good), max(good), max(bad)) for pid, (good, bad) in keyed.items()}  # worst, best, incorrect
    keys = sorted({k for p in points.values() for k in p})
    numbers: dict[str, dict[str, str]] = {}
    for pid in prompts:
        kind, _, number = pid.partition(":")
        numbers.setdefault(number, {})[kind] = pid
    paired = [(kinds["ref"], kinds["tied"]) for kinds in numbers.values() if "ref" in kinds and "tied" in kinds]
    if not paired:
        return None
    count = {kind: sum(pid.startswith(kind + ":") for pid in prompts) for kind in ("ref", "tied")}
    accuracy = {kind: 100.0 * scoring.TIES_WEIGHTS[1 if kind == "ref" else 0] / count[kind] for kind in count}
    preferred = 100.0 * scoring.TIES_WEIGHTS[2] / len(paired)

    programme = _Programme()
    level = [programme.column(-1, HIGH if k else LOW) for k in range(len(keys))]  # the lowest: -1 or 1
    readable = [programme.column(0, 1) for _ in keys]
    for k in range(len(keys)):  # -1 (not readable) or 1 .. 10
        programme.row([(level[k], 1), (readable[k], -(LOW - scoring.UNREAD_RATING))], scoring.UNREAD_RATING)
        programme.row([(level[k], 1), (readable[k], -(HIGH - scoring.UNREAD_RATING))], high=scoring.UNREAD_RATING)
        if k:
            programme.row([(level[k], 1), (level[k - 1], -1)], 0)
            programme.row([(readable[k], 1), (readable[k - 1], -1)], 0)
    column_of = {k: level[j] for j, k in enumerate(keys)}

    def difference(upper: int, lower: int, times: float = 1.0) -> list[tuple[int, float]]:
        return [] if upper == lower else [(column_of[upper], times), (column_of[lower], -times)]

    carried = set()  # accuracies a tied prompt's state binaries carry
    for ref, tied in paired:
        low, high, incorrect = points[tied]
        ref_low, _, ref_incorrect = points[ref]
        below = ref_low >= low and ref_incorrect <= incorrect  # the reference's margin is never under the tied one
        states = {}
        for margin, spread in _tied_states(incorrect, low, high):
            gain = accuracy["tied"] * (margin > 0) + preferred * (margin > spread)
            if below:
                gain += _hard_and_margin(margin, spread, len(paired))
            else:
                gain += _hard_and_margin(-SPAN, spread, len(paired))
            states[margin, spread] = programme.column(0, 1, gain)
        carried.add(tied)
        programme.row([(col, 1) for col in states.values()], 1, 1)
        programme.row([*((col, m) for (m, _), col in states.items()), *difference(low, incorrect, -1)], 0, 0)
        programme.row([*((col, s) for (_, s), col in states.items()), *difference(high, low, -1)], 0, 0)
        if below:
            continue
        carried.add(ref)
        ref_low_bound, ref_high_bound = _margin_bounds(ref_incorrect, ref_low)
        at_least = {t: programme.column(0, 1, accuracy["ref"] if t == 1 else 0.0)
                    for t in range(ref_low_bound + 1, ref_high_bound + 1)}  # the reference's margin >= t
        programme.row([*((col, 1) for col in at_least.values()), *difference(ref_low, ref_incorrect, -1)],
                      -ref_low_bound, -ref_low_bound)
        for t, col in at_least.items():
            if t + 1 in at_least:
                programme.row([(col, 1), (at_least[t + 1], -1)], 0)
        for t in range(-SPAN + 1, SPAN + 1):
            for spread in range(SPAN + 1):
                rise = (_hard_and_margin(t, spread, len(paired))
                        - _hard_and_margin(t - 1, spread, len(paired)))
                tied_share = [(col, 1) for (m, s), col in states.items() if s == spread and m >= t]
                if rise <= 0 or not tied_share or t > ref_high_bound:
                    continue
                w = programme.column(0, 1, rise, integer=False)
                programme.row([(w, 1), *((col, -1) for col, _ in tied_share)], high=0)
                if t > ref_low_bound:
                    programme.row([(w, 1), (at_least[t], -1)], high=0)
    for pid, (low, _, incorrect) in points.items():
        if pid in carried or incorrect >= low:
            continue
        accurate = programme.column(0, 1, accuracy[pid.partition(":")[0]])
        programme.row([*difference(low, incorrect), (accurate, -1)], 0)
    found = programme.maximise(seconds)
    if found.status == 0:
        ratings = [int(round(found.x[col])) for col in level]
        best = TiesMap(direction, tuple(keys), tuple(ratings), 0.0)
        return dataclasses.replace(best, value=ties_value(prompts, best.rating))
    # not proven in time: the better of what HiGHS found and the best two-level map (a threshold at a key), with
    # HiGHS's bound on the best
    candidates = [TiesMap(direction, (keys[0], cut), (LOW, HIGH), 0.0) for cut in keys]
    if found.x is not None:
        candidates.append(TiesMap(direction, tuple(keys), tuple(int(round(found.x[col])) for col in level), 0.0))
    scored = [dataclasses.replace(c, value=ties_value(prompts, c.rating)) for c in candidates]
    bound = None if found.mip_dual_bound is None or not math.isfinite(found.mip_dual_bound) else -found.mip_dual_bound
    return dataclasses.replace(max(scored, key=lambda c: c.value), proven=False, bound=bound)


def best_ties_maps(docs: Sequence[dict], seconds: float | None = None) -> dict[str, TiesMap]:
    """Per direction (``longer`` / ``shorter`` rated higher), the best monotone map of a Ties answer's length onto
    the ratings (``best_ties_map``, ``TIES_MAP_SECONDS`` each by default), over the Ties prompts whose answers are
    all in ``docs``."""
    prompts = ties_prompts(docs)
    seconds = TIES_MAP_SECONDS if seconds is None else seconds
    found = {direction: best_ties_map(prompts, direction, seconds) for direction in ("longer", "shorter")}
    return {direction: got for direction, got in found.items() if got is not None}


def ties_map_replies(docs: Sequence[dict], found: TiesMap, elsewhere: Sequence[str]) -> list[str]:
    """A critic's replies: on Ties, the rating ``found`` gives the answer's length (an unread reply for
    UNREAD_RATING); on every other document ``elsewhere``'s reply."""
    def rated(length: int) -> str:
        rating = found.rating(length)
        return UNREAD_REPLY if rating == scoring.UNREAD_RATING else str(rating)

    return [rated(len(str(d["response"]))) if d["subset"] == TIES and d["mode"] != FOUR_WAY else other
            for d, other in zip(docs, elsewhere)]


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    canned = replies(kind, docs, random.Random(0))
    for letter in LETTERS[1:]:  # always slot k; on a rating prompt a constant rating (always_first's)
        canned[f"always_{letter}"] = [f"[[{letter}]]" if d["mode"] == FOUR_WAY else first
                                      for d, first in zip(docs, canned["always_first"])]
    critics = list(FLOOR_CRITICS)
    for rank in (2, 3):  # the slot of the 2nd / 3rd longest answer shown (longer / shorter: the 1st / 4th)
        name = f"the slot of the {ORDINALS[rank]} longest answer"
        canned[name] = [_kth_longest_slot(d, rank) if d["mode"] == FOUR_WAY else first
                        for d, first in zip(docs, canned["always_first"])]
        critics.append(name)
    for direction, found in best_ties_maps(docs).items():  # on Ties; no letter and 5 elsewhere
        bound = "" if found.bound is None else f": the best is at most {found.bound:.2f}"
        unproven = "" if found.proven else f", the best found in {TIES_MAP_SECONDS:g} s, not proven{bound}"
        name = f"rating by length on Ties, the best monotone map ({direction} rated higher{unproven})"
        canned[name] = ties_map_replies(docs, found, canned["constant"])
        critics.append(name)
    per_critic = {}
    for critic in critics:
        if critic == "uniform":
            subsets = _uniform(docs)
        else:
            subsets = scoring.subset_values([scoring.record(d, r) for d, r in zip(docs, canned[critic])])
        per_critic[critic] = {**subsets, "score": scoring.score_of(subsets)}
    per_critic.update(by_mode(docs, per_critic))
    floors = {critic: {k: v for k, v in got.items() if k in kind.headline and v is not None}
              for critic, got in per_critic.items()}
    return (*blind_critics.best_of(floors), floors)


ORDINALS = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th"}


def _kth_longest_slot(doc: dict, rank: int) -> str:
    """The letter of the slot holding the ``rank``-th longest answer shown (on equal lengths the earlier slot
    first)."""
    order = sorted(range(len(doc["answers_shown"])), key=lambda i: (-len(str(doc["answers_shown"][i])), i))
    return f"[[{LETTERS[order[rank - 1]]}]]"


def by_mode(docs: Sequence[dict], per_critic: dict[str, dict]) -> dict[str, dict]:
    """The critic that answers four-way prompts as one member and rated prompts as another (a reply may depend on
    the request's form, which it sees), the pair with the best ``score``: each subset is asked in one form, its value
    reads only its own prompts' replies, and ``score`` is the mean of the subsets' values, so the best pair is the
    member with the best sum over the four-way subsets with the one with the best sum over the rated subsets, and
    its values are theirs subset by subset. {} where a subset is asked in both forms or ``score`` is undefined."""
    modes: dict[str, set] = {}
    for d in docs:
        modes.setdefault(d["subset_slug"], set()).add(d["mode"] == FOUR_WAY)
    if any(len(m) > 1 for m in modes.values()) or not per_critic:
        return {}
    four_way = [slug for slug, m in modes.items() if True in m]
    rated = [slug for slug, m in modes.items() if False in m]
    if not four_way or not rated:
        return {}
    complete = {c: v for c, v in per_critic.items() if all(v.get(s) is not None for s in four_way + rated)}
    if not complete:
        return {}
    first = max(complete, key=lambda c: sum(complete[c][s] for s in four_way))  # the critics' order breaks ties
    second = max(complete, key=lambda c: sum(complete[c][s] for s in rated))
    if first == second:
        return {}
    subsets = {**{s: complete[first][s] for s in four_way}, **{s: complete[second][s] for s in rated}}
    return {f"{first} on four-way prompts, {second} on rated ones": {**subsets, "score": scoring.score_of(subsets)}}
