"""How each released judge format's reply is read (``judges.JUDGES``), as the authors' ``utils/judges.py`` reads
it, written here in linear time (their Prometheus 2 pattern backtracks quadratically on a long run of spaces).
Each reader: reply -> (verdict in the comparison alphabet, A / B / C for a tie, or None; why not: "" when read).
``tests/test_judgebench_authors.py`` plays each against their own code on thousands of reply shapes.

* ``vanilla``: the whole reply, stripped, is ``Output (a)`` (A) or ``Output (b)`` (B); anything else raises in
  their code, and their run records no decision.
* ``skywork_critic``: a capital ``A`` anywhere in the reply is A, else a ``B`` anywhere is B, else none (their
  ``"A" in output``).
* ``prometheus_2``: their ``_parse_output_relative``: the first place where ``[RESULT]``, ``[RESULT:``,
  ``[Response`` + space, ``[Result] Response``, ``[Result:`` or ``Result`` / ``Result:`` at a line's start (any case)
  is followed by spaces, then ``A`` or ``B`` (any case), then ``]``, a space or the end.
* ``judge_lm``: the first line, commas as spaces, split on single spaces into exactly two numbers (Python's
  ``float``); the higher names the answer, equal ones (or a line that is not two numbers: both -1) a tie.
* ``panda_lm``: the stripped reply's first line is ``1`` (A) or ``2`` (B); anything else is a tie.
* ``auto_j``: after the last ``final decision is ``, the rest (stripped, lower case) starts with ``response 1``
  (A), ``response 2`` (B) or ``tie``; else none.
"""

from __future__ import annotations

import re
from typing import Callable

Verdict = tuple[str | None, str]
NONE: Verdict = (None, "no_verdict")


def vanilla(reply: str) -> Verdict:
    text = reply.strip()
    return ("A", "") if text == "Output (a)" else ("B", "") if text == "Output (b)" else NONE


def skywork_critic(reply: str) -> Verdict:
    return ("A", "") if "A" in reply else ("B", "") if "B" in reply else NONE


# Prometheus 2: each opening their pattern's alternatives allow, case-insensitive as theirs (re.IGNORECASE: the same
# case folding, e.g. the long s for "s"), matched at one position only: (opening, its own required whitespace)
# ([RESULT] | [Result], 1), ([RESULT: | [Result:, 2), ([Response + whitespace, 3): which one, by its group
_OPENINGS = re.compile(r"(\[RESULT\])|(\[RESULT:)|(\[Response)(?=\s)", re.IGNORECASE)
_RESULT_WORD = re.compile(r"Result:?", re.IGNORECASE)
_RESPONSE_WORD = re.compile(r"Response", re.IGNORECASE)
_LETTER = re.compile(r"(A|B)", re.IGNORECASE)


_SPACES = re.compile(r"\s*")  # their pattern's \s: what Python's re calls whitespace
_END = re.compile(r"\]|\s|$", re.MULTILINE)


def _skip_spaces(text: str, at: int) -> int:
    """The first position at or after ``at`` that is no whitespace. Each skip starts right after an opening (a
    non-space word), so the runs skipped for different openings never overlap: linear in all."""
    return _SPACES.match(text, at).end()


def _letter_after(text: str, at: int) -> str | None:
    """Spaces, then A or B, then ``]``, a space or the end: the letter (upper case), or None."""
    at = _skip_spaces(text, at)
    if _LETTER.match(text, at) and _END.match(text, at + 1):
        return text[at].upper()
    return None


# where a match of their pattern can start: a "[", or "Result" (any case) at a line's start or after a newline; the
# engine finds them in one pass (a match found here that fails starts no other: each is checked in full by _at)
_CANDIDATES = re.compile(r"\[|^Result|\nResult", re.IGNORECASE | re.MULTILINE)


def _starts(reply: str):
    return (found.start() for found in _CANDIDATES.finditer(reply))


def prometheus_2(reply: str) -> Verdict:
    """Their ``_parse_output_relative`` (see the module's docstring), one pass over the candidate positions."""
    for start in _starts(reply):
        found = _at(reply, start)
        if found is not None:
            return found, ""
    return NONE


def _at(text: str, start: int) -> str | None:
    """The letter their pattern captures for a match starting at ``start`` (its alternatives in their order)."""
    if text[start] == "[":
        opening = _OPENINGS.match(text, start)
        if opening is not None:
            letter = _letter_after(text, opening.end())
            if letter is not None:
                return letter
            if opening.lastindex == 1:  # "[Result] Response" then the letter
                at = opening.end()
                spaced = _skip_spaces(text, at)
                word = _RESPONSE_WORD.match(text, spaced) if spaced > at else None
                if word is not None:
                    letter = _letter_after(text, word.end())
                    if letter is not None:
                        return letter
    line_start = start == 0 or text[start - 1] == "\n"
    if line_start:  # "^Result:?" at this line's start
        letter = _result_word(text, start)
        if letter is not None:
            return letter
    if text[start] == "\n":  # "\nResult:?"
        return _result_word(text, start + 1)
    return None


def _result_word(text: str, at: int) -> str | None:
    word = _RESULT_WORD.match(text, at)
    if word is None:
        return None
    letter = _letter_after(text, word.end())
    if letter is None and word.group(0).endswith(":"):  # their ":?" gives the colon back
        letter = _letter_after(text, word.end() - 1)
    return letter


def judge_lm(reply: str) -> Verdict:
    first = reply.split("\n", 1)[0].replace(",", " ")
    parts = first.split(" ")
    scores = (-1.0, -1.0)
    if len(parts) == 2:
        try:
            scores = (float(parts[0]), float(parts[1]))
        except (ValueError, OverflowError):
            scores = (-1.0, -1.0)
    if scores[0] > scores[1]:
        return "A", ""
    if scores[0] < scores[1]:
        return "B", ""
    return "C", ""


def panda_lm(reply: str) -> Verdict:
    first = reply.strip().split("\n", 1)[0]
    return ("A", "") if first == "1" else ("B", "") if first == "2" else ("C", "")


_AUTO_J_MARK = "final decision is "


def auto_j(reply: str) -> Verdict:
    text = reply.strip()
    at = text.rfind(_AUTO_J_MARK)
    if at == -1:
        return NONE
    rest = text[at + len(_AUTO_J_MARK):].strip()[:len("response 1")].lower()
    if rest.startswith("response 1"):
        return "A", ""
    if rest.startswith("response 2"):
        return "B", ""
    if rest.startswith("tie"):
        return "C", ""
    return NONE


READERS: dict[str, Callable[[str], Verdict]] = {
    "vanilla": vanilla, "skywork_critic": skywork_critic, "prometheus_2": prometheus_2, "judge_lm": judge_lm,
    "panda_lm": panda_lm, "auto_j": auto_j}
