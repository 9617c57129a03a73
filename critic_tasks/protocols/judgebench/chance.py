"""JudgeBench's canned critics and floors (``critic_tasks.chance``): Arena-Hard verdicts (``[[A>B]]``,
``[[B>A]]``, ``[[A=B]]``) on a pair asked in both orders; the floor of the authors' pair score is the best expected
score of the content-blind critics of ``core.blind_critics`` (a consistent coin, fixed positions, the longer or
shorter answer, ...) and of its whole family of verdict tables (``blind_table_values``: every verdict by slot,
length and a hashed order of the pair; mixtures of two never beat the best table). Inconsistency (lower is better)
has no floor."""

from __future__ import annotations

import random
from typing import Sequence

from critic_tasks.core import blind_critics
from critic_tasks.protocols.judgebench.scoring import VERDICT_LABELS, pair_correct


def labelled(kind, docs: Sequence[dict]) -> bool:
    return any(d.get("preference") is not None for d in docs)


def _shown(doc: dict) -> tuple[str, str]:
    return str(doc.get("response_a") or ""), str(doc.get("response_b") or "")


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return blind_critics.verdict_replies(lambda verdict: f"[[{VERDICT_LABELS[verdict]}]]", len(docs), rng)


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    rules = {"accuracy": pair_correct} if "accuracy" in kind.headline else {}
    pairs = blind_critics.shown_pairs(docs, _shown)
    floors = blind_critics.expected_pairwise(pairs, rules)
    floors.update(blind_critics.best_tables(blind_critics.blind_table_values(pairs, rules)))
    return (*blind_critics.best_of(floors), floors)
