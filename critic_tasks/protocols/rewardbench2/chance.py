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
shuffle sets where the winner is shown, so the slots need not score alike), the slot of the longest or the shortest
answer shown (the first such slot on equal lengths), and a uniform letter (0.25 exactly); on a rating prompt, a
constant rating (every constant scores alike: the metrics read only differences of ratings), the ratings by length
(longer / shorter rated higher), and independent uniform ratings (1 / n per prompt of n answers rated, and on Ties
the expectation of ``process_single_model``, ``uniform_ties``, enumerated over each prompt's worst / best correct and
best incorrect rating), and on Ties every two-level rating by the answer's length (``best_ties_thresholds``: the best
threshold per direction; no letter and the midpoint elsewhere). Each deterministic critic's value is its replies run
through the scorer. One critic answers
every subset (``score`` is the mean of the subsets' values under one critic). Every subset's value is a mean over
prompts of a per-prompt result (Ties: over its numbers, each a reference and a tied prompt), so a critic that picks
its member per prompt (per number on Ties) by a hash with share p scores linearly in p and the best mixture is an
endpoint: the line is the best member. A rating critic that mixes members answer by answer within one prompt is
outside the family (its rating vectors are not a member's).
"""

from __future__ import annotations

import math
import random
from typing import Sequence

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


def best_ties_thresholds(docs: Sequence[dict]) -> dict[str, tuple[float, int]]:
    """Per direction (``longer`` / ``shorter``), the best Ties score (x100) of a two-level rating by length and the
    threshold that gives it: ``longer`` rates an answer of at least that many characters 10 and the others 1,
    ``shorter`` one of at most that many. Two levels are all there is to such a map: the Ties rule reads the
    margins and spreads only through their signs and ratios (each 0 or plus or minus the gap between the two
    ratings), so which two ratings (the unread -1 included) changes nothing, and every threshold from each distinct
    length of a Ties answer is tried: each prompt's (accurate, spread, margin) by the scorer's ``prompt_stats``, the
    score by its ``ties_score``, over the prompts whose answers are all there (as the scorer counts them)."""
    prompts: dict[str, dict] = {}
    for d in docs:
        if d["subset"] == TIES and d["mode"] != FOUR_WAY:
            item = prompts.setdefault(str(d["prompt_id"]), {"answers": int(d["answers"]), "lengths": {},
                                                            "num_correct": int(d["num_correct"])})
            item["lengths"][int(d["answer_index"])] = len(str(d["response"]))
    complete = {pid: [item["lengths"][i] for i in range(item["answers"])] for pid, item in prompts.items()
                if set(item["lengths"]) == set(range(item["answers"]))}
    out: dict[str, tuple[float, int]] = {}
    for direction, sign in (("longer", 1), ("shorter", -1)):
        best: tuple[float, int] | None = None
        for cut in sorted({n for lengths in complete.values() for n in lengths}):
            units: dict[str, dict[str, tuple]] = {}
            for pid, lengths in complete.items():
                kind, _, number = pid.partition(":")
                scores = [HIGH if sign * n >= sign * cut else LOW for n in lengths]
                units.setdefault(number, {})[kind] = scoring.prompt_stats(scores, prompts[pid]["num_correct"])
            value = scoring.ties_score(list(units.values()))
            if value is not None and (best is None or 100.0 * value > best[0]):
                best = (100.0 * value, cut)
        if best is not None:
            out[direction] = best
    return out


def ties_threshold_replies(docs: Sequence[dict], direction: str, cut: int, elsewhere: Sequence[str]) -> list[str]:
    """A critic's replies: on Ties, the two-level rating by length from ``cut`` (``best_ties_thresholds``); on every
    other document ``elsewhere``'s reply."""
    sign = 1 if direction == "longer" else -1
    return [(str(HIGH) if sign * len(str(d["response"])) >= sign * cut else str(LOW))
            if d["subset"] == TIES and d["mode"] != FOUR_WAY else other for d, other in zip(docs, elsewhere)]


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    canned = replies(kind, docs, random.Random(0))
    for letter in LETTERS[1:]:  # always slot k; on a rating prompt a constant rating (always_first's)
        canned[f"always_{letter}"] = [f"[[{letter}]]" if d["mode"] == FOUR_WAY else first
                                      for d, first in zip(docs, canned["always_first"])]
    critics = list(FLOOR_CRITICS)
    for direction, (_, cut) in best_ties_thresholds(docs).items():  # on Ties; no letter and 5 elsewhere
        name = f"two-level rating by length on Ties ({direction} rated higher, from {cut} characters)"
        canned[name] = ties_threshold_replies(docs, direction, cut, canned["constant"])
        critics.append(name)
    per_critic = {}
    for critic in critics:
        if critic == "uniform":
            subsets = _uniform(docs)
        else:
            subsets = scoring.subset_values([scoring.record(d, r) for d, r in zip(docs, canned[critic])])
        per_critic[critic] = {**subsets, "score": scoring.score_of(subsets)}
    floors = {critic: {k: v for k, v in got.items() if k in kind.headline and v is not None}
              for critic, got in per_critic.items()}
    return (*blind_critics.best_of(floors), floors)
