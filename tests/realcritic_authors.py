"""The RealCritic authors' own code (../shared/data/realcritic: utils.py, parser.py, grader.py, evaluate.py),
imported for tests with small shims, never copied into the package.

Shims, and why (each stands in for something the code imports but the tested functions do not need, or cannot
have in our environment):

* ``latex2sympy2`` (the original package, pinned to antlr4 4.7 / 4.11, which clashes with math-verify's antlr4
  4.13): its ``latex2sympy`` is math-verify's fork ``latex2sympy2_extended.latex2sympy``, the LaTeX parser our
  grader asks too. sympy's own ``parse_latex`` needs antlr4 4.11 and raises ImportError here, which the authors'
  ``symbolic_equal`` catches, as ours does: both fall through to the next parser.
* ``pebble.ProcessPool`` (evaluate.py grades in one worker process with a 3-second timeout): a pool that maps in
  this process, in order, without the timeout (the tests' answers are short).
* ``python_executor`` (their tool-integrated runs' sandbox; evaluate.py imports it, the chain-of-thought path never
  calls it): an empty class.

``load()`` returns the four modules under private names; their plain names (``utils``, ``parser``, ...) are
removed from ``sys.modules`` again so that nothing else imports them by accident.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from functools import lru_cache
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "realcritic"
AVAILABLE = (SHARED / "parser.py").is_file() and (SHARED / "grader.py").is_file()


class _InlinePool:
    def __init__(self, max_workers=1):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items, timeout=None):
        class _Future:
            def result(self_inner):
                return iter([fn(item) for item in items])
        return _Future()


def _shim_modules() -> dict[str, types.ModuleType]:
    import latex2sympy2_extended

    latex = types.ModuleType("latex2sympy2")
    latex.latex2sympy = latex2sympy2_extended.latex2sympy
    pebble = types.ModuleType("pebble")
    pebble.ProcessPool = _InlinePool
    executor = types.ModuleType("python_executor")
    executor.PythonExecutor = type("PythonExecutor", (), {})
    return {"latex2sympy2": latex, "pebble": pebble, "python_executor": executor}


@lru_cache(maxsize=1)
def load() -> types.SimpleNamespace:
    """The authors' ``utils``, ``parser``, ``grader`` and ``evaluate`` modules."""
    names = ("utils", "parser", "grader", "evaluate")
    saved = {name: sys.modules.get(name) for name in (*names, "latex2sympy2", "pebble", "python_executor")}
    sys.modules.update(_shim_modules())
    loaded = {}
    try:
        for name in names:
            spec = importlib.util.spec_from_file_location(name, SHARED / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # their modules import each other by these names
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return types.SimpleNamespace(**loaded)
