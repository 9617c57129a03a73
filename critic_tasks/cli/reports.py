"""``critic-eval check`` (the CI gate) and ``critic-eval report`` (tables, CSV, HTML, charts): thin over reports/."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.reports import gate
from critic_tasks.reports.results import load_all, told_apart, unshown_runs_note

CHECK = "fail (exit 1) unless a run's metrics meet thresholds and hold up against a baseline run"
REPORT = "several runs side by side with intervals: Markdown here; CSV, HTML and charts with -o DIR"


def _one_run(path: Path, what: str):
    runs = load_all([path])
    if len(runs) != 1:
        raise ConfigError(f"{what} {path}: holds {len(runs)} runs ({', '.join(r.label for r in runs)}); name one results file")
    return runs[0]


def _check_writable(folder: Path, flag: str) -> None:
    """``folder`` (made if missing) takes files: checked before the report is built."""
    import tempfile

    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{flag} {folder}: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise ConfigError(f"{flag} {folder}: cannot write in {existing} ({err.strerror or err}); give a writable "
                          "folder") from None


def fraction_note(name: str, value: float, where: str) -> str | None:
    """A threshold between -1 and 1 (not 0) on a x100 metric: the 0-1 habit (0.4 for 40%), said in one line."""
    from critic_tasks import registry

    task, _, key = name.partition(".")
    if task in registry.GROUPS:
        group = registry.GROUPS[task]
        metric = registry.TASKS[group.members[0]].kind_spec.metric(group.metric)
    else:
        metric = registry.TASKS[task].kind_spec.metric(key)
    if metric is None or metric.scale not in ("rate", "correlation") or value == 0 or abs(value) >= 1:
        return None
    return (f"critic-eval check: note: {where} {name}={value:g}: our {metric.scale}s are x100 ({name} = 40 means "
            f"0.40), so this asks for {value:g} in 100; if you meant {value * 100:g}, write {name}={value * 100:g}")


def check_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="critic-eval check", description=CHECK + ". Exit 0: all hold; 1: some "
                                     "missed (each named, with by how much and its interval); 2: bad input.")
    parser.add_argument("results", type=Path, help="lm-eval's results JSON (or its --output_path directory)")
    parser.add_argument("--min", action="append", default=[], metavar="TASK.METRIC=VALUE",
                        help="the metric must be >= VALUE, e.g. critic_feedback.spearman=40 or critic.score=55")
    parser.add_argument("--max", action="append", default=[], metavar="TASK.METRIC=VALUE",
                        help="the metric must be <= VALUE, e.g. critic_correction.truncated=5")
    parser.add_argument("--config", type=Path, help="thresholds (min:, max:) and baseline: from a YAML/JSON file")
    parser.add_argument("--baseline", type=Path, help="a baseline run's results: fail where a headline metric "
                        "dropped by more than the two intervals allow")
    parser.add_argument("--compare", action="append", default=[], metavar="TASK.METRIC",
                        help="with --baseline: the metrics to compare (default: the all-domain tasks' headline metrics "
                        "with intervals and the groups' overalls)")
    parser.add_argument("--allow-judge-failures", action="store_true",
                        help="pass a run with items the judge could not grade (by default every task reporting "
                        "judge_failed > 0 fails, unless its judge_failed has its own --max)")
    args = parser.parse_args(argv)
    settings = gate.read_config(args.config) if args.config else {"min": {}, "max": {}, "baseline": None, "compare": [],
                                                                  "allow_judge_failures": False}
    compare = [gate.check_name(n, "--compare") for n in args.compare] or settings["compare"]
    for side in ("min", "max"):
        for text in getattr(args, side):
            name, value = gate.parse_threshold(text, f"--{side}")
            settings[side][name] = value
    for side in ("min", "max"):
        for name, value in settings[side].items():
            note = fraction_note(name, value, side)
            if note:
                print(note, file=sys.stderr)
    baseline_path = args.baseline or settings["baseline"]
    if not settings["min"] and not settings["max"] and baseline_path is None:
        raise ConfigError("check: nothing to check: give --min/--max thresholds, --config or --baseline")
    run = _one_run(args.results, "results")
    outcomes = gate.check_thresholds(run, settings["min"], settings["max"])
    outcomes += gate.check_judge_failures(run, settings["max"],
                                          args.allow_judge_failures or settings["allow_judge_failures"])
    if baseline_path is not None:
        outcomes += gate.check_baseline(run, _one_run(baseline_path, "--baseline"), compare)
    elif compare:
        raise ConfigError("--compare needs a baseline (--baseline or baseline: in the config)")
    for o in outcomes:
        print(f"{'ok  ' if o.passed else 'FAIL'} {o.message}")
    failed = [o for o in outcomes if not o.passed]
    print(f"critic-eval check: {len(outcomes) - len(failed)} of {len(outcomes)} held" +
          (f"; failed: {', '.join(o.name for o in failed)}" if failed else ""), file=sys.stderr if failed else sys.stdout)
    return 1 if failed else 0


def _chance_lines(task: str, runs) -> list:
    """``task``'s chance lines for ``runs``: one on the documents each run asked (``results.asked_items``: every
    document, or those a ``--limit`` run logged; loaded with the task options the run records, e.g. RewardBench's
    ``orders: both``), shared by the runs that asked the same; a line per other set, naming its runs
    (``ChanceLine.runs``)."""
    from critic_tasks import chance, engine
    from critic_tasks.reports.results import asked_items, task_option_values

    by_items: dict = {}
    for run in runs:
        options = task_option_values(run.configs.get(task), run.config)
        try:
            items = asked_items(run, task)
        except (ConfigError, DataError) as err:
            items = str(err)
        key = (items, json.dumps(options, sort_keys=True, default=str))
        by_items.setdefault(key, (options, []))[1].append(run.label)
    lines = []
    for (items, _), (options, labels) in by_items.items():
        if isinstance(items, str):
            line = chance.ChanceLine(task, skipped=items)
        else:
            docs = engine.task_docs(task, **options) if options else None
            line = chance.chance_line(task, docs, items=items)
        if len(by_items) > 1:
            line.runs = tuple(labels)
        lines.append(line)
    return lines


def report_command(argv: list[str]) -> int:
    from critic_tasks.reports import report

    parser = argparse.ArgumentParser(prog="critic-eval report", description=REPORT + ".")
    parser.add_argument("runs", nargs="+", type=Path, help="results files or lm-eval --output_path directories "
                        "(one run per results file; a directory: the newest file of each of its folders)")
    parser.add_argument("-o", "--output_dir", type=Path, help="write report.md, report.csv, report.html and the "
                        "charts (PNG) here")
    parser.add_argument("--leaderboard", action="append", type=Path, default=[], metavar="CSV",
                        help="place the runs among the published CriticEval leaderboard rows (scores_obj.csv / "
                        "scores_sub.csv format); repeatable")
    parser.add_argument("--chance", action="store_true",
                        help="add each task's chance line: canned critics (constant, always-first, random, every "
                        "label, injection, unparseable) scored on the task's data by its own scorer, next to the "
                        "runs, on the items each run asked (a --limit run: those its --log_samples rows name; reads "
                        "the data as a run does: CRITICBENCH_DATA_DIR, CRITIQUELLM_DATA_DIR; runs the "
                        "sandbox for corrections; judge-scored tasks need CRITIC_JUDGE_MODEL)")
    parser.add_argument("--paired", action="store_true",
                        help="with exactly two runs: a 'Paired comparison' section, B - A of every metric both runs "
                        "report on the same items (as `critic-eval compare`; needs their --log_samples files)")
    parser.add_argument("--title", default="critic-tasks report")
    parser.add_argument("--label", action="append", default=[], metavar="NAME",
                        help="name the runs, one --label per run in order (default: model · benchmarks and options · "
                        "date, e.g. 'SmolLM2-135M · judgebench claude · 11-28')")
    args = parser.parse_args(argv)
    if args.output_dir and importlib.util.find_spec("matplotlib") is None:  # the charts' only dependency
        raise ConfigError("critic-eval report -o draws its charts with matplotlib, not installed here: "
                          "pip install 'critic-tasks[report]' (without -o: the Markdown tables, no charts)")
    if args.output_dir:
        _check_writable(args.output_dir, "-o")
    runs = load_all(args.runs, args.label)
    for path in args.runs:
        unshown = unshown_runs_note(path, per_folder=True)
        if unshown:
            print(unshown, file=sys.stderr)
    lines = []
    if args.chance:
        from critic_tasks import registry
        from critic_tasks.preflight import check_tasks

        tasks = [t for t in registry.TASKS if any(t in r.results for r in runs)]
        # the data, judge and sandbox the chance lines need, checked first (a judge that is down: one line now, not
        # after each call's retries)
        check_tasks([registry.TASKS[t] for t in tasks])
        lines = [line for t in tasks for line in _chance_lines(t, [r for r in runs if t in r.results])]
    extra = []
    if args.paired:
        from critic_tasks.core.metrics.bootstrap import settings_from_env
        from critic_tasks.reports.compare import compare_runs, comparison_table

        if len(runs) != 2:
            raise ConfigError(f"report --paired compares two runs; these paths hold {len(runs)} "
                              f"({', '.join(r.label for r in runs)})")
        settings = settings_from_env()
        extra = [comparison_table(compare_runs(*runs, settings=settings), runs[0].label, runs[1].label,
                                  settings.level)]
    built = report.build(runs, args.leaderboard, lines, extra)
    print(report.to_markdown(built, args.title))
    if args.output_dir:
        try:
            written = report.write(built, args.output_dir, args.title)
        except OSError as err:
            raise ConfigError(f"-o {args.output_dir}: cannot write the report ({err.strerror or err}: "
                              f"{err.filename or args.output_dir})") from None
        print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


COMPARE = ("is critic B better than A? For every metric both runs report on the same items (lm-eval --log_samples "
           "rows beside both results files): B - A with a paired bootstrap interval (the same items resampled for "
           "both runs, the metric recomputed) and a p-value (McNemar's exact test for 0/1 outcomes, else a paired "
           "permutation test); CRITIC_CI_RESAMPLES / _LEVEL / _SEED set the resamples")


def compare_command(argv: list[str]) -> int:
    from critic_tasks.core.metrics.bootstrap import settings_from_env
    from critic_tasks.reports.compare import compare_runs, format_comparisons

    parser = argparse.ArgumentParser(prog="critic-eval compare", description=COMPARE + ". Exit 2: the runs' items "
                                     "differ, or a bad --metric.")
    parser.add_argument("run_a", type=Path, help="run A: a results file or an lm-eval --output_path directory, or "
                        "an OpenCompass run's summary/critic_results_<model>_<time>.json")
    parser.add_argument("run_b", type=Path, nargs="?", help="run B: the same; the differences are B - A (with "
                        "--against: none)")
    parser.add_argument("--metric", action="append", default=[], metavar="TASK.METRIC",
                        help="compare this metric only (repeatable); default: every metric with an interval both "
                        "runs report")
    parser.add_argument("--label", action="append", default=[], metavar="NAME",
                        help="name run A, then run B (twice; default: model · benchmarks and options · date)")
    parser.add_argument("--against", metavar="SOURCE:NAME",
                        help="place the run beside a published model's per-item results on the same items: "
                        "judgebench:<released judge> (e.g. judgebench:o1-mini; JudgeBench's released outputs) or "
                        "criticeval:<predictions folder, or a model under --against-dir> (the CriticEval toolkit's "
                        "released predictions, CriticBench's objective tasks), rewardbench:<model or file> or "
                        "rewardbench2:<model or file> (the per-item results the RewardBench authors release, e.g. "
                        "rewardbench:openai/gpt-4o-2024-05-13); the difference is the run minus it")
    parser.add_argument("--against-dir", type=Path, metavar="DIR",
                        help="where the released results are: a checkout of ScalerLab/JudgeBench or its outputs "
                        "folder (default: JUDGEBENCH_DATA_DIR when it names a checkout, else fetched from the "
                        "repository at a pinned commit); for criticeval, the folder holding the models' folders; "
                        "for rewardbench / rewardbench2, a copy of the results dataset or its eval-set-scores "
                        "folder (default: the Hub's allenai/reward-bench-results / allenai/reward-bench-2-results)")
    args = parser.parse_args(argv)
    if args.against is not None:
        return _compare_against(args)
    if args.run_b is None:
        raise ConfigError("compare: give two runs (A and B), or one run and --against SOURCE:NAME")
    if len(args.label) not in (0, 2):
        raise ConfigError(f"--label given {len(args.label)} time(s): name both runs, A then B "
                          "(--label NAME_A --label NAME_B)")
    run_a, run_b = told_apart([_one_run(args.run_a, "run A"), _one_run(args.run_b, "run B")])
    if args.label:
        run_a.label, run_b.label = args.label
    settings = settings_from_env()
    comparisons = compare_runs(run_a, run_b, args.metric, settings)
    print(format_comparisons(comparisons, run_a.label, run_b.label, settings.level))
    return 0


def _compare_against(args) -> int:
    """``compare RUN --against SOURCE:NAME``: A the published results, B the run."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env
    from critic_tasks.reports.against import compare_with_judge, compare_with_predictions, parse_against
    from critic_tasks.reports.compare import format_comparisons

    source, name = parse_against(args.against)
    if args.run_b is not None:
        raise ConfigError(f"compare --against {args.against}: give one run (B is the published one), not two")
    if len(args.label) > 1:
        raise ConfigError(f"--label given {len(args.label)} times: with --against, name the run only")
    run = _one_run(args.run_a, "run")
    if args.label:
        run.label = args.label[0]
    settings = settings_from_env()
    if source == "judgebench":
        comparisons, label = compare_with_judge(run, name, args.against_dir, args.metric, settings)
    elif source in ("rewardbench", "rewardbench2"):
        from critic_tasks.reports.against import compare_with_released

        comparisons, label, notes = compare_with_released(run, source, name, args.against_dir, args.metric, settings)
        for note in notes:
            print(note)
    else:
        from critic_tasks import registry
        from critic_tasks.cli import registered
        from critic_tasks.protocols.criticbench.offline import score_predictions

        folder = Path(name) if Path(name).is_dir() or args.against_dir is None else args.against_dir / name
        if not folder.is_dir():
            raise ConfigError(f"--against criticeval:{name}: {folder} is not a folder of released predictions "
                              "(e.g. example-predictions/deepseek-67b-chat-hf of the CriticEval toolkit)")
        dimensions = {registry.TASKS[t].kind_spec.data_dimension for t in run.results if t in registry.TASKS
                      and registry.TASKS[t].kind_spec.protocol == "criticbench"}
        scored = score_predictions(folder, registered=registered(), dimensions=dimensions)
        comparisons = compare_with_predictions(run, scored.scored, f"criticeval:{name}", args.metric, settings)
        label = f"{folder.name}, CriticEval's released predictions"
    print(format_comparisons(comparisons, label, run.label, settings.level))
    return 0
