"""CritiqueLLM scoring, harness-free: (document, reply) -> record, and records -> metrics (x100).

The records: ``RatingRecord`` (a rating of one AlignBench response) and ``PreferenceRecord`` (one order of a
pairwise preference), registered in ``core.records.RECORD_TYPES`` under their ``kind`` (``register_record``), so
that ``Record.from_dict`` reads them back from logged samples.

* ``rating`` (pointwise): the critic's ``[[x]]`` rating (1-10) against ``human_score``. ``text_pearson`` /
  ``text_spearman`` / ``text_kendall``: correlation over the responses to each question, averaged over questions
  (``text_questions`` used; ``text_constant``: of those, questions the critic rated alike throughout, each counted
  as 0 so that abstaining where it would be wrong cannot raise the mean; ``text_skipped``: questions with fewer
  than two responses or constant human scores);
  ``system_*``: each generating model's mean rating vs its mean human score, correlated across models
  (``system_models``); ``text_pearson_<category>`` per AlignBench category; ``parse_rate``. An unparsed reply takes
  5, the released evaluation script's value, and counts against ``parse_rate`` (never dropped). With k sampled
  critiques (self-consistency) the rating is the mean of the parsed samples; none parsed -> 5, unparsed. Where the
  rating is read follows the prompt variant the document was made with: the last ``[[x]]`` for ``paper`` (the rating
  ends the reply), the first for ``short`` (the rating opens it). ``variant``: the variant, recorded beside the
  numbers.
* ``preference`` (pairwise): ``agreement`` and ``consistency`` over pairs asked in both orders (the paper's rule,
  ``core.metrics.agreement``), ``agreement_<category>``, ``parse_rate`` (share of the 2N replies with a verdict),
  and the judge-bias lines ``first_position`` and ``length_bias`` (``core.metrics.bias``; ``consistency`` is the
  third).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

from critic_tasks.core.metrics import agreement_metrics, bias, system_level, text_level
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, by_pair, mean_interval, unstratified
from critic_tasks.core.metrics.correlation import COEFFICIENTS, per_question, question_values
from critic_tasks.core.metrics.pairwise import pair_consistent, swap_verdict
from critic_tasks.core.parsing import parse_bracket_rating, parse_bracket_verdict
from critic_tasks.core.records import Metric, Record, all_identical, bias_lines, breakdown, canonical, rate, register_record
from critic_tasks.protocols import variants
from critic_tasks.protocols.critiquellm.data import CATEGORY_SLUGS

# ----------------------------------------------------------------------------- records


@register_record
@dataclass(frozen=True)
class RatingRecord(Record):
    """A critic's rating of one response against the human score (CritiqueLLM pointwise). With k sampled
    critiques (self-consistency), ``pred`` is the mean of the parsed ratings and ``samples`` is k."""

    kind: ClassVar[str] = "rating"
    pred: float = 0.0  # the parsed rating (or the mean of the parsed samples); the failure value when none parsed
    parsed: bool = False
    gold: float | None = None
    question: str = ""  # text-level correlations group the responses to one question
    model: str = ""  # system-level correlations group by the model that wrote the response
    category: str = ""
    samples: int = 1
    parsed_samples: int = 1
    identical: bool = False  # k > 1 samples, all the same text: the backend did not sample (``all_identical``)
    variant: str = ""  # the prompt variant the critic was asked with (protocols.variants)

    @property
    def scored(self) -> bool:
        return self.gold is not None

    @property
    def n_samples(self) -> int:
        return self.samples


@register_record
@dataclass(frozen=True)
class PreferenceRecord(Record):
    """One order of a pairwise preference (CritiqueLLM pairwise): the verdict A/B/C given for that order."""

    kind: ClassVar[str] = "preference"
    pair_id: str = ""
    order: str = "forward"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None  # the human preference for the *forward* order
    category: str = ""
    variant: str = ""  # the prompt variant the critic was asked with
    # characters of the responses this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


RATING_LOW, RATING_HIGH = 1, 10
UNPARSED_RATING = 5.0  # the released eval_pointwise.py's value for an unparsed critique


def rating_record(doc: dict, reply) -> RatingRecord:
    """``reply``: one reply, or a list of k sampled replies (self-consistency: mean of the parsed ratings)."""
    replies = reply if isinstance(reply, (list, tuple)) else [reply]
    variant = variants.of(doc)
    first = variant == variants.SHORT  # the short prompt asks for the rating first, the paper's last
    values = [v for v in (parse_bracket_rating(r, RATING_LOW, RATING_HIGH, first) for r in replies) if v is not None]
    pred = sum(values) / len(values) if values else UNPARSED_RATING
    return RatingRecord(domain=doc["category_slug"], pred=pred, parsed=bool(values), gold=doc.get("human_score"),
                        question=doc["question"], model=doc["model"], category=doc["category_slug"],
                        samples=len(replies), parsed_samples=len(values), variant=variant,
                        identical=all_identical(replies))


def preference_record(doc: dict, reply) -> PreferenceRecord:
    text = reply[0] if isinstance(reply, (list, tuple)) else reply
    variant = variants.of(doc)
    verdict = parse_bracket_verdict(text, first=variant == variants.SHORT)
    return PreferenceRecord(domain=doc["category_slug"], pair_id=str(doc["pair_id"]), order=doc["order"],
                            verdict=verdict, parsed=verdict is not None, gold=doc.get("preference"),
                            category=doc["category_slug"], variant=variant,
                            lengths=bias.response_lengths(doc.get("response_a"), doc.get("response_b")))


def record(doc: dict, reply) -> Record:
    return (preference_record if doc["dimension"] == "alignbench_pairwise" else rating_record)(doc, reply)


def _labelled(records: Sequence[RatingRecord]) -> tuple[list[float], list[float], list[RatingRecord]]:
    labelled = [r for r in records if r.scored]
    return [r.pred for r in labelled], [float(r.gold) for r in labelled], labelled


def _text(key: str) -> Callable[[Sequence[RatingRecord]], float]:
    """A text-level value (``core.metrics.correlation.text_level``: over the responses to each question)."""
    def value(records):
        pred, human, labelled = _labelled(records)
        return text_level(pred, human, [r.question for r in labelled])[key]

    value.__name__ = f"rating_text_{key}"
    return value


def _system(key: str) -> Callable[[Sequence[RatingRecord]], float]:
    """A system-level value (``system_level``: each generating model's mean rating, correlated across models)."""
    def value(records):
        pred, human, labelled = _labelled(records)
        return system_level(pred, human, [r.model for r in labelled])[key]

    value.__name__ = f"rating_system_{key}"
    return value


def rating_identical(records: Sequence[RatingRecord]) -> float | None:
    """Self-consistency: items whose k samples were one text k times (the warning: core.records.warn_identical)."""
    sampled = [r for r in records if r.samples > 1]
    return float(sum(r.identical for r in sampled)) if sampled else None


def _preference_pairs(records: Sequence[PreferenceRecord]) -> dict[str, float]:
    pairs: dict[str, dict] = {}
    for r in records:
        pairs.setdefault(r.pair_id, {"gold": r.gold})[r.order] = r.verdict
    ids = sorted(pairs)
    return agreement_metrics([pairs[i].get("forward") for i in ids], [pairs[i].get("reverse") for i in ids],
                             [pairs[i]["gold"] for i in ids])


# Each (family, base) the registry's metrics name: its one value over the records a key accepts (None: absent).
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    ("rating", "parse_rate"): lambda records: rate(r.parsed for r in records),
    ("rating", "sample_parse_rate"): lambda records: (100.0 * sum(r.parsed_samples for r in records)
                                                      / max(1, sum(r.samples for r in records))),
    **{("rating", f"text_{k}"): _text(k) for k in (*COEFFICIENTS, "questions", "constant", "skipped")},
    **{("rating", f"system_{k}"): _system(k) for k in (*COEFFICIENTS, "models", "defined")},
    ("rating", "variant"): lambda records: variants.recorded(r.variant for r in records),
    ("rating", "identical_samples"): rating_identical,
    ("preference", "parse_rate"): lambda records: rate(r.parsed for r in records),
    ("preference", "variant"): lambda records: variants.recorded(r.variant for r in records),
    ("preference", "agreement"): lambda records: _preference_pairs(records)["agreement"],
    ("preference", "consistency"): lambda records: _preference_pairs(records)["consistency"],
    # judge-bias lines (core.metrics.bias): first-position rate, longer-response preference beyond the labels'
    **{("preference", base): bias.line(base) for base in bias.BASES},
}


def _family(name: str) -> Callable[[Sequence], dict[str, float]]:
    def values(records):
        out = {base: fn(records) for (family, base), fn in METRICS.items() if family == name}
        return {k: v for k, v in out.items() if v is not None}

    values.__name__ = f"{name}_metrics"
    return values


rating_metrics, preference_metrics = _family("rating"), _family("preference")


# ----------------------------------------------------------------------------- metric keys

# The keys of CritiqueLLM's pointwise (rating) and pairwise (preference) kinds.
_CORRELATIONS = tuple(Metric(f"{level}_{c}", "rating", when="scored", scale="correlation")
                      for level in ("text", "system") for c in ("pearson", "spearman", "kendall"))
RATING_KEYS = (
    *_CORRELATIONS[:3], Metric("text_questions", "rating", when="scored", higher_is_better=None, scale="count"),
    Metric("text_constant", "rating", when="scored", higher_is_better=False, scale="count"),
    Metric("text_skipped", "rating", when="scored", higher_is_better=False, scale="count"),
    *_CORRELATIONS[3:], Metric("system_models", "rating", when="scored", higher_is_better=None, scale="count"),
    Metric("parse_rate", "rating"), Metric("sample_parse_rate", "rating"),
    # the prompt variant's name (paper | short), not a number
    Metric("variant", "rating", scale="text", higher_is_better=None),
    # sampled tasks: items whose k samples were all the same text (the backend did not sample)
    Metric("identical_samples", "rating", when="scored", min_samples=2, higher_is_better=False, scale="count"),
    *breakdown("rating", "text_pearson", "category", CATEGORY_SLUGS, scale="correlation"))

PREFERENCE_KEYS = (Metric("agreement", "preference", when="scored"), Metric("consistency", "preference"),
                   Metric("parse_rate", "preference"),
                   Metric("variant", "preference", scale="text", higher_is_better=None),
                   *breakdown("preference", "agreement", "category", CATEGORY_SLUGS), *bias_lines("preference"))

FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {"rating": rating_metrics,
                                                                "preference": preference_metrics}


def rating_interval(records: Sequence[RatingRecord], base: str, settings: BootstrapSettings) -> tuple | None:
    """``text_pearson`` / ``text_spearman`` / ``text_kendall``: questions resampled, each with the coefficient the
    value averages (questions the data leave undefined are left out, a constant critic's count as 0, as in the
    value). The system-level
    values (a handful of models) get no interval."""
    coefficient = base.removeprefix("text_")
    if coefficient == base or coefficient not in COEFFICIENTS:
        return None
    labelled = [r for r in canonical(records) if r.scored]
    per_q = per_question([r.pred for r in labelled], [float(r.gold) for r in labelled], [r.question for r in labelled])
    values = question_values(dict(sorted(per_q.items(), key=lambda kv: str(kv[0]))), coefficient)
    return mean_interval(values, None, settings) if values else None


def preference_interval(records: Sequence[PreferenceRecord], base: str, settings: BootstrapSettings) -> tuple | None:
    """``agreement`` / ``consistency`` / the bias lines (``first_position``, ``length_bias``): pairs resampled (both
    orders together), in pair-id order."""
    if base in bias.BASES:
        return bias.bias_interval(base, records, settings)
    if base not in ("agreement", "consistency"):
        return None
    pairs: dict[str, dict] = {}
    for r in records:
        pairs.setdefault(r.pair_id, {"gold": r.gold})[r.order] = r.verdict
    rows = [pairs[i] for i in sorted(pairs)]
    if not rows or (base == "agreement" and any(p["gold"] is None for p in rows)):
        return None
    flags = [pair_consistent(p.get("forward"), p.get("reverse")) and (base == "consistency" or p.get("forward") == p["gold"])
             for p in rows]
    return mean_interval([100.0 * f for f in flags], None, settings)


# family -> (records, the family's value, settings) -> (low, high) or None where the value has no interval
INTERVALS: dict[str, Callable] = {"rating": rating_interval, "preference": preference_interval}
# family -> (record, value) -> the stratum its interval resamples within: none (questions, pairs)
STRATA: dict[str, Callable] = {"rating": unstratified, "preference": unstratified}


def question_unit(record, base: str) -> str:
    """A question's ratings resampled together (the text-level correlations are per question)."""
    return f"question {record.question}" if getattr(record, "question", "") else ""


# family -> (record, value) -> the unit its interval resamples: a pair (both orders), a question
UNITS: dict[str, Callable] = {"preference": by_pair, "rating": question_unit}


def gold_text(doc: dict) -> str:
    if doc["dimension"] == "alignbench_pairwise":
        gold = doc.get("preference")
        return (swap_verdict(gold) if doc["order"] == "reverse" else gold) or ""
    return f"{doc['human_score']:g}"

