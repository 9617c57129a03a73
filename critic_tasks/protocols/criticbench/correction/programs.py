"""The programs a correction check runs: a math_pot solution with a value printer, a code revision with its tests.

HumanEval's entry point is the function the item is about (the ``check(f)`` of its execution result, else the
question's function), not the first ``def`` of the revised code; a unit test that defines ``check`` but never calls
it gets the call whatever ``data_source`` says, so it cannot pass by not running.
"""

from __future__ import annotations

import re
from pathlib import Path

PRELUDE = (Path(__file__).parent / "prelude.py").read_text(encoding="utf-8")
RESULT_MARKER = "__critic_result__:"
# Printed after the last test, with a fresh random token per program: exit status 0 alone is not a pass, since a
# revision that is just ``os._exit(0)`` (or registers it with atexit) would pass every item.
TESTS_DONE_MARKER = "__critic_tests_done__:"


def _with_header(code: str) -> str:
    future = re.findall(r"^from __future__ import .*$", code, re.M)  # must stay the first statements
    body = re.sub(r"^from __future__ import .*$", "", code, flags=re.M)
    return "\n".join(future + [PRELUDE, body.rstrip(), ""])


def build_math_pot_program(code: str) -> str:
    """The revised ``class Solution`` plus a runner printing ``str(Solution().solution())`` behind a marker."""
    runner = f"\n\nprint('\\n{RESULT_MARKER}' + str(Solution().solution()), flush=True)\n"
    return _with_header(code) + runner


def _defs(source: str | None) -> list[str]:
    return re.findall(r"^def\s+(\w+)\s*\(", source or "", re.M)


def find_entry_point(code: str, question: str | None = None, generation: str | None = None,
                     exec_rest: str | None = None) -> str | None:
    """The function a HumanEval ``check`` should be called on: one the item is about.

    The ``check(f)`` call recorded in the original execution result when ``f`` is a function defined in the
    question, the generation or the revision (some records say ``check(check)`` or ``check(candidate)``); else the
    question's last function (HumanEval prompts end with the target; helpers come first), else the generation's
    first function, else the code's first function, else (the toolkit's fallback) the callee of the first
    ``assert`` in the code.
    """
    defined = set(_defs(question)) | set(_defs(generation)) | set(_defs(code))
    for called in re.findall(r"check\((\w+)\)", str(exec_rest or "")):
        if called in defined and called != "check":
            return called
    for names in (_defs(question)[-1:], _defs(generation)[:1], _defs(code)[:1]):
        if names:
            return names[0]
    callee = re.search(r"^\s*assert\s+(?:not\s+)?\(?\s*([A-Za-z_]\w*)\s*\(", code or "", re.M)
    return callee.group(1) if callee else None


def build_code_test_program(code: str, unit_test: str, data_source: str | None, entry_point: str | None = None,
                            done_token: str = "") -> str:
    """``code`` + the unit test; for HumanEval-style tests (``def check(candidate)``) also ``check(<entry point>)``;
    then a line printing ``TESTS_DONE_MARKER + done_token``, reached only if every test ran."""
    defines_check = re.search(r"^def\s+check\s*\(", unit_test, re.M)
    calls_check = re.search(r"^check\s*\(", unit_test, re.M)
    program = _with_header(code) + "\n\n" + unit_test.rstrip() + "\n"
    if (str(data_source or "").lower() == "humaneval" or defines_check) and not calls_check:
        name = entry_point or find_entry_point(code)
        program += f"\n\ncheck({name or '__no_function_defined__'})\n"  # an undefined name fails, as it should
    return program + f"\nprint('\\n{TESTS_DONE_MARKER}{done_token}', flush=True)\n"


