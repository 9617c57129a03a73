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
# rank coefficients and the system-level Pearson, every two-level map for the text-level Pearson
SEARCHES = {"text_spearman": "blocks", "text_kendall": "blocks", "text_pearson": "threshold",
            "system_pearson": "system"}


def best_length_maps(docs: Sequence[dict], keys: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per headline correlation and direction, the best rating by length of its family (``SEARCHES``), with every
    headline correlation that rating scores (``text_level`` / ``system_level`` over the labelled responses)."""
    labelled = [d for d in docs if d.get("human_score") is not None]
    labels = [float(d["human_score"]) for d in labelled]
    questions = [str(d["question"]) for d in labelled]
    models = [str(d["model"]) for d in labelled]
    out: dict[str, dict[str, float]] = {}
    for key in keys:
        search = SEARCHES.get(key)
        if search is None:
            continue
        coefficient = key.removeprefix("text_")
        for direction, sign in (("longer", 1), ("shorter", -1)):
            lengths = [sign * len(str(d.get("response") or "")) for d in labelled]
            proven = True
            if search == "blocks":
                _, ratings, proven = blind_critics.best_text_level_blocks(lengths, labels, questions, coefficient)
            elif search == "threshold":
                _, ratings = blind_critics.best_text_level_threshold(lengths, labels, questions, coefficient)
            else:
                _, ratings = blind_critics.best_system_level_map(lengths, labels, models)
            ratings = [float(r) for r in ratings]
            got = {**{f"text_{k}": v for k, v in text_level(ratings, labels, questions).items()},
                   **{f"system_{k}": v for k, v in system_level(ratings, labels, models).items()}}
            unproven = "" if proven else f", the best found in {blind_critics.BLOCKS_SECONDS:g} s, not proven"
            out[f"rating by length, the best {MAPS[search]} for {key} ({direction} rated higher{unproven})"] = {
                k: got[k] for k in keys if k in got}
    return out


MAPS = {"blocks": "monotone map", "threshold": "two-level map", "system": "monotone map"}
