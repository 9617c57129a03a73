"""CriticBench's records: a Likert score (feedback, meta-feedback), one order's verdict (comparison), an item's
revisions checked (correction), a judge's grade (the judge-scored tasks) and SAvg's stage-1 critique; and how a reply
is read into the first two (``parse_likert``, ``parse_verdict``; the records are made in ``scoring.py``).

Registered in ``core.records.RECORD_TYPES`` under their ``kind`` (``register_record``), so that ``Record.from_dict`` reads
them back from logged samples.

Reading a reply (deterministic, never raising; docs/tasks-and-metrics.md gives the rules per task,
tests/test_parsing.py holds the cases):

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from critic_tasks.core.parsing import looks_cut_off
from critic_tasks.core.records import Record, register_record


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
_DENOMINATOR = re.compile(r"(?:\s*/\s*\d+(?:\.\d+)?|\s+out\s+of\s+\d+(?:\.\d+)?)")
# Numbers that are part of a stated scale or range, or of a power, are never the score ("I cannot give a score
# from 1 to 7" is not a 7; "1.8 x 10^7" is not a 7).
_NOT_A_SCORE = re.compile(
    r"\b(?:from\s+)?\d+(?:\.\d+)?\s*(?:-|–|—|\bto\b)\s*\d+(?:\.\d+)?"
    r"|\bbetween\s+\d+(?:\.\d+)?\s+and\s+\d+(?:\.\d+)?"
    r"|\d+(?:\.\d+)?\s*(?:x|×|\*)\s*10\s*(?:\^|\*\*)\s*[-+]?\d+"
    r"|(?:\^|\*\*)\s*[-+]?\d+(?:\.\d+)?"
    r"|\d+(?:\.\d+)?[eE][-+]?\d+", re.IGNORECASE)
# ASCII word characters only: a number right after or before a CJK character ("打5分") is still a number.
_FALLBACK_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])" + _NUMBER + r"(?![A-Za-z0-9_]|\.\d)")
_ENUMERATOR = re.compile(r"^(\s*)\d+[.)](?=\s)", re.MULTILINE)


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
    stripped = _ENUMERATOR.sub(r"\1 ", _scale_ends(low, high).sub(" ", stripped))
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
