"""CritiqueLLM's canned critics and floors (``critic_tasks.chance``): ratings ``Rating: [[x]]`` on its 1-10 scale
(and by the response's length) for the pointwise task, verdicts ``[[A]]`` / ``[[B]]`` / ``[[C]]`` on a pair asked
in both orders for the pairwise one."""

from __future__ import annotations

import random
from typing import Sequence

from critic_tasks.core import blind_critics
from critic_tasks.core.metrics import pairwise
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
    return (*blind_critics.rating_floor(keys, values), {})
