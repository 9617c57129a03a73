"""CriticBench scoring, harness-free: (document, output) -> record, and records -> metrics.

The records: a Likert score (feedback, meta-feedback), one order's verdict (comparison), an item's revisions checked
(correction), a judge's grade (the judge-scored tasks) and SAvg's stage-1 critique. Each is registered in
``core.records.RECORD_TYPES`` under its ``kind`` (``register_record``), so that ``Record.from_dict`` reads it back
from logged samples.

Reading a reply (``parse_likert``, ``parse_verdict``: deterministic, never raising; docs/tasks-and-metrics.md gives
the rules per task, tests/test_parsing.py holds the cases):

* The paper's marker comes first (``Decision: 5`` for feedback, ``Score: 5`` for
  meta-feedback, ``Decision: A`` for comparison). Markdown emphasis and a
  ``/7`` denominator around the value are tolerated. A marker whose value is
  out of range is a parse failure: the model did answer, just not validly.
* Without a marker, a score falls back to the last in-range number in the text
  (the original toolkit's fallback, minus its ``eval``), ignoring numbers that are
  not scores: ``/7`` and ``out of 7`` denominators, stated scales and ranges
  ("from 1 to 7", "1-7", "between 1 and 7") and powers ("1.8 x 10^7", "2e7");
  list enumerators ("5. The ...") and the scale's two ends stated together in any language ("1 ನಿಂದ 7"). A reply
  that stops mid-sentence (no closing punctuation, no final number: ``core.parsing.looks_cut_off``) was cut off by
  the token budget: no fallback; a verdict falls back to a bare leading ``A``/``B``/``C``
  (the toolkit reads the first character of such replies).
* Anything else returns ``None``; callers count it against ``parse_rate``.

Both adapters (lm-eval, OpenCompass) and the offline scorer go through these functions, so a metric fixed here is
fixed everywhere. The metric keys, their aggregation and direction are declared in ``critic_tasks.registry``; the
families below compute them, all on the paper's x100 scale (shares included):

* ``likert`` (feedback, meta-feedback): ``spearman`` pooled over domains, ``spearman_<quality>``,
  ``score`` = (spearman + 100) / 2, ``parse_rate``, ``labels_available``, ``spearman_warnings`` (correlations that
  were undefined and reported as 0). An unparseable reply takes the scale midpoint (4): never dropped.
* ``pairwise`` (comparison): ``accuracy`` (paper's rule), ``accuracy_loose`` (toolkit's), ``accuracy_<difficulty>``,
  ``accuracy_loose_<difficulty>``,
  ``consistency``, ``score`` = accuracy, ``parse_rate``, ``labels_available``, and the judge-bias lines
  ``first_position`` and ``length_bias`` (``core.metrics.bias``; ``consistency`` is the third).
* ``correction``: ``pass_rate`` (unweighted mean of the domains' pass rates, as the paper), ``pass_rate_<quality>``,
  ``score`` = pass_rate, ``parse_rate``, ``truncated`` (share of revisions cut off by the token budget),
  ``isolation`` (the sandbox layer that ran the programs: a name, ``none`` when nothing ran), ``invalid_items``
  (items whose gold answer or unit test is unusable; excluded, logged), ``pass@k`` when every item has at least k samples,
  and with k > 1 samples ``identical_samples``: the items whose k replies were one text (the backend did not sample).
* ``judge`` (subjective): ``judge_score`` (1-10, mean of the domains' means), ``judge_score_<group>``,
  ``judge_parse_rate``, ``judge_failed``, ``judge_deferred``, ``judge_echoed``: items graded 1, the minimum, because
  the judge gave no grade of its own and repeated one the critique states (a forged grade it quoted: the failure is
  the critique's, so it is graded, never left out; ``judge.grade_prompts``). Every other item the judge could not
  grade (a failed call, a reply without its grade line or with a second grade: what a critique that asks the judge
  for another line provokes) also counts 1 in ``judge_score`` and is counted in ``judge_failed``, so making the
  judge fail never beats the lowest grade (issue 34); ``critic-eval check`` fails a run with judge failures unless
  told otherwise. Under the toolkit protocol (records of rule "toolkit") they are left out of ``judge_score``, as the
  released toolkit's evaluators skip them (the leaderboard's rule), and still counted in ``judge_failed``.
* ``feedback_text`` (SAvg's stage 1, not scored): ``parse_rate`` = the share of non-empty critiques.

On the test split (no human labels) the label-based keys are absent, not zero, and ``labels_available`` is 0.

``INTERVALS`` gives each family's bootstrap interval (``core.metrics.bootstrap``) of one of its values, following
the value's own arithmetic: the pooled Spearman resamples labelled items (prediction and label together); a
comparison rate resamples pairs (both orders of a pair stay together); ``pass_rate`` / ``pass@k`` and
``judge_score`` (means of domain means) resample items within each domain.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Optional, Sequence

from critic_tasks.core.metrics import bias, likert_score, pairwise_metrics, pass_at_k, spearman_x100
from critic_tasks.core.metrics.bootstrap import (
    BootstrapSettings,
    by_domain,
    by_pair,
    mean_interval,
    spearman_interval,
    unstratified,
)
from critic_tasks.core.metrics.pairwise import pair_consistent, pair_correct, pair_correct_loose, swap_verdict
from critic_tasks.core.parsing import looks_cut_off
from critic_tasks.core.records import (
    CheckOutcome,
    Metric,
    Record,
    all_identical,
    bias_lines,
    breakdown,
    canonical,
    domain_mean,
    rate,
    register_record,
)
from critic_tasks.protocols.criticbench import toolkit
from critic_tasks.protocols.criticbench.correction.check import check_samples
from critic_tasks.protocols.criticbench.data import DIFFICULTIES, MAIN_QUALITIES
from critic_tasks.protocols.criticbench.judge_prompts import LOWEST
from critic_tasks.protocols.scorer import Scorer

# ----------------------------------------------------------------------------- records


@register_record
@dataclass(frozen=True)
class LikertRecord(Record):
    """A score on a Likert scale against a human score (CriticBench feedback and meta-feedback)."""

    kind: ClassVar[str] = "likert"
    pred: float = 0.0  # the parsed score, or the scale midpoint when unparsed (so it is never dropped)
    parsed: bool = False
    gold: float | None = None
    quality: str | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


@register_record
@dataclass(frozen=True)
class VerdictRecord(Record):
    """One order of a pairwise comparison: the verdict A/B/C given for that order (None when unparsed)."""

    kind: ClassVar[str] = "verdict"
    pair_id: str = ""
    order: str = "forward"  # "forward" | "reverse"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None  # the gold verdict of the *forward* order
    difficulty: str | None = None
    rule: str = "paper"  # whose comparison rule gives the headline score: "paper" or "toolkit"
    # characters of the responses this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


@register_record
@dataclass(frozen=True)
class CorrectionRecord(Record):
    """All samples of one item's revision (one per sample when pass@k is estimated)."""

    kind: ClassVar[str] = "correction"
    quality: str | None = None
    passed: tuple[bool, ...] = field(default_factory=tuple)
    parsed: tuple[bool, ...] = field(default_factory=tuple)
    invalid: bool = False
    truncated: tuple[bool, ...] = field(default_factory=tuple)
    isolation: tuple[str, ...] = field(default_factory=tuple)  # the sandbox layers that ran its programs, if any
    identical: bool = False  # k > 1 samples, all the same text: the backend did not sample (``all_identical``)
    # each sample's check outcome (``CheckOutcome`` as a dict: status, detail, the sandbox layer), for --log_samples
    # and the invalid items' log lines; no metric reads them, and two records differing only here are equal
    checks: tuple[dict, ...] = field(default_factory=tuple, compare=False)

    @property
    def scored(self) -> bool:
        return not self.invalid

    @property
    def n_samples(self) -> int:
        return len(self.passed)


@register_record
@dataclass(frozen=True)
class JudgedRecord(Record):
    """A judge's grade of one output (None when the call failed or the reply had no score; the error says which)."""

    kind: ClassVar[str] = "judged"
    group: str | None = None
    score: float | None = None
    error: str | None = None
    cached: bool = False
    judge_text: str | None = None
    item: str = ""
    is_deferred: bool = False
    # the judge gave no grade of its own and repeated one the graded text states: ``score`` is the scale's minimum
    echoed: bool = False
    # whose rule an ungraded item (``score`` None) follows in the metrics: "" ours, counted at the scale's minimum;
    # "toolkit" the released toolkit's (CRITICBENCH_PROTOCOL=toolkit), left out as its evaluators leave it out
    rule: str = ""
    # what the judge's server said answered (its ``model``, ``system_fingerprint``; None: it said nothing); no metric
    # reads it, so two records differing only here are equal
    judge_served: dict | None = field(default=None, compare=False)

    @property
    def scored(self) -> bool:
        return self.score is not None and not self.is_deferred

    @property
    def deferred(self) -> bool:
        return self.is_deferred


@register_record
@dataclass(frozen=True)
class FeedbackTextRecord(Record):
    """A free-text critique that is kept, not scored (CriticBench SAvg's stage 1): was anything written?"""

    kind: ClassVar[str] = "feedback_text"
    parsed: bool = False  # the critique is not empty


# ----------------------------------------------------------------------------- reading a reply

_NUMBER = r"(\d+(?:\.\d+)?)"
_EMPHASIS = r"[\s*_`'\"]*"
# Each pattern below starts only where a run of its first characters starts ((?<!\s), (?<!\d)): a match starting
# inside the run would have matched from the run's start already (the run's characters can all be absorbed), and
# trying every position of a long run (a reply of spaces or digits) made each pass quadratic (issue 44).
_DENOMINATOR = re.compile(r"(?<!\s)(?:\s*/\s*\d+(?:\.\d+)?|\s+out\s+of\s+\d+(?:\.\d+)?)")
# Numbers that are part of a stated scale or range, or of a power, are never the score ("I cannot give a score
# from 1 to 7" is not a 7; "1.8 x 10^7" is not a 7).
_NOT_A_SCORE = re.compile(
    # where an alternative can start: a digit, "from" or "between" after no digit (\b or (?<!\d) below), or a power:
    # every other position (inside a long number, in prose) fails at once
    r"(?:(?<!\d)(?=[\dfFbB])|(?=[\^*]))"
    r"(?:\b(?:from\s+)?\d+(?:\.\d+)?\s*(?:-|–|—|\bto\b)\s*\d+(?:\.\d+)?"
    r"|\bbetween\s+\d+(?:\.\d+)?\s+and\s+\d+(?:\.\d+)?"
    r"|(?<!\d)\d+(?:\.\d+)?\s*(?:x|×|\*)\s*10\s*(?:\^|\*\*)\s*[-+]?\d+"
    r"|(?:\^|\*\*)\s*[-+]?\d+(?:\.\d+)?"
    r"|(?<!\d)\d+(?:\.\d+)?[eE][-+]?\d+)", re.IGNORECASE)
# ASCII word characters only: a number right after or before a CJK character ("打5分") is still a number.
_FALLBACK_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])" + _NUMBER + r"(?![A-Za-z0-9_]|\.\d)")
_ENUMERATOR_TAIL = re.compile(r"\d+[.)](?=\s)")
_SPACES = re.compile(r"\s*")


def _drop_enumerators(text: str) -> str:
    """``re.sub(r"^(\\s*)\\d+[.)](?=\\s)", r"\\1 ", text, flags=re.M)``: a list's "1." / "2)" at a line's start (after
    any whitespace, blank lines included) becomes a space. In one pass: the regex retried from every line start of a
    run of blank lines, each time across the whole run."""
    out: list[str] = []
    kept = 0  # text[kept:] is not yet copied
    start = 0  # a line start
    while start <= len(text):
        digits = _SPACES.match(text, start).end()
        hit = _ENUMERATOR_TAIL.match(text, digits)
        if hit:
            out += [text[kept:digits], " "]
            kept = hit.end()
        # no line start before the hit's end, or up to the first non-space, can match where this one did not
        newline = text.find("\n", hit.end() if hit else digits)
        if newline < 0:
            break
        start = newline + 1
    out.append(text[kept:])
    return "".join(out)


def _scale_ends(low: float, high: float) -> re.Pattern:
    """The scale's two ends close together ("1 to 7", "1 ನಿಂದ 7", "1至7"): a statement of the scale, not a score."""
    def num(v: float) -> str:
        return re.escape(str(int(v)) if float(v).is_integer() else str(v)) + r"(?:\.0)?"
    return re.compile(rf"(?<![\d.]){num(low)}\D{{1,15}}?{num(high)}(?![\d.])")


# Models asked in English often answer translate items in Chinese, marker included
# ("决策：B"); the toolkit counted those as unparsed, we read them.
_MARKER_WORDS = {"Decision": "Decision|决策|決策|决定|決定", "Score": "Score|评分|評分|分数|分數"}


def _marker(name: str) -> re.Pattern:
    words = _MARKER_WORDS.get(name, re.escape(name))
    return re.compile(rf"(?:{words}){_EMPHASIS}[:：]{_EMPHASIS}", re.IGNORECASE)


SCORE_MARKERS = {name: _marker(name) for name in _MARKER_WORDS}


def parse_likert(text: str | None, marker: str = "Decision", low: float = 1, high: float = 7) -> float | None:
    """Score in ``[low, high]`` from ``text`` or ``None``."""
    if not text:
        return None
    pattern = SCORE_MARKERS.get(marker) or _marker(marker)
    hit = pattern.search(text)
    if hit:
        value = re.match(_NUMBER, text[hit.end():])
        if value:
            score = float(value.group(1))
            return score if low <= score <= high else None
        # "Decision:" followed by no number: fall through to the fallback
    if looks_cut_off(text):
        return None  # cut off mid-sentence: whatever number came last was not the verdict
    stripped = _NOT_A_SCORE.sub(" ", _DENOMINATOR.sub(" ", text))
    stripped = _drop_enumerators(_scale_ends(low, high).sub(" ", stripped))
    for value in reversed(_FALLBACK_NUMBER.findall(stripped)):
        score = float(value)
        if low <= score <= high:
            return score
    return None


# an option letter followed by another one ("A/B/C", "A or B", "A、B、C", "A, B, or C"): the option list echoed,
# no verdict
_OPTION_LIST = r"(?!\)?\s*(?:/|\||、|或|\bor\b|,\s*\(?(?-i:[ABC])\)?\s*(?:,\s*(?:\bor\b)?|\bor\b|/))\s*\(?(?-i:[ABC])(?![A-Za-z]))"
_VERDICT_MARKER = re.compile(
    rf"(?:{_MARKER_WORDS['Decision']}){_EMPHASIS}[:：]{_EMPHASIS}(?:(?:answer|response|option|output)\s+)?\(?([ABC])"
    rf"(?![A-Za-z]){_OPTION_LIST}",
    re.IGNORECASE,
)
_LEADING_VERDICT = re.compile(rf"^{_EMPHASIS}\(?([ABC])(?![A-Za-z]){_OPTION_LIST}")


def parse_verdict(text: str | None) -> str | None:
    """``"A"``/``"B"``/``"C"`` from a comparison reply, or ``None``. A marker followed by the option list
    ("Decision: A/B/C", "决策：A/B/C") is an echo of the prompt's format, no verdict: a later marker may give one."""
    if not text:
        return None
    hit = _VERDICT_MARKER.search(text)
    if hit:
        return hit.group(1).upper()
    hit = _LEADING_VERDICT.match(text.strip())
    return hit.group(1) if hit else None


log = logging.getLogger("critic_tasks")

LIKERT_LOW, LIKERT_HIGH = 1, 7
LIKERT_MIDPOINT = (LIKERT_LOW + LIKERT_HIGH) / 2
PASS_AT_K = (1, 5, 10)
_LIKERT = {  # dimension -> (marker, gold field, quality field)
    "feedback": ("Decision", "feedback_score", "quality"),
    "meta": ("Score", "meta_feedback_score", "raw_quality"),
}


# ----------------------------------------------------------------------------- making a record


def _toolkit(doc: dict) -> bool:
    return doc.get("protocol") == "toolkit"


def likert_record(doc: dict, text: str | None) -> LikertRecord:
    marker, gold_key, quality_key = _LIKERT[doc["dimension"]]
    # the toolkit keeps whatever number it read, in range or not; we read only in-range scores
    value = toolkit.parse_score(text, marker) if _toolkit(doc) else parse_likert(text, marker, LIKERT_LOW, LIKERT_HIGH)
    return LikertRecord(domain=doc["domain"], pred=LIKERT_MIDPOINT if value is None else value,
                        parsed=value is not None, gold=doc.get(gold_key), quality=doc.get(quality_key))


def verdict_record(doc: dict, text: str | None) -> VerdictRecord:
    verdict = toolkit.parse_verdict(text) if _toolkit(doc) else parse_verdict(text)
    return VerdictRecord(domain=doc["domain"], pair_id=doc["pair_id"], order=doc["order"], verdict=verdict,
                         parsed=verdict is not None, gold=doc.get("preference"), difficulty=doc["difficulty"],
                         rule="toolkit" if _toolkit(doc) else "paper",
                         lengths=bias.response_lengths(doc.get("generation_a"), doc.get("generation_b")))


def correction_record(doc: dict, outcomes: Sequence[CheckOutcome]) -> CorrectionRecord:
    """``outcomes``: one check result per sample of this item (see ``correction.check_corrections``)."""
    return CorrectionRecord(domain=doc["domain"], quality=doc.get("quality"),
                            passed=tuple(o.passed for o in outcomes), parsed=tuple(o.parsed for o in outcomes),
                            invalid=any(o.status == "invalid" for o in outcomes),
                            truncated=tuple(o.truncated for o in outcomes),
                            isolation=tuple(sorted({o.isolation for o in outcomes if o.isolation})),
                            identical=all_identical([o.digest for o in outcomes]),
                            checks=tuple(dataclasses.asdict(o) for o in outcomes))


class CorrectionCheck(Scorer):
    """CriticBench's objective correction: every sample of every item checked (``check_samples``), a domain's programs
    at once in the sandbox, into the item's correction record."""

    name, label, command = "sandbox", "sandbox", "rescore"
    about = "revisions checked: final answers compared, programs run in the sandbox"
    uses_executor = True

    def batch(self, kind, docs, samples, ctx):
        # an item whose gold answer or unit test is unusable is marked invalid (excluded from pass rates, counted in
        # invalid_items), never raised
        outcomes = check_samples(samples, docs, executor=ctx.executor, invalid="mark")
        return [correction_record(doc, item) for doc, item in zip(docs, outcomes)]

    def warnings(self, docs, records):
        return [f"critic_tasks: {doc['source_file']}[{doc['item_index']}] excluded: {check['detail']}"
                for doc, record in zip(docs, records) for check in record.checks if check["status"] == "invalid"]


def feedback_text_record(doc: dict, text: str | None) -> FeedbackTextRecord:
    """SAvg's stage 1: the critic's own feedback is kept for the correction run, not scored."""
    return FeedbackTextRecord(domain=doc["domain"], parsed=bool((text or "").strip()))


RECORDERS: dict[str, Callable[[dict, str | None], Record]] = {
    "feedback": likert_record, "meta": likert_record, "comparison": verdict_record,
    "self_feedback": feedback_text_record}


def record(doc: dict, text: str | None) -> Record:
    """The record of a reply to an objective feedback / meta / comparison document."""
    return RECORDERS[doc["dimension"]](doc, text)


# ----------------------------------------------------------------------------- metric families


def likert_spearman(records: Sequence[LikertRecord], say: bool = True) -> tuple[float, list[str]]:
    """Pooled Spearman x100 over labelled records, and any warnings (logged when ``say``: the one computation of a
    pool's ``spearman`` says it; the keys that only count or rescale it stay silent)."""
    labelled = [r for r in records if r.gold is not None]
    value, warning = spearman_x100([r.pred for r in labelled], [float(r.gold) for r in labelled])
    if warning and say:
        log.warning("critic_tasks: %s", warning)
    return value, [warning] if warning else []


def _labelled(records: Sequence[LikertRecord]) -> bool:
    return any(r.scored for r in records)


def likert_spearman_value(records: Sequence[LikertRecord]) -> float | None:
    """``spearman``: pooled over domains (absent without human labels)."""
    return likert_spearman(records)[0] if _labelled(records) else None


def likert_score_value(records: Sequence[LikertRecord]) -> float | None:
    """``score`` = (spearman + 100) / 2."""
    return likert_score(likert_spearman(records, say=False)[0]) if _labelled(records) else None


def likert_warning_count(records: Sequence[LikertRecord]) -> float | None:
    """``spearman_warnings``: the undefined correlations reported as 0, pooled and per quality."""
    if not _labelled(records):
        return None
    by_quality = defaultdict(list)
    for r in records:
        by_quality[r.quality].append(r)
    pools = [records, *(group for _, group in sorted(by_quality.items()))]
    return float(sum(len(likert_spearman(pool, say=False)[1]) for pool in pools))


def likert_metrics(records: Sequence[LikertRecord]) -> dict[str, float]:
    """All feedback / meta-feedback metrics for one pool of records, each computed once (``METRICS``), with the
    per-quality Spearman."""
    out = {base: fn(records) for (family, base), fn in METRICS.items() if family == "likert"}
    if _labelled(records):
        for quality in sorted({r.quality for r in records}):
            out[f"spearman_{quality}"] = likert_spearman([r for r in records if r.quality == quality])[0]
    return {k: v for k, v in out.items() if v is not None}


def _pairs(records: Sequence[VerdictRecord]) -> tuple[list, list, list, list]:
    """Align forward and reverse verdicts by pair; a missing half counts as unparsed."""
    pairs: dict[str, dict] = {}
    for r in records:
        pairs.setdefault(r.pair_id, {"gold": r.gold, "difficulty": r.difficulty})[r.order] = r.verdict
    ids = sorted(pairs)
    return ([pairs[i].get("forward") for i in ids], [pairs[i].get("reverse") for i in ids],
            [pairs[i]["gold"] for i in ids], [pairs[i]["difficulty"] for i in ids])


def _pair_rates(records: Sequence[VerdictRecord]) -> dict[str, float] | None:
    """accuracy, accuracy_loose and consistency over the aligned pairs; None where a pair has no human label."""
    forward, reverse, gold, _ = _pairs(records)
    return None if any(g is None for g in gold) else pairwise_metrics(forward, reverse, gold)


def _toolkit_rule(records: Sequence[VerdictRecord]) -> bool:
    return any(r.rule == "toolkit" for r in records)


def _labelled_rate(base: str) -> Callable[[Sequence[VerdictRecord]], float | None]:
    def value(records):
        rates = _pair_rates(records)
        return None if rates is None else rates[base]

    value.__name__ = f"pairwise_{base}"
    return value


def pairwise_score(records: Sequence[VerdictRecord]) -> float | None:
    """The headline follows the protocol: the paper's rule, or the toolkit's (with which the leaderboard was made)."""
    return _labelled_rate("accuracy_loose" if _toolkit_rule(records) else "accuracy")(records)


def pairwise_consistency(records: Sequence[VerdictRecord]) -> float:
    forward, reverse, _, _ = _pairs(records)
    return rate(map(pair_consistent, forward, reverse))


def pairwise_family(records: Sequence[VerdictRecord]) -> dict[str, float]:
    """Comparison metrics, each computed once (``METRICS``), with the per-difficulty accuracies; label-free ones
    (parse_rate, consistency) always present."""
    out = {base: fn(records) for (family, base), fn in METRICS.items() if family == "pairwise"}
    if _pair_rates(records) is not None:
        for level in sorted({r.difficulty for r in records}):
            group = [r for r in records if r.difficulty == level]
            out[f"accuracy_{level}"], out[f"accuracy_loose_{level}"] = (_labelled_rate(b)(group)
                                                                        for b in ("accuracy", "accuracy_loose"))
    return {k: v for k, v in out.items() if v is not None}


def _pass_rate(records: Sequence[CorrectionRecord], item_value) -> float:
    return 100.0 * (domain_mean((r.domain, item_value(r)) for r in records) or 0.0)


def _valid(records: Sequence[CorrectionRecord]) -> list[CorrectionRecord]:
    return [r for r in records if r.scored]


def correction_pass_rate(records: Sequence[CorrectionRecord]) -> float:
    """``pass_rate`` (= ``score``): the unweighted mean of the domains' pass rates over valid items."""
    return _pass_rate(_valid(records), lambda r: sum(r.passed) / len(r.passed))


def correction_isolation(records: Sequence[CorrectionRecord]) -> str:
    """Which sandbox layer ran the programs (a string: recorded in the results beside the numbers it vouches for);
    "no program ran" where none did (math items, unparsed replies): not "none", which read as "no sandbox"."""
    return "+".join(sorted({layer for r in records for layer in r.isolation})) or "no program ran"


def correction_identical(records: Sequence[CorrectionRecord]) -> float | None:
    """Sampled items whose k samples were one text (the backend did not sample; core.records.all_identical)."""
    sampled = [r for r in records if r.n_samples > 1]
    return float(sum(r.identical for r in sampled)) if sampled else None


def correction_pass_at(k: int) -> Callable[[Sequence[CorrectionRecord]], float | None]:
    """``pass@k``, where every valid item has at least k samples."""
    def value(records):
        valid = _valid(records)
        if k > min((r.n_samples for r in valid), default=0):
            return None
        return _pass_rate(valid, lambda r: pass_at_k(r.n_samples, sum(r.passed), k))

    value.__name__ = f"correction_pass_at_{k}"
    return value


def correction_metrics(records: Sequence[CorrectionRecord]) -> dict[str, float]:
    """Correction metrics, each computed once (``METRICS``), with the per-quality pass rates."""
    out = {base: fn(records) for (family, base), fn in METRICS.items() if family == "correction"}
    for quality in sorted({r.quality for r in _valid(records)}):
        out[f"pass_rate_{quality}"] = correction_pass_rate([r for r in records if r.quality == quality])
    return {k: v for k, v in out.items() if v is not None}


def judge_grades(records: Sequence[JudgedRecord]) -> list[tuple[JudgedRecord, float]]:
    """(record, grade) of every judged item ``judge_score`` averages: the judge's grade; LOWEST, the scale's minimum,
    where the judge could not grade it, whatever the reason (a critique that makes the judge fail cannot abstain);
    under the toolkit's rule (``rule`` "toolkit") such an item is left out, as the released evaluators leave it."""
    return [(r, r.score if r.score is not None else LOWEST) for r in records
            if not r.deferred and (r.scored or r.rule != "toolkit")]


def _done(records: Sequence[JudgedRecord]) -> list[JudgedRecord]:
    return [r for r in records if not r.deferred]


def judge_deferred(records: Sequence[JudgedRecord]) -> float | None:
    """Items kept for ``critic-eval judge`` (absent when none is)."""
    deferred = len(records) - len(_done(records))
    return float(deferred) if deferred else None


def _over_done(value: Callable[[list[JudgedRecord]], float | None]) -> Callable[[Sequence[JudgedRecord]], float | None]:
    """A judge value over the graded (not deferred) items; absent where every item is deferred."""
    def over(records):
        done = _done(records)
        return value(done) if done else None

    over.__name__ = value.__name__
    return over


@_over_done
def judge_parse_rate(done):
    return rate(r.scored for r in done)


@_over_done
def judge_failed(done):
    """Ungraded items: counted LOWEST in judge_score (toolkit rule: left out)."""
    return float(sum(not r.scored for r in done))


@_over_done
def judge_echoed(done):
    """Graded at the minimum: the judge only repeated a grade the critique states (its failure is the critique's)."""
    return float(sum(r.echoed for r in done if r.scored))


@_over_done
def judge_score(done):
    """The mean of the domains' mean grades (``judge_grades``); absent, never NaN, where no item counts."""
    return domain_mean((r.domain, g) for r, g in judge_grades(done))


def judge_metrics(records: Sequence[JudgedRecord]) -> dict[str, float]:
    """Metrics over judged records, each computed once (``METRICS``), with the per-group judge scores; a score that
    cannot be computed is absent, never NaN."""
    out = {base: fn(records) for (family, base), fn in METRICS.items() if family == "judge"}
    for group in sorted({r.group for r in _done(records)}):
        out[f"judge_score_{group}"] = judge_score([r for r in records if r.group == group])
    return {k: v for k, v in out.items() if v is not None}


def feedback_text_parse_rate(records: Sequence[FeedbackTextRecord]) -> float:
    """``parse_rate``: the share of non-empty critiques (SAvg's stage 1 is not scored)."""
    return rate(r.parsed for r in records)


def feedback_text_metrics(records: Sequence[FeedbackTextRecord]) -> dict[str, float]:
    return {"parse_rate": feedback_text_parse_rate(records)}


# Each (family, base) the registry's metrics name: its one value over the records a key accepts (None: absent).
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    ("likert", "parse_rate"): lambda records: rate(r.parsed for r in records),
    ("likert", "labels_available"): lambda records: rate(r.scored for r in records),
    ("likert", "spearman"): likert_spearman_value,
    ("likert", "score"): likert_score_value,
    ("likert", "spearman_warnings"): likert_warning_count,
    ("pairwise", "parse_rate"): lambda records: rate(r.parsed for r in records),
    ("pairwise", "labels_available"): lambda records: rate(g is not None for g in _pairs(records)[2]),
    ("pairwise", "consistency"): pairwise_consistency,
    ("pairwise", "accuracy"): _labelled_rate("accuracy"),
    ("pairwise", "accuracy_loose"): _labelled_rate("accuracy_loose"),
    ("pairwise", "score"): pairwise_score,
    # judge-bias lines (core.metrics.bias): the share of A/B verdicts naming the first-shown response; the share
    # choosing the longer response minus the labels' share on the same verdicts
    **{("pairwise", base): bias.line(base) for base in bias.BASES},
    ("correction", "parse_rate"): lambda records: rate(p for r in records for p in r.parsed),
    ("correction", "truncated"): lambda records: rate(t for r in records for t in r.truncated),
    ("correction", "invalid_items"): lambda records: float(len(records) - len(_valid(records))),
    ("correction", "pass_rate"): correction_pass_rate,
    ("correction", "score"): correction_pass_rate,
    ("correction", "isolation"): correction_isolation,
    ("correction", "identical_samples"): correction_identical,
    **{("correction", f"pass@{k}"): correction_pass_at(k) for k in PASS_AT_K},
    ("judge", "judge_deferred"): judge_deferred,
    ("judge", "judge_parse_rate"): judge_parse_rate,
    ("judge", "judge_failed"): judge_failed,
    ("judge", "judge_echoed"): judge_echoed,
    ("judge", "judge_score"): judge_score,
    ("feedback_text", "parse_rate"): feedback_text_parse_rate,
}

# ----------------------------------------------------------------------------- metric keys

# The keys CriticBench's task kinds report (``registry.TASK_KINDS``), each computed by its (family, base) above.


def likert_keys(qualities) -> tuple[Metric, ...]:
    """A rating task's keys (feedback, meta-feedback): Spearman with the human scores, overall and per quality."""
    return (Metric("spearman", "likert", when="scored", scale="correlation"), Metric("score", "likert", when="scored"),
            Metric("parse_rate", "likert"), Metric("labels_available", "likert"),
            Metric("spearman_warnings", "likert", when="scored", higher_is_better=False, scale="count"),
            *breakdown("likert", "spearman", "quality", qualities, scale="correlation"))


PAIRWISE_KEYS = (Metric("accuracy", "pairwise", when="scored"), Metric("accuracy_loose", "pairwise", when="scored"),
                 *breakdown("pairwise", "accuracy", "difficulty", DIFFICULTIES),
                 *breakdown("pairwise", "accuracy_loose", "difficulty", DIFFICULTIES),
                 Metric("consistency", "pairwise"), Metric("score", "pairwise", when="scored"),
                 Metric("parse_rate", "pairwise"), Metric("labels_available", "pairwise"), *bias_lines("pairwise"))

CORRECTION_KEYS = (
    Metric("pass_rate", "correction", when="scored", valid_only=True),
    Metric("score", "correction", when="scored", valid_only=True),
    Metric("parse_rate", "correction"), Metric("truncated", "correction", higher_is_better=False),
    Metric("invalid_items", "correction", higher_is_better=False, scale="count"),
    Metric("isolation", "correction", scale="text", higher_is_better=None),  # the sandbox layer's name, not a number
    *breakdown("correction", "pass_rate", "quality", MAIN_QUALITIES, valid_only=True),
    *(Metric(f"pass@{k}", "correction", when="scored", min_samples=k, valid_only=True) for k in PASS_AT_K),
    # sampled tasks: items whose k samples were all the same text (the backend did not sample)
    Metric("identical_samples", "correction", min_samples=2, higher_is_better=False, scale="count"))


def judged_keys(groups) -> tuple[Metric, ...]:
    """A judge-graded task's keys, overall and per group (quality or difficulty)."""
    # judge_score takes every judged record: an item the judge could not grade counts the minimum (issue 34)
    return (Metric("judge_score", "judge", scale="judge"), Metric("judge_parse_rate", "judge"),
            Metric("judge_failed", "judge", higher_is_better=False, scale="count"),
            # graded the minimum: the judge only echoed a grade the critique states (issue 27)
            Metric("judge_echoed", "judge", higher_is_better=False, scale="count"),
            Metric("judge_deferred", "judge", when="deferred", higher_is_better=False, scale="count"),
            *breakdown("judge", "judge_score", "group", groups, when="all", scale="judge"))


SELF_FEEDBACK_KEYS = (Metric("parse_rate", "feedback_text"),)

# The metric families the registry's metrics name (``Metric.family``).
FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {
    "likert": likert_metrics, "pairwise": pairwise_family, "correction": correction_metrics, "judge": judge_metrics,
    "feedback_text": feedback_text_metrics}


# ----------------------------------------------------------------------------- intervals

Interval = Optional[tuple[float, float]]


def likert_interval(records: Sequence[LikertRecord], base: str, settings: BootstrapSettings) -> Interval:
    """``spearman`` / ``score``: labelled items resampled, the pooled Spearman recomputed on each resample."""
    labelled = [r for r in canonical(records) if r.gold is not None]
    ci = spearman_interval([r.pred for r in labelled], [float(r.gold) for r in labelled], settings)
    if ci is None or base == "spearman":
        return ci
    return likert_score(ci[0]), likert_score(ci[1])


_PAIR_RULES = {"accuracy": pair_correct, "accuracy_loose": pair_correct_loose}


def pairwise_interval(records: Sequence[VerdictRecord], base: str, settings: BootstrapSettings) -> Interval:
    """``accuracy`` / ``accuracy_loose`` / ``consistency`` / ``score`` / the bias lines (``first_position``,
    ``length_bias``): pairs resampled (both orders together), in pair-id order."""
    if base in bias.BASES:
        return bias.bias_interval(base, records, settings)
    forward, reverse, gold, _ = _pairs(records)
    if base == "consistency":
        flags = list(map(pair_consistent, forward, reverse))
    else:
        if not gold or any(g is None for g in gold):
            return None
        if base == "score":
            base = "accuracy_loose" if any(r.rule == "toolkit" for r in records) else "accuracy"
        flags = list(map(_PAIR_RULES[base], forward, reverse, gold))
    return mean_interval([100.0 * f for f in flags], None, settings)


def correction_interval(records: Sequence[CorrectionRecord], base: str, settings: BootstrapSettings) -> Interval:
    """``pass_rate`` / ``score`` / ``pass@k``: valid items resampled within each domain (a mean of domain means)."""
    valid = [r for r in canonical(records) if r.scored]
    if not valid:
        return (0.0, 0.0)  # the point estimate is 0 by convention; nothing to resample
    if base.startswith("pass@"):
        k = int(base[5:])
        values = [pass_at_k(r.n_samples, sum(r.passed), k) for r in valid]
    else:
        values = [sum(r.passed) / len(r.passed) for r in valid]
    return mean_interval([100.0 * v for v in values], [r.domain for r in valid], settings)


def judge_interval(records: Sequence[JudgedRecord], base: str, settings: BootstrapSettings) -> Interval:
    """``judge_score``: its items (``judge_grades``) resampled within each domain (a mean of domain means)."""
    grades = judge_grades(canonical(records))
    return mean_interval([g for _, g in grades], [r.domain for r, _ in grades], settings) if grades else None


# family -> (records, the family's value, settings) -> (low, high) or None where the value has no interval
INTERVALS: dict[str, Callable[[Sequence, str, BootstrapSettings], Interval]] = {
    "likert": likert_interval, "pairwise": pairwise_interval, "correction": correction_interval,
    "judge": judge_interval}
# family -> (record, value) -> the stratum its interval resamples within (``bootstrap.by_domain``: a mean of domain
# means): what `critic-eval compare` resamples within
STRATA: dict[str, Callable] = {"likert": unstratified, "pairwise": unstratified, "correction": by_domain,
                               "judge": by_domain}
# family -> (record, value) -> the unit its interval resamples (unlisted: the document)
UNITS: dict[str, Callable] = {"pairwise": by_pair}


def gold_text(doc: dict) -> str:
    """The human label as text, for logs (empty on the test split)."""
    if doc["dimension"] == "comparison":
        gold = doc.get("preference")
        return (swap_verdict(gold) if doc["order"] == "reverse" else gold) or ""
    _, gold_key, _ = _LIKERT.get(doc["dimension"], (None, None, None))
    value = doc.get(gold_key) if gold_key else None
    return "" if value is None else f"{value:g}"
