"""Every use of lm-eval's private API, in one place, for the one lm-eval release it was written against.

lm-eval's public API (``TaskManager``, ``simple_evaluate``, its YAML, ``cli_evaluate``) does all a run needs; some
savings need more, and each is here but the one the loader makes itself (below):

* **The task index.** A ``TaskManager`` indexes lm-eval's own ~14,700 tasks in every run (~9 s on 2 cores) that a
  run of our tasks never reads. ``OursFirstTaskManager`` indexes ours first and lm-eval's only when a name, a glob or
  a listing needs them, through ``TaskManager._entry`` / ``._index``; lm-eval's CLI builds its ``TaskManager`` from
  the name ``lm_eval.tasks.TaskManager``, which ``cli`` points at ours for the run.
* **The CLI's argv.** ``cli_evaluate`` reads ``sys.argv`` only; ``cli`` sets it for the run, then restores it.
* **The CLI's parsers.** ``cli_parsers`` reads each command's argparse parser from ``_cli.harness.HarnessCLI`` (its
  ``_subparsers``), so a flag lm-eval does not know is named before the run (``flags.check_flag_names``).
* **Distinct seeds for repeats.** lm-eval's API models send the k repeats of a sampled request with one seed, so a
  server honouring seeds answers once, k times (``distinct_seeds``); ``install_distinct_seeds`` wraps
  ``TemplateAPI.generate_until`` and reads the model's ``_seed``.
* **Groups over undefined values.** A metric of ours is None (null in the results) where it is undefined (ProcessBench's
  F1 of a subset with one class only, under ``--limit``); lm-eval's group mean (``api.metrics.
  aggregate_subtask_metrics``) multiplies it and the run dies after its generations. ``install_none_safe_group_mean``
  wraps it: members without a value are left out of the mean (with one warning), a group of none is None.
* **The run's model arguments and tasks, seen from a loader**: ``task_functions.TaskFunctions.evaluate_call``
  reads them from the ``simple_evaluate`` frame building the tasks; it lives with the loader that reads it.
* **Whole pairs under --limit.** lm-eval cuts each task's document list at ``--limit`` (``evaluator.
  get_sample_size``, then the first N documents); a task asking each pair in both orders lists a pair's orders one
  after the other, so an odd count cut a pair (JudgeBench ``--limit 1``: one order, no inconsistency).
  ``whole_pairs`` wraps ``get_sample_size`` for ``critic-eval``'s runs: for those tasks N counts pairs
  (``whole_pair_limit``).
* **A second turn.** lm-eval asks each request once; a protocol that asks again (JudgeBench's Arena-Hard judge)
  needs the model between the generations and the scoring. ``around_evaluate`` wraps ``lm_eval.evaluator.evaluate``
  (``simple_evaluate`` calls it by its module name) for the run, so ``turns.second_turns`` holds the model while
  it runs; ``system_prompt`` joins ``--system_instruction`` and a document's system message as lm-eval's
  ``fewshot_context`` does (``api.utils.maybe_delimit``, the task's default fewshot delimiter).
* **The demo's progress.** ``generation_progress`` counts the replies lm-eval's ``hf`` model generates (each goes
  through its ``cache_hook.add_partial``, the request cache's writer) against the requests its ``generate_until``
  was handed (those the cache did not answer), so the demo estimates its time left from its own rate.
* **Quiet output.** ``quiet`` replaces ``lm_eval.evaluator.get_git_commit_hash`` (git's "fatal: not a git
  repository" on the terminal outside a checkout) and labels ``lm_eval.api.task.tqdm``'s bar for the run.

``tests/test_lm_eval_private.py`` fails on any other lm-eval than ``SUPPORTED`` (pinned in pyproject.toml): on an
upgrade, check each hook above against the new source, then move the pin and the test together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import sys
from pathlib import Path

SUPPORTED = "0.4.13"
GLOB_CHARS = set("*?[")


@functools.cache
def ours_first_task_manager():
    """lm-eval's ``TaskManager`` indexing our tasks (and any ``include_path``) first, and lm-eval's own only when a
    name, a glob or a listing needs them. Lookups give what a full ``TaskManager`` gives: include paths override
    lm-eval's own tasks there too, so a name found among ours is the entry the full index holds. Made on first use:
    importing this package does not import lm-eval."""
    from lm_eval import utils
    from lm_eval.tasks import TaskManager

    from critic_tasks.adapters.lm_eval import own_path, tasks_dir

    class OursFirstTaskManager(TaskManager):
        def __init__(self, include_path=None, include_defaults: bool = True, **kwargs):
            extra = [str(p) for p in ([include_path] if isinstance(include_path, (str, Path)) else include_path or [])]
            full = list(dict.fromkeys(own_path() + extra))  # lm-eval's CLI passes our folder as include_path too
            self._full_args = dict(include_path=full or None, include_defaults=include_defaults, **kwargs)
            self._complete = not include_defaults
            super().__init__(include_path=list(dict.fromkeys([tasks_dir(), *extra])), include_defaults=False, **kwargs)

        def _index_everything(self) -> None:
            if not self._complete:
                self._complete = True
                TaskManager.__init__(self, **self._full_args)

        def _entry(self, name: str):
            entry = super()._entry(name)
            if entry is None and not self._complete:
                self._index_everything()
                entry = super()._entry(name)
            return entry

        def match_tasks(self, task_list: list[str]) -> list[str]:
            if not all(name in self._index and not GLOB_CHARS.intersection(name) for name in task_list):
                self._index_everything()
            return utils.pattern_match(task_list, self._all_tasks)

        def list_all_tasks(self, *args, **kwargs) -> str:
            self._index_everything()
            return super().list_all_tasks(*args, **kwargs)

        @property
        def all_tasks(self) -> list[str]:
            self._index_everything()
            return self._all_tasks

        @property
        def all_groups(self) -> list[str]:
            self._index_everything()
            return self._all_groups

        @property
        def all_subtasks(self) -> list[str]:
            self._index_everything()
            return self._all_subtasks

        @property
        def all_tags(self) -> list[str]:
            self._index_everything()
            return self._all_tags

    return OursFirstTaskManager


def whole_pair_limit(task_name: str | None, docs, limit: float) -> tuple[int, int] | None:
    """``--limit`` for a task asking each pair in both orders (``TaskKind.pairwise``, or documents recording
    ``orders: both``: its loader lists a pair's forward document, then its reverse): (the documents covering its
    first pairs, how many pairs), counting pairs, not documents (a fraction below 1: of its pairs, rounded up, as
    lm-eval rounds documents); None for any other task, which keeps lm-eval's count."""
    from critic_tasks import registry  # at call time: the registry imports every protocol

    task = registry.TASKS.get(task_name or "")
    # RewardBench asks a pair once by default, so its kind is not pairwise; its documents say when a run asks both
    # orders (``orders: both``), each pair's forward document followed by its reverse, as a pairwise kind lists them
    both_orders = bool(docs) and docs[0].get("orders") == "both"
    if task is None or not (task.kind_spec.pairwise or both_orders):
        return None
    starts = [i for i, doc in enumerate(docs) if doc.get("order") != "reverse"]  # where each pair begins
    pairs = math.ceil(len(starts) * limit) if limit < 1 else int(limit)
    return (starts[pairs] if pairs < len(starts) else len(docs)), min(pairs, len(starts))


@contextlib.contextmanager
def whole_pairs():
    """For the run inside: ``--limit N`` on a task asking each pair in both orders takes its first N pairs (a
    fraction: of its pairs), both orders of each (``whole_pair_limit``; the task's results metadata says so).
    ``lm_eval.evaluator`` reads ``get_sample_size`` as a module global when it sizes each task."""
    import lm_eval.evaluator

    original = lm_eval.evaluator.get_sample_size

    def sized(task, limit):
        count = original(task, limit)
        if limit is None:
            return count
        pairs = whole_pair_limit(getattr(task.config, "task", None), task.eval_docs, limit)
        if pairs is None:
            return count
        count, asked = pairs
        if isinstance(task.config.metadata, dict):  # written into the results' configs: what --limit meant here
            task.config.metadata["limit_pairs"] = asked
        return count

    lm_eval.evaluator.get_sample_size = sized
    try:
        yield
    finally:
        lm_eval.evaluator.get_sample_size = original


@contextlib.contextmanager
def generation_progress(report):
    """For the run inside: ``report(done, total, seconds, share, state)`` after each reply lm-eval's ``hf`` model
    generates (``total``: the requests its ``generate_until`` was handed; ``seconds`` since it started; ``share``: the
    share of the work done, each request weighing its prompt's characters plus a reply's (on a CPU the prompts' reading
    is most of a small model's time, and lm-eval runs the longest first); ``state``: a list kept for the caller)."""
    import time

    from lm_eval.api.model import CacheHook
    from lm_eval.models import huggingface
    from lm_eval.models.huggingface import HFLM

    state: dict = {"done": 0, "total": 0, "start": None, "weight": 0.0, "work": 1.0}
    kept: list = []
    generate, add_partial, bar = HFLM.generate_until, CacheHook.add_partial, huggingface.tqdm

    def counting_bar(*args, **kwargs):
        # lm-eval's generation bar keeps its count and elapsed time, not its own estimate: from its first batch
        # (8 replies at once) it read "1/40 [03:22<2:11:18, 202.01s/it]" beside the demo's "about 9 min 15 s left"
        if str(kwargs.get("desc", "")).startswith("Running generate_until"):
            kwargs.setdefault("bar_format", "{desc}: {n_fmt}/{total_fmt} replies [{elapsed}]")
        return bar(*args, **kwargs)

    def weight(context) -> float:
        return len(context) + REPLY_WEIGHT if isinstance(context, str) else REPLY_WEIGHT

    def counted_generate(self, requests, *args, **kwargs):
        work = sum(weight(getattr(r, "args", ("",))[0]) for r in requests) or 1.0
        state.update(done=0, total=len(requests), start=time.monotonic(), weight=0.0, work=work)
        return generate(self, requests, *args, **kwargs)

    def counted_add_partial(self, attr, req, res):
        add_partial(self, attr, req, res)
        if attr == "generate_until" and state["start"] is not None:
            state["done"] += 1
            state["weight"] += weight(req[0] if isinstance(req, tuple) and req else "")
            report(state["done"], state["total"], time.monotonic() - state["start"],
                   min(1.0, state["weight"] / state["work"]), kept)

    HFLM.generate_until, CacheHook.add_partial, huggingface.tqdm = counted_generate, counted_add_partial, counting_bar
    try:
        yield
    finally:
        HFLM.generate_until, CacheHook.add_partial, huggingface.tqdm = generate, add_partial, bar


# a reply's weight against its prompt's characters in generation_progress: the demo's 32 tokens, ~4 characters each
REPLY_WEIGHT = 128.0


def cli_parsers() -> dict:
    """lm-eval's CLI commands (run, ls, validate) -> the argparse parser its ``lm-eval`` reads each one's flags with;
    new parsers each call (building them imports no backend)."""
    from lm_eval._cli.harness import HarnessCLI

    return dict(HarnessCLI()._subparsers.choices)


def cli(argv: list[str]) -> None:
    """lm-eval's own CLI on ``argv`` (``["run", "--tasks", ...]``), with ``OursFirstTaskManager``; ``sys.argv`` and
    ``lm_eval.tasks.TaskManager`` are restored after. Raises what the CLI raises (``SystemExit`` included)."""
    import lm_eval.__main__
    import lm_eval.tasks

    saved = sys.argv, lm_eval.tasks.TaskManager, lm_eval.__main__.setup_logging
    sys.argv = ["lm_eval", *argv]
    lm_eval.tasks.TaskManager = ours_first_task_manager()
    if not any(a in ("--verbosity", "-v") or a.startswith("--verbosity=") for a in argv):
        # lm-eval's ~27 INFO lines a run (seeds, paths, each task's prompt building) buried the lines that matter;
        # its warnings stay, and LMEVAL_LOG_LEVEL=INFO (read by lm-eval's setup_logging) or --verbosity brings them back
        lm_eval.__main__.setup_logging = functools.partial(saved[2], logging.WARNING)
    try:
        with quiet(), whole_pairs():
            lm_eval.__main__.cli_evaluate()
    finally:
        sys.argv, lm_eval.tasks.TaskManager, lm_eval.__main__.setup_logging = saved


def parse_metadata(occurrences: list[list[str]]) -> dict:
    """``--metadata`` as lm-eval's CLI reads it (``_cli.utils.MergeDictAction``, one call per occurrence of the flag
    with the words after it): a JSON object in the first word, else every word ``key=value`` (values read by
    ``ast.literal_eval`` where they parse), later occurrences overriding earlier keys. Where lm-eval would stop
    (malformed JSON, a JSON value that is no object, a word without ``=``): ValueError with the reason."""
    from lm_eval._cli.utils import key_val_to_dict

    merged: dict = {}
    for words in occurrences:
        if not words:
            raise ValueError("expected a JSON object or key=value words after it")
        try:
            parsed = json.loads(words[0])
        except ValueError as err:
            if "{" in words[0]:
                raise ValueError(f"{words[0]}: not valid JSON ({err.msg} at character {err.pos + 1}); write it with double quotes, "
                                 'e.g. --metadata \'{"data_dir": "sample"}\'') from None
            parsed = None
        if isinstance(parsed, dict):
            merged.update(parsed)
            continue
        for word in words:
            try:
                merged.update(key_val_to_dict(word))
            except ValueError:
                raise ValueError(f"{word}: expected a JSON object ({{\"key\": value}}) or key=value words"
                                 + (f", not a JSON {type(parsed).__name__}" if parsed is not None else "")) from None
    return merged


def _sampled(gen_kwargs: dict) -> bool:
    return bool(gen_kwargs.get("do_sample")) or float(gen_kwargs.get("temperature") or 0) > 0


def distinct_seeds(requests: list, base_seed: int) -> list:
    """``requests`` with the j-th repeat of each sampled request (``do_sample`` or a temperature above 0; the same
    Instance, or the same context and arguments) asking with seed ``base_seed + j``; repeat 0 keeps the model's seed
    (a greedy run and the first sample are asked as before), a request naming its own seed is left alone; everything
    else unchanged, in the same order. The in-process models need nothing: lm-eval's HF model samples each copy in
    turn from torch's running generator, its vLLM model seeds the engine once."""
    seen: dict[str, int] = {}
    out = []
    for req in requests:
        context, gen_kwargs, *rest = req.args
        if not isinstance(gen_kwargs, dict) or not _sampled(gen_kwargs) or "seed" in gen_kwargs:
            out.append(req)
            continue
        key = repr((context, sorted(gen_kwargs.items(), key=str)))
        j = seen[key] = seen.get(key, -1) + 1
        if j == 0:
            out.append(req)
            continue
        out.append(dataclasses.replace(req, arguments=(context, {**gen_kwargs, "seed": base_seed + j}, *rest)))
    return out


def install_distinct_seeds() -> None:
    """Wrap lm-eval's API model base class once (idempotent): repeats of a sampled request get distinct seeds (the
    API models put a generation argument named ``seed`` over their own in the payload)."""
    try:
        from lm_eval.models.api_models import TemplateAPI
    except ImportError:  # an lm-eval without API models: nothing to wrap
        return
    if getattr(TemplateAPI.generate_until, "_critic_distinct_seeds", False):
        return
    original = TemplateAPI.generate_until

    def generate_until(self, requests, disable_tqdm: bool = False):
        return original(self, distinct_seeds(list(requests), int(getattr(self, "_seed", 1234))), disable_tqdm)

    generate_until._critic_distinct_seeds = True
    TemplateAPI.generate_until = generate_until


def none_safe_mean(original):
    """``original`` (lm-eval's group mean over members' values and sizes) over the members with a value."""

    def aggregate_subtask_metrics(metrics, sizes, weight_by_size=True):
        kept = [(m, n) for m, n in zip(metrics, sizes) if m is not None]
        if len(kept) < len(metrics):
            logging.getLogger("critic_tasks").warning(
                "critic_tasks: a group's mean leaves out %d of its %d members, whose value is undefined (null in "
                "the results; e.g. an F1 on items of one class only, as --limit can give)",
                len(metrics) - len(kept), len(metrics))
        if not kept:
            return None
        return original([m for m, _ in kept], [n for _, n in kept], weight_by_size)

    aggregate_subtask_metrics._critic_none_safe = True
    return aggregate_subtask_metrics


def install_none_safe_group_mean() -> None:
    """Wrap lm-eval's group mean once (idempotent; ``group.py`` imports it from ``api.metrics`` at each call)."""
    import lm_eval.api.metrics as metrics

    if not getattr(metrics.aggregate_subtask_metrics, "_critic_none_safe", False):
        metrics.aggregate_subtask_metrics = none_safe_mean(metrics.aggregate_subtask_metrics)


def _quiet_git_commit_hash() -> str | None:
    """lm-eval's ``get_git_commit_hash`` with git's stderr kept off the terminal."""
    import subprocess

    from lm_eval.loggers.utils import get_commit_from_path

    try:
        done = subprocess.run(["git", "describe", "--always"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        done = None
    if done is not None and done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    return get_commit_from_path(os.getcwd())


@contextlib.contextmanager
def quiet():
    """For the run: no "fatal: not a git repository" outside a checkout, and a label on the bar of each task's
    prompt building, cleared when done (lm-eval's has none: the demo showed four bare bars before the generation's)."""
    import lm_eval.api.task
    import lm_eval.evaluator
    from tqdm import tqdm

    saved = lm_eval.evaluator.get_git_commit_hash, lm_eval.api.task.tqdm
    lm_eval.evaluator.get_git_commit_hash = _quiet_git_commit_hash
    lm_eval.api.task.tqdm = functools.partial(tqdm, desc="building prompts", leave=False)
    try:
        yield
    finally:
        lm_eval.evaluator.get_git_commit_hash, lm_eval.api.task.tqdm = saved


@contextlib.contextmanager
def around_evaluate(hold):
    """While the block runs, every ``lm_eval.evaluator.evaluate(lm, ...)`` runs inside ``hold(lm, its keyword
    arguments)`` (a context manager); restored after."""
    import lm_eval.evaluator

    original = lm_eval.evaluator.evaluate

    @functools.wraps(original)
    def evaluate(*args, **kwargs):
        lm = kwargs["lm"] if "lm" in kwargs else args[0]
        with hold(lm, kwargs):
            return original(*args, **kwargs)

    lm_eval.evaluator.evaluate = evaluate
    try:
        yield
    finally:
        lm_eval.evaluator.evaluate = original


FEWSHOT_DELIMITER = "\n\n"  # lm-eval's TaskConfig default, which our generated tasks keep


def system_prompt(system_instruction: str | None, description: str) -> str:
    """The system message lm-eval sends for a document: ``--system_instruction`` and the task's description joined
    as ``ConfigurableTask.fewshot_context`` joins them."""
    from lm_eval.api.utils import maybe_delimit

    return maybe_delimit(system_instruction, description, FEWSHOT_DELIMITER)
