"""Final answers of math replies: extraction from free text, and equality with a gold answer.

Extraction (``extract_final_answer``) reads, in order, a ``#### RESULT: x`` marker, a bare ``#### x``, the last
``\\boxed{x}``, "the (final) answer/result is x", a multiple-choice letter mapped to its option's value, and else the
last number. Matching (``answers_match``): a numeric gold as a number (integers exactly), any other gold as an
expression by math-verify, never by one of its numbers; no ``eval``, no int truncation, and a gold answer that
cannot be parsed is an error (the item is invalid), never a free pass.
"""

from __future__ import annotations

import math
import re
import threading

from critic_tasks.core.parsing import looks_cut_off

# a number not glued to a word ("H2O" has none); a minus sign only where it cannot be subtraction ("x-2" -> 2)
_NUM = r"(?:(?<![\w)])-)?(?<![\w.])(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER = re.compile(rf"(?:{_NUM})(?:\s*/\s*(?:{_NUM}))?%?")
_RESULT = re.compile(r"####\s*RESULT\s*[:：]?[ \t]*([^\n]*)", re.I)
_HASHES = re.compile(r"(?<!#)####(?!#)[ \t]*([-+$\\(.]?\d[^\n]*)")
_PHRASE = re.compile(
    r"\b(?:final\s+answer|answer|final\s+result|result)\b\s*(?:is|would\s+be|will\s+be|[:：=])[ \t]*:?[ \t]*([^\n]+)",
    re.I)
_OPTION = re.compile(r"(?:^|(?<=[\s,;(\[]))\(?([a-eA-E])\s*\)\s*")
_LETTER = re.compile(r"\(?([a-eA-E])\s*(?:\)|\.|:|,|$)")
_LETTER_IN_TEXT = re.compile(r"\b(?:answer|option|choice)\s*(?:is|:)?\s*(?:option\s*)?\(?([a-eA-E])\)?(?!\w)", re.I)
_MATHY = re.compile(r"[\d\s.,+\-*/^()%!:]+")


def _options(question: str | None) -> dict[str, str]:
    """Multiple-choice options listed in a question (``a ) 12 , b ) 14`` or ``(A) 12 (B) 14``): letter -> value."""
    marks = list(_OPTION.finditer(question or ""))
    for start, mark in enumerate(marks):
        if mark.group(1).lower() != "a":
            continue
        run = [mark]
        for nxt in marks[start + 1:]:
            if nxt.group(1).lower() == chr(ord(run[-1].group(1).lower()) + 1):
                run.append(nxt)
        if len(run) >= 2:
            ends = [m.start() for m in run[1:]] + [len(question)]
            return {m.group(1).lower(): question[m.end():end].strip(" ,;\n") for m, end in zip(run, ends)}
    return {}


def _boxed(text: str) -> list[str]:
    """Contents of every ``\\boxed{...}`` (balanced braces)."""
    found, i = [], text.find("\\boxed{")
    while i != -1:
        depth, j = 1, i + len("\\boxed{")
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        if depth == 0:
            found.append(text[i + len("\\boxed{"): j - 1])
        i = text.find("\\boxed{", j)
    return found


def _reduce(segment: str, options: dict[str, str], explicit: bool) -> str | None:
    """A marker's text -> a short answer: option value, math expression, or its first number."""
    seg = re.sub(r"\*\*|`|\\\$|\$|\\\(|\\\)", "", segment).strip()
    seg = re.split(r"\.(?:\s|$)", seg)[0].strip()  # first sentence ("2.5 hours." keeps its decimal point)
    letter = _LETTER.match(seg)
    if options and letter and letter.group(1).lower() in options:
        return _reduce(options[letter.group(1).lower()], {}, True) or options[letter.group(1).lower()]
    if "=" in seg:
        seg = seg.rsplit("=", 1)[1].strip()
    if seg and (_MATHY.fullmatch(seg) or "\\" in seg) and re.search(r"\d", seg):
        return _strip_commas(seg.strip(" ,;:"))
    number = _NUMBER.search(seg)
    if number:
        return _strip_commas(number.group(0))
    return seg if explicit and seg and len(seg) <= 30 else None  # "#### RESULT: t" is an answer, a wrong one


def _strip_commas(number: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3})", "", number)


def extract_final_answer(text: str | None, question: str | None = None) -> str | None:
    """The final answer of a math rationale, or None.

    In order: the data's ``#### RESULT: x`` marker (last one; also a bare ``#### x``), the last ``\\boxed{x}``,
    "the (final) answer/result is x" (last), for a multiple-choice question a chosen letter mapped to its option's
    value, else the last number in the text — unless the text stops mid-sentence (cut off by the token budget).
    """
    if not text or not text.strip():
        return None
    options = _options(question)
    for pattern, explicit in ((_RESULT, True), (_HASHES, True), (None, True), (_PHRASE, False)):
        segments = _boxed(text) if pattern is None else pattern.findall(text)
        for segment in reversed(segments):
            answer = _reduce(segment, options, explicit)
            if answer:
                return answer
    if options:
        letters = [m for m in _LETTER_IN_TEXT.findall(text) if m.lower() in options]
        if letters:
            return _reduce(options[letters[-1].lower()], {}, True) or options[letters[-1].lower()]
    if len(text) <= 40 and _MATHY.fullmatch(text.strip()) and re.search(r"\d", text):
        return text.strip()  # the whole reply is the answer ("1 : 729", "3/4")
    if looks_cut_off(text, quantity=True):
        return None  # cut off by the token budget: its last number is a step of the work, not the answer
    numbers = _NUMBER.findall(text)
    return _strip_commas(numbers[-1]) if numbers else None


# ----------------------------------------------------------------------------- answer matching

# A reply or gold that is one plain number: sign, thousands commas (or LaTeX "{,}" / ",\\!"), decimals, an exponent,
# an a/b fraction; a currency sign before it, a percent sign or up to three unit words after it ("18 dollars").
_PLAIN = re.compile(r"""
    [-+\u2212]?\s*(?:\\?\$\s*)?
    (?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE](?P<exp>[-+]?\d+))?
    (?:\s*/\s*(?P<den>\d+))?
    \s*(?P<unit>\\?%|\\text\{\s*[A-Za-z ]{1,30}\}|(?:\s[A-Za-z]{2,15}){0,3})\.?
    """, re.X)
# words after a number that make it an expression or a second answer, not a unit
_NOT_UNITS = {"pi", "and", "or", "times", "plus", "minus", "sqrt", "over", "to", "by", "divided", "squared", "cubed"}
_MAX_DIGITS = 4000  # a number written with more digits is not read as one (Python refuses int() beyond 4,300)
_FLOAT_NOISE_DIGITS = 12  # a program's binary round-off printed in full: "2.9999999999999996"


def _plain_number(text: str):
    """``Fraction`` value of ``text`` when it is one plain number (see ``_PLAIN``), else None."""
    from fractions import Fraction

    s = re.sub(r"\{,\}|,\\!|\\!|\\,", lambda m: "," if "," in m.group(0) else "", text.strip())
    m = _PLAIN.fullmatch(s)
    if not m or _NOT_UNITS & set(re.findall(r"[a-z]+", (m.group("unit") or "").lower())):
        return None
    if len(m.group("num")) > _MAX_DIGITS:
        return None  # beyond int()'s 4,300-digit limit: no dataset answer is this long; read as text, never a crash
    sign = -1 if s.lstrip()[:1] in ("-", "\u2212") else 1
    value = Fraction(m.group("num").replace(",", "").rstrip(".") or "0")
    if m.group("exp"):
        exp = int(m.group("exp"))
        if abs(exp) > 400:
            return None
        value *= Fraction(10) ** exp
    if m.group("den"):
        if int(m.group("den")) == 0:
            return None
        value /= int(m.group("den"))
    return sign * value


def _mv_timeout() -> int | None:
    # math-verify times out with SIGALRM, which only works in the main thread
    return 5 if threading.current_thread() is threading.main_thread() else None


def _mv_parse(text: str) -> list:
    """math-verify's reading of ``text`` as one LaTeX expression: ``2\\sqrt{3}``, ``(2, 5)`` (an interval), ``1:729``
    (a ratio), ``2, 5`` (a set: "3 or 5" is a set too, so it never equals one number)."""
    from math_verify import LatexExtractionConfig, parse

    text = text.strip().strip("$").strip()
    if not text:
        return []
    try:
        return parse(f"${text}$", extraction_config=[LatexExtractionConfig()], parsing_timeout=_mv_timeout())
    except Exception:
        return []


def parse_gold(gold: str) -> tuple[list, float | None]:
    # prose ("no answer given") reads to LaTeX as a product of letters: not an answer
    prose = not re.search(r"[\d\\]", gold) and re.search(r"[A-Za-z]{3,}", gold)
    parsed = _mv_parse(gold) if gold.strip() and not prose else []
    number = _plain_number(gold)
    if not parsed and number is None:
        raise ValueError(f"field 'ground_truth_answer' has no parseable answer: {gold[:200]!r}; the item is invalid")
    return parsed, None if number is None else float(number)


def _numbers_equal(pred, gold) -> bool:
    """Integers exactly (the released toolkit compares ``eval``-ed values with ``==``: 5 == 5.0, 1250100 != 1250000),
    up to a binary float's round-off printed in full; other numbers within a relative 1e-4."""
    if gold.denominator == 1:
        if pred == gold:
            return True
        try:
            digits = len(re.sub(r"\D", "", str(float(pred))))
        except OverflowError:  # beyond a float: not an integer's round-off
            return False
        return digits >= _FLOAT_NOISE_DIGITS and math.isclose(pred, gold, rel_tol=1e-12)
    return math.isclose(pred, gold, rel_tol=1e-4, abs_tol=1e-12)


def answers_match(pred: str | None, gold: str) -> bool:
    """Does ``pred`` equal ``gold``?

    A gold that is one plain number (GSM8K's shape) is compared as a number: an integer exactly, another number
    within a relative 1e-4; a reply that is not one plain number goes to math-verify (``\\frac{15}{2}`` = 7.5),
    whose sets make "3 or 5" unequal to 5. Any other gold (MATH's LaTeX: ``\\frac{3}{4}``, ``2\\sqrt{3}``, ``(2, 5)``,
    ``10^{5}``, ``1:729``) is compared as an expression by math-verify and never reduced to one of its numbers.

    Raises ``ValueError`` when ``gold`` has no parseable answer: the item is invalid, not a free pass.
    """
    gold = "" if gold is None else str(gold)
    gold_value = _plain_number(gold)
    # math-verify's reading of the gold only where it is needed (a plain-number gold against a plain-number reply
    # never asks it); parse_gold raises for a gold with neither reading
    gold_parsed = parse_gold(gold)[0] if gold_value is None else None
    if pred is None or not str(pred).strip():
        return False
    pred = str(pred)
    if re.sub(r"\s+", "", pred).lower() == re.sub(r"\s+", "", gold).lower():
        return True
    if gold_value is not None:
        pred_value = _plain_number(pred)
        if pred_value is not None:
            return _numbers_equal(pred_value, gold_value)
        gold_parsed = parse_gold(gold)[0]
    if not gold_parsed:
        return False
    from math_verify import verify

    pred_parsed = _mv_parse(pred)
    if gold_value is not None and gold_value.denominator == 1:
        # an integer gold: math-verify rounds floats to 6 places, so its yes is checked on the value it read
        values = [v for v in pred_parsed if not isinstance(v, str)]
        try:
            from fractions import Fraction
            if values and values[0].is_number and not _numbers_equal(Fraction(str(values[0].evalf(30))), gold_value):
                return False
        except (TypeError, ValueError, AttributeError):
            pass
    try:
        return bool(verify(gold_parsed, pred_parsed, timeout_seconds=_mv_timeout()))
    except Exception:
        return False
