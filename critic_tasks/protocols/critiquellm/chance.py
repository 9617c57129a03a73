"""CritiqueLLM's canned critics and floors (``critic_tasks.chance``): ratings ``Rating: [[x]]`` on its 1-10 scale
(and by the response's length) for the pointwise task, verdicts ``[[A]]`` / ``[[B]]`` / ``[[C]]`` on a pair asked
in both orders for the pairwise one."""

from __future__ import annotations

import random
from typing import Sequence

from critic_tasks.core import blind_critics
from critic_tasks.core.metrics import pairwise
from critic_tasks.core.metrics.correlation import system_level, text_level
from critic_tasks.protocols.critiquellm.scoring import RATING_HIGH, RATING_LOW

FORM = "Rating: [[{}]]"


def labelled(kind, docs: Sequence[dict]) -> bool:
    key = "preference" if kind.pairwise else "human_score"
    return any(d.get(key) is not None for d in docs)


def _shown(doc: dict) -> tuple[str, str]:
    return str(doc.get("response_a") or ""), str(doc.get("response_b") or "")


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    if kind.pairwise:
        return blind_critics.verdict_replies("[[{}]]".format, len(docs), rng)
    texts = [str(d.get("response") or "") for d in docs]
    return {**blind_critics.rating_replies(FORM, RATING_LOW, RATING_HIGH, len(docs), rng),
            **blind_critics.length_ratings(FORM, RATING_LOW, RATING_HIGH, texts)}


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    if kind.pairwise:
        rules = {"agreement": lambda f, r, g: pairwise.pair_consistent(f, r) and f == g,
                 "consistency": lambda f, r, g: pairwise.pair_consistent(f, r)}
        rules = {key: rule for key, rule in rules.items() if key in kind.headline}
        pairs = blind_critics.shown_pairs(docs, _shown)
        floors = blind_critics.expected_pairwise(pairs, rules)
        # the whole family of verdict tables (slot, length, a hashed order of the pair); no mixture beats its best
        floors.update(blind_critics.best_tables(blind_critics.blind_table_values(pairs, rules)))
        return (*blind_critics.best_of(floors), floors)
    keys = [k for k in kind.headline if k.startswith(("text_", "system_"))]
    chance, by = blind_critics.rating_floor(keys, values)
    floors = best_length_maps(docs, keys)
    for name, got in floors.items():
        for key, value in got.items():
            if key in chance and value > chance[key] + 1e-9:
                chance[key], by[key] = value, name
    return chance, by, floors


# each headline correlation's family search over ratings by length (``blind_critics``): every monotone map for the
# rank coefficients and the system-level Pearson (decimal ratings are read, so any number of them), every monotone
# map onto the integer ratings (the authors' format) for the text-level Pearson, whose value reads their spacing
SEARCHES = {"text_spearman": "blocks", "text_kendall": "blocks", "text_pearson": "integers",
            "system_pearson": "system"}


def best_length_maps(docs: Sequence[dict], keys: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per headline correlation and direction, the best rating by length of its family (``SEARCHES``), with every
    headline correlation that rating scores (``text_level`` / ``system_level`` over the labelled responses).

    For ``text_pearson`` the bound on every monotone map onto real values (decimal ratings are read) comes along
    (``text_level_pearson_bound``): where a map of decimal ratings reaches it, that map is a member too; where none
    is found, the integer map's name says how far above it a decimal map could be at most."""
    labelled = [d for d in docs if d.get("human_score") is not None]
    labels = [float(d["human_score"]) for d in labelled]
    questions = [str(d["question"]) for d in labelled]
    models = [str(d["model"]) for d in labelled]
    out: dict[str, dict[str, float]] = {}

    def scored(ratings: Sequence[float]) -> dict[str, float]:
        got = {**{f"text_{k}": v for k, v in text_level(ratings, labels, questions).items()},
               **{f"system_{k}": v for k, v in system_level(ratings, labels, models).items()}}
        return {k: got[k] for k in keys if k in got}

    for key in keys:
        search = SEARCHES.get(key)
        if search is None:
            continue
        coefficient = key.removeprefix("text_")
        for direction, sign in (("longer", 1), ("shorter", -1)):
            lengths = [sign * len(str(d.get("response") or "")) for d in labelled]
            notes = []
            if search == "blocks":
                _, ratings, proven = blind_critics.best_text_level_blocks(lengths, labels, questions, coefficient)
                if not proven:
                    notes.append(f"the best found in {blind_critics.BLOCKS_SECONDS:g} s, not proven")
            elif search == "integers":
                value, levels, unproven = blind_critics.best_text_level_pearson(lengths, labels, questions,
                                                                                RATING_HIGH - RATING_LOW)
                ratings = [RATING_LOW + v for v in levels]  # the ratings as a critic writes them
                if unproven is not None:
                    notes.append(f"{unproven}, not proven")
                bound, near, reached = blind_critics.text_level_pearson_bound(lengths, labels, questions)
                if near is not None and bound > value + 1e-9:  # decimal ratings come to what no map can beat
                    exact = "" if reached else f" within {bound - text_level(near, labels, questions)['pearson']:.1g}"
                    out[f"rating by length, a monotone map onto decimal ratings for {key} ({direction} rated higher, "
                        f"every question at its own best: the most any map scores, {bound:.2f}, reached{exact})"] = \
                        scored([RATING_LOW + (RATING_HIGH - RATING_LOW) * r for r in near])
                elif bound > value + 1e-9:
                    notes.append(f"decimal ratings: at most {bound:.1f}")
            else:
                _, ratings = blind_critics.best_system_level_map(lengths, labels, models)
            note = "".join(f", {n}" for n in notes)
            out[f"rating by length, the best {MAPS[search]} for {key} ({direction} rated higher{note})"] = scored(
                [float(r) for r in ratings])
    return out


MAPS = {"blocks": "monotone map", "integers": f"monotone map onto the ratings {RATING_LOW}-{RATING_HIGH}",
        "system": "monotone map"}
