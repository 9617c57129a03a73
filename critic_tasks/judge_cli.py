"""``critic-eval judge`` and ``critic-eval calibrate-judge``.

    critic-eval judge OUTPUT_PATH [--model gpt-4-1106-preview --base_url ...]   # score saved generations
    critic-eval calibrate-judge [--domains chat,qa]                          # judge vs humans on meta-feedback

``judge`` reads lm-eval's ``--log_samples`` files (``samples_<task>_<time>.jsonl``) of the subjective
tasks, judges every generation through the same cached, concurrent judge as an in-run evaluation, and
prints/writes the same metrics. Flags override the CRITIC_JUDGE_* environment variables.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from critic_tasks.judge_prompts import feedback_judge_prompt

SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+?)_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
PAPER_GPT4_META_SPEARMAN = 62.90  # CriticEval: GPT-4's meta-feedback Spearman with humans, x100
SUB_TASKS = tuple(f"critic_{d}_sub" for d in ("feedback", "comparison", "correction"))  # critic_sub's members


def _judge_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("judge (defaults: CRITIC_JUDGE_* environment variables)")
    group.add_argument("--backend", help="openai | vllm | hf, or a plugin's name")
    group.add_argument("--model")
    group.add_argument("--base_url", help="OpenAI-style base, e.g. http://127.0.0.1:8000/v1")
    group.add_argument("--api_key", help="prefer CRITIC_JUDGE_API_KEY: a flag is visible in the process list")
    group.add_argument("--concurrency", type=int)
    group.add_argument("--cache", help="cache file; 'off' disables")
    group.add_argument("--max_tokens", type=int)


def _settings(args):
    from critic_tasks.plugins.judge import JudgeSettings

    overrides = {k: getattr(args, k) for k in ("backend", "model", "base_url", "api_key", "concurrency", "max_tokens")
                 if getattr(args, k) is not None}
    if args.cache is not None:
        overrides["cache"] = None if args.cache.lower() in ("off", "none", "0") else args.cache
    settings = JudgeSettings.from_env(**overrides)
    if not settings.model and settings.backend in ("openai", "vllm", "hf"):
        raise ValueError("no judge model: pass --model or set CRITIC_JUDGE_MODEL")
    return settings


def find_sample_files(path: Path) -> dict[str, Path]:
    """Task name -> newest samples file under ``path`` (a file or an lm-eval output directory)."""
    files = [path] if path.is_file() else sorted(path.rglob("samples_*.jsonl"))
    newest: dict[str, tuple[str, Path]] = {}
    for f in files:
        m = SAMPLES_FILE.match(f.name)
        if m is None:
            raise ValueError(f"{f}: not an lm-eval samples file (samples_<task>_<time>.jsonl)")
        if m["task"] not in newest or m["time"] > newest[m["task"]][0]:
            newest[m["task"]] = (m["time"], f)
    if not newest:
        raise ValueError(f"{path}: no lm-eval samples files found (run lm-eval with --log_samples --output_path)")
    return {task: f for task, (_, f) in sorted(newest.items())}


def read_samples(path: Path) -> tuple[list[dict], list[str | None]]:
    docs, predictions = [], []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                sample = json.loads(line)
                doc, resps = sample["doc"], sample["resps"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{n}: not an lm-eval sample line ({err})") from None
            if doc.get("fmt") != "sub":
                continue
            docs.append(doc)
            predictions.append(resps[0][0] if resps and resps[0] else None)
    return docs, predictions


def judge_command(argv: list[str]) -> int:
    from critic_tasks.subjective import judge_docs, judge_metrics

    parser = argparse.ArgumentParser(prog="critic-eval judge", description="Judge saved subjective generations.")
    parser.add_argument("path", type=Path, help="lm-eval --output_path directory, or one samples_*.jsonl file")
    parser.add_argument("--output", type=Path, help="write the results JSON here")
    parser.add_argument("--no_progress", action="store_true")
    _judge_flags(parser)
    args = parser.parse_args(argv)
    settings = _settings(args)

    results, failed = {}, {}
    for task, path in find_sample_files(args.path).items():
        docs, predictions = read_samples(path)
        if not docs:
            continue
        print(f"judging {task}: {len(docs)} generations from {path}", file=sys.stderr)
        records = judge_docs(docs, predictions, settings, progress=not args.no_progress)
        results[task] = judge_metrics(records)
        failed[task] = [{"item": r["item"], "error": r["error"]} for r in records if r["score"] is None]
    if not results:
        raise ValueError(f"{args.path}: no subjective (critic_*_sub) generations in these samples")
    overall = [m["judge_score"] for t, m in results.items() if t in SUB_TASKS and "judge_score" in m]
    if len(overall) == len(SUB_TASKS):
        results["critic_sub"] = {"judge_score": sum(overall) / len(overall)}
    report = {"results": results, "failed": failed, "judge": settings.identity()}
    if args.output:
        args.output.write_text(json.dumps(report, indent=2))
    print(format_judge_table(results))
    return 0



def format_judge_table(results: dict) -> str:
    rows = [("task", "judge_score", "judge_parse_rate", "failed")]
    for task, m in results.items():
        score = m.get("judge_score")
        rows.append((task, "n/a" if score is None else f"{score:.2f}",
                     f"{m['judge_parse_rate']:.2f}" if "judge_parse_rate" in m else "",
                     f"{m['judge_failed']:.0f}" if "judge_failed" in m else ""))
    from critic_tasks.cli import render_rows

    return render_rows(rows)


def calibrate_command(argv: list[str]) -> int:
    from critic_tasks import data
    from critic_tasks.judging import judge_prompts
    from critic_tasks.metrics.spearman import spearman_x100

    parser = argparse.ArgumentParser(prog="critic-eval calibrate-judge", description=(
        "Judge the meta-feedback critiques that have human scores and report the judge's Spearman with humans "
        f"(the paper's GPT-4: {PAPER_GPT4_META_SPEARMAN})."))
    parser.add_argument("--domains", default="all")
    parser.add_argument("--data_dir", default=None, help="local dataset copy, or 'sample' (default: CRITICBENCH_DATA_DIR / Hub)")
    parser.add_argument("--limit", type=int, default=None, help="first N items (a quick look)")
    _judge_flags(parser)
    args = parser.parse_args(argv)
    settings = _settings(args)
    docs = data.load_meta("dev", args.domains, args.data_dir)[: args.limit]
    prompts = [feedback_judge_prompt({**d, "feedback": d["ground_truth_feedback"]}, d["evaluated_feedback"])
               for d in docs]
    results = judge_prompts(prompts, settings)
    scores = [r.score if r.score is not None else 5.5 for r in results]  # failures: the 1-10 midpoint, counted
    rho, warning = spearman_x100(scores, [d["meta_feedback_score"] for d in docs])
    parsed = sum(r.score is not None for r in results)
    print(f"judge {settings.model} ({settings.backend}): Spearman with human meta-feedback scores = {rho:.2f} "
          f"over {len(docs)} critiques (parse rate {100 * parsed / len(docs):.1f}%)"
          + (f" [{warning}]" if warning else ""))
    print(f"for reference, the paper's GPT-4 judge: {PAPER_GPT4_META_SPEARMAN:.2f}")
    return 0
