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

from critic_tasks.sandbox import SHARED_PREFIX_END

PRELUDE = (Path(__file__).parent / "inside" / "prelude.py").read_text(encoding="utf-8")
RESULT_MARKER = "__critic_result__:"
# Printed by the trusted tester after the last test, with a fresh random token per item: its exit status 0 alone is
# not a pass (a test file that exits early would pass every item).
TESTS_DONE_MARKER = "__critic_tests_done__:"
# Printed by the tester when the tests ran but never called into the candidate (tester_side.py): not a pass.
NO_CALLS_MARKER = "__critic_no_calls__"


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
    question, the generation or the revision and not one of the question's complete helpers (some records say
    ``check(check)``, ``check(candidate)`` or ``check(encode_cyclic)`` for HumanEval/38's decoder); else the
    question's last function (HumanEval prompts end with the target; helpers come first), else the generation's
    first function, else the code's first function, else (the toolkit's fallback) the callee of the first
    ``assert`` in the code.
    """
    defined = set(_defs(question)) | set(_defs(generation)) | set(_defs(code))
    helpers = question_helpers(question, None)[1]  # a recorded check(encode_cyclic) is the toolkit's first-def slip
    for called in re.findall(r"check\((\w+)\)", str(exec_rest or "")):
        if called in defined and called != "check" and called not in helpers:
            return called
    for names in (_defs(question)[-1:], _defs(generation)[:1], _defs(code)[:1]):
        if names:
            return names[0]
    callee = re.search(r"^\s*assert\s+(?:not\s+)?\(?\s*([A-Za-z_]\w*)\s*\(", code or "", re.M)
    return callee.group(1) if callee else None


# ----------------------------------------------------------------------------- code items: a candidate and its tester

_HERE = Path(__file__).parent / "inside"
WIRE, CANDIDATE_SIDE, TESTER_SIDE = ((_HERE / f"{name}.py").read_text(encoding="utf-8")
                                     for name in ("wire", "candidate_side", "tester_side"))
CANDIDATE_HEAD, TESTER_HEAD = (f"{WIRE.rstrip()}\n\n{side.rstrip()}\n\n{SHARED_PREFIX_END}"
                               for side in (CANDIDATE_SIDE, TESTER_SIDE))


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


_TEST_FUNCTION = re.compile(r"^(check|test)", re.I)


def _called_names(tree: ast.AST) -> set[str]:
    """Names called, or passed to a call (a runner given a test function), anywhere in ``tree``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for part in [node.func, *node.args, *(k.value for k in node.keywords)]:
                if isinstance(part, ast.Name):
                    names.add(part.id)
    return names


def _is_test_class(node: ast.ClassDef) -> bool:
    bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
    return any(b.endswith("TestCase") for b in bases) or (node.name.startswith("Test") and not bases)


def _unittest_main(node: ast.AST) -> bool:
    call = node.value if isinstance(node, ast.Expr) else None
    func = call.func if isinstance(call, ast.Call) else None
    return isinstance(func, ast.Attribute) and func.attr == "main" and getattr(func.value, "id", "") in ("unittest",)


def plan_tests(unit_test: str, data_source: str | None, entry_point: str | None) -> tuple[str, str | None]:
    """The tests as the tester runs them, read with ``ast``, and the function HumanEval's ``check`` is given.

    Every shape the datasets use runs: module-level asserts as they stand; a test function nothing calls (HumanEval's
    ``check(candidate)``, ``check_solution(candidate)``, ``def test_x():``) is called after the module, with the
    entry point when it takes one argument; ``unittest.TestCase`` classes (and plain ``Test*`` classes) are run, and
    a ``unittest.main()`` in the tests is dropped (it would end the process before the count below). A HumanEval item
    whose ``check`` is not called gets the call whatever its source says. A test function that takes two or more
    arguments makes the item invalid (``ValueError``): nothing says what to give it. Raises ``SyntaxError`` when the
    tests are not Python.
    """
    tree = ast.parse(unit_test)
    lines = unit_test.rstrip().splitlines()
    removed = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and _unittest_main(n)]
    for node in removed:  # a statement of its own lines: blanked to `pass`, so line numbers stay
        for number in range(node.lineno, node.end_lineno + 1):
            lines[number - 1] = ""
        lines[node.lineno - 1] = " " * node.col_offset + "pass"
    called = _called_names(tree)
    name = entry_point or "__no_function_defined__"  # an undefined name fails, as it should
    calls, given, defined = [], None, set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _TEST_FUNCTION.match(node.name):
            defined.add(node.name)
            inner = {n for stmt in node.body for n in _called_names(stmt)}
            if node.name in called - inner or isinstance(node, ast.AsyncFunctionDef):
                continue
            required = len(node.args.posonlyargs) + len(node.args.args) - len(node.args.defaults)
            if required == 0:
                calls.append(f"{node.name}()")
            elif required == 1:
                calls.append(f"{node.name}({name})")
                given = name
            else:
                raise ValueError(f"field 'unit_test': {node.name}() takes {required} arguments and nothing calls it; "
                                 "the item is invalid (its tests would never run)")
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            calls.append(f"__critic_testcase__({node.name})")
    if str(data_source or "").lower() == "humaneval" and "check" not in called | defined:
        calls.append(f"check({name})")  # HumanEval's rule: an item without check fails on the undefined name
        given = name
    return "\n".join(lines) + "\n" + ("\n\n" + "\n".join(calls) + "\n" if calls else ""), given


def question_helpers(question: str | None, entry_point: str | None) -> tuple[str, set[str]]:
    """The question's own complete definitions (HumanEval/32's ``poly``, /38's ``encode_cyclic``) with its imports
    and constants, as source, and their names: the tester defines them from the item's text, so the candidate
    serves only the function(s) under test. The entry point, and any function whose body is only a docstring (the
    one to write), are left out. A question that is prose (MBPP) has none."""
    try:
        tree = ast.parse(question or "")
    except SyntaxError:
        return "", set()
    keep, names = [], set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name != entry_point:
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                    and not isinstance(s, ast.Pass)]
            if body:
                keep.append(node)
                names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            keep.append(node)
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    lines = (question or "").splitlines()
    source = "\n".join("\n".join(lines[min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1:
                                         node.end_lineno]) for node in keep)
    return (source + "\n" if source else ""), names


def build_code_test_pair(code: str, unit_test: str, data_source: str | None, entry_point: str | None = None,
                         item_functions: Iterable[str] = (), done_token: str = "",
                         question: str | None = None) -> tuple[str, str]:
    """(candidate program, tester program) for ``code`` and its item's ``unit_test``; see tester_side.py.

    The tester takes from the candidate the names the tests read and do not bind: the entry point and the item's
    own functions always (a task may ask for a function called ``gcd`` or ``random``); stdlib modules and the
    prelude's names otherwise come from the tester itself, so a candidate cannot hand the tests a fake ``math``
    whose ``isclose`` always agrees. The question's own helpers come from the question (``question_helpers``): the
    tester defines them, and the candidate's program starts with them too (so a revision may call them without
    copying them; its own definitions still win in its own process, never in the tester's). Raises ``SyntaxError``
    when the tests are not Python, ``ValueError`` when they have a test function nothing can call.
    """
    entry = entry_point or find_entry_point(code)
    tests, called = plan_tests(unit_test, data_source, entry)
    helpers, helper_names = question_helpers(question, entry)
    free = _free_names(ast.parse(tests)) - helper_names - {"__critic_testcase__"}
    ours = set(dir(builtins)) | _prelude_names() | set(sys.stdlib_module_names)
    wanted = (set(item_functions) - helper_names) | ({called} if called else set())
    from_candidate = sorted(n for n in free if n in wanted or n not in ours)
    own_modules = sorted(n for n in free if n in sys.stdlib_module_names and n not in from_candidate
                         and n not in _prelude_names() and not hasattr(builtins, n))
    # our code first, the same in every item, up to SHARED_PREFIX_END (compiled once per pre-started sandbox); the
    # item's own text only after it, inside string literals
    candidate = f"{CANDIDATE_HEAD}_serve({_with_header(helpers + code)!r})\n"
    tester = (f"{TESTER_HEAD}_run_tests({PRELUDE!r}, {helpers!r}, {tests!r}, {from_candidate!r}, "
              f"{own_modules!r}, {TESTS_DONE_MARKER + done_token!r})\n")
    return candidate, tester


def item_functions(*sources: str | None) -> set[str]:
    """The functions and classes an item's question or original code defines: the names its tests are about."""
    return {name for source in sources for name in re.findall(r"^(?:def|class)\s+(\w+)", source or "", re.M)}
