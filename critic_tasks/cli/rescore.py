"""``critic-eval rescore``: score saved generations again, without generating them again.

    critic-eval rescore OUTPUT_PATH [--output results.json]     # lm-eval --log_samples files, or a rescue file

For the tasks scored by parsing (feedback, comparison, meta-feedback) or in the sandbox (correction): the documents
and replies saved in lm-eval's samples files (``samples_<task>_<time>.jsonl``, also what a run whose scoring failed
late saved under ``critic-eval-rescue/``) are scored by the same functions as a live run (every sample of an item,
so pass@k too), with the executor of ``CRITIC_EXECUTOR`` / ``--executor``. Judge-scored tasks are
``critic-eval judge``'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from critic_tasks import registry
from critic_tasks.cli.judge import find_sample_files, read_all_samples
from critic_tasks.engine import kind_metrics, score
from critic_tasks.protocols.scorer import Context
from critic_tasks.reports.tables import format_table, scale_note


def read_critic_samples(path: Path) -> tuple[list[dict], list[list[str | None]]]:
    """``judge.read_all_samples``, each document checked to be one of our tasks' (it names its dimension)."""
    docs, generations = read_all_samples(path)
    for n, doc in enumerate(docs, 1):
        if not isinstance(doc, dict) or "dimension" not in doc:
            raise ValueError(f"{path}:{n}: the sample's doc is not a critic task document (no 'dimension')")
    return docs, generations


def score_samples(docs: list[dict], generations: list[list[str | None]], executor) -> tuple[str, dict]:
    """(dimension name, metrics) of one task's saved generations, as a live run computes them (parsed: the first
    reply of each; checked: every sample, a domain's programs at once)."""
    kind = registry.kind_for(docs[0]["dimension"], docs[0].get("fmt", "obj"))
    command = registry.SCORERS[kind.scorer].command
    if command != "rescore":
        raise ValueError(f"{kind.name}: judge-scored; re-score it with `critic-eval {command}`")
    return kind.name, kind_metrics(kind, score(kind, docs, generations, Context(executor=executor)))


def rescore_command(argv: list[str]) -> int:
    from critic_tasks.sandbox import get_executor

    parser = argparse.ArgumentParser(prog="critic-eval rescore", description=(
        "Score saved generations of the parsed and sandbox-checked tasks again (lm-eval --log_samples files, or the "
        "file a run whose scoring failed saved under critic-eval-rescue/)."))
    parser.add_argument("path", type=Path, help="lm-eval --output_path directory, or one samples_*.jsonl file")
    parser.add_argument("--executor", default=None, help="sandbox | subprocess | a plugin's (default: CRITIC_EXECUTOR)")
    parser.add_argument("--output", type=Path, help="write the results (lm-eval's results JSON shape) here")
    args = parser.parse_args(argv)
    if not args.path.exists():
        raise ValueError(f"{args.path}: no such file or directory")
    executor = None
    results, judged = {}, []
    for task, path in find_sample_files(args.path).items():
        docs, generations = read_critic_samples(path)
        if not docs:
            continue
        scorer = registry.SCORERS[registry.kind_for(docs[0]["dimension"], docs[0].get("fmt", "obj")).scorer]
        if scorer.command != "rescore":
            judged.append((task, scorer.command))
            continue
        if scorer.uses_executor and executor is None:

            executor = get_executor(args.executor)  # None: CRITIC_EXECUTOR's
        print(f"scoring {task}: {len(docs)} items from {path}", file=sys.stderr)
        results[task] = score_samples(docs, generations, executor)[1]
    for group in registry.GROUPS.values():
        values = [results[t][group.metric] for t in group.members if group.metric in results.get(t, {})]
        if len(values) == len(group.members):
            results[group.name] = {group.metric: sum(values) / len(values)}
    for command in ("judge", "revise"):
        names = [task for task, how in judged if how == command]
        if names:
            print(f"not re-scored here: {', '.join(names)} (use `critic-eval {command} {args.path}`)", file=sys.stderr)
    if not results:
        raise ValueError(f"{args.path}: no generations of parsed or sandbox-checked critic tasks in these samples")
    if args.output:
        args.output.write_text(json.dumps({"results": {t: {f"{k},none": v for k, v in m.items()}
                                                       for t, m in results.items()},
                                           "config": {"rescored_from": str(args.path)}}, indent=2))
    print(format_table({t: {f"{k},none": v for k, v in m.items()} for t, m in results.items()}))
    print(scale_note(results))  # CriticEval's leaderboard only beside CriticEval's tasks
    return 0
