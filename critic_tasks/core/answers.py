"""Final answers of math replies: extraction from free text, and equality with a gold answer.

Extraction (``extract_final_answer``) reads, in order, a ``#### RESULT: x`` marker, a bare ``#### x``, the last
``\\boxed{x}``, "the (final) answer/result is x", a multiple-choice letter mapped to its option's value, and else the
last number. Matching (``answers_match``): a numeric gold as a number (integers exactly), any other gold as an
expression by math-verify, never by one of its numbers; no ``eval``, no int truncation, and a gold answer that
cannot be parsed is an error (the item is invalid), never a free pass.
"""

from __future__ import annotations

import re
import threading
import zlib
from functools import lru_cache

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
# the run of spaces after "is" or ":" is in its group, so two runs of spaces are never adjacent: linear (``\s*(?:is|:)?\s*``
# read "The final answer" and 8000 spaces in seconds; issue 44)
_LETTER_IN_TEXT = re.compile(r"\b(?:answer|option|choice)\s*(?:(?:is|:)\s*)?(?:option\s*)?\(?([a-eA-E])\)?(?!\w)", re.I)
_MATHY = re.compile(r"[\d\s.,+\-*/^()%!:]+")
# a number that is an exponent ("cm^2", "x**3", "10^{5}"'s 5): never the answer on its own
_EXPONENT_BEFORE = re.compile(r"(?:\^\s*\{?|\*\*)\s*$")
_POWER_AFTER = re.compile(r"\s*(?:\^\s*\{?\s*([-+]?\d{1,6})\s*\}?|\*\*\s*([-+]?\d{1,6}))")
# an answer written as an expression in words and symbols ("sqrt(250)", "5 pi", "3√2") ahead of its unit
_EXPRESSION_HEAD = re.compile(r"[-+]?\s*(?:[\d.,+\-*/^()\s√π]|sqrt|pi\b)+")
# what may follow an answer as its unit: words with powers or a per ("cm^2", "cm²", "g/mol", "cubic inches", "m/s^2")
_UNIT_TAIL = re.compile(r"(?:[A-Za-z°µ]{1,15}(?:\s*(?:\^\s*\{?\d\}?|[²³]))?(?:\s*/\s*|\s+)?){1,3}\.?")


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


def _before_unit(segment: str) -> str | None:
    """The answer ahead of a unit ("72 cm^2" -> 72, "sqrt(250) units" -> \\sqrt{250}, "5 pi" -> 5\\pi), or None
    when what follows the leading number or expression is not a unit ("2 and 3")."""
    head = _EXPRESSION_HEAD.match(segment)
    if not head or not re.search(r"\d", head.group(0)):
        return None
    expression, tail = head.group(0).strip(), segment[head.end():].strip()
    words = set(re.findall(r"[a-z]+", tail.lower()))
    if tail and (not _UNIT_TAIL.fullmatch(tail) or words & _NOT_UNITS):
        return None
    expression = expression.rstrip(" ,;:.") if not re.search(r"\d\.$", expression) else expression[:-1]
    if not re.search(r"sqrt|pi|√|π", expression):
        return expression if _MATHY.fullmatch(expression) else None
    # into LaTeX, which math-verify reads: sqrt(x) and √x as \\sqrt{x}, pi and π as \\pi
    expression = re.sub(r"sqrt\s*\(([^()]*)\)|√\s*\(([^()]*)\)|√\s*(\d+(?:\.\d+)?)",
                        lambda m: "\\sqrt{" + next(g for g in m.groups() if g is not None) + "}", expression)
    return None if "sqrt" in expression.replace("\\sqrt", "") else re.sub(r"\s*(?:\bpi\b|π)", r"\\pi", expression)


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
    before_unit = _before_unit(seg)
    if before_unit:
        return _strip_commas(before_unit)
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
    if len(text) <= 40 and (before_unit := _before_unit(text.strip())):
        return _strip_commas(before_unit)  # the whole reply is the answer and its unit ("72 cm^2")
    if looks_cut_off(text, quantity=True):
        return None  # cut off by the token budget: its last number is a step of the work, not the answer
    last = _last_number(text)
    if last is None:
        return None
    power = _POWER_AFTER.match(text, last.end())  # "10^5" is one answer, its 5 no answer of its own
    return _strip_commas(last.group(0)) + (f"^{{{power.group(1) or power.group(2)}}}" if power else "")


# A place no number of _NUMBER runs across: after a character no number holds (a letter but e/E, a bracket, a
# percent sign, which only ends one), after a run of spaces with no slash beside it (spaces are in a number only
# around its fraction slash), between a digit and a following sign (a sign follows only "e", "/" or a space).
_NUMBER_BOUNDARY = re.compile(r"[^0-9,.\-eE+/\s]|(?<![\s/])\s+(?![\s/])|(?<=[0-9])(?=[-+])")


def _last_number(text: str):
    """The last match of ``_NUMBER.finditer(text)`` that is no exponent, read from the end: the matches after a
    place no number runs across are the same whether the scan starts there or at the text's start, so the text is
    scanned back from its end in growing windows, each from such a place, and a reply's last number costs its
    last window, not the whole reply (one number per two characters of a megabyte made a million matches)."""
    end, window = len(text), 2048
    while end > 0:
        start = max(0, end - window)
        if start > 0:
            boundary = _NUMBER_BOUNDARY.search(text, start)
            if boundary is None or boundary.end() >= end:
                window *= 4  # none in this window: a larger one
                continue
            start = boundary.end()
        for number in reversed(list(_NUMBER.finditer(text, start, end))):
            if not _EXPONENT_BEFORE.search(text[max(0, number.start() - 8):number.start()]):
                return number
        end, window = start, window * 2
    return None


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
    if any(len(m.group(part) or "") > _MAX_DIGITS for part in ("num", "exp", "den")):
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


# ----------------------------------------------------------------------------- math-verify, bounded
#
# math-verify (sympy underneath) can spend seconds or hang on one short adversarial answer: a fraction nested 30
# deep, a power tower, 1000000!, a long sum. Its own timeout is SIGALRM, which works only in the main thread, and
# lm-eval or our executor may score from another. So it runs in a child process of ours (``_MathVerifyWorker``),
# one request at a time, which is killed when it overruns MATH_VERIFY_SECONDS: a bound that holds in any thread and
# for any input. Inputs no answer of a dataset has are refused before it (``_too_wild``): they never cost the wait.

MATH_VERIFY_SECONDS = 5.0
_MV_MAX_CHARS = 400  # longer than any MATH / GSM8K answer; a reply's "answer" this long is not one
_MV_MAX_DEPTH = 12  # brace and bracket nesting; MATH's deepest golds nest 4


def _too_wild(text: str) -> bool:
    """Shapes that make sympy slow and that no dataset answer takes: too long, nested too deep, a power tower or a
    power / factorial too large to compute, a NUL or unpaired surrogate."""
    if len(text) > _MV_MAX_CHARS or re.search(r"[\x00\ud800-\udfff]", text):
        return True
    depth = deepest = 0
    for char in text:
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(char, 0)
        deepest = max(deepest, depth)
    if deepest > _MV_MAX_DEPTH:
        return True
    exponents = re.findall(r"(?:\^|\*\*)\s*\{?\s*([^{}\s^*]+)", text)
    # a tower of numbers: 9^{9^{9}}, 9^9^9, 2**3**4 (two powers side by side, s^2+\omega^2, are no tower)
    if len(exponents) > 1 and re.search(r"\d\s*(?:\^|\*\*)\s*\{?\s*\d+\s*(?:\^|\*\*)", text):
        return True
    return (any(re.fullmatch(r"[-+]?\d{4,}(?:\.\d+)?", e) for e in exponents)  # 10^{1000} and above
            or bool(re.search(r"\d{3,}\s*!", text)))  # 1000!


def _mv_parse_here(text: str) -> list:
    """math-verify's reading of ``text`` (a fresh list each call; its sympy objects are immutable and read once per
    text in this process: parsing is a pure function of the text and took half a comparison's time)."""
    return list(_mv_parse_cached(text))


@lru_cache(maxsize=4096)
def _mv_parse_cached(text: str) -> tuple:
    from math_verify import LatexExtractionConfig, parse

    text = text.strip().strip("$").strip()
    if not text:
        return ()
    try:  # the bound is the worker's (its own timeout would need the main thread)
        return tuple(parse(f"${text}$", extraction_config=[LatexExtractionConfig()], parsing_timeout=None))
    except Exception:
        return ()


def _mv_request(op: str, gold: str, pred: str = "", integer_gold: str | None = None):
    """One math-verify question, answered in this process (no worker; called by the worker, or here when no
    worker can start): ``parses`` (does ``gold`` read as an expression), ``equal`` (``pred`` equals ``gold``) or
    ``signature`` (``mv_signature`` of ``gold``: a list, not a bool)."""
    import logging
    from fractions import Fraction

    from math_verify import verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)  # it logs whole inputs on every failure
    if op == "signature":
        return [_mv_describe(item) for item in _mv_parse_here(gold)]
    if op == "solved":
        relations: dict = {}
        for item in _mv_parse_here(gold):
            _mv_describe(item, relations=relations)
        return {key: _mv_solve_facts(relation) for key, relation in relations.items()}
    gold_parsed = _mv_parse_here(gold)
    if op == "parses" or not gold_parsed:
        return bool(gold_parsed)
    pred_parsed = _mv_parse_here(pred)
    if integer_gold is not None:
        # an integer gold: math-verify rounds floats to 6 places, so its yes is checked on the value it read
        values = [v for v in pred_parsed if not isinstance(v, str)]
        try:
            if values and values[0].is_number and not _numbers_equal(Fraction(str(values[0].evalf(30))),
                                                                      Fraction(integer_gold)):
                return False
        except (TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError):
            pass
    try:
        return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))
    except Exception:
        return False


class _MathVerifyWorker:
    """A child Python that answers ``_mv_request`` questions, one JSON line each way; killed and restarted when one
    overruns MATH_VERIFY_SECONDS (the answer is then False: not equal, or not parsed). One lock: one question at a
    time, from any thread. Other bounded questions use the same machinery with their own serving loop (``entry``,
    ``module:function``), bound (``seconds``) and in-process fallback (``here``): RealCritic's sympy grader."""

    def __init__(self, entry: str = "critic_tasks.core.answers:_serve", seconds: float | None = None, here=None):
        self.lock = threading.Lock()
        self.proc = None
        self.broken = False  # no child could start (a platform without subprocesses): answered in process
        self.entry, self.seconds, self.here = entry, seconds, here or _mv_request

    def _start(self):
        import os
        import select
        import subprocess
        import sys

        # the child imports this package from where this process did (a path a test or runner put on sys.path)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        module, function = self.entry.split(":")
        self.proc = subprocess.Popen([sys.executable, "-c", f"from {module} import {function}; {function}()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, encoding="utf-8", bufsize=1, env=env)
        # it says "ready" once math-verify is imported; a child that cannot is a broken setup, not a wrong answer
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        if not ready or self.proc.stdout.readline().strip() != '"ready"':
            self._stop()
            raise OSError("the math-verify worker did not start")

    def _stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def ask(self, *request) -> bool:
        return bool(self.value(*request, overrun=False))

    def value(self, *request, overrun=None, seconds: float | None = None):
        """The child's answer as it sent it (JSON); ``overrun`` when it overran its bound (``seconds``, else the
        worker's) and was killed."""
        import json
        import select

        with self.lock:
            if self.broken:
                return self.here(*request)
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self._start()
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
                bound = seconds or (MATH_VERIFY_SECONDS if self.seconds is None else self.seconds)
                ready, _, _ = select.select([self.proc.stdout], [], [], bound)
                line = self.proc.stdout.readline() if ready else ""
                if not line:
                    self._stop()  # overran its bound (or died on it): killed; the next question starts a fresh one
                    return overrun
                return json.loads(line)
            except OSError as err:
                self._stop()
                self.broken = True
                import logging
                logging.getLogger("critic_tasks").warning(
                    "critic_tasks: %s runs in this process, without a time bound (%s)", self.entry, err)
                return self.here(*request)


def _serve():
    """The worker's loop (``_MathVerifyWorker``): a JSON request per line in, true/false per line out."""
    import json
    import sys

    import math_verify  # noqa: F401  (imported before "ready": the first question does not wait for it)

    global _IN_WORKER
    _IN_WORKER = True

    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        print(json.dumps(_mv_request(*json.loads(line))), flush=True)


_WORKER = _MathVerifyWorker()


# ----------------------------------------------------------------------------- a necessary condition for equality
#
# A chance line compares every distinct gold of a task with every other (tens of thousands of pairs, 0.02-0.2 s each
# by sympy). Most pairs are two different numbers, or two expressions that differ at a point: ``point_value`` gives
# each side's value (a sympy expression's, its symbols and undefined functions set to fixed ones), and ``far`` says
# when two values are too far apart for any of the graders' rules that could still accept them. Each grader's own
# function (``mv_could_equal`` here, ``authors_grading.could_equal``) follows that grader's steps on what it keeps
# of each side (here ``_mv_describe``: relations, sets, tuples, intervals, matrices, symbols too) and argues, rule
# by rule, where it may say False; what it does not cover (a percentage, a symbol with other assumptions, a value
# that does not evaluate, two relations) is "unknown" and the pair is left to the grader. The axiom: sympy's own symbolic steps (==,
# equals, simplify(a - b) == 0) accept only expressions equal as functions of their symbols; every tolerance the
# graders apply to numbers (a relative 1e-4, math-verify's rounding to 6 places, evalf's chop near 1e-15) is far
# inside ``far``'s margin.

_POINT_SYMBOLS = None  # the assumptions of a symbol a real value may stand for (plain, or real as math-verify's)
FAR_RELATIVE, FAR_ABSOLUTE = 1e-3, 1e-5


def _point_symbols() -> list:
    global _POINT_SYMBOLS
    if _POINT_SYMBOLS is None:
        from sympy import Symbol

        _POINT_SYMBOLS = [Symbol("x").assumptions0, Symbol("x", real=True).assumptions0]
    return _POINT_SYMBOLS


@lru_cache(maxsize=1)
def _nonreal_symbol() -> dict:
    """The assumptions of math-verify's symbols in a text that looks complex (``Symbol(name, real=False)``)."""
    from sympy import Symbol

    return Symbol("x", real=False).assumptions0


def point_seed(key: str):
    """A number in [0.5, 1.5) from ``key`` alone, 30 digits: where every grader's necessary condition puts a symbol
    or an undefined function's coefficient, so that equal expressions meet at the same point."""
    from sympy import Float

    return Float(0.5 + (zlib.crc32(key.encode()) % 997) / 997, 30)


def _digest(text: str) -> str:
    """A short stable key for a text (sha1, 20 hex digits): how the worker's facts are named across processes."""
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()[:20]


def functions_fixed(expr):
    """``expr`` with each undefined function applied (u(t), I(0)) replaced by a fixed function of its arguments,
    from its name alone: c_u * exp(sum_k w_uk * atan(arg_k)) (finite at infinite arguments). An identity sympy
    proves for an opaque function holds for every function, so equal expressions stay equal (``point_value``, and
    ``authors_grading._value_at_point``)."""
    from sympy import atan, exp
    from sympy.core.function import AppliedUndef

    seed = point_seed
    return expr.replace(lambda e: isinstance(e, AppliedUndef),
                        lambda e: seed(f"{e.func.__name__}#0") * exp(sum(seed(f"{e.func.__name__}#{k + 1}") * atan(arg)
                                                                        for k, arg in enumerate(e.args))))


def calculus_done(expr):
    """``expr`` with its undefined functions fixed (``functions_fixed``), then its derivatives, integrals and
    substitutions evaluated (``doit``); None where one stays unevaluated. An identity sympy proves with a derivative
    left opaque holds for every value it could stand for, its evaluated one included (``point_value``, and
    ``authors_grading._value_at_point``)."""
    from sympy import Derivative, Integral, Subs
    from sympy.core.function import AppliedUndef

    if expr.atoms(AppliedUndef):
        expr = functions_fixed(expr)
    if expr.has(Derivative, Integral, Subs):
        expr = expr.doit()
        if expr.has(Derivative, Integral, Subs):
            return None
    return expr


def point_value(obj, lone_symbol: bool = False, scale: float = 1.0) -> list | None:
    """["value", re, im]: a sympy expression's value, each free symbol set to a number from its name and
    assumptions alone (so equal expressions meet at the same point), 30 digits; None where that would not say what
    the graders do: not a scalar expression (a set, tuple, relation, matrix; a lone symbol unless ``lone_symbol``:
    math-verify compares one by its name, ``mv_could_equal``), a percentage (math-verify compares the number before
    the % with an integer), a symbol with other assumptions (an identity under ``integer=True`` need not hold at a
    real), or no finite number. A symbol's name is only the key of its value: sympy's steps never equate a symbol
    with a constant it is named like (Symbol("pi") with pi), and math-verify compares names only in its symbol rule,
    which ``mv_could_equal`` follows by name, not by value.

    A plain or ``real=True`` symbol stands for a real; a ``real=False`` one (math-verify reads every symbol of a text
    that looks complex, one with an ``i``, so) for a non-real complex number: an identity sympy proves for a symbol
    holds for every value its assumptions allow. An undefined function (u(t), I(0); no assumptions of its own) is
    replaced by a fixed function of its arguments from its name (an identity sympy proves for an opaque function
    holds for every function: ``authors_grading._value_at_point`` does the same), then derivatives, integrals and
    substitutions evaluated (``calculus_done``).
    ``scale`` multiplies every symbol's value (``_mv_points``' second point)."""
    try:
        from sympy import Expr, I, MatrixExpr, Symbol, UnevaluatedExpr
        from sympy.core.function import AppliedUndef

        if (not isinstance(obj, Expr) or isinstance(obj, MatrixExpr) or (isinstance(obj, Symbol) and not lone_symbol)
                or obj.has(UnevaluatedExpr) or obj.atoms(MatrixExpr)):
            return None

        seed = point_seed
        if any(f.assumptions0 != {} for f in obj.atoms(AppliedUndef)):
            return None
        obj = calculus_done(obj)
        if obj is None:
            return None
        symbols = obj.free_symbols
        allowed = _point_symbols()
        if any(not isinstance(s, Symbol) or s.assumptions0 not in allowed + [_nonreal_symbol()] for s in symbols):
            return None
        point = {s: scale * (seed(s.name) + (I * seed(f"{s.name}#im") if s.assumptions0 == _nonreal_symbol() else 0))
                 for s in symbols}
        value = (obj.xreplace(point) if point else obj).evalf(30)
        re_part, im_part = value.as_real_imag()
        if not all(part.is_Float or part.is_zero is True for part in (re_part, im_part)):
            return None
        pair = complex(float(re_part), float(im_part))
        return None if pair != pair or abs(pair) == float("inf") else ["value", pair.real, pair.imag]
    except Exception:
        return None


class _Overran(BaseException):
    """Raised by the worker's alarm inside sympy (a BaseException: sympy's ``except Exception`` does not catch it)."""


_IN_WORKER = False  # set by ``_serve``: only the worker's own main thread bounds a step with SIGALRM
POINT_SECONDS = 1.0
SECOND_POINT = 0.25


def _bounded(seconds: float, function, *args):
    """``function(*args)``, or None past ``seconds``, in the worker (elsewhere unbounded: an alarm in a user's
    process could cancel one of theirs; the worker's whole answer has its own bound)."""
    import signal

    if not (_IN_WORKER and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()):
        return function(*args)

    import mpmath

    def stop(signum, frame):
        raise _Overran

    # mpmath's global precision as it was: sympy restores what it sets in ``finally`` blocks, but an alarm between
    # setting it and entering one would leave the worker's later answers at another precision
    precision = mpmath.mp.prec
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function(*args)
    except _Overran:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        mpmath.mp.prec = precision


def _mv_points(obj, lone_symbol: bool) -> list:
    """["points", value at the first point, value at the second] (``point_value``, each None where it says so or
    overran POINT_SECONDS): the second sets every symbol to SECOND_POINT of its first value, so a series that
    diverges at the first (a power series at x > 1) can still be compared there. Two sides are compared at each
    point where both have a value (``_mv_near``); an identity holds at both."""
    first = _bounded(POINT_SECONDS, point_value, obj, lone_symbol)
    second = _bounded(POINT_SECONDS, point_value, obj, lone_symbol, SECOND_POINT) if obj.free_symbols else first
    return ["points", first, second]


def far(a: list, b: list) -> bool:
    """Two ``point_value``s too far apart to be equal under any grader's tolerance."""
    x, y = complex(a[1], a[2]), complex(b[1], b[2])
    return abs(x - y) > FAR_RELATIVE * max(abs(x), abs(y)) + FAR_ABSOLUTE


# What ``mv_could_equal`` keeps of each object math-verify reads (``_mv_describe``, computed once per text in the
# worker; JSON): a list whose first item names its kind, by the class tests ``sympy_expr_eq`` makes, or None
# (unknown: a logical formula that is no chain of relations, anything deeper than _MV_DESCRIBE_DEPTH):
#   ["text", string]                                 a string math-verify extracted;
#   ["expr", value, symbol, concat, is_e, key]       a scalar expression (sympy Expr): ``_mv_points`` (a lone
#                                                    symbol's too), the lone Symbol's name (else None), the names
#                                                    math-verify's symbol rule joins for a product of symbols and E
#                                                    (else None), whether it is E, and a digest of str();
#   ["matrix", None, None, concat, False, key]      a matrix (explicit, or a MatrixExpr such as 1/35 * a matrix):
#                                                    what the symbol rule sees of it, as for an expression;
#   ["rel", is_equation, is_assignment, rhs, node, key]
#                                                    ``is_relation``: the flags math-verify computes, the description
#                                                    of ``take_last_relation(.).rhs`` (what it unwraps to), the
#                                                    relation ``sympy_compare_relational`` gets (``_mv_relation_node``),
#                                                    str()'s digest;
#   ["fset", args, unsorted]                         a FiniteSet: its elements, and latex2sympy's ``_unsorted_args``
#                                                    (None where it has none);
#   ["tuple", args]                                  a sympy Tuple;
#   ["interval", start, end, left_open, right_open, is_open, finite]
#   ["set", finite]                                  any other sympy Set (a Union...): ``is_finite_set`` (or None).
_MV_DESCRIBE_DEPTH = 8


def _str_key(obj) -> str | None:
    try:
        return _digest(str(obj))
    except Exception:
        return None


def _mv_describe(obj, depth: int = 0, relations: dict | None = None) -> list | None:
    """One object math-verify read, described as above (None: unknown). ``relations``, where given, collects each
    relation node's sympy object by its key (``_mv_request("solved")``)."""
    try:
        from math_verify.grader import is_assignment_relation, is_equation, is_relation, take_first_relation, take_last_relation
        from sympy import E, Eq, Expr, Interval, MatrixBase, MatrixExpr, Mul, Set, Symbol, Tuple
        from sympy import FiniteSet as SympyFiniteSet

        if depth > _MV_DESCRIBE_DEPTH:
            return None
        if isinstance(obj, str):
            return ["text", obj.strip()]
        concat = None
        if isinstance(obj, Mul) and all(arg == E or isinstance(arg, Symbol) for arg in obj.args):
            concat = "".join(arg.name if isinstance(arg, Symbol) else "e" for arg in obj.args)
        if isinstance(obj, (MatrixBase, MatrixExpr)):
            return ["matrix", None, None, concat, False, _str_key(obj)]
        if hasattr(obj, "shape"):
            return None
        if is_relation(obj):
            assignment = is_assignment_relation(obj)
            # sympy_expr_eq cuts an assignment chain (x = y = 3) to its first left and last right side, whatever
            # the other side is: the relation sympy_compare_relational gets
            compared = (Eq(take_first_relation(obj).lhs, take_last_relation(obj).rhs, evaluate=False)
                        if assignment else obj)
            return ["rel", bool(is_equation(obj)), bool(assignment),
                    _mv_describe(take_last_relation(obj).rhs, depth + 1, relations),
                    _mv_relation_node(compared, depth + 1, relations), _str_key(obj)]
        if isinstance(obj, SympyFiniteSet):
            unsorted = getattr(obj, "_unsorted_args", None)
            return ["fset", [_mv_describe(x, depth + 1, relations) for x in obj.args],
                    None if unsorted is None else [_mv_describe(x, depth + 1, relations) for x in unsorted]]
        if isinstance(obj, Tuple):
            return ["tuple", [_mv_describe(x, depth + 1, relations) for x in obj.args]]
        if isinstance(obj, Interval):
            is_open = obj.is_open
            return ["interval", _mv_describe(obj.start, depth + 1, relations),
                    _mv_describe(obj.end, depth + 1, relations),
                    bool(obj.left_open), bool(obj.right_open), None if is_open is None else bool(is_open),
                    obj.is_finite_set]
        if isinstance(obj, Set):
            return ["set", obj.is_finite_set]
        if isinstance(obj, Expr):
            symbol = obj.name if isinstance(obj, Symbol) else None
            return ["expr", _mv_points(obj, True), symbol, concat, bool(obj == E), _str_key(obj)]
        return None
    except Exception:
        return None


def _mv_relation_node(rel, depth: int, relations: dict | None) -> list | None:
    """What ``sympy_compare_relational`` uses of one relation (after ``sympy_expr_eq``'s assignment cut):
    ["and", [node, ...]] for a chain (``_unsorted_args``, each a Relational: ``is_relation``); ["r", its class,
    the class math-verify takes for its flip (None: it has none, and the lookup raises), the description of
    ``lhs - rhs``, of ``rhs - lhs`` ("raises" where the subtraction does: the rule catches it and says False), a
    key]. ``solve``'s result is not here: it can take seconds, and it is asked for only where the rules before it
    say False (``_mv_solved``, by the key)."""
    from math_verify.grader import INVERSE_RELATIONS
    from sympy import And, srepr
    from sympy.core.relational import Relational

    if depth > _MV_DESCRIBE_DEPTH:
        return None
    if isinstance(rel, And):
        return ["and", [_mv_relation_node(arg, depth + 1, relations) for arg in rel._unsorted_args]]
    if not isinstance(rel, Relational):
        return None

    def difference(a, b):
        try:
            value = a - b
        except Exception:
            return "raises"
        return _mv_describe(value, depth + 1)

    key = _digest(srepr(rel))
    if relations is not None:
        relations[key] = rel
    flip = INVERSE_RELATIONS.get(type(rel))
    return ["r", type(rel).__name__, None if flip is None else flip.__name__, difference(rel.lhs, rel.rhs),
            difference(rel.rhs, rel.lhs), key]


def _mv_solve_facts(rel) -> list:
    """What ``sympy_solve_and_compare`` uses of one relation: ["raises"] where its ``solve`` (or ordering the
    solutions) raises (the comparison then says False); else ["solved", is Eq, the solutions as it orders them
    first, each described (a dict: None, unknown), the solutions as it orders them for two equations: "raises", or
    for each, its ``sorted(items())`` as [[srepr(key), description of the value], ...] (a solution that is no
    dict, or whose items do not sort: "raises": ``.items()`` or ``sorted`` raises there)]."""
    from math_verify.grader import sort_key
    from sympy import Eq, solve, srepr
    from sympy.core.sorting import ordered

    try:
        solved = list(ordered(solve(rel, rel.free_symbols)))
    except Exception:
        return ["raises"]
    elements = [None if isinstance(x, dict) else _mv_describe(x) for x in solved]
    try:
        in_order = list(ordered(solved, keys=sort_key, default=False))
    except Exception:
        return ["solved", isinstance(rel, Eq), elements, "raises"]
    solutions = []
    for solution in in_order:
        try:
            items = sorted(solution.items())
        except Exception:
            solutions.append("raises")
            continue
        solutions.append([[srepr(k), _mv_describe(v)] for k, v in items])
    return ["solved", isinstance(rel, Eq), elements, solutions]


SOLVE_SECONDS = 30.0
_RELATION_TEXT: dict[str, str] = {}  # a relation node's key -> a text it was read from (for ``_mv_solved``)


@lru_cache(maxsize=4096)
def _mv_solved_text(text: str) -> dict | None:
    """``_mv_solve_facts`` of every relation math-verify reads from ``text``, by key; None where the worker overran
    ``SOLVE_SECONDS`` (unknown)."""
    return _WORKER.value("solved", text, seconds=SOLVE_SECONDS)


def _mv_solved(key: str) -> list | None:
    text = _RELATION_TEXT.get(key)
    found = None if text is None else _mv_solved_text(text)
    return None if found is None else found.get(key)


def _mv_keep_relation_texts(description, text: str) -> None:
    if isinstance(description, list):
        if len(description) == 6 and description[0] == "r" and isinstance(description[5], str):
            _RELATION_TEXT.setdefault(description[5], text)
        for part in description:
            _mv_keep_relation_texts(part, text)


@lru_cache(maxsize=65536)
def mv_signature(text: str) -> tuple | None:
    """Each object math-verify reads from ``text`` (``_mv_parse_here``), described by ``_mv_describe``; None when
    the worker overran (all unknown)."""
    if _too_wild(text):
        return None
    found = _WORKER.value("signature", text)
    _mv_keep_relation_texts(found, text)
    return None if found is None else tuple(found)


_SETS = ("fset", "interval", "set")


def _mv_near(a: list | None, b: list | None) -> bool:
    """Could two ``_mv_points`` be one value: not far apart at any point where both have one."""
    return a is None or b is None or not any(x is not None and y is not None and far(x, y) for x, y in zip(a[1:], b[1:]))


def _mv_could(g: list | None, p: list | None) -> bool:
    """False only where ``sympy_expr_eq(gold, pred)`` (math-verify 0.9's grader.py, strict, no set-relation
    comparison: as ``verify`` calls it) is False, for objects described ``g`` and ``p``. Its steps, in order:

    1. An equation on the pred's side against a gold that is none becomes its last right-hand side (``x=3`` is
       compared as ``3``); else an assignment on the gold's side (a symbol's equation) against a pred that is no
       equation becomes its last right-hand side. Followed here exactly (with the flags math-verify computes).
    2. A relation (gold) against a set (pred) becomes ``as_set()``: unknown here (True).
    3. ``gold == pred``: the same object. Every rule below says True for two equal objects (equal values at the
       point, equal names, equal digests), so it needs no rule of its own.
    4. Two relations: ``sympy_compare_relational`` (``_mv_could_relations``).
    5. A set or tuple on either side: ``sympy_compare_sets`` (``_mv_could_sets``).
    6. A Symbol on either side: ``sympy_compare_symbols`` (``_mv_could_symbols``), no numeric comparison at all.
    7. Else ``sympy_numeric_eq`` / ``sympy_symbolic_eq``: two scalar expressions only within rounding of each other
       or equal as functions (values near at the point: ``far``). A relation against a scalar expression never:
       ``relation - expr`` raises TypeError (both steps catch it and say False), a relation has no ``round``
       (AttributeError, caught) and a relation's ``doit()`` is a relation or true/false, never == a number. A
       matrix against a scalar expression or a relation never either: the matrices' branch needs both, ``round``
       raises on a matrix (an explicit one has none; a MatrixExpr's is Expr.round, TypeError), a matrix is never
       == a number, and a matrix minus a scalar or a relation (or either minus it) raises TypeError. Two matrices,
       or a matrix with a set or tuple (``FiniteSet(matrix)``): unknown (True)."""
    if g is None or p is None:
        return True
    g_equation, p_equation = g[0] == "rel" and g[1], p[0] == "rel" and p[1]
    if p_equation and not g_equation:
        p = p[3]
    elif g[0] == "rel" and g[2] and not p_equation:
        g = g[3]
    if g is None or p is None or "text" in (g[0], p[0]):
        return True
    if g[0] == "rel" and p[0] in _SETS:
        return True
    if g[0] == "rel" and p[0] == "rel":
        return _mv_could_relations(g[4], p[4])
    if g[0] in _SETS + ("tuple",) or p[0] in _SETS + ("tuple",):
        return "matrix" in (g[0], p[0]) or _mv_could_sets(g, p)
    if (g[0] == "expr" and g[2] is not None) or (p[0] == "expr" and p[2] is not None):
        return _mv_could_symbols(g, p)
    if g[0] == "expr" and p[0] == "expr":
        return _mv_near(g[1], p[1])
    return g[0] == p[0] == "matrix"  # a relation or a matrix against a scalar expression, a matrix and a relation


def _mv_could_relations(g: list | None, p: list | None) -> bool:
    """``sympy_compare_relational(gold, pred)`` on two relation nodes (``_mv_relation_node``), step by step:
    two chains pair their relations in order (``zip(strict=True)``: another count raises, caught: False); a chain
    against one relation is False (it is no Relational). Then any of: the same class and ``lhs - rhs`` of each
    ``_mv_could``; the gold's flip (a class it has none for raises: nothing after it runs) is the pred's class and
    the gold's ``lhs - rhs`` against the pred's ``rhs - lhs``; ``sympy_solve_and_compare`` (``_mv_could_solved``).
    A subtraction that raises makes its rule False (the rule catches it)."""
    if g is None or p is None:
        return True
    if g[0] == "and" or p[0] == "and":
        return (g[0] == p[0] == "and" and len(g[1]) == len(p[1])
                and all(_mv_could_relations(a, b) for a, b in zip(g[1], p[1])))

    def differences(a, b) -> bool:
        return "raises" not in (a, b) and _mv_could(a, b)

    if g[1] == p[1] and differences(g[3], p[3]):
        return True
    if g[2] is None:
        return False
    if g[2] == p[1] and differences(g[3], p[4]):
        return True
    return _mv_could_solved(_mv_solved(g[5]), _mv_solved(p[5]))


def _mv_could_solved(g: list | None, p: list | None) -> bool:
    """``sympy_solve_and_compare(gold, pred)`` on each side's ``_mv_solve_facts``: False where either ``solve``
    raises. Two equations: their solutions in order (``zip(strict=True)``: the same count; none on both sides is
    True), each a dict on both sides, with the same keys (``g_k == p_k``: a Symbol's name and assumptions, its
    srepr) and values each ``_mv_could``. Else ``sympy_expr_eq`` of the two lists, which are no sympy objects: only
    its ``a == b`` can say True, a list equality, each element ``==`` (``_mv_same_value``; a dict unknown)."""
    if g is None or p is None:
        return True
    if "raises" in (g[0], p[0]):
        return False
    if g[1] and p[1]:
        if "raises" in (g[3], p[3]) or len(g[3]) != len(p[3]):
            return False
        for a, b in zip(g[3], p[3]):
            if "raises" in (a, b) or len(a) != len(b):
                return False
            if not all(x[0] == y[0] and _mv_could(x[1], y[1]) for x, y in zip(a, b)):
                return False
        return True
    return len(g[2]) == len(p[2]) and all(_mv_same_value(a, b) for a, b in zip(g[2], p[2]))


def _mv_could_symbols(g: list, p: list) -> bool:
    """``sympy_compare_symbols(gold, pred)`` (one is a Symbol; neither a set, a tuple, nor both relations), exactly:
    a symbol named e or E against E; a symbol against a product of symbols and E, by the lower-cased joined names
    (it returns that comparison); two symbols by their names (lower-cased where longer than one letter); else
    ``str(gold) == str(pred)`` (their digests)."""
    g_symbol = g[2] if g[0] == "expr" else None
    p_symbol = p[2] if p[0] == "expr" else None
    like_expr = ("expr", "matrix")  # the same fields (a MatMul is a Mul: its joined names, where all are symbols)
    if ((g_symbol is not None and g_symbol.lower() == "e" and p[0] in like_expr and p[4])
            or (p_symbol is not None and p_symbol.lower() == "e" and g[0] in like_expr and g[4])):
        return True
    if g_symbol is not None and p[0] in like_expr and p[3] is not None:
        return g_symbol.lower() == p[3].lower()
    if p_symbol is not None and g[0] in like_expr and g[3] is not None:
        return p_symbol.lower() == g[3].lower()
    if g_symbol is not None and p_symbol is not None:
        return ((g_symbol.lower() if len(g_symbol) > 1 else g_symbol)
                == (p_symbol.lower() if len(p_symbol) > 1 else p_symbol))
    return g[-1] is None or p[-1] is None or g[-1] == p[-1]


def _mv_same_value(a: list | None, b: list | None) -> bool:
    """Could sympy hold ``a`` and ``b`` equal as elements of a set (``==``, the same object, or ``is_eq`` True:
    ``FiniteSet._contains``, behind an empty symmetric difference)? Two scalar expressions only at near values
    (``is_eq`` proves their difference zero, or evaluates it to 0); a tuple and a scalar expression never
    (``_eval_is_eq(Tuple, Expr)`` is False; against a Symbol or an undefined function it is None, and nothing after
    it says True for a non-expression); a relation and a scalar expression never (a Boolean equals no non-Boolean
    unless one is a Symbol, and then no rule says True); two tuples only position by position (``fuzzy_and``);
    anything else: unknown (True)."""
    if a is None or b is None:
        return True
    kinds = {a[0], b[0]}
    if kinds == {"expr"}:
        return _mv_near(a[1], b[1])
    if kinds in ({"expr", "tuple"}, {"expr", "rel"}):
        return False
    if kinds == {"tuple"}:
        return _mv_pairs(a[1], b[1], _mv_same_value, in_order=True)
    return True


def _mv_pairs(golds: list, preds: list, same, in_order: bool = False) -> bool:
    """Is there a one-to-one pairing of ``golds`` with ``preds`` (equal lengths; position by position where
    ``in_order``, else any perfect matching) in which ``same(gold, pred)`` may hold for each pair?"""
    if len(golds) != len(preds):
        return False
    if in_order:
        return all(same(x, y) for x, y in zip(golds, preds))
    partner: dict[int, int] = {}

    def place(i: int, seen: set) -> bool:
        for j, p in enumerate(preds):
            if j not in seen and same(golds[i], p):
                seen.add(j)
                if j not in partner or place(partner[j], seen):
                    partner[j] = i
                    return True
        return False

    return all(place(i, set()) for i in range(len(golds)))


def _mv_could_sets(g: list, p: list) -> bool:
    """``sympy_compare_sets(gold, pred)``: a side that is no set or tuple becomes the set of it alone. Two intervals:
    equal open/closed ends and each endpoint ``_mv_could``. Else any of: ``==`` or an empty symmetric difference
    (two sets equal as sets: each element of one may equal one of the other, ``_mv_same_value``; a finite set never
    equals one sympy knows infinite; two tuples are no sets, and their ``==`` is the in-order comparison below);
    the element-wise comparison of two finite sets / tuples (``sympy_deep_compare_set_and_tuple``: equal lengths,
    elements paired, ``_mv_could``, in an order: two tuples position by position, a tuple gold against a FiniteSet
    pred in its written order, latex2sympy's ``_unsorted_args`` (zipped strictly: a length other than the set's
    raises, caught: False), any other pair both sorted by a key: any pairing); an open interval (``is_open``)
    against a finite set or tuple of two, compared as the tuple (start, end) the same way."""
    a = g if g[0] in _SETS + ("tuple",) else ["fset", [g], None]
    b = p if p[0] in _SETS + ("tuple",) else ["fset", [p], None]
    if a[0] == b[0] == "interval":
        return a[3] == b[3] and a[4] == b[4] and _mv_could(a[1], b[1]) and _mv_could(a[2], b[2])
    if a[0] in _SETS and b[0] in _SETS:
        finite = [True if x[0] == "fset" else x[-1] for x in (a, b)]
        if a[0] == b[0] == "fset":
            if (all(any(_mv_same_value(x, y) for y in b[1]) for x in a[1])
                    and all(any(_mv_same_value(x, y) for x in a[1]) for y in b[1])):
                return True
        elif not (True in finite and False in finite):
            return True
    if a[0] in ("fset", "tuple") and b[0] in ("fset", "tuple"):
        golds, preds, in_order = a[1], b[1], a[0] == b[0] == "tuple"
        if a[0] == "tuple" and b[0] == "fset" and b[2] is not None:
            preds, in_order = (b[2] if len(b[2]) == len(b[1]) else []), True
        if _mv_pairs(golds, preds, _mv_could, in_order):
            return True
    for interval, other, gold_side in ((a, b, True), (b, a, False)):
        if interval[0] == "interval" and other[0] in ("fset", "tuple") and interval[5] is not False:
            pair = ["tuple", [interval[1], interval[2]]]
            golds, preds = (pair, other) if gold_side else (other, pair)
            if _mv_could_sets(golds, preds):
                return True
    return False


def mv_could_equal(pred: str, gold: str) -> bool:
    """False only where ``answers_match(pred, gold)`` is False, for a pair ``match_without_math_verify`` left open
    (then ``answers_match`` is ``verify(parse(gold), parse(pred))``, true when any (gold, pred) object pair is):
    a (string, string) pair is equal non-empty strings (kept); a string with a sympy object is never equal
    (``verify``'s ``compare_single_extraction``); two sympy objects go to ``sympy_expr_eq``, followed step by step
    by ``_mv_could`` on their descriptions. math-verify's integer-gold check only refuses more."""
    gold_items, pred_items = mv_signature(gold), mv_signature(str(pred))
    if gold_items is None or pred_items is None:
        return True
    for g in gold_items:
        for p in pred_items:
            if g is None or p is None:
                return True
            if g[0] == "text" or p[0] == "text":
                if g[0] == p[0] == "text" and g[1] and g[1] == p[1]:
                    return True
                continue
            if _mv_could(g, p):
                return True
    return False


def _mv_parses(text: str) -> bool:
    """Does math-verify read ``text`` as one LaTeX expression: ``2\\sqrt{3}``, ``(2, 5)`` (an interval), ``1:729``
    (a ratio), ``2, 5`` (a set: "3 or 5" is a set too, so it never equals one number)."""
    return bool(text.strip().strip("$").strip()) and not _too_wild(text) and _WORKER.ask("parses", text)


def parse_gold(gold: str) -> tuple[bool, float | None]:
    """Whether math-verify reads ``gold`` as an expression, and its value when it is one plain number (None when
    it is not, or when no float holds it). Raises ``ValueError`` when neither reads it: the item is invalid."""
    # prose ("no answer given") reads to LaTeX as a product of letters: not an answer
    prose = not re.search(r"[\d\\]", gold) and re.search(r"[A-Za-z]{3,}", gold)
    number = _plain_number(gold)
    parsed = number is None and bool(gold.strip()) and not prose and _mv_parses(gold)
    if not parsed and number is None:
        raise ValueError(f"field 'ground_truth_answer' has no parseable answer: {gold[:200]!r}; the item is invalid")
    try:
        return parsed, None if number is None else float(number)
    except OverflowError:
        return parsed, None


def _numbers_equal(pred, gold) -> bool:
    """Integers exactly (the released toolkit compares ``eval``-ed values with ``==``: 5 == 5.0, 1250100 != 1250000),
    up to a binary float's round-off printed in full; other numbers within a relative 1e-4. In exact fractions, so
    a value no float holds (1e400, 10**400) is compared, never an OverflowError."""
    from fractions import Fraction

    def close(rel: Fraction, abs_: Fraction) -> bool:
        return abs(pred - gold) <= max(rel * max(abs(pred), abs(gold)), abs_)

    if gold.denominator == 1:
        if pred == gold:
            return True
        # a program's float printed in full ("2.9999999999999996"): at least 12 significant digits
        digits = len(str(pred.numerator)) if pred.denominator == 1 else len(re.sub(r"\D", "", _decimal(pred)))
        return digits >= _FLOAT_NOISE_DIGITS and close(Fraction(1, 10 ** 12), Fraction(0))
    return close(Fraction(1, 10 ** 4), Fraction(1, 10 ** 12))


def _decimal(value) -> str:
    """The digits a fraction read from decimal text was written with (its denominator a power of ten); 17 digits,
    a float's full print, for any other fraction."""
    den = value.denominator
    while den % 10 == 0:
        den //= 10
    return (str(abs(value.numerator)).strip("0") or "0") if den == 1 else "9" * 17


def answers_match(pred: str | None, gold: str) -> bool:
    """Does ``pred`` equal ``gold``?

    A gold that is one plain number (GSM8K's shape) is compared as a number: an integer exactly, another number
    within a relative 1e-4; a reply that is not one plain number goes to math-verify (``\\frac{15}{2}`` = 7.5),
    whose sets make "3 or 5" unequal to 5. Any other gold (MATH's LaTeX: ``\\frac{3}{4}``, ``2\\sqrt{3}``, ``(2, 5)``,
    ``10^{5}``, ``1:729``) is compared as an expression by math-verify and never reduced to one of its numbers.
    math-verify runs bounded in time (MATH_VERIFY_SECONDS, in a child process); a reply it cannot read in that
    time, or one too wild to try (``_too_wild``), is not equal.

    Raises ``ValueError`` when ``gold`` has no parseable answer: the item is invalid, not a free pass.
    """
    gold = "" if gold is None else str(gold)
    gold_value = _plain_number(gold)
    if gold_value is None:
        parse_gold(gold)  # raises for a gold with neither reading
    try:
        decided = match_without_math_verify(pred, gold)
    except ValueError:  # from the reply's side (the gold was read above): a reply never makes the gold "unreadable"
        return False
    if decided is not None:
        return decided
    integer_gold = str(gold_value) if gold_value is not None and gold_value.denominator == 1 else None
    return _WORKER.ask("equal", gold, str(pred), integer_gold)


def match_without_math_verify(pred: str | None, gold: str) -> bool | None:
    """``answers_match``'s verdict where it asks no math-verify comparison (no reply, the same text, two plain
    numbers, a text too wild to try), None where it would ask one. A gold ``parse_gold`` cannot read is the
    caller's to refuse first, as ``answers_match`` does. Cheap: a chance line tries many answers this way first."""
    gold = "" if gold is None else str(gold)
    if pred is None or not str(pred).strip():
        return False
    pred = str(pred)
    if re.sub(r"\s+", "", pred).lower() == re.sub(r"\s+", "", gold).lower():
        return True
    gold_value = _plain_number(gold)
    if gold_value is not None:
        pred_value = _plain_number(pred)
        if pred_value is not None:
            return _numbers_equal(pred_value, gold_value)
    if _too_wild(pred) or _too_wild(gold):
        return False
    return None
