"""Runs chained before the requested one, in one ``critic-eval run``: a two-stage task's first stage (SAvg's
self-feedback, RealCritic's self-critique: the critic's own replies logged first) and RealCritic's rounds."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from critic_tasks.adapters.lm_eval.flags import flag_value, run_metadata, run_tasks, without_flags
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.settings import read_setting


@contextlib.contextmanager
def _chained_runs(argv: list[str], steps: list[tuple[list[str], Path | None, dict, Callable[[Path], dict]]]):
    """The argv of each earlier run, then of the requested run. ``steps``, in order: (its tasks, its folder (None: a
    temporary one, removed after), the --metadata it adds, folder -> the --metadata it hands every later run)."""
    temporary: list[Path] = []
    try:
        rest = without_flags(argv, {"--tasks": True, "-t": True, "--output_path": True, "-o": True, "--log_samples": False,
                               "-s": False})
        runs, handed = [], {}
        for tasks, folder, own, hands in steps:
            if folder is None:
                folder = Path(tempfile.mkdtemp(prefix="critic-stage-"))
                temporary.append(folder)
            metadata = {**handed, **own}
            runs.append([*rest, *(["--metadata", json.dumps(metadata)] if metadata else []), "--tasks", ",".join(tasks),
                         "--log_samples", "--output_path", str(folder)])
            handed.update(hands(folder))
        yield [*runs, [*argv, "--metadata", json.dumps(handed)]]
    finally:
        for folder in temporary:
            shutil.rmtree(folder, ignore_errors=True)


def _prior_given(stage, metadata: dict) -> bool:
    """Stage 1's samples are named: the stage's option in ``--metadata``, or its setting."""
    return metadata.get(stage.key) not in (None, "") or bool(stage.env and read_setting(stage.env))


def _rounds(argv: list[str], tasks) -> int:
    """``--metadata '{"rounds": N}'``: how many rounds to chain (1 without it); refused where no task has rounds."""
    from critic_tasks.registry import ROUNDS_KEY

    value = run_metadata(argv).get(ROUNDS_KEY)
    if value in (None, ""):
        return 1
    if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) < 1:
        raise ConfigError(f"--metadata {ROUNDS_KEY}={value!r}: expected a whole number of rounds, 1 or more")
    if not any(t.rounds for t in tasks):
        raise ConfigError(f"--metadata {ROUNDS_KEY}={value}: none of --tasks has rounds (RealCritic's critique tasks "
                          "do: critic_realcritic, critic_realcritic_self and their tasks)")
    return int(value)


def prior_runs(argv: list[str]):
    """Two-stage and multi-round tasks in one command; None when ``--tasks`` needs no earlier run.

    A task with a ``prior_stage`` whose samples are not named (its option in ``--metadata``, or its setting): its
    stage-1 tasks run first (SAvg: ``critic_self_feedback_<domain>``; RealCritic self-critique:
    ``critic_realcritic_direct_<task>``), samples logged into ``<output_path>/<option>/<time>/`` or a temporary
    folder, and the requested run gets the option pointing there. ``--metadata '{"rounds": N}'``: the tasks with
    ``rounds`` run N-1 times first (round k logged into ``<output_path>/rounds/<time>/round_<k>/``), each run and the
    requested one (round N) reading the previous round's samples (``previous_round``, ``round``). A context giving
    the argv of every run in order; the model is loaded once for each."""
    from critic_tasks.registry import PREVIOUS_ROUND_KEY, ROUND_KEY

    tasks = run_tasks(argv)
    metadata = run_metadata(argv)
    pending: dict = {}  # stage -> its stage-1 tasks, in --tasks order
    for t in tasks:
        if t.prior_stage is not None and not _prior_given(t.prior_stage, metadata):
            pending.setdefault(t.prior_stage, {}).update(dict.fromkeys(t.prior_stage.tasks(t)))
    rounds = _rounds(argv, tasks)
    if not pending and rounds == 1:
        return None
    output = flag_value(argv, "--output_path", "-o")
    output = str(Path(output).parent) if output and output.endswith(".json") else output  # a results file's folder
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
    steps = []
    for stage, stage_tasks in pending.items():
        folder = Path(output) / stage.key / stamp if output else None
        print(f"critic-eval: stage 1: {stage.about} ({', '.join(stage_tasks)}), into {folder or 'a temporary folder'}; "
              "then the requested tasks use it", file=sys.stderr)
        steps.append((list(stage_tasks), folder, {}, lambda f, key=stage.key: {key: str(f)}))
    if rounds > 1:
        chained = [t.name for t in tasks if t.rounds]
        earlier = "round 1" if rounds == 2 else f"rounds 1-{rounds - 1}"
        print(f"critic-eval: {rounds} rounds of {', '.join(chained)}: {earlier} into "
              f"{Path(output) / 'rounds' / stamp if output else 'a temporary folder'}, each critiquing the previous "
              "round's replies; the last is the requested run", file=sys.stderr)
        for k in range(1, rounds):
            folder = Path(output) / "rounds" / stamp / f"round_{k}" if output else None
            own = {ROUND_KEY: 1} if k == 1 else {}  # later rounds get theirs from the round before
            steps.append((chained, folder, own, lambda f, k=k: {PREVIOUS_ROUND_KEY: str(f), ROUND_KEY: k + 1}))
    return _chained_runs(argv, steps)


self_feedback_stage = prior_runs  # SAvg's name for it


def rounds_summary(runs: list[list[str]]) -> int:
    """After a multi-round run: each round's headline value per task, one line a round, read from the results files
    of its run (rounds 1..N-1: their folders; N: the requested run). Always 0."""
    from critic_tasks.registry import ROUND_KEY, TASKS

    lines = []
    for run in runs:
        round_no = run_metadata(run).get(ROUND_KEY)
        output = flag_value(run, "--output_path", "-o")
        if round_no in (None, "") or not output:
            continue
        found = sorted(Path(output).expanduser().glob("*/results_*.json"), key=lambda f: f.stat().st_mtime)
        if not found:
            continue
        try:
            results = json.loads(found[-1].read_text()).get("results", {})
        except (OSError, ValueError):
            continue
        values = []
        for name, entry in results.items():
            if name in TASKS and TASKS[name].rounds:
                key = TASKS[name].headline_keys()[0]
                value = entry.get(f"{key},none")
                values.append(f"{name} {key} {value:.1f}" if isinstance(value, (int, float)) else f"{name} {key} -")
        if values:  # the file itself: the output folder holds every round, which check and compare refuse
            lines.append(f"round {round_no}: " + ", ".join(values) + f" ({found[-1]})")
    if lines:
        print("\ncritic-eval: per round (each round's results file):\n  " + "\n  ".join(lines))
    return 0
