"""RewardBench's canned critics and floors (``critic_tasks.chance``): ``[[A]]`` / ``[[B]]`` verdicts (a tie, ``[[C]]``,
reads as no verdict, which the authors count 0.5). The floor of ``score`` and of each section is the best expected
value of content-blind critics, computed per subset and weighted as the value is:

* one order per pair (the default): per pair, the expected result of a coin, no verdict (0.5 each: the authors'
  tie), always position A or B (1 or 0 by the order the pair was shown in), the longer or the shorter response;
* both orders: ``core.blind_critics``' floor critics through the pair rule (``expected_pairwise``).

and, in either mode, the best of the family of verdict tables (``core.blind_critics``: a verdict by which slot shows
the longer response and, with both orders, by a hashed order of the pair; 27 and 729 tables): one table is played on
every subset, so the best is picked on each weighted value. The score is a weighted mean of per-pair results, linear
in a mixture of two tables by pair; a mixture by prompt is a mixture of tables too (``core.blind_critics``), so no
mixture beats the best table.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from typing import Sequence

from critic_tasks.core import blind_critics
from critic_tasks.protocols.judgebench.scoring import pair_correct
from critic_tasks.protocols.rewardbench.scoring import score_of, section_values

_SAY = {"A": "[[A]]", "B": "[[B]]", "C": "[[C]]"}
SINGLE_ORDER_CRITICS = ("coin", "always_tie", "always_first", "always_second", "longer", "shorter")


def labelled(kind, docs: Sequence[dict]) -> bool:
    return any(d.get("preference") is not None for d in docs)


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return blind_critics.verdict_replies(_SAY.__getitem__, len(docs), rng)


def _shown(doc: dict) -> tuple[str, str]:
    return str(doc.get("response_a") or ""), str(doc.get("response_b") or "")


def _single_order(critic: str, doc: dict) -> Fraction:
    """The expected result of one pair shown once in ``doc``'s order."""
    chosen_first = doc["order"] == "forward"
    a, b = (len(t) for t in _shown(doc))
    if critic in ("coin", "always_tie"):
        return Fraction(1, 2)
    if critic in ("always_first", "always_second"):
        return Fraction(int(chosen_first == (critic == "always_first")))
    if a == b:
        return Fraction(1, 2)  # no verdict: their tie
    names_first = (a > b) == (critic == "longer")
    return Fraction(int(names_first == chosen_first))


def _single_order_table(table: Sequence[str], doc: dict) -> Fraction:
    """A verdict by the lengths' sign alone (``table``: A longer, B longer, equal) on one pair shown once; a tie is
    no verdict, 0.5."""
    chosen_first = doc["order"] == "forward"
    a, b = (len(t) for t in _shown(doc))
    verdict = table[0 if a > b else 1 if b > a else 2]
    return Fraction(1, 2) if verdict == "C" else Fraction(int((verdict == "A") == chosen_first))


SINGLE_ORDER_TABLES = tuple(itertools.product("ABC", repeat=3))


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    by_subset: dict[str, list[dict]] = {}
    for d in docs:
        by_subset.setdefault(d["subset"], []).append(d)
    both = any(d.get("orders") == "both" for d in docs)
    critics = blind_critics.FLOOR_CRITICS if both else SINGLE_ORDER_CRITICS
    tables = ([blind_critics.table_name(t) for t in blind_critics.TABLES] if both
              else [f"blind table: {'/'.join(t)} ({'/'.join(blind_critics.SIGNS)})" for t in SINGLE_ORDER_TABLES])
    per_subset: dict[str, dict[str, float]] = {c: {} for c in (*critics, *tables)}
    for subset, subset_docs in by_subset.items():
        if both:
            pairs = blind_critics.shown_pairs(subset_docs, _shown)
            expected = {**blind_critics.expected_pairwise(pairs, {"right": pair_correct}),
                        **blind_critics.blind_table_values(pairs, {"right": pair_correct})}
            for critic in (*critics, *tables):
                per_subset[critic][subset] = float(expected[critic]["right"])
        else:
            for critic in critics:
                per_subset[critic][subset] = float(100 * sum(_single_order(critic, d) for d in subset_docs)
                                                   / len(subset_docs))
            for name, table in zip(tables, SINGLE_ORDER_TABLES):
                per_subset[name][subset] = float(100 * sum(_single_order_table(table, d) for d in subset_docs)
                                                 / len(subset_docs))

    def values_of(critic: str) -> dict[str, float]:
        sections_ = section_values(per_subset[critic])
        return {k: v for k, v in {**sections_, "score": score_of(sections_)}.items()
                if k in kind.headline and v is not None}

    floors = {critic: values_of(critic) for critic in critics}
    floors.update(blind_critics.best_tables({name: values_of(name) for name in tables}))
    return (*blind_critics.best_of(floors), floors)
