"""``critic-eval``: the lm-eval CLI with the critic tasks on its path, plus commands of ours.

    critic-eval --model vllm --model_args pretrained=Qwen/Qwen2.5-7B-Instruct \\
        --batch_size auto --apply_chat_template --tasks critic_feedback,critic_meta
    critic-eval tasks              # our tasks, groups and tags, one line each
    critic-eval tasks-dir          # for: lm_eval --include_path "$(critic-eval tasks-dir)" ...
    critic-eval demo               # our sample + SmolLM2-135M-Instruct, offline, CPU
    critic-eval opencompass-config-dir   # for: opencompass --config-dir "$(critic-eval opencompass-config-dir)" ...
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.settings import is_setting_set, read_raw, read_setting
from critic_tasks.reports.results import load_runs, newest_results_file, read_fingerprints, unshown_runs_note
from critic_tasks.reports.tables import (
    SCALE_NOTE,
    format_table,
    format_task_list,
    interval_note,
    judge_lines,
    scale_note,
)

COMMANDS = {  # name -> one line of help; the functions are looked up in main()
    "demo": "run the critic group on the bundled sample with SmolLM2-135M-Instruct (offline, CPU)",
    "summary": "print the dimension table of a saved lm-eval results JSON",
    "report": "several runs side by side with intervals: Markdown; CSV, HTML and charts with -o DIR",
    "check": "CI gate: exit 1 unless metrics meet --min/--max thresholds (and hold up against --baseline)",
    "compare": "is critic B better than A? each metric's paired difference B - A with its interval and p-value",
    "score": "score saved prediction files (the toolkit's / OpenCompass's format) against the dataset; "
             "--predictions_only: what needs no labels; --released: a RewardBench model's released results",
    "judge": "judge saved generations of the judge-scored tasks (lm-eval --log_samples output)",
    "rescore": "score saved generations of the parsed and sandbox-checked tasks again (--log_samples, or a rescue)",
    "revise": "revise and judge saved critiques of the revision tasks (MultiCritique, RCO; --log_samples output)",
    "calibrate-judge": "the judge's Spearman with human meta-feedback scores",
    "metacritique-score": "MetaCritique P/R/F1 (macro, micro) per critique source of an annotation file, from its labels",
    "metacritique-calibrate": "a judge's MetaCritique precision / recall verdicts against the human labels",
    "tasks": "list our tasks, groups and tags",
    "preflight": "check the settings that --tasks need (judge, executor, data), e.g. before a plain lm_eval run",
    "tasks-dir": "print the task directory, for lm_eval --include_path",
    "register-lm-eval": "make plain `lm_eval --tasks critic_...` find our tasks (a folder in lm-eval's tree; --undo)",
    "lm-eval-config": "print (or -o write) an lm_eval --config YAML that sets include_path to our tasks, for CI",
    "opencompass": "run OpenCompass with our config tree (checks settings first; other flags pass through)",
    "opencompass-config-dir": "print our OpenCompass config tree, for opencompass --config-dir",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: critic-eval COMMAND [options]     (critic-eval COMMAND --help for a command's options)", "",
             "Our commands:"]
    lines += [f"  {name.ljust(width)}  {about}" for name, about in COMMANDS.items()]
    lines += ["", "Anything else runs lm-eval with the critic tasks on its path; every lm_eval flag passes through:",
              "  critic-eval --model hf --model_args pretrained=... --apply_chat_template --tasks critic",
              "  critic-eval run --help      lm-eval's own flags",
              "  critic-eval --version       the installed critic-tasks version",
              "", *data_settings_lines(),
              "judge: CRITIC_JUDGE_*; revisers: CRITIC_REVISER_* (CRITIC_REVISERS: a pool); code execution:",
              "CRITIC_EXECUTOR. See the README; `critic-eval preflight --tasks ...` checks them before a run."]
    return "\n".join(lines)


def data_settings_lines(width: int = 110) -> list[str]:
    """Every protocol's data setting (from the registry, so a new benchmark's is listed), wrapped for the help."""
    import textwrap

    from critic_tasks import registry

    envs = dict.fromkeys(p.data_env for p in registry.PROTOCOLS.values())
    with_sample = {p.data_env for p in registry.PROTOCOLS.values() if p.sample_dir} | {"CRITICBENCH_DATA_DIR"}
    text = ("Data (a local copy each; unset: the Hub or the paper's repository): "
            + ", ".join(f"{env}{' (or sample)' if env in with_sample else ''}" for env in envs) + ";")
    return textwrap.wrap(text, width)


def main(argv: list[str] | None = None) -> int:
    from critic_tasks.core.run_state import new_run

    new_run()  # a command is a run: nothing said or checked by an earlier one in this process is taken as done
    try:
        return _main(argv)
    except KeyboardInterrupt:  # our own commands (a `critic-eval` run prints its own line, with what it kept)
        print("critic-eval: interrupted; the model replies received so far are cached (judge, revisers): the same "
              "command resumes from them", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `critic-eval tasks | head`: the reader has gone; stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's exit-time flush would raise again
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the broken pipe


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"critic-eval {_version()}")
        return 0
    own = argv[0] in COMMANDS
    try:
        if own:
            from critic_tasks.cli import judge, opencompass, protocols, reports, rescore, revise

            commands = {"opencompass": opencompass.run_command, "opencompass-config-dir": opencompass.config_dir_command,
                        "tasks-dir": _tasks_dir, "register-lm-eval": _register_lm_eval,
                        "lm-eval-config": _lm_eval_config, "tasks": _tasks, "demo": _demo, "summary": _summary, "score": _score,
                        "judge": judge.judge_command, "rescore": rescore.rescore_command, "revise": revise.revise_command,
                        "calibrate-judge": judge.calibrate_command, "report": reports.report_command,
                        "check": reports.check_command, "compare": reports.compare_command, "preflight": _preflight,
                        "metacritique-score": protocols.score_command,
                        "metacritique-calibrate": protocols.calibrate_command}
            return commands[argv[0]](argv[1:])
        from critic_tasks.adapters.lm_eval.runner import run_cli

        return run_cli(argv, tuple(COMMANDS))
    except DataError as err:
        print(f"critic-eval: data error: {err}", file=sys.stderr)
        return 2
    except ConfigError as err:
        print(f"critic-eval: {err}", file=sys.stderr)
        return 2
    except ValueError as err:  # other input problems of our own commands: one line, no traceback
        if own:
            print(f"critic-eval: {err}", file=sys.stderr)
            return 2
        raise


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("critic-tasks")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from critic_tasks import __version__

        return __version__


PREFLIGHT_USAGE = ("usage: critic-eval preflight --tasks TASKS [--metadata '{...}'] [--limit N] [--model M "
                   "--model_args ...]\n\n"
                   "Checks what a run of these tasks needs (data, judge, revisers, executor, intervals; SAvg's stage-1 "
                   "feedback; an API model's base_url) before any model loads, from the same flags as the run; exit 2 "
                   "with the reason. For plain lm_eval runs, which check only after loading the model (critic-eval "
                   "checks first itself).")


def _preflight(argv: list[str]) -> int:
    """Plain ``lm_eval`` builds the tasks (where our settings are checked) only after loading the model; this runs
    the same checks as ``critic-eval`` does before a run, from the same flags, and exits 2 with the reason."""
    from critic_tasks import registry
    from critic_tasks.adapters.lm_eval.flags import flag_value, run_metadata
    from critic_tasks.adapters.lm_eval.runner import check_model_server, preflight
    from critic_tasks.llm.settings import LLMSettings
    from critic_tasks.preflight import check_hub_data, checks_source, expand, hub_offline

    if any(a in ("-h", "--help") for a in argv):
        print(PREFLIGHT_USAGE)
        return 0
    if not any(a == "--tasks" or a.startswith("--tasks=") for a in argv):
        raise ValueError("preflight needs --tasks (and the --metadata of the run, if any): "
                         "critic-eval preflight --tasks critic_feedback_sub [--metadata '{...}']")
    names = [n.strip() for n in (flag_value(argv, "--tasks") or "").split(",") if n.strip()]
    if not names:  # as the run refuses it (runner.check_run_flags): an empty --tasks checks nothing
        raise ConfigError("--tasks is empty: name at least one task, e.g. --tasks critic_feedback "
                          "(`critic-eval tasks` lists ours)")
    tasks = expand(names)
    metadata = run_metadata(argv)  # as lm-eval's CLI parses it; then its keys, as the tasks' loader checks them
    registry.check_metadata(tasks, metadata)
    for stage in dict.fromkeys(t.prior_stage for t in tasks if t.prior_stage is not None):
        waiting = [t.name for t in tasks if t.prior_stage == stage]
        if not (metadata.get(stage.key) or (stage.env and is_setting_set(stage.env))):
            raise ValueError(f"{', '.join(waiting)}: plain lm_eval needs {stage.about} from a stage-1 run "
                             f"(--metadata '{{\"{stage.key}\": \"<its output dir>\"}}'); critic-eval runs stage 1 itself")
    preflight(argv)
    check_model_server(argv)  # with the run's --model and --model_args: an API model's server answers
    notes = []
    scorers = {t.kind_spec.scorer for t in tasks}
    if scorers & {"judge", "aiu_judge", "revision"} and not LLMSettings.from_env("judge").model:
        notes.append("no judge model (CRITIC_JUDGE_MODEL): judging will be deferred; keep --log_samples")
    if "revision" in scorers:
        from critic_tasks.protocols.revision.pipeline import reviser_pool

        if not reviser_pool():
            notes.append("no reviser (CRITIC_REVISER_MODEL / CRITIC_REVISERS): revision scoring will be deferred; "
                         "keep --log_samples, then critic-eval revise")
    for note in notes:
        print(f"critic-eval preflight: note: {note}")
    # the Hub must answer now (or, offline, hold the files)
    check_hub_data(tasks, metadata.get("data_dir"), metadata.get("items_file"), metadata)
    sources = []  # each asked protocol's data: its own setting names the local copy (CriticBench's, JudgeBench's...)
    for steps in {registry.PROTOCOLS[t.kind_spec.protocol].data_env: registry.PROTOCOLS[t.kind_spec.protocol]
                  for t in tasks}.values():
        local = metadata.get("data_dir") or read_raw(steps.data_env)
        # CriticBench's and the protocols of preflight.checks_source were checked above (a local copy loaded; the
        # published one reachable, or offline, in the cache); the others' sources are read when the tasks load
        checked = steps.data_env == "CRITICBENCH_DATA_DIR" or checks_source(steps.name)
        probed = ("in the local cache; " if hub_offline() else "reachable; ") if checked else "read when the tasks load; "
        sources.append(f"data {local}{' (loaded)' if checked else ''}" if local not in (None, "")
                       else f"data from {steps.source} ({probed}set {steps.data_env} for a local copy)")
    data = "; ".join(sources)
    print(f"critic-eval preflight: ok ({len(tasks)} critic task(s): settings and executor checked; {data})")
    return 0


def _tasks_dir(argv: list[str]) -> int:
    from critic_tasks import tasks_dir

    if any(a in ("-h", "--help") for a in argv):
        print("usage: critic-eval tasks-dir   (prints the lm-eval task folder, for lm_eval --include_path)")
        return 0
    print(tasks_dir())
    return 0


def _register_lm_eval(argv: list[str]) -> int:
    from critic_tasks.adapters.lm_eval import register

    parser = argparse.ArgumentParser(prog="critic-eval register-lm-eval", description=(
        "lm-eval 0.4.13 finds tasks only in its own tasks/ folder and --include_path. This places "
        f"lm_eval/tasks/{register.FOLDER}/ in the installed lm-eval: include-only YAMLs pointing at our task files, "
        "a one-line utils.py and a marker; --undo removes exactly that. Refuses lm-eval versions it does not know "
        f"({', '.join(register.KNOWN_VERSIONS)}), and does nothing where lm-eval reads the lm_eval.tasks entry point."))
    parser.add_argument("--undo", action="store_true", help="remove the folder again (only if our marker is in it)")
    args = parser.parse_args(argv)
    print(f"critic-eval: {register.undo() if args.undo else register.register()}")
    return 0


def _lm_eval_config(argv: list[str]) -> int:
    from critic_tasks.adapters.lm_eval.register import config_yaml

    parser = argparse.ArgumentParser(prog="critic-eval lm-eval-config", description=COMMANDS["lm-eval-config"] + (
        ": lm_eval --config FILE --tasks critic_feedback,critic_meta --model ... (nothing written into lm-eval)."))
    parser.add_argument("-o", "--output", type=Path, help="write it here instead of printing it")
    args = parser.parse_args(argv)
    if args.output is None:
        print(config_yaml(), end="")
        return 0
    try:
        args.output.write_text(config_yaml(), encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{args.output}: cannot write the config ({err.strerror or err})") from None
    print(f"critic-eval: wrote {args.output}; run lm_eval --config {args.output} --tasks critic_feedback,critic_meta "
          "--model ...")
    return 0


def _tasks(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="critic-eval tasks", description=COMMANDS["tasks"]).parse_args(argv)
    print(format_task_list())
    return 0


def _demo(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="critic-eval demo", description=COMMANDS["demo"] + ".")
    parser.add_argument("--tasks", default="critic")
    parser.add_argument("--max_gen_toks", type=int, default=32,
                        help="generation budget per item (the tasks default to 512; the demo keeps it short)")
    parser.add_argument("--per_domain", type=int, default=None, metavar="N",
                        help="the items of each domain it runs (of a task asking pairs: N/2 pairs, at least 1, both "
                        "orders; default 1: 40 generations for the critic group; 0: every item, 141)")
    parser.add_argument("--batch_size", default="8")
    parser.add_argument("--output_path", default=None, help="also write lm-eval's results JSON here (with --paired: "
                        "a folder, getting both runs and their report)")
    parser.add_argument("--paired", action="store_true",
                        help="run the tasks twice, replies sampled with two seeds, and show the paired comparison "
                        "of the two runs (`critic-eval compare`): how far two runs of one critic differ by chance "
                        "alone; twice the time of the demo")
    parser.add_argument("--seeds", default=None, metavar="A,B",
                        help="with --paired: the two runs' seeds (default 1,2)")
    parser.add_argument("--temperature", type=float, default=None,
                        help="with --paired: the sampling temperature (default 0.7)")
    args = parser.parse_args(argv)
    from critic_tasks.adapters.lm_eval.demo import (
        ResultsNotWritten,
        demo_budget_hint,
        demo_chance,
        demo_samples,
        run_demo,
    )

    if not args.paired:
        for flag in ("seeds", "temperature"):
            if getattr(args, flag) is not None:
                raise ConfigError(f"demo: --{flag} sets the sampling of --paired's two runs (the demo itself decodes "
                                  f"greedily): add --paired, or drop --{flag}")
    try:
        if args.paired:
            return _paired_demo(args, argv)
        results = run_demo(args.tasks.split(","), args.max_gen_toks, args.batch_size, args.output_path, argv,
                           args.per_domain)
    except KeyboardInterrupt as stop:  # run_demo says what it kept
        print(stop.args[0] if stop.args else "critic-eval: interrupted", file=sys.stderr)
        return 130
    except ResultsNotWritten as err:
        print(err, file=sys.stderr)
        return 1
    print(format_table(results, demo_chance(args.tasks.split(","), demo_samples(args.tasks.split(","),
                                                                                args.per_domain))))
    print(scale_note(results))
    print(CHANCE_NOTE)
    hint = demo_budget_hint(results, args.max_gen_toks)
    if hint:
        print(hint)
    return 0


CHANCE_NOTE = ("chance: the floor on these items of critics that read nothing (a constant, the first answer, a coin, "
               "the length; `critic-eval report --chance` shows each): a value at or under it says nothing of the "
               "critic.")


PAIRED_READING = ("Reading it: both runs are one critic, sampled twice; a difference whose interval covers 0 (and a "
                  "large p) is what chance alone gives. Two critics compared the same way (`critic-eval compare A B`) "
                  "differ for real where the interval excludes 0.")


def parse_seeds(text: str) -> tuple[int, int]:
    """``--seeds A,B``: two whole numbers."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ConfigError(f"demo --paired: --seeds {text}: give two whole numbers >= 0, comma-separated, e.g. "
                          "--seeds 1,2")
    return int(parts[0]), int(parts[1])


def _paired_demo(args, argv: list[str]) -> int:
    """`critic-eval demo --paired`: each run's table, then their paired comparison, what each run cost, and with
    --output_path the files written and the report command that rebuilds them."""
    from critic_tasks.adapters.lm_eval.demo import (
        PAIRED_SEEDS,
        PAIRED_TEMPERATURE,
        demo_budget_hint,
        demo_chance,
        demo_samples,
        paired_run_label,
        run_paired_demo,
    )
    from critic_tasks.core.metrics.bootstrap import settings_from_env
    from critic_tasks.reports.compare import format_comparisons

    seeds = parse_seeds(args.seeds) if args.seeds is not None else PAIRED_SEEDS
    temperature = PAIRED_TEMPERATURE if args.temperature is None else args.temperature
    paired = run_paired_demo(args.tasks.split(","), args.max_gen_toks, args.batch_size, args.output_path, seeds,
                             temperature, argv, args.per_domain)
    labels = [paired_run_label(seed, temperature) for seed in paired.seeds]
    floors = demo_chance(args.tasks.split(","), demo_samples(args.tasks.split(","), args.per_domain))
    for label, one in zip(labels, paired.passes):
        print(f"{label}:")
        print(format_table(one.results["results"], floors))
    print(scale_note(*(one.results["results"] for one in paired.passes)))
    hint = demo_budget_hint(paired.passes[0].results["results"], args.max_gen_toks)
    if hint:
        print(hint)
    print()
    if paired.comparisons:
        print(format_comparisons(paired.comparisons, labels[0], labels[1], settings_from_env().level))
        print(PAIRED_READING)
    else:
        print("Paired comparison: no metric with an interval has a value in both runs (intervals off: CRITIC_CI=off?)")
    for label, one in zip(labels, paired.passes):
        print(f"cost: {label}: {one.cost()}")
    if paired.written:
        folder = paired.written[0].parent.parent
        # report -o draws charts (matplotlib, the report extra, which scripts/setup.sh does not install): without it
        # the demo wrote the report without charts, and the command it names prints the tables instead
        charts = importlib.util.find_spec("matplotlib") is not None
        again = (f"critic-eval report {folder / f'seed-{paired.seeds[0]}'} {folder / f'seed-{paired.seeds[1]}'} --paired"
                 + (f" -o {folder / 'report'}" if charts else ""))
        print(f"\nwrote both runs and their report to {folder}"
              + ("" if charts else " (no charts: pip install 'critic-tasks[report]' for them)")
              + f"; the report again: {again}")
    return 0


def _summary(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="critic-eval summary", description=COMMANDS["summary"] + ".")
    parser.add_argument("results_json", type=Path, help="lm-eval's results JSON, or the --output_path directory, or "
                        "the OpenCompass summarizer's critic_summary_<time>.json (a table per model)")
    parser.add_argument("--label", help="name the run (default: model · benchmarks and options · date, e.g. "
                        "'SmolLM2-135M · judgebench claude · 11-28')")
    args = parser.parse_args(argv)
    path = args.results_json
    if path.is_dir():  # the newest run of all its folders, as read_result_sets reads it
        path = newest_results_file(path)
    runs = load_runs(path)
    if args.label is not None:
        if len(runs) != 1:
            raise ConfigError(f"--label: {path} holds {len(runs)} runs ({', '.join(r.label for r in runs)}); "
                              "name one results file")
        runs[0].label = args.label
    unshown = unshown_runs_note(args.results_json, per_folder=False)
    if unshown:
        print(unshown, file=sys.stderr)
    for run in runs:
        print(f"{run.label}:")
        print(format_table(run.results))
    print(scale_note(*(run.results for run in runs)))
    note = interval_note(*(run.results for run in runs))
    if note:
        print(note)
    for line in judge_lines(read_fingerprints(args.results_json)):
        print(line)
    return 0


def _score(argv: list[str]) -> int:
    # per-domain and per-quality correlations on few items warn a lot; the table's note column counts them instead
    # (the logger's level is restored after: an in-process caller, e.g. a notebook, keeps its warnings)
    logger = logging.getLogger("critic_tasks")
    level = logger.level
    try:
        return _score_quietly(argv)
    finally:
        logger.setLevel(level)


def registered():
    """What the prediction-file readers (``protocols.criticbench.offline`` / ``label_free``) need of the registered
    tasks, handed to them: a protocol does not read the registry or the engine."""
    from critic_tasks import registry
    from critic_tasks.engine import kind_metrics, score_task, task_docs
    from critic_tasks.protocols.criticbench.offline import Registered

    return Registered(
        tasks=registry.TASKS, groups=tuple(registry.GROUPS.values()),
        judged=lambda task: registry.SCORERS[task.scorer].judged, task_docs=task_docs, score_task=score_task,
        kind_metrics=lambda name, records: kind_metrics(registry.TASK_KINDS[name], records))


def _score_quietly(argv: list[str]) -> int:
    from critic_tasks.protocols.criticbench.data import resolve_protocol
    from critic_tasks.protocols.criticbench.offline import score_predictions

    parser = argparse.ArgumentParser(prog="critic-eval score", description=COMMANDS["score"] + (
        ": {split}_{domain}_{dimension}_{format}.json files mapping \"0\"..\"N-1\" to origin_prompt / prediction."))
    parser.add_argument("predictions_dir", type=Path, nargs="?")
    parser.add_argument("--released", metavar="SOURCE:NAME", default=None, help="instead: the numbers of a model "
                        "whose per-item results the RewardBench authors release, computed as they compute them: "
                        "rewardbench:<model or file> (e.g. rewardbench:openai/gpt-4o-2024-05-13, from the Hub's "
                        "allenai/reward-bench-results) or rewardbench2:<model or file> (allenai/reward-bench-2-results)")
    parser.add_argument("--released-dir", type=Path, metavar="DIR", default=None, help="with --released: a local "
                        "copy of the results dataset, or its eval-set-scores folder, to find the model in")
    parser.add_argument("--protocol", default=None, help="ours (default; CRITICBENCH_PROTOCOL) or toolkit: whose "
                        "parsing rules and comparison score to apply")
    parser.add_argument("--toolkit_dir", default=None, help="with --protocol toolkit: a CriticEval checkout, to check "
                        "every prompt is the toolkit's (CRITICBENCH_TOOLKIT_DIR)")
    parser.add_argument("--data_dir", default=None, help="local dataset copy, or 'sample' (default: "
                        "CRITICBENCH_DATA_DIR / the Hub)")
    parser.add_argument("--predictions_only", action="store_true", help="without the dataset: what needs no labels "
                        "(parse rates, distributions of the parsed scores and verdicts, the comparisons' position "
                        "statistics), per split, dimension and domain")
    parser.add_argument("--output", type=Path, help="write the results (lm-eval's results JSON shape, plus the "
                        "parsed value of every item) here; with --predictions_only, the statistics")
    args = parser.parse_args(argv)
    if args.released is not None:
        if args.predictions_dir is not None:
            raise ConfigError(f"score --released {args.released}: give no predictions folder (it scores the released "
                              "file alone)")
        return _score_released(args.released, args.released_dir)
    if args.released_dir is not None:
        raise ConfigError("--released-dir: only with --released SOURCE:NAME")
    if args.predictions_dir is None:
        raise ConfigError("score: give a predictions folder, or --released SOURCE:NAME")
    logging.getLogger("critic_tasks").setLevel(logging.ERROR)
    protocol = resolve_protocol(args.protocol)
    toolkit_dir = args.toolkit_dir or (read_setting("CRITICBENCH_TOOLKIT_DIR") or None if protocol == "toolkit" else None)
    if args.predictions_only:
        if args.data_dir or args.toolkit_dir:
            raise ValueError("--predictions_only reads no dataset: drop --data_dir / --toolkit_dir (or "
                             "--predictions_only, to score against the labels)")
        return _score_predictions_only(args.predictions_dir, protocol, args.output)
    try:
        scored = score_predictions(args.predictions_dir, args.data_dir, protocol, toolkit_dir, registered=registered())
    except DataError as err:
        if "could not be read from the Hub" in str(err):
            raise DataError(f"{err} Without the dataset: critic-eval score --predictions_only "
                            f"{args.predictions_dir} (parse rates and verdict distributions).") from None
        raise
    if args.output:
        args.output.write_text(json.dumps({"results": scored.results, "groups": scored.groups,
                                           "config": {"protocol": protocol, "predictions": str(args.predictions_dir)},
                                           "items": scored.items, "skipped": scored.skipped}, indent=2))
    if scored.results:
        print(format_table(scored.results))
        print(SCALE_NOTE)
    for name, why in scored.skipped:
        print(f"not scored: {name}: {why}", file=sys.stderr)
    return 0


def _score_released(text: str, folder: Path | None) -> int:
    """``score --released rewardbench[2]:NAME``: the released model's numbers (x100), one line each."""
    from critic_tasks.reports.against import read_released

    source, sep, name = text.partition(":")
    if not sep or source not in ("rewardbench", "rewardbench2") or not name:
        raise ConfigError(f"--released {text}: expected rewardbench:<model or file> or rewardbench2:<model or file>")
    released = read_released(source, name, folder, "--released-dir")
    if source == "rewardbench":
        from critic_tasks.protocols.rewardbench.released import values
    else:
        from critic_tasks.protocols.rewardbench2.released import values
    found = values(released)
    print(f"{released.model} ({released.where}), {source} as the authors score it (x100; counts as they are):")
    print("| metric | value |")
    print("|---|---|")
    for key, value in found.items():
        print(f"| {key} | {value:.0f} |" if key in ("pairs", "prompts") else f"| {key} | {value:.2f} |")
    return 0


def _score_predictions_only(predictions_dir: Path, protocol: str, output: Path | None) -> int:
    from critic_tasks.protocols.criticbench.label_free import summarize_predictions
    from critic_tasks.reports.tables import LABEL_FREE_NOTE, format_label_free

    summary = summarize_predictions(predictions_dir, protocol, registered=registered())
    if output:
        output.write_text(json.dumps({"predictions_only": summary.stats, "items": summary.items,
                                      "skipped": summary.skipped,
                                      "config": {"protocol": protocol, "predictions": str(predictions_dir)}}, indent=2))
    if summary.stats:
        print(format_label_free(summary.stats))
        print(LABEL_FREE_NOTE)
    by_reason: dict[str, list[str]] = {}
    for name, why in summary.skipped:
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():  # one line per reason (the released folder holds 62 judge-scored files)
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        print(f"not scored: {why}: {shown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
