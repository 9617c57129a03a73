"""Objective correction checks for math_cot, math_pot, code_exec and code_not_exec (CriticBench, SCHEMA §3.4).

A model's revision is first *parsed* (a final answer, or a code block) and then *passed* if the answer matches the
gold answer or the code passes the item's unit tests in the sandbox (``critic_tasks.plugins.executor``).

Where we differ from the original toolkit, on purpose:

* a gold answer that cannot be parsed makes the item invalid (``ValueError`` naming ``ground_truth_answer``), never a
  free pass; likewise a code item without ``unit_test``;
* a gold answer of 0 can be matched; answers are compared with math-verify, then numerically with a relative
  tolerance of 1e-4 (no ``eval``, no int truncation);
* math_pot compares only the value of ``Solution().solution()`` (printed behind a marker), not any stdout line;
* HumanEval's entry point is the function the item is about (the ``check(f)`` of its execution result, else the
  question's function), not the first ``def`` of the revised code; a unit test that defines ``check`` but never calls
  it gets the call whatever ``data_source`` says, so it cannot pass by not running.
"""

from __future__ import annotations

import ast
import math
import re
import textwrap
import threading
from typing import Sequence

DOMAINS = ("math_cot", "math_pot", "code_exec", "code_not_exec")

# ----------------------------------------------------------------------------- code extraction

_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(```|\Z)", re.S)
_PY_LANGS = {"python", "py", "python3", "py3"}


def _is_program(code: str) -> bool:
    """Parses as Python and does something besides bare expressions (so prose like ``1.71`` is not code)."""
    try:
        tree = ast.parse(code)
    except Exception:  # SyntaxError, ValueError (NUL bytes), RecursionError (absurd nesting)
        return False
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def extract_code(text: str | None) -> str | None:
    """The first ```python (or ```py) block; an unlabelled block only if it is Python; else the whole text if it is."""
    if not text:
        return None
    text = text.replace("\r\n", "\n")
    for m in _FENCE.finditer(text):
        lang, body, closed = m.group(1).lower(), textwrap.dedent(m.group(2)).strip("\n"), bool(m.group(3))
        if lang in _PY_LANGS and body.strip() and (closed or _is_program(body)):  # cut-off block: only if it parses
            return body
        if lang == "" and _is_program(body):
            return body
    if "```" not in text and _is_program(textwrap.dedent(text)):
        return textwrap.dedent(text).strip("\n")
    return None


# ----------------------------------------------------------------------------- final answers (math_cot)

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
    value, else the last number in the text.
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
    numbers = _NUMBER.findall(text)
    return _strip_commas(numbers[-1]) if numbers else None


# ----------------------------------------------------------------------------- answer matching


def _last_number(text: str) -> float | None:
    numbers = _NUMBER.findall(text or "")
    if not numbers:
        return None
    parts = [float(_strip_commas(p).rstrip("%")) for p in numbers[-1].split("/")]
    try:
        return parts[0] / parts[1] if len(parts) == 2 else parts[0]
    except ZeroDivisionError:
        return None


def _mv_timeout() -> int | None:
    # math-verify times out with SIGALRM, which only works in the main thread
    return 5 if threading.current_thread() is threading.main_thread() else None


def _mv_parse(text: str) -> list:
    from math_verify import parse

    try:
        return parse(text, parsing_timeout=_mv_timeout())
    except Exception:
        return []


def _parse_gold(gold: str) -> tuple[list, float | None]:
    parsed, number = (_mv_parse(gold) if gold.strip() else []), _last_number(gold)
    if not parsed and number is None:
        raise ValueError(f"field 'ground_truth_answer' has no parseable answer: {gold[:200]!r}; the item is invalid")
    return parsed, number


def answers_match(pred: str | None, gold: str) -> bool:
    """Does ``pred`` equal ``gold``? math-verify first, then numbers within a relative tolerance of 1e-4.

    Raises ``ValueError`` when ``gold`` has no parseable answer: the item is invalid, not a free pass.
    """
    gold = "" if gold is None else str(gold)
    gold_parsed, gold_number = _parse_gold(gold)
    if pred is None or not str(pred).strip():
        return False
    pred = str(pred)
    if re.sub(r"\s+", "", pred).lower() == re.sub(r"\s+", "", gold).lower():
        return True
    if gold_parsed:
        from math_verify import verify

        try:
            if verify(gold_parsed, _mv_parse(pred), timeout_seconds=_mv_timeout()):
                return True
        except Exception:
            pass
    pred_number = _last_number(pred)
    return gold_number is not None and pred_number is not None and math.isclose(
        pred_number, gold_number, rel_tol=1e-4, abs_tol=1e-9)


def gold_answer(item: dict) -> str:
    """The item's gold final answer (``ground_truth_answer``: a string, a number, or a dict with Answer/Rationale)."""
    gold = item.get("ground_truth_answer")
    if isinstance(gold, dict):
        gold = next((gold[k] for k in ("Answer", "answer", "Rationale", "rationale") if gold.get(k)), None)
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        gold = repr(gold)
    answer = extract_final_answer(gold, item.get("question")) if isinstance(gold, str) else None
    if answer is None:
        raise ValueError(
            f"field 'ground_truth_answer' has no parseable answer: {str(gold)[:200]!r}; the item is invalid")
    _parse_gold(answer)  # raises if math-verify and the number parser both fail
    return answer


# ----------------------------------------------------------------------------- programs

# The toolkit's import header minus ``from sympy import *`` (0.5 s per program, and it shadows names like N, S, E).
# Modules a program may use without importing are bound lazily (imported on first use, then swapped in), so a
# program pays only for what it touches; names used at definition time (typing's List, ...) are real imports.
HEADER = '''\
import sys, time, itertools, collections, functools, math, heapq
from itertools import accumulate, product, permutations, combinations
from collections import Counter, OrderedDict, deque, defaultdict, ChainMap
from functools import lru_cache
from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2
from heapq import *
from typing import Any, Dict, List, Optional, Tuple, Union


class _LazyModule:
    def __init__(self, name, alias):
        self._name, self._alias = name, alias

    def __getattr__(self, attr):
        import importlib
        module = importlib.import_module(self._name)
        globals()[self._alias] = module
        return getattr(module, attr)


datetime, fractions, random, re, np = (_LazyModule(name, alias) for name, alias in (
    ("datetime", "datetime"), ("fractions", "fractions"), ("random", "random"), ("re", "re"), ("numpy", "np")))
'''
RESULT_MARKER = "__critic_result__:"


def _with_header(code: str) -> str:
    future = re.findall(r"^from __future__ import .*$", code, re.M)  # must stay the first statements
    body = re.sub(r"^from __future__ import .*$", "", code, flags=re.M)
    return "\n".join(future + [HEADER, body.rstrip(), ""])


def build_math_pot_program(code: str) -> str:
    """The revised ``class Solution`` plus a runner printing ``str(Solution().solution())`` behind a marker."""
    runner = f"\n\nprint('\\n{RESULT_MARKER}' + str(Solution().solution()), flush=True)\n"
    return _with_header(code) + runner


def _defs(source: str | None) -> list[str]:
    return re.findall(r"^def\s+(\w+)\s*\(", source or "", re.M)


def find_entry_point(code: str, question: str | None = None, generation: str | None = None,
                     exec_rest: str | None = None) -> str | None:
    """The function a HumanEval ``check`` should be called on.

    The ``check(f)`` call in the original execution result, else the question's last function (HumanEval prompts end
    with the target; helpers come first), else the generation's first function, else the code's first function,
    else (the toolkit's fallback) the callee of the first ``assert`` in the code.
    """
    called = re.search(r"check\((\w+)\)", str(exec_rest or ""))
    if called:
        return called.group(1)
    for names in (_defs(question)[-1:], _defs(generation)[:1], _defs(code)[:1]):
        if names:
            return names[0]
    callee = re.search(r"^\s*assert\s+(?:not\s+)?\(?\s*([A-Za-z_]\w*)\s*\(", code or "", re.M)
    return callee.group(1) if callee else None


def build_code_test_program(code: str, unit_test: str, data_source: str | None, entry_point: str | None = None) -> str:
    """``code`` + the unit test; for HumanEval-style tests (``def check(candidate)``) also ``check(<entry point>)``."""
    defines_check = re.search(r"^def\s+check\s*\(", unit_test, re.M)
    calls_check = re.search(r"^check\s*\(", unit_test, re.M)
    program = _with_header(code) + "\n\n" + unit_test.rstrip() + "\n"
    if (str(data_source or "").lower() == "humaneval" or defines_check) and not calls_check:
        name = entry_point or find_entry_point(code)
        program += f"\n\ncheck({name or '__no_function_defined__'})\n"  # an undefined name fails, as it should
    return program


# ----------------------------------------------------------------------------- the check


def _unit_test(item: dict) -> str:
    unit_test = item.get("unit_test")
    if not isinstance(unit_test, str) or not unit_test.strip():
        raise ValueError("field 'unit_test' is missing or empty; the item is invalid (it would pass any code)")
    return unit_test


def _outcome(parsed: bool, passed: bool, status: str, detail: str = "") -> dict:
    return {"parsed": parsed, "passed": passed, "status": status, "detail": detail}


def check_corrections(domain: str, revisions: Sequence[str | None], items: Sequence[dict], executor=None,
                      timeout_s: float = 4.0, invalid: str = "raise") -> list[dict]:
    """Score each revision against its item; one dict per item: ``parsed``, ``passed``, ``status``, ``detail``.

    ``status`` is ``passed``, ``wrong_answer``, ``no_result`` (math_pot printed no value), ``failed``, ``timeout``,
    ``error`` (the sandbox could not run it), ``unparsed`` or ``invalid`` (bad gold / unit test, with
    ``invalid="mark"``; the default ``"raise"`` raises ``ValueError`` before anything runs). All programs of a call go
    to the executor in one batch, so they run in parallel.
    """
    if domain not in DOMAINS:
        raise ValueError(f"domain {domain!r} has no objective correction check; choose one of {DOMAINS}")
    if len(revisions) != len(items):
        raise ValueError(f"{len(revisions)} revisions for {len(items)} items")
    if invalid not in ("raise", "mark"):
        raise ValueError("invalid must be 'raise' or 'mark'")
    golds: list = [None] * len(items)
    results: list = [None] * len(items)
    for i, item in enumerate(items):
        try:
            golds[i] = gold_answer(item) if domain.startswith("math") else _unit_test(item)
        except ValueError as err:
            if invalid == "raise":
                raise ValueError(f"item {i}: {err}") from None
            results[i] = _outcome(False, False, "invalid", str(err))

    if domain == "math_cot":
        for i, (text, item) in enumerate(zip(revisions, items)):
            if results[i] is None:
                answer = extract_final_answer(text, item.get("question"))
                ok = answer is not None and answers_match(answer, golds[i])
                status = "unparsed" if answer is None else "passed" if ok else "wrong_answer"
                results[i] = _outcome(answer is not None, ok, status, answer or "")
        return results

    from critic_tasks.plugins.executor import Program, get_executor

    programs, slots = [], []
    for i, (text, item) in enumerate(zip(revisions, items)):
        code = extract_code(text) if results[i] is None else None
        if results[i] is None and code is None:
            results[i] = _outcome(False, False, "unparsed")
        elif code is not None:
            if domain == "math_pot":
                source = build_math_pot_program(code)
            else:
                entry = find_entry_point(code, item.get("question"), item.get("generation"), item.get("exec_rest"))
                source = build_code_test_program(code, golds[i], item.get("data_source"), entry)
            programs.append(Program(source, timeout_s=timeout_s))
            slots.append(i)
    runs = (executor or get_executor()).run(programs) if programs else []
    for i, run in zip(slots, runs):
        detail = run.stderr.strip().splitlines()[-1][:300] if run.stderr.strip() else ""
        if domain == "math_pot" and run.status == "passed":
            value = run.stdout.rsplit(RESULT_MARKER, 1)[1].strip() if RESULT_MARKER in run.stdout else None
            ok = value is not None and answers_match(value, golds[i])
            status = "passed" if ok else "no_result" if value is None else "wrong_answer"
            results[i] = _outcome(True, ok, status, value or "")
        else:
            results[i] = _outcome(True, run.status == "passed", run.status, detail)
    return results
