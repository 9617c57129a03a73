"""JudgeBench scoring, harness-free: (document, reply) -> record, and records -> metrics (x100).

The record (``JudgeBenchRecord``): one order of one pair, the verdict the critic gave against the pair's label.
Verdicts use the house's comparison alphabet (``core.metrics.pairwise``): ``A`` (the answer shown as A is better:
Arena-Hard's ``A>>B`` / ``A>B``), ``B`` (``B>A`` / ``B>>A``), ``C`` (a tie, ``A=B``); None when the reply has no
verdict. ``gold`` is the label of the *forward* order (the pair as the file stores it). Registered in
``core.records.RECORD_TYPES`` under its ``kind`` when this module is imported, so that ``Record.from_dict`` reads
it back from logged samples.

Reading the verdict (the authors' Arena-Hard judge, ``utils/judges.py``): every ``[[...]]`` of the characters
``A B < > =`` in the reply; none -> no verdict; two different ones -> no verdict (an echo of the label list, or a
judge that changed its mind, is no decision); one (possibly repeated) -> that label with ``>>`` read as ``>``. The
labels the prompt offers map to the comparison alphabet: ``A>B`` -> A, ``B>A`` -> B, ``A=B`` -> C (a tie); any
other bracketed string is no verdict either. An unread reply is a counted failure (``parse_rate``), never dropped.

The score (the authors' ``utils/metrics.py``, ``compute_final_metrics`` with both orders): with g the forward
label, f the forward verdict and r the reverse verdict flipped back to the forward order (swap(A) = B, swap(C) = C),

    pair score     s = sum over v in (f, r) of  +1 if v == g,  -1 if v == swap(g),  0 otherwise (tie, no verdict)
    accuracy       = 100 * mean over pairs [ s > 0 ]
    inconsistency  = 100 * mean over pairs asked both ways [ f or r missing, or f != r ]

So a pair is right when one order names the correct answer and the other does not contradict it (a tie or no
verdict). With one order per pair (``orders="single"``, the authors' ``--single_game``) s > 0 is exactly "the
verdict equals the label", the authors' single-order accuracy, and inconsistency is undefined (None). A pair
whose other order is missing from the records counts that order as no verdict. The authors compute but do not
report ``n_inconsistent`` (f != r with a missing verdict a value of its own, so two missing verdicts agree); ours
counts a missing verdict as inconsistent, so that a critic cannot look consistent by answering nothing. Where every
reply has a verdict the two are equal. ``inconsistency`` is one of the three judge-bias lines; the other two,
``first_position`` and ``length_bias``, are ``core.metrics.bias``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from critic_tasks.core import records as core_records
from critic_tasks.core.metrics import bias
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, by_pair, mean_interval, unstratified
from critic_tasks.core.metrics.pairwise import swap_verdict
from critic_tasks.core.records import Metric, Record, bias_lines, breakdown, rate
from critic_tasks.core.turns import turns_of
from critic_tasks.protocols import prompt_choice
from critic_tasks.protocols.judgebench import readers
from critic_tasks.protocols.judgebench.data import SOURCES
from critic_tasks.protocols.judgebench.judges import DEFAULT_JUDGE

# ----------------------------------------------------------------------------- records


ORDERS = ("forward", "reverse")


@dataclass(frozen=True)
class JudgeBenchRecord(Record):
    """``domain`` and ``source``: knowledge | reasoning | math | coding; ``unparsed_reason``: ``no_verdict`` (no
    ``[[...]]`` label), ``ambiguous`` (two different labels), ``unknown_label`` (a bracketed label the prompt does
    not offer), or "" when parsed."""

    kind = "judgebench"
    pair_id: str = ""
    order: str = "forward"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None
    source: str = ""
    unparsed_reason: str = ""
    # characters of the answers this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None
    prompt: str = ""  # the prompt the critic was asked with: authors | ours ("": a document made before the option)
    turns: int = 1  # the turns the reply holds (2: the Arena-Hard judge asked again, critic-eval's second pass)
    # the first turn had no verdict label at all, where the judge asks again: it was asked (turns 2) or, under plain
    # lm_eval, would have been
    needed_second_turn: bool = False
    judge: str = ""  # the judge format asked (judges.JUDGES: arena_hard, the default, vanilla, ...)

    @property
    def scored(self) -> bool:
        return self.gold is not None


core_records.register_record(JudgeBenchRecord)


# the authors' pattern (utils/judges.py, ArenaHard.get_score): the characters of the five Arena-Hard labels
VERDICT_PATTERN = re.compile(r"\[\[([AB<>=]+)\]\]")
LABEL_VERDICTS = {"A>B": "A", "B>A": "B", "A=B": "C"}
VERDICT_LABELS = {"A": "A>B", "B": "B>A", "C": "A=B"}


def parse_verdict(reply: str | None) -> tuple[str | None, str]:
    """(verdict A / B / C or None, why not: ``no_verdict`` | ``ambiguous`` | ``unknown_label`` | "").

    >>> parse_verdict("... so [[A>>B]]"), parse_verdict("[[A>B]] or [[B>A]]"), parse_verdict("[[A<B]]")
    (('A', ''), (None, 'ambiguous'), (None, 'unknown_label'))
    """
    if not isinstance(reply, str):
        return None, "no_verdict"
    found = {m.strip("\n") for m in VERDICT_PATTERN.findall(reply) if m != ""}
    if not found:
        return None, "no_verdict"
    if len(found) > 1:
        return None, "ambiguous"
    verdict = LABEL_VERDICTS.get(found.pop().replace(">>", ">").strip())
    return (verdict, "") if verdict else (None, "unknown_label")


# each judge format's reader (readers.py, the authors' rules); the Arena-Hard judge's is parse_verdict
READERS = {DEFAULT_JUDGE: parse_verdict, **readers.READERS}


def has_label(reply: str) -> bool:
    """The reply holds a ``[[...]]`` of the labels' characters (the authors' get_score: none -> try again)."""
    return VERDICT_PATTERN.search(reply) is not None


def follow_up(doc: dict, reply: str) -> str | None:
    """The authors' second user turn (``doc["follow_up"]``, their wording) for a reply without any verdict label,
    where the run's judge asks it (ArenaHard.get_judgment: ``number_of_judgment_attempts = 2``); else None."""
    text = doc.get("follow_up")
    return text if text and isinstance(reply, str) and not has_label(reply) else None


def join_turns(turns) -> str:
    """The reply the authors read: each turn after a newline, accumulated (``judgment += "\n" + new_judgment``)."""
    return "".join("\n" + turn for turn in turns)


def record(doc: dict, reply) -> JudgeBenchRecord:
    """``reply``: the critic's text (a list of samples: the first is read; JudgeBench asks once per order); a
    ``core.turns.Turns`` where critic-eval asked again (the joined turns are read, as the authors read them)."""
    text = reply[0] if isinstance(reply, (list, tuple)) else reply
    asked = turns_of(text)
    needed = bool(doc.get("follow_up")) and bool(asked) and isinstance(asked[0], str) and not has_label(asked[0])
    judge = str(doc.get("judge") or DEFAULT_JUDGE)
    verdict, reason = READERS.get(judge, parse_verdict)(text if isinstance(text, str) else "")
    if not isinstance(text, str):
        verdict, reason = None, "no_verdict"
    return JudgeBenchRecord(domain=doc["source_slug"], pair_id=str(doc["pair_id"]), order=doc["order"],
                            verdict=verdict, parsed=verdict is not None, gold=doc.get("preference"),
                            source=doc["source_slug"], unparsed_reason=reason,
                            lengths=bias.response_lengths(doc.get("response_a"), doc.get("response_b")),
                            prompt=str(doc.get("prompt") or ""), turns=max(len(asked), 1),
                            needed_second_turn=needed, judge=judge)


def gold_text(doc: dict) -> str:
    """The label of the order shown: the forward label, flipped for the reverse order."""
    gold = doc.get("preference")
    return VERDICT_LABELS.get(swap_verdict(gold) if doc["order"] == "reverse" else gold, "")


# ----------------------------------------------------------------------------- per pair

def pair_score(forward: str | None, reverse: str | None, gold: str) -> int:
    """+1 per order agreeing with the label, -1 per order contradicting it (``reverse`` as the reverse order's
    critic said it, flipped here).

    >>> pair_score("A", "B", "A"), pair_score("A", "C", "A"), pair_score("A", "A", "A"), pair_score("B", None, "A")
    (2, 1, 0, -1)
    """
    score = 0
    for verdict in (forward, swap_verdict(reverse)):
        score += 1 if verdict == gold else -1 if verdict == swap_verdict(gold) else 0
    return score


def pair_correct(forward: str | None, reverse: str | None, gold: str) -> bool:
    """The authors' rule: the pair score is positive."""
    return pair_score(forward, reverse, gold) > 0


def pair_inconsistent(forward: str | None, reverse: str | None) -> bool:
    """An order without a verdict, or two verdicts that disagree once the reverse one is flipped back.

    >>> pair_inconsistent("A", "B"), pair_inconsistent("C", "C"), pair_inconsistent("A", "A"), pair_inconsistent(None, None)
    (False, False, True, True)
    """
    return forward is None or reverse is None or forward != swap_verdict(reverse)


def pairs(records: Sequence[JudgeBenchRecord]) -> list[dict]:
    """Each pair once, in pair-id order: its gold, category, and the verdict of each order asked (None: unread)."""
    by_id: dict[str, dict] = {}
    for r in records:
        by_id.setdefault(r.pair_id, {"gold": r.gold, "source": r.source, "orders": set()})
        by_id[r.pair_id][r.order] = r.verdict
        by_id[r.pair_id]["orders"].add(r.order)
    return [by_id[i] for i in sorted(by_id)]


def _scored_pairs(records, source: str | None = None) -> list[dict]:
    return [p for p in pairs([r for r in records if r.scored]) if source is None or p["source"] == source]


def correct_flags(records: Sequence[JudgeBenchRecord], source: str | None = None) -> list[bool]:
    return [pair_correct(p.get("forward"), p.get("reverse"), p["gold"]) for p in _scored_pairs(records, source)]


def inconsistent_flags(records: Sequence[JudgeBenchRecord], source: str | None = None) -> list[bool] | None:
    both = [p for p in _scored_pairs(records, source) if {"forward", "reverse"} <= p["orders"]]
    return [pair_inconsistent(p.get("forward"), p.get("reverse")) for p in both] or None


# ----------------------------------------------------------------------------- metrics

def accuracy(records: Sequence[JudgeBenchRecord], source: str | None = None) -> float | None:
    """JudgeBench accuracy (Tan et al. 2024, Section 4; ``utils/metrics.py``): 100 * the share of pairs whose
    score (+1 per order agreeing with the label, -1 per order contradicting it) is positive. ``source``: only that
    category's pairs (the paper's per-category columns); None without labelled pairs."""
    flags = correct_flags(records, source)
    return rate(flags) if flags else None


def inconsistency(records: Sequence[JudgeBenchRecord], source: str | None = None) -> float | None:
    """100 * the share of pairs asked in both orders that lack a verdict in either order or whose two verdicts
    disagree once the reverse one is flipped back (Tan et al. 2024's position-consistency check; their code's
    ``n_inconsistent`` where every reply has a verdict). None: no pair was asked in both orders."""
    flags = inconsistent_flags(records, source)
    return rate(flags) if flags else None


def parse_rate(records: Sequence[JudgeBenchRecord]) -> float:
    """100 * the share of replies with a verdict."""
    return rate(r.parsed for r in records)


def tie_rate(records: Sequence[JudgeBenchRecord]) -> float:
    """100 * the share of replies whose verdict is a tie (``[[A=B]]``): no order-independent credit."""
    return rate(r.verdict == "C" for r in records)


def pair_count(records: Sequence[JudgeBenchRecord]) -> float:
    """How many labelled pairs the accuracy averages over."""
    return float(len(_scored_pairs(records)))


# Each (family, base) a registry metric names: its one value over the records a key accepts (None: absent). The
# per-category keys (accuracy_knowledge, ...) are ``accuracy`` over one category's records (the registry's subset).
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    ("judgebench", "accuracy"): accuracy,
    ("judgebench", "inconsistency"): inconsistency,
    ("judgebench", "parse_rate"): parse_rate,
    ("judgebench", "tie_rate"): tie_rate,
    ("judgebench", "pairs"): pair_count,
    # judge-bias lines (core.metrics.bias): first-position rate, longer-response preference beyond the labels'
    # (``inconsistency`` is the third: 100 minus position consistency)
    **{("judgebench", base): bias.line(base) for base in bias.BASES},
    # text: the prompt of the records (authors | ours; joined where a re-scoring mixed them)
    ("judgebench", "prompt"): lambda records: prompt_choice.recorded(r.prompt for r in records) or None,
    # the Arena-Hard judge's second turn: replies asked again; replies that needed it and were not asked
    ("judgebench", "judge"): lambda records: prompt_choice.recorded(r.judge for r in records) or None,
    ("judgebench", "second_turns"): lambda records: float(sum(r.turns > 1 for r in records)),
    ("judgebench", "second_turns_missing"): lambda records: float(sum(r.needed_second_turn and r.turns < 2
                                                                      for r in records)),
}


def judgebench_metrics(records: Sequence) -> dict[str, float]:
    out = {base: fn(records) for (_, base), fn in METRICS.items()}
    return {k: v for k, v in out.items() if v is not None}


# ----------------------------------------------------------------------------- metric keys

# The authors' pair score per category (the pair's source) and overall; inconsistency beside it.
KEYS = (Metric("accuracy", "judgebench", when="scored"),
        *breakdown("judgebench", "accuracy", "source", tuple(SOURCES)),
        Metric("inconsistency", "judgebench", when="scored", higher_is_better=False),
        Metric("parse_rate", "judgebench"), Metric("tie_rate", "judgebench", higher_is_better=None),
        Metric("pairs", "judgebench", when="scored", higher_is_better=None, scale="count"), *bias_lines("judgebench"),
        # text: the prompt the critic was asked with (authors | ours)
        Metric("prompt", "judgebench", scale="text", higher_is_better=None),
        # text: the judge format asked (arena_hard, the default; vanilla, prometheus_2, ...)
        Metric("judge", "judgebench", scale="text", higher_is_better=None),
        # the Arena-Hard judge's second turn: replies asked again (critic-eval), and replies that needed it and were
        # not asked (plain lm_eval: what critic-eval would have asked)
        Metric("second_turns", "judgebench", higher_is_better=None, scale="count"),
        Metric("second_turns_missing", "judgebench", higher_is_better=False, scale="count"))

FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {"judgebench": judgebench_metrics}


def judgebench_interval(records: Sequence[JudgeBenchRecord], base: str,
                        settings: BootstrapSettings) -> tuple[float, float] | None:
    """``accuracy`` / ``accuracy_<category>`` / ``inconsistency`` / the bias lines (``first_position``,
    ``length_bias``: ``core.metrics.bias``): percentile bootstrap over pairs (both orders of a pair resampled
    together, ``core.metrics.bootstrap.mean_interval``), in pair-id order."""
    if base in bias.BASES:
        return bias.bias_interval(base, records, settings)
    name, _, slug = base.partition("_")
    source = slug or None
    if name == "accuracy" and (source is None or source in SOURCES):
        flags = correct_flags(records, source)
    elif base == "inconsistency":
        flags = inconsistent_flags(records) or []
    else:
        return None
    return mean_interval([100.0 * f for f in flags], None, settings) if flags else None


# family -> (records, the family's value, settings) -> (low, high) or None where the value has no interval
INTERVALS: dict[str, Callable] = {"judgebench": judgebench_interval}
# family -> (record, value) -> the stratum its interval resamples within: none (pairs, over every category)
STRATA: dict[str, Callable] = {"judgebench": unstratified}
# family -> (record, value) -> the unit its interval resamples: a pair, both orders together
UNITS: dict[str, Callable] = {"judgebench": by_pair}
