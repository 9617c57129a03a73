"""``critic-eval judge`` and ``critic-eval calibrate-judge``.

    critic-eval judge OUTPUT_PATH [--model gpt-4-1106-preview --base_url ...]   # score saved generations
    critic-eval judge OUTPUT_PATH --canary 20                                # re-ask 20 cached prompts: drift?
    critic-eval calibrate-judge [--domains chat,qa]                          # judge vs humans on meta-feedback

``judge`` reads lm-eval's ``--log_samples`` files (``samples_<task>_<time>.jsonl``) of the subjective
tasks, judges every generation through the same cached, concurrent judge as an in-run evaluation, and
prints/writes the same metrics, with each task's judge fingerprint (``llm.canary.fingerprint``). ``--canary N``
judges nothing new: it re-asks N of the run's cached judge prompts without the cache and says how many grades
changed (``llm.canary``). Flags override the CRITIC_JUDGE_* environment variables.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.paths import is_off
from critic_tasks.protocols.criticbench.judge_prompts import feedback_judge_prompt
from critic_tasks.reports.tables import format_judge_table

SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+?)_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
PAPER_GPT4_META_SPEARMAN = 67.23  # CriticEval Table 12: GPT-4 as a meta-feedback critic, dev split, x100
JUDGED_GROUP = registry.GROUPS["critic_sub"]


def _judge_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("judge (defaults: CRITIC_JUDGE_* environment variables)")
    group.add_argument("--backend", help="openai | vllm | hf, or a plugin's name")
    group.add_argument("--model")
    group.add_argument("--base_url", help="OpenAI-style base, e.g. http://127.0.0.1:8000/v1")
    group.add_argument("--api_key", help="prefer CRITIC_JUDGE_API_KEY: a flag is visible in the process list")
    group.add_argument("--concurrency", type=int)
    group.add_argument("--cache", help="cache file; 'off' disables")
    group.add_argument("--max_tokens", type=int)


def judge_overrides(args) -> dict:
    """The judge settings the ``_judge_flags`` flags set (the rest come from CRITIC_JUDGE_*)."""
    overrides = {k: getattr(args, k) for k in ("backend", "model", "base_url", "api_key", "concurrency", "max_tokens")
                 if getattr(args, k) is not None}
    if args.model is not None:
        overrides["model_from"] = "--model"  # an error line about the model names the flag it was given by
    if args.cache is not None:
        overrides["cache"] = None if is_off(args.cache) else args.cache
    return overrides


def saved_samples_parser(prog: str, description: str, failures: str) -> argparse.ArgumentParser:
    """The arguments of a command that scores saved lm-eval samples (``judge``, ``revise``): where they are, where
    the results go, and the judge flags; ``failures``: what ``--allow_failures`` accepts."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("path", type=Path, help="lm-eval --output_path directory, or one samples_*.jsonl file")
    parser.add_argument("--output", type=Path, help="write the results JSON here")
    parser.add_argument("--no_progress", action="store_true")
    parser.add_argument("--allow_failures", action="store_true", help=f"exit 0 even when {failures}")
    _judge_flags(parser)
    return parser


def _settings(args, ask_endpoint: bool = True):
    from critic_tasks.llm.backends import check_local_model
    from critic_tasks.llm.backends.openai_compatible import check_endpoints
    from critic_tasks.protocols.criticbench.judge import judge_settings

    settings = judge_settings(**judge_overrides(args))
    if not settings.model:
        raise ConfigError("no judge model: pass --model or set CRITIC_JUDGE_MODEL")
    check_local_model(settings)
    if ask_endpoint:
        check_endpoints(settings)  # a server that is down: one line now, not after every call's retries
    return settings


def find_sample_files(path: Path) -> dict[str, Path]:
    """Task name -> newest samples file under ``path`` (a file or an lm-eval output directory)."""
    if not path.exists():  # a mistyped path is not a run without --log_samples: say which it is
        raise ValueError(f"{path}: no such file or directory")
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


def read_all_samples(path: Path) -> tuple[list[dict], list[list[str | None]]]:
    """The documents and every generation of each (lm-eval keeps one list per sample), from one samples file."""
    docs, generations = [], []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                sample = json.loads(line)
                doc, resps = sample["doc"], sample["resps"]
                # one request per document; a repeated task (pass@k, self-consistency) keeps its k replies in it
                texts = [t for r in resps for t in (r or [None] if isinstance(r, list) else [r])] if resps else [None]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{n}: not an lm-eval sample line ({err})") from None
            # a reply is text (None: no reply); a string's characters or a number would be scored as replies
            if not isinstance(resps, (list, type(None))) or not all(t is None or isinstance(t, str) for t in texts):
                raise ValueError(f"{path}:{n}: 'resps' should hold the model's replies as text, got "
                                 f"{json.dumps(resps)[:80]}")
            docs.append(doc)
            generations.append(texts)
    return docs, generations


def read_samples(path: Path) -> tuple[list[dict], list[str | None]]:
    """The documents and first generations of one samples file (of a judge-scored task)."""
    docs, generations = read_all_samples(path)
    return docs, [texts[0] for texts in generations]


def judge_command(argv: list[str]) -> int:
    from critic_tasks.engine import kind_metrics, score
    from critic_tasks.llm.canary import fingerprint
    from critic_tasks.protocols.criticbench.judge import judge_identity
    from critic_tasks.protocols.scorer import Context

    parser = saved_samples_parser("critic-eval judge", "Judge saved subjective generations.",
                                  "some items could not be judged (failed calls, replies without a score)")
    parser.add_argument("--canary", type=int, metavar="N",
                        help="judge nothing new: re-ask N of the run's cached judge prompts (the first N by cache "
                             "key), bypassing the cache, and report how many grades changed")
    args = parser.parse_args(argv)
    settings = _settings(args, ask_endpoint=False)
    files = find_sample_files(args.path)  # a wrong folder is said before the judge is asked
    if args.canary is not None and args.canary < 1:
        raise ConfigError(f"--canary {args.canary}: expected a number of cached judge prompts >= 1")
    from critic_tasks.llm.backends.openai_compatible import check_endpoints

    check_endpoints(settings)
    if args.canary is not None:
        return _canary(args, settings, files)

    results, failed, n_items, fingerprints = {}, {}, 0, {}
    for task, path in files.items():
        scorer = registry.SCORERS[registry.TASKS[task].scorer] if task in registry.TASKS else None
        if scorer is None or not scorer.judged:
            continue
        docs, predictions = read_samples(path)
        n_items += len(docs)
        if not docs:
            continue
        print(f"judging {task}: {len(docs)} generations from {path}", file=sys.stderr)
        kind = registry.TASKS[task].kind_spec  # MetaCritique's judge: AIU extraction, precision and recall
        records = score(kind, docs, [[p] for p in predictions], Context(judge=settings, progress=not args.no_progress))
        results[task] = kind_metrics(kind, records)  # the registry's keys and intervals, as a live run's
        failed[task] = [{"item": r.item, "error": r.error} for r in records if scorer.failed(r)]
        fingerprints[task] = fingerprint(scorer.identity(settings), [r.judge_served for r in records])
    if not results:
        raise ValueError(f"{args.path}: no subjective (critic_*_sub) generations in these samples")
    members = JUDGED_GROUP.members
    overall = [results[t][JUDGED_GROUP.metric] for t in members if JUDGED_GROUP.metric in results.get(t, {})]
    if len(overall) == len(members):
        results[JUDGED_GROUP.name] = {JUDGED_GROUP.metric: sum(overall) / len(overall)}
    report = {"results": results, "failed": failed, "judge": judge_identity(settings), "fingerprint": fingerprints}
    if args.output:
        args.output.write_text(json.dumps(report, indent=2))
    print(format_judge_table(results))
    for task, m in results.items():  # MetaCritique reports P/R/F1, not a 1-10 grade
        if "f1" in m:
            print(f"{task}: precision {m['precision']:.2f}  recall {m['recall']:.2f}  f1 {m['f1']:.2f} (critique level); "
                  f"f1_micro {m['f1_micro']:.2f} (AIU level)")
    n_failed = sum(map(len, failed.values()))
    if n_failed and not args.allow_failures:
        print(f"critic-eval judge: {n_failed} of {n_items} items could not be judged (listed in the log"
              + (", and under 'failed' in --output" if args.output else "") + "); rerunning retries failed calls "
              "(a reply without a score is cached and stays so), or pass --allow_failures", file=sys.stderr)
        return 1
    return 0


def _canary(args, settings, files: dict[str, Path]) -> int:
    """``--canary N``: which of N cached grades of the run the judge now gives differently (exit 0 either way)."""
    from critic_tasks.llm.canary import canary
    from critic_tasks.protocols.criticbench import judge as cb_judge
    from critic_tasks.protocols.metacritique import judge as mc_judge

    probe_builders = {"judge": cb_judge.canary_probes, "aiu_judge": mc_judge.canary_probes}
    probes = []
    for task, path in files.items():
        scorer = registry.SCORERS[registry.TASKS[task].scorer] if task in registry.TASKS else None
        if scorer is None or scorer.name not in probe_builders:
            continue
        docs, predictions = read_samples(path)
        probes += probe_builders[scorer.name](task, docs, predictions)
    if not probes:
        raise ValueError(f"{args.path}: no subjective (critic_*_sub) generations in these samples")
    report = canary(probes, settings, args.canary, progress=not args.no_progress)
    unanswered = f"; {len(report.failed)} not answered" if report.failed else ""
    print(f"canary: {len(report.changed)} of {report.compared} grades changed (judge {settings.model!r}, "
          f"{report.asked} cached prompts re-asked without the cache{unanswered})")
    for change in report.changed:
        served = ""
        if change.served_before != change.served_after:  # the server names another model or build: say so
            served = f" (served by {change.served_before or 'unreported'}, now {change.served_after or 'unreported'})"
        print(f"  {change.label}: {change.before} -> {change.after}{served}")
    for label, error in report.failed:  # no fresh reply: neither changed nor kept, and said
        print(f"  {label}: the judge did not answer ({error})", file=sys.stderr)
    if args.output:
        args.output.write_text(json.dumps({"canary": report.as_dict(), "judge": cb_judge.judge_identity(settings)},
                                          indent=2))
    return 0


def calibrate_command(argv: list[str]) -> int:
    from critic_tasks.core.metrics import spearman_x100
    from critic_tasks.protocols.criticbench import data
    from critic_tasks.protocols.criticbench.judge import grade_prompts

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
    grades = [g.score for g in grade_prompts(prompts, settings)]
    scores = [g if g is not None else 5.5 for g in grades]  # failures: the 1-10 midpoint, counted
    rho, warning = spearman_x100(scores, [d["meta_feedback_score"] for d in docs])
    parsed = sum(g is not None for g in grades)
    print(f"judge {settings.model} ({settings.backend}): Spearman with human meta-feedback scores = {rho:.2f} "
          f"over {len(docs)} critiques (parse rate {100 * parsed / len(docs):.1f}%)"
          + (f" [{warning}]" if warning else ""))
    print(f"for reference, the paper's GPT-4 judge: {PAPER_GPT4_META_SPEARMAN:.2f}")
    return 0
