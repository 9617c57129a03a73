"""Load RealCritic's eight tasks into flat documents, one per item.

Source of truth is the paper repository ``tangzhy/RealCritic`` on GitHub: ``data/mix_data/<task>/test.jsonl``
(read by its ``data_loader.load_data(task, "test", data_dir="data/mix_data")``), one JSON object a line:

    idx             the item's index in the task
    question        the question (the multiple-choice tasks list their options in it)
    gt              the gold final answer (an option letter for arc-challenge, gpqa and mmlu_stem)
    reasoning       one model's solution: the text the critic critiques
    pred            the final answer that solution reached
    previous_score  [bool]: whether ``pred`` was graded right (the authors' grader, in their environment)
    model           the model that wrote the solution

Other fields (``gt_cot``, ``choices``, ``type``, ...) differ per task and are kept only where named here.
``REALCRITIC_DATA_DIR`` (or ``data_dir``) names a local checkout of the repository (or its ``data/mix_data``
folder); ``sample`` selects the small fixtures of ours shipped in the package; unset, each file is downloaded once
from the repository. A missing or mistyped field is one DataError naming the file, the line's item and the field.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.paths import cache_dir
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import remote
from critic_tasks.protocols.remote import field

REPO = "tangzhy/RealCritic"
REPO_URL = f"https://raw.githubusercontent.com/{REPO}/main"
DATA_DIR_ENV = "REALCRITIC_DATA_DIR"
SAMPLE_DIR = Path(__file__).parent / "sample_data"
TASKS = ("arc-challenge", "college_math", "gpqa", "gsm8k", "math", "minerva_math", "mmlu_stem", "olympiadbench")
# graded by the option letter (the authors' grader: a gold in A-E matches choice_answer_clean of the reply)
MULTIPLE_CHOICE = frozenset({"arc-challenge", "gpqa", "mmlu_stem"})
OPTION_LETTERS = ("A", "B", "C", "D", "E")
MIX_DATA = Path("data") / "mix_data"
DIMENSION = "realcritic"  # the data dimension of every document (one task kind); the task is the option ``subset``
# the other modes' dimensions (``stages``: solve the question; critique the critic's own solution)
DIRECT_DIMENSION, SELF_DIMENSION = "realcritic_direct", "realcritic_self"


def task_file(task: str) -> Path:
    """The task's file relative to the repository root."""
    return MIX_DATA / task / "test.jsonl"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local root to read from (``sample``: the bundled fixtures), or None for the repository's files."""
    return resolve_dir(data_dir, DATA_DIR_ENV, default="repo", named={"sample": SAMPLE_DIR})


def checkout_root(data_dir: str | os.PathLike | None = None, relpath: str = "utils.py") -> str | None:
    """The checkout the data setting names, for the authors' own files (``relpath``): the setting itself, or the
    checkout above the ``data/mix_data`` folder the loader also accepts (None: the setting names none; the cache or
    GitHub then)."""
    root = resolve_data_dir(data_dir)
    if root is None:
        return None
    if not (root / relpath).is_file() and root.name == "mix_data" and (root.parents[1] / relpath).is_file():
        return str(root.parents[1])
    return str(root)


def locate_task(task: str, data_dir: str | os.PathLike | None = None) -> Path:
    if task not in TASKS:
        raise ConfigError(f"realcritic task {task!r}: expected one of {', '.join(TASKS)}")
    relpath = task_file(task)
    root = resolve_data_dir(data_dir)
    if root is None:
        return _download(relpath)
    for candidate in (root / relpath, root / task / "test.jsonl"):
        if candidate.is_file():
            return candidate
    raise DataError(f"{root / relpath}: file not found (expected {relpath} under {root}, a checkout of {REPO}, "
                    f"or {task}/test.jsonl under its data/mix_data folder)")


ADVICE = f"set {DATA_DIR_ENV} to a local checkout of {REPO}, or to 'sample' for the bundled sample"


def _download(relpath: Path) -> Path:
    """The repository's file, downloaded once into our cache; offline (``HF_HUB_OFFLINE``, the switch every other
    loader of ours obeys) only from that cache."""
    from huggingface_hub import constants

    cached = cache_dir("realcritic", relpath.as_posix())
    if constants.HF_HUB_OFFLINE and not cached.is_file():
        raise DataError(f"HF_HUB_OFFLINE is set and {REPO}'s {relpath.as_posix()} is not in the local cache "
                        f"({cached}); {ADVICE}")
    try:
        return remote.fetch(f"{REPO_URL}/{relpath.as_posix()}", "realcritic", relpath.as_posix(), DATA_DIR_ENV)
    except DataError as err:  # fetch's own advice names no bundled sample
        raise DataError(f"{str(err).rsplit('; set ', 1)[0]}; {ADVICE}") from None


def check_published(timeout: float = 5.0) -> None:
    """Online, before a run: every task file is in our cache, or the repository answers one request within
    ``timeout`` seconds. One DataError naming the fix if not."""
    if all(cache_dir("realcritic", task_file(t).as_posix()).is_file() for t in TASKS):
        return
    url = f"{REPO_URL}/{task_file(TASKS[0]).as_posix()}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            pass
    except Exception as err:  # offline, 404, proxy: one message for all
        raise DataError(f"{url}: cannot be reached ({type(err).__name__}: {err}); {ADVICE}") from None


def to_doc(row: dict, task: str, where: str, line: int) -> dict:
    previous = field(row, "previous_score", where, (list,))
    if not previous or not isinstance(previous[0], bool):
        raise DataError(f"{where}: field 'previous_score' should be a list starting with a bool, got {previous!r}")
    gold = str(field(row, "gt", where, (str, int, float))).strip()
    if not gold:
        raise DataError(f"{where}: field 'gt' is empty")
    if task in MULTIPLE_CHOICE and gold not in OPTION_LETTERS:
        raise DataError(f"{where}: field 'gt' should be an option letter ({'/'.join(OPTION_LETTERS)}) for the "
                        f"multiple-choice task {task}, got {gold!r}")
    model = row.get("model")
    return {"task": task, "dimension": DIMENSION, "idx": field(row, "idx", where, (int,)), "line": line,
            "question": field(row, "question", where), "gold": gold, "solution": field(row, "reasoning", where),
            # the reference solution: the authors read math's gold from it (parse_ground_truth)
            "gold_solution": str(row.get("gt_cot") or ""),
            "solution_answer": str(field(row, "pred", where, (str, int, float))),
            # prior_correct: graded when scored, by the rule that grades the critic (scoring.shown_correct)
            "previous_score": previous[0], "prior_correct": None,
            "solution_model": model if isinstance(model, str) else "",
            "multiple_choice": task in MULTIPLE_CHOICE}


def load_task_docs(dimension: str = DIMENSION, data_dir: str | os.PathLike | None = None, subset: str | None = None,
                   **_ignored) -> list[dict]:
    """The documents of one RealCritic task, in file order: ``dimension`` "realcritic" with the ``subset`` option
    (one of TASKS), or the task's name as ``dimension``."""
    if dimension != DIMENSION:
        if subset not in (None, dimension):
            raise ConfigError(f"realcritic: dimension {dimension!r} and subset {subset!r} disagree")
        subset = dimension
    if subset is None:
        raise ConfigError(f"realcritic: no task given (the task option 'subset': {', '.join(TASKS)})")
    return load_task(subset, data_dir)


def load_task(task: str, data_dir: str | os.PathLike | None = None) -> list[dict]:
    """The documents of one RealCritic task (one of TASKS), in file order."""
    path = locate_task(task, data_dir)
    docs = [to_doc(row, task, where, n) for n, where, row in iter_jsonl(path)]
    if not docs:
        raise DataError(f"{path}: no items (a truncated copy?)")
    seen: dict[int, int] = {}
    for doc in docs:
        if doc["idx"] in seen:
            raise DataError(f"{path}:{doc['line']}: field 'idx' {doc['idx']} repeats line {seen[doc['idx']]}")
        seen[doc["idx"]] = doc["line"]
    return docs
