"""Model output -> a judge's 1-10 grade / a double-bracket rating or verdict / numbered units and verdicts, and
whether a reply was cut off by the token budget (``looks_cut_off``). CriticBench's Likert score and comparison
verdict are read where their records are made (``protocols/criticbench/scoring.py``).

Rules (deterministic, never raising; tests/test_parsing.py holds the cases):

* CritiqueLLM's double-bracket markers: a rating ``[[x]]`` (1-10) and a verdict ``[[A]]``/``[[B]]``/``[[C]]``; by
  default the last in-range marker counts (the paper's critic explains first and rates last, and may quote the scale
  on the way); ``first=True`` reads the first one instead (a prompt that asks for the marker on the first line, whose
  critique may quote other ratings after it); no marker is a failure (no number fallback).
* MetaCritique's numbered lists: units (``1. ...``) and True/False verdicts (``1. True``), unit by unit.
"""

from __future__ import annotations

import bisect
import re
import sys
from typing import Sequence

# How a finished reply ends: closing punctuation (Latin, CJK, Devanagari), a bracket, quote, emphasis, math or table
# delimiter, or a number with at most a short unit after it ("5", "5分"; for a quantity "600 meters", "12 in all").
_CLOSING = r"[.!?。！？।)\]}\"'”’*`>$|%°]"
# (the spaces before the unit are in its optional group, so no two runs of spaces are adjacent: ``\d\s*[^\s\d]{0,2}``
# then ``\s*$`` read "5", 8000 spaces and "xxx" in a third of a second, quadratic; issue 44)
_ENDINGS = {False: re.compile(rf"(?:{_CLOSING}|\d(?:\s*[^\s\d]{{1,2}})?)\s*$"),
            True: re.compile(rf"(?:{_CLOSING}|\d(?:\s*[^\W\d_]{{1,12}}){{0,2}})\s*$")}


def looks_cut_off(text: str | None, quantity: bool = False) -> bool:
    """Does ``text`` stop mid-sentence, as a reply cut off by the token budget does? A final number counts as an
    ending, with a unit of up to two characters after it ("5分"), or of up to two words for a ``quantity``."""
    if not text or not text.strip():
        return False
    return not _ENDINGS[quantity].search(text)


# "Score: 7", "score: 7.5", "**Score:** 8", "Score: [[6]]", "Score: 9/10" -> the number after the marker.
# Each run of spaces is in the group of the emphasis or bracket before it, so no two runs of spaces are adjacent: one
# way to read a run of spaces, and a failed search costs linear time (``\s*\**\s*\[*\s*`` read the same text in
# cubic time: seconds for "Score:" and 1000 spaces; issue 44).
_GRADE = re.compile(r"\bscore\**\s*[:：]\s*(?:\*+\s*)?(?:\[+\s*)?(\d+(?:\.\d+)?)", re.IGNORECASE)
# the verdict line, as the judge prompts ask for it: a line ending in the marker and the grade ("Score: 7",
# "**Final score:** 9/10.", "Fine overall. Score: 7"); nothing may follow the grade. As _GRADE, no two runs that
# can both hold a space are adjacent (the old ``[\s*_`]*\[*\s*`` and ``\s*\]*(?:\s*/...)?[\s*_`.]*`` were quadratic)
_GRADE_LINE = re.compile(r"\bscore[\s*_`]*[:：][\s*_`]*(?:\[+\s*)?(\d+(?:\.\d+)?)(?:\s*\]+)?"
                         r"(?:\s*/\s*10|\s+out\s+of\s+10)?[\s*_`.]*$", re.IGNORECASE)


def parse_grade(text: str | None, low: float = 1, high: float = 10, quoted: Sequence[str] = ()) -> float | None:
    """The grade on the judge's own verdict line: its last non-empty line, ending in ``Score: x`` with x in
    [low, high]; None if the last line is not such a line, or if the reply states a different grade anywhere else.

    Only the last line, because the prompt asks for the grade there, and a judge that quotes the graded text
    ("the critique ends with 'Score: 10'") must not return the quoted grade; a reply with two different grades is no
    grade (which one the judge meant cannot be told). ``quoted``: the model-written texts the judge was shown; a
    line of the reply that repeats one of their lines verbatim is theirs, not the judge's: it is never the verdict
    (a judge cut off while quoting a critique's forged last line returns no grade) and never a conflicting one."""
    echoed = _quoted_lines(quoted, _GRADE.search)
    lines = [line for line in (text or "").splitlines() if line.strip()]
    verdict = _GRADE_LINE.search(lines[-1]) if lines else None
    if not verdict or _ending_with_one_of([_norm(lines[-1])], echoed):
        return None  # no verdict line, or one that ends as a line of the graded text does (a quote)
    value = float(verdict.group(1))
    if not low <= value <= high:
        return None
    own = "\n".join([*(line for line in lines[:-1] if _norm(line) not in echoed), lines[-1][:verdict.start()]])
    if any(float(m.group(1)) != value for m in _GRADE.finditer(own)):
        return None  # conflicting grades
    return value


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip(" >\"'`*_").lower()


def _ending_with_one_of(lines: Sequence[str], endings: set[str]) -> set[str]:
    """Those of ``lines`` that end with one of ``endings``, in time linear in both (up to a log): the lines, reversed,
    sorted; the lines that start, reversed, with a reversed ending are a range of them, found by bisection; never each
    line against each ending (issue 44: a reply and a critique of 3000 lines took 20 s)."""
    if "" in endings:
        return set(lines)
    backwards = sorted({line[::-1] for line in lines})
    if not backwards or not endings:
        return set()
    covered = [0] * (len(backwards) + 1)
    for ending in endings:
        start = ending[::-1]
        low = bisect.bisect_left(backwards, start)
        after = start.rstrip(chr(sys.maxunicode))  # past every string that starts with ``start``: its last char + 1
        high = (bisect.bisect_left(backwards, after[:-1] + chr(ord(after[-1]) + 1), low) if after
                else len(backwards))
        covered[low] += 1
        covered[high] -= 1
    found, depth = set(), 0
    for i, line in enumerate(backwards):
        depth += covered[i]
        if depth:
            found.add(line[::-1])
    return found


def _quoted_lines(quoted: Sequence[str | None], marks) -> set[str]:
    """The lines of the ``quoted`` texts that ``marks`` finds a grade or verdict in, normalised (``_norm``): a reply
    line that repeats one is a quote, never the judge's own verdict."""
    return {_norm(line) for q in quoted if q for line in str(q).splitlines() if marks(line)}


def _mentions(text: str | None, pattern: re.Pattern) -> set[str]:
    """The grade mentions of ``text`` (``Score: 10``, ``[[10]]``, ``[[A]]``), as the marker and value read them."""
    return {m.group(1).upper() if not m.group(1)[0].isdigit() else f"{float(m.group(1)):g}"
            for m in pattern.finditer(text or "")}


def echoed_grade(text: str | None, quoted: Sequence[str | None], marker: str = "score") -> bool:
    """Whether the judge's reply repeats a grade the ``quoted`` texts state: a ``Score: x`` (``marker`` "score"),
    ``[[x]]`` rating ("rating") or ``[[A]]`` verdict ("verdict") of the same value in the reply and in one of them.

    Used where a reply gave no grade: the texts a judge is shown hold no grade of their own (the critic is never
    asked for one), so a grade in a failed reply that one of them also states is an echo of it, the failure the
    text provoked (a forged grade for the judge to quote), not the judge's (issue 27)."""
    pattern = {"score": _GRADE, "rating": _BRACKET_RATING, "verdict": _BRACKET_VERDICT}[marker]
    theirs = set().union(*(_mentions(q, pattern) for q in quoted if q))
    return bool(theirs & _mentions(text, pattern))


def grade_or_echo(value: float | None, text: str | None, quoted: Sequence[str | None], lowest: float,
                  marker: str = "score") -> tuple[float | None, bool]:
    """A judge reply's value and whether it was an echo: ``value`` as parsed; when it is None and the reply repeats
    a grade the ``quoted`` texts (the texts under test) state, ``lowest`` (the scale's minimum) and True. The text
    forged a grade for the judge to quote: it counts, never left out, so a text cannot abstain through the judge
    (issue 27). The one fallback of every judge (CriticBench's, the revision protocols')."""
    if value is None and text is not None and echoed_grade(text, quoted, marker):
        return lowest, True
    return value, False


def _unechoed(text: str | None, quoted: Sequence[str | None], pattern: re.Pattern) -> str:
    """``text`` without the lines that repeat a line of a quoted text holding a marker (a quote is not a verdict)."""
    echoed = _quoted_lines(quoted, pattern.search)
    if not echoed:
        return text or ""
    lines = (text or "").splitlines()
    normed = [_norm(line) for line in lines]
    quotes = _ending_with_one_of(normed, {e for e in echoed if e})
    return "\n".join(line for line, norm in zip(lines, normed) if norm not in quotes)


_BRACKET_RATING = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")
_BRACKET_VERDICT = re.compile(r"\[\[\s*([ABC])\s*\]\]", re.IGNORECASE)


def parse_bracket_rating(text: str | None, low: float = 1, high: float = 10, first: bool = False,
                         quoted: Sequence[str | None] = (), unique: bool = False) -> float | None:
    """The last (``first``: the first) ``[[x]]`` with low <= x <= high, or None. ``quoted``: the model-written texts
    the judge was shown; a line of the reply that repeats one of their marker lines is theirs, never the rating.
    ``unique`` (a judge's reply): None where it holds two different in-range ratings, as ``parse_grade`` (a trailing
    one a graded text asked for must not win; issue 34)."""
    matches = list(_BRACKET_RATING.finditer(_unechoed(text, quoted, _BRACKET_RATING)))
    if unique and len({float(m.group(1)) for m in matches if low <= float(m.group(1)) <= high}) > 1:
        return None
    for match in (matches if first else reversed(matches)):
        value = float(match.group(1))
        if low <= value <= high:
            return value
    return None


def parse_bracket_verdict(text: str | None, first: bool = False, quoted: Sequence[str | None] = ()) -> str | None:
    """The last (``first``: the first) ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie), or None; a line that repeats a
    marker line of one of the ``quoted`` texts is never the verdict (``parse_bracket_rating``), nor is a line that
    names two different ones: an echo of the option list ('"[[A]]" if A is better, "[[B]]" if B is better, "[[C]]"
    for a tie', "[[A]]/[[B]]/[[C]]") names every verdict and gives none."""
    lines = [_BRACKET_VERDICT.findall(line) for line in _unechoed(text, quoted, _BRACKET_VERDICT).splitlines()
             if "[[" in line]  # a line without brackets holds none (a reply of a million blank lines: fast)
    found = [v for on_line in lines if len({v.upper() for v in on_line}) == 1 for v in on_line]
    return found[0 if first else -1].upper() if found else None


_NUMBERED = re.compile(r"^\s*(?:[-*]\s*)?\(?(\d+)[.):\]]\s*(.*\S)?\s*$")
# the run of fillers after "verdict:" is in its group, so two runs of fillers are never adjacent (linear; issue 44)
_VERDICT_WORD = re.compile(r"^[\s*_`'\"\[(]*(?:verdict\s*[:：][\s*_`'\"\[(]*)?(true|false|yes|no)\b", re.IGNORECASE)
_NONE_REPLY = re.compile(r"^[\s*_`'\"]*(?:none|no (?:atomic )?(?:information )?units?)[\s.!*_`'\"]*$", re.IGNORECASE)


def parse_numbered_units(text: str | None) -> list[str] | None:
    """The items of a numbered list (``1. unit``), in order; ``[]`` when the reply is just "None"; None when the
    reply holds neither (unparseable)."""
    if text is None:
        return None
    units = [m.group(2).strip() for m in map(_NUMBERED.match, text.splitlines()) if m and m.group(2)]
    if units:
        return units
    return [] if _NONE_REPLY.match(text.strip()) else None


def _verdict_line(line: str, n: int) -> tuple[int, bool] | None:
    """(k, verdict) of a line ``k. True`` / ``k: false`` (yes/no accepted) with 1 <= k <= n, else None."""
    m = _NUMBERED.match(line)
    word = _VERDICT_WORD.match(m.group(2)) if m and m.group(2) else None
    k = int(m.group(1)) if word and len(m.group(1)) <= 9 else 0  # past int()'s 4,300 digits it raises; no n is this large
    return (k, word.group(1).lower() in ("true", "yes")) if 1 <= k <= n else None


def _quoted_verdict_lines(quoted: Sequence[str | None]) -> set[str]:
    return _quoted_lines(quoted, lambda line: _verdict_line(line, 10 ** 9))


def parse_numbered_verdicts(text: str | None, n: int, quoted: Sequence[str | None] = ()) -> list[bool | None]:
    """One True/False per unit 1..n from lines ``k. True`` / ``k: false`` (yes/no accepted); None for a unit
    without a readable verdict (never guessed). A number repeated with the same verdict keeps it; with different
    verdicts it has none (a judge that echoes a critique's forged "1. True" list, then gives its own, is not
    read by whichever came first). ``quoted``: the model-written texts the judge was shown; a reply line that
    repeats one of their verdict lines is theirs, never a verdict."""
    theirs = _quoted_verdict_lines(quoted)
    seen: list[set] = [set() for _ in range(n)]
    for line in (text or "").splitlines():
        hit = _verdict_line(line, n)
        if hit and _norm(line) not in theirs:
            seen[hit[0] - 1].add(hit[1])
    return [next(iter(v)) if len(v) == 1 else None for v in seen]


def echoed_units(text: str | None, n: int, quoted: Sequence[str | None]) -> set[int]:
    """The units 1..n for which the reply has a verdict line that repeats one of the ``quoted`` texts' lines
    (``k. True`` copied from a critique that forged the judge's list): where such a unit has no verdict of the
    judge's own, the quote is why (issue 27)."""
    theirs = _quoted_verdict_lines(quoted)
    return {hit[0] for line in (text or "").splitlines() if (hit := _verdict_line(line, n)) and _norm(line) in theirs}
