"""The RewardBench and RM-Bench authors' own code from ../shared/data, imported for the tests to compare against:
RewardBench's ``rewardbench/generative.py`` (``format_judge_answers``, ``process_judgement``), ``rewardbench/utils.py``
(``calculate_scores_per_section``) and ``constants.py`` (``EXAMPLE_COUNTS``, ``SUBSET_MAPPING``); RM-Bench's
``scripts/utils.py`` (``compute_accuracy``). What they import and we do not run (API clients, fastchat, torch,
datasets, transformers, the rewardbench package RM-Bench's file imports) is stood in for by empty modules while each
file loads; nothing is copied, each file is executed as it is under a module name of its own, and ``sys.modules``
is left as it was found."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REWARDBENCH = ROOT / "rewardbench"
RMBENCH = ROOT / "rmbench"
needs_rewardbench = pytest.mark.skipif(not (REWARDBENCH / "rewardbench" / "generative.py").is_file(),
                                       reason=f"{REWARDBENCH} (the authors' checkout, shared data) is absent")
needs_rmbench = pytest.mark.skipif(not (RMBENCH / "scripts" / "utils.py").is_file(),
                                   reason=f"{RMBENCH} (the authors' checkout, shared data) is absent")

# the modules their files import that the tests stand in for (and every submodule of them)
STOOD_IN = ("anthropic", "openai", "google", "together", "fastchat", "torch", "datasets", "transformers",
            "huggingface_hub", "pandas", "rewardbench")


class _Anything(types.ModuleType):
    """A module with every attribute: each name a class of its own (their files only name them at import)."""

    __path__: list = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {"__init__": lambda self, *args, **kwargs: None})
        setattr(self, name, value)
        return value


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in STOOD_IN:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Anything(spec.name)

    def exec_module(self, module):
        module.__path__ = []


@contextmanager
def _stood_in():
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in STOOD_IN}
    for key in saved:
        del sys.modules[key]
    finder = _StandIns()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for key in [k for k in sys.modules if k.split(".")[0] in STOOD_IN]:
            del sys.modules[key]
        sys.modules.update(saved)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CACHE: dict = {}


def _cached(key: str, path: Path):
    if key not in _CACHE:
        with _stood_in():
            _CACHE[key] = _load(f"authors_{key}", path)
    return _CACHE[key]


def generative():
    """RewardBench's rewardbench/generative.py."""
    return _cached("rewardbench_generative", REWARDBENCH / "rewardbench" / "generative.py")


def generative_v2():
    """RewardBench 2's rewardbench/generative_v2.py."""
    return _cached("rewardbench_generative_v2", REWARDBENCH / "rewardbench" / "generative_v2.py")


def rewardbench_utils():
    return _cached("rewardbench_utils", REWARDBENCH / "rewardbench" / "utils.py")


def rewardbench_constants():
    return _cached("rewardbench_constants", REWARDBENCH / "rewardbench" / "constants.py")


def rmbench_utils():
    """RM-Bench's scripts/utils.py."""
    return _cached("rmbench_utils", RMBENCH / "scripts" / "utils.py")


class Decided:
    """A stand-in for a reward score in ``compute_accuracy``: ``chosen[i] > rejected[j]`` is the judge's decision on
    that comparison (``right[(i, j)]``), so their matrix counts what the judge decided, comparison by comparison."""

    def __init__(self, right: dict, index: int, chosen: bool):
        self.right, self.index, self.chosen = right, index, chosen

    def __gt__(self, other: "Decided") -> bool:
        assert self.chosen and not other.chosen
        return bool(self.right[(self.index, other.index)])


def decided_scores(right: dict) -> tuple[list, list]:
    """(score_chosen, score_rejected) of one prompt for ``compute_accuracy`` from its 3 x 3 decisions."""
    return [Decided(right, i, True) for i in range(3)], [Decided(right, j, False) for j in range(3)]


def authors_mirror(folder: Path) -> Path:
    """A ``CRITIC_AUTHORS_MIRROR`` folder (``<owner>/<repo>/<commit>/<path>``) holding links to the shared checkout's
    files, so that a run on a data folder that is no checkout (the bundled sample) reads the authors' prompts."""
    from critic_tasks.protocols.rewardbench import authors_prompts
    from critic_tasks.protocols.rewardbench2.authors_prompts import GENERATIVE_V2

    for spec in (authors_prompts.GENERATIVE, authors_prompts.CONSTANTS, GENERATIVE_V2):
        target = folder / spec.repo / spec.commit / spec.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(REWARDBENCH / spec.path)
    return folder
