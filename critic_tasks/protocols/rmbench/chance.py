"""RM-Bench's canned critics and floors (``critic_tasks.chance``): RewardBench's ``[[A]]`` / ``[[B]]`` verdicts on
comparisons asked in both orders. A tie is no verdict of this prompt (``[[C]]`` reads as none, as the authors'
reading gives ``error``). The floor of each headline (``accuracy``, ``hard``, ``normal``, ``easy``) is the best
expected value of the content-blind critics of ``core.blind_critics`` (a consistent coin, fixed positions, the longer
or shorter response, ...) and of its family of verdict tables (``blind_table_values``; mixtures of two never beat
the best table), computed per domain and class and averaged as the metric averages (the mean of the domains of the
mean of their classes): one table is played on every cell, so the best table is picked after averaging."""

from __future__ import annotations

import random
from typing import Sequence

from critic_tasks.core import blind_critics
from critic_tasks.protocols.judgebench.scoring import pair_correct
from critic_tasks.protocols.rmbench.scoring import CLASSES

_SAY = {"A": "[[A]]", "B": "[[B]]", "C": "[[C]]"}


def labelled(kind, docs: Sequence[dict]) -> bool:
    return any(d.get("preference") is not None for d in docs)


def _shown(doc: dict) -> tuple[str, str]:
    return str(doc.get("response_a") or ""), str(doc.get("response_b") or "")


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return blind_critics.verdict_replies(_SAY.__getitem__, len(docs), rng)


def _class(doc: dict) -> str:
    i, j = int(doc["chosen_style"]), int(doc["rejected_style"])
    return "hard" if i < j else "normal" if i == j else "easy"


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    """Each floor critic's expected ``accuracy`` / ``hard`` / ``normal`` / ``easy``: per (domain, class), the mean
    over its comparisons (``expected_pairwise``), then as ``scoring`` averages them. Exact with every prompt's nine
    comparisons present (each class's cells then weigh alike)."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for d in docs:
        cells.setdefault((d["domain"], _class(d)), []).append(d)
    expected = {}
    for cell, cell_docs in cells.items():
        pairs = blind_critics.shown_pairs(cell_docs, _shown)
        expected[cell] = {**blind_critics.expected_pairwise(pairs, {"right": pair_correct}),
                          **blind_critics.blind_table_values(pairs, {"right": pair_correct})}
    domains = sorted({domain for domain, _ in cells})

    def mean_of_domains(critic: str, classes) -> float | None:
        per_domain = []
        for domain in domains:
            got = [expected[(domain, c)][critic]["right"] for c in classes if (domain, c) in expected]
            if got:
                per_domain.append(sum(got) / len(got))
        # a class no comparison of ``docs`` falls in (the demo's first comparison of a prompt is only ``normal``)
        # has no value, as the run's own metric has none
        return sum(per_domain) / len(per_domain) if per_domain else None

    def values_of(critic: str) -> dict[str, float]:
        every = {"accuracy": mean_of_domains(critic, CLASSES), **{c: mean_of_domains(critic, (c,)) for c in CLASSES}}
        return {k: float(v) for k, v in every.items() if k in kind.headline and v is not None}

    floors = {critic: values_of(critic) for critic in blind_critics.FLOOR_CRITICS}
    floors.update(blind_critics.best_tables({blind_critics.table_name(t): values_of(blind_critics.table_name(t))
                                             for t in blind_critics.TABLES}))
    return (*blind_critics.best_of(floors), floors)
