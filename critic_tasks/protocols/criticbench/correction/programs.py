"""The programs a correction check runs: a math_pot solution with a value printer; for a code revision, a candidate
program and the trusted tester that runs the item's tests against it (see ``build_code_test_pair``).

HumanEval's entry point is the function the item is about (the ``check(f)`` of its execution result, else the
question's function), not the first ``def`` of the revised code; a unit test that defines ``check`` but never calls
it gets the call whatever ``data_source`` says, so it cannot pass by not running.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import sys
from pathlib import Path
from typing import Iterable

PRELUDE = (Path(__file__).parent / "prelude.py").read_text(encoding="utf-8")
RESULT_MARKER = "__critic_result__:"
# Printed by the trusted tester after the last test, with a fresh random token per item: its exit status 0 alone is
# not a pass (a test file that exits early would pass every item).
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


# ----------------------------------------------------------------------------- code items: a candidate and its tester

_HERE = Path(__file__).parent
WIRE, CANDIDATE_SIDE, TESTER_SIDE = ((_HERE / f"{name}.py").read_text(encoding="utf-8")
                                     for name in ("wire", "candidate_side", "tester_side"))


@functools.lru_cache(maxsize=1)
def _prelude_names() -> frozenset[str]:
    namespace: dict = {}
    exec(compile(PRELUDE, "prelude.py", "exec"), namespace)  # our own file: the names it binds
    return frozenset(n for n in namespace if not n.startswith("__"))


def _free_names(tree: ast.AST) -> set[str]:
    """Names the tests read but never bind at their top level (bound only inside a function counts as free: a
    local shadows whatever global we bind, so binding it is harmless)."""
    bound: set[str] = set()
    for node in tree.body:  # type: ignore[attr-defined]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - bound


def _tests_with_check_call(unit_test: str, data_source: str | None, entry_point: str | None) -> tuple[str, str | None]:
    """The tests as run, and the function HumanEval's ``check`` is called on (None for plain asserts)."""
    defines_check = re.search(r"^def\s+check\s*\(", unit_test, re.M)
    calls_check = re.search(r"^check\s*\(", unit_test, re.M)
    if (str(data_source or "").lower() == "humaneval" or defines_check) and not calls_check:
        name = entry_point or "__no_function_defined__"  # an undefined name fails, as it should
        return unit_test.rstrip() + f"\n\n\ncheck({name})\n", name
    return unit_test.rstrip() + "\n", None


def build_code_test_pair(code: str, unit_test: str, data_source: str | None, entry_point: str | None = None,
                         item_functions: Iterable[str] = (), done_token: str = "") -> tuple[str, str]:
    """(candidate program, tester program) for ``code`` and its item's ``unit_test``; see tester_side.py.

    The tester takes from the candidate the names the tests read and do not bind: the entry point and the item's
    own functions always (a task may ask for a function called ``gcd`` or ``random``); stdlib modules and the
    prelude's names otherwise come from the tester itself, so a candidate cannot hand the tests a fake ``math``
    whose ``isclose`` always agrees. Raises ``SyntaxError`` when the tests are not Python.
    """
    tests, called = _tests_with_check_call(unit_test, data_source, entry_point or find_entry_point(code))
    free = _free_names(ast.parse(tests))
    ours = set(dir(builtins)) | _prelude_names() | set(sys.stdlib_module_names)
    wanted = set(item_functions) | ({called} if called else set())
    from_candidate = sorted(n for n in free if n in wanted or n not in ours)
    own_modules = sorted(n for n in free if n in sys.stdlib_module_names and n not in from_candidate
                         and n not in _prelude_names() and not hasattr(builtins, n))
    candidate = WIRE + "\n" + CANDIDATE_SIDE + f"\n_serve({_with_header(code)!r})\n"
    tester = (WIRE + "\n" + TESTER_SIDE + f"\n_run_tests({PRELUDE!r}, {tests!r}, {from_candidate!r}, "
              f"{own_modules!r}, {TESTS_DONE_MARKER + done_token!r})\n")
    return candidate, tester


def item_functions(*sources: str | None) -> set[str]:
    """The functions and classes an item's question or original code defines: the names its tests are about."""
    return {name for source in sources for name in re.findall(r"^(?:def|class)\s+(\w+)", source or "", re.M)}
