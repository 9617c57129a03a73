# Prepended to every program a correction check runs (math_pot solutions, code revisions with their unit tests).
# It is the released CriticEval toolkit's import header, so programs written against it keep working, minus
# ``from sympy import *`` (0.5 s per program, and it shadows names like N, S and E). Modules a program may use
# without importing are bound lazily (imported on first use, then swapped into the globals), so a program pays
# only for what it touches; names used at definition time (typing's List, ...) are real imports.
# This file is read as text (``programs.PRELUDE``), never imported by the package; tests run it.
import sys  # noqa: E401, F401
from collections import ChainMap, Counter, OrderedDict, defaultdict, deque  # noqa: F401
from functools import lru_cache  # noqa: F401
from heapq import *  # noqa: F403
from itertools import accumulate, combinations, permutations, product  # noqa: F401
from math import ceil, cos, exp, fabs, floor, gcd, log, log2, sin, sqrt, tan  # noqa: F401
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401


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
