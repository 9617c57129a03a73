"""Our CPU overhead in an lm-eval run: critic_feedback, critic_comparison and critic_meta vs a plain lm-eval
generate_until task over the same requests, with a zero-cost model (target: ours <= 1.1x the plain task).

    python benchmarks/overhead.py [--repeats 3] [--log_samples] [--use_cache] [--profile ours|plain]

Both sides are run in this one invocation, each in a fresh interpreter of its own (``--child``), alternating
(plain, ours, plain, ours, ...) after one warm-up run of each (discarded: it fills the OS file cache and the
`datasets` cache of the plain task's JSON file); each child times itself from its first line (before any import) to
the end of the run, and the best of ``--repeats`` per side is reported, with the median beside it.

* The model: ``critic-zero-cost``, an lm-eval ``LM`` registered with ``@register_model`` that answers every request
  at once with a canned, well-formed critique of the kind the prompt asks for (``Decision: 5`` for a feedback
  prompt, ``Decision: A`` for a comparison, ``Score: 4`` for a meta-feedback one, chosen from a CRC of the prompt,
  then a few sentences), so parsing, records and metrics all really run.
* Ours: ``critic-eval --model critic-zero-cost --tasks critic_feedback,critic_comparison,critic_meta`` (the CLI: our
  preflight, our tasks' loader, prompts, records and aggregations) on a CriticBench-dev-sized
  synthetic set written by this script into a temporary directory in the dataset's real layout and fields
  (``CRITICBENCH_DATA_DIR``; items cycled from the bundled sample, labels drawn from a seeded RNG, texts padded to the
  dev split's prompt lengths): 534 feedback, 450 pairs (900 requests, both orders) and 562 meta-feedback items,
  1,996 requests, the dev split's counts per file (from the released dev predictions).
* Plain: ``lm_eval --model critic-zero-cost --include_path TMP --tasks overhead_plain``: one generate_until task
  (YAML written into the temporary directory; ``dataset_path: json`` over a local JSON-lines file) with one document
  per request of ours whose prompt has exactly that request's length, ``exact_match`` against a reference answer.
  Its prompt and target are document fields named in the YAML (``doc_to_text: question``), the cheapest form
  lm-eval has: a Jinja template (``"{{question}}"``) would be compiled anew for every document (lm-eval's
  ``apply_template``), several seconds more on the plain side.
* The same lm-eval settings on both sides: what ``critic-eval`` gives by default, i.e. lm-eval's CLI defaults
  (``bootstrap_iters`` 100000 — lm-eval bootstraps none of these metrics: ours have their own aggregations,
  exact_match's mean has a closed-form stderr —, no ``--log_samples``, batch size 1); our 95% intervals are no lm-eval
  metrics since issue 30: they are computed from the ``--log_samples`` rows when results are read, so none here.
  ``critic-eval`` also turns lm-eval's request cache on by default (resume); it is off on both sides here
  (``--no_resume``) unless ``--use_cache`` turns it on for both (a fresh folder each run). ``--log_samples`` adds
  ``--log_samples --output_path`` on both sides.

Our share: the time spent in our code (our CLI's import and checks, and every hook the YAML names: loader, prompts,
records, aggregations, interval bounds; timed around each call in the "ours" children) as a share of our run's wall
time; the model costs nothing here, so the rest is lm-eval's own work.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # a child's clock starts before any import

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import zlib  # noqa: E402
from pathlib import Path  # noqa: E402

TASKS = "critic_feedback,critic_comparison,critic_meta"
MODEL = "critic-zero-cost"
# Items per file of the dev split (from the released dev predictions of the CriticEval toolkit).
DOMAINS = ("translate", "chat", "qa", "summary", "harmlessness", "math_cot", "math_pot", "code_exec", "code_not_exec")
FEEDBACK = {d: 50 for d in DOMAINS} | {"code_exec": 63, "code_not_exec": 41}
CORRECTION_PART = {d: 10 for d in DOMAINS if d != "code_exec"}
PAIRS = {d: 50 for d in DOMAINS}
META = {d: 60 for d in DOMAINS} | {"math_cot": 72, "math_pot": 72, "summary": 58}
# Mean prompt length (characters) of the released dev prompts per dimension; the synthetic texts are padded to it.
PROMPT_CHARS = {"feedback": 1980, "comparison": 2230, "meta": 4450}
FILLER = ("The response walks through the problem step by step, restating the given facts, naming each quantity "
          "and checking every intermediate result against the question before moving on to the next step. ")
REPLY_TAIL = ("\nThe response addresses the question, but its reasoning skips a step and one claim is not supported "
              "by the facts given; the final answer should be checked against the constraints in the question.")


# ----------------------------------------------------------------------------- the zero-cost model


def canned_reply(prompt: str) -> str:
    """A well-formed critique of the kind ``prompt`` asks for (the marker the task parses, then some text)."""
    k = zlib.crc32(prompt[-400:].encode())
    if "`Decision: A`" in prompt:
        head = f"Decision: {'ABC'[k % 3]}"
    elif "`Score: x`" in prompt:
        head = f"Score: {1 + k % 7}"
    else:
        head = f"Decision: {1 + k % 7}"
    return head + REPLY_TAIL


def register_zero_cost_model() -> None:
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    @register_model(MODEL)
    class ZeroCost(LM):
        """Answers every request at once (no tokenizer, no compute): the harness's own work is all that is left."""

        def __init__(self, **kwargs):  # batch_size, device, ...: nothing to set up
            super().__init__()

        def generate_until(self, requests, disable_tqdm: bool = False):
            return [canned_reply(r.args[0]) for r in requests]

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError


# ----------------------------------------------------------------------------- the data


def _pad(text: str, chars: int) -> str:
    if chars <= 0:
        return text
    return text + "\n" + (FILLER * (chars // len(FILLER) + 1))[:chars]


def write_dataset(root: Path, seed: int = 0) -> None:
    """A dev-sized CriticBench (the obj dev files the three tasks read) in the dataset's layout and fields: the
    bundled sample's items cycled to each file's dev count, labels from a seeded RNG, texts padded to dev lengths."""
    import numpy as np

    from critic_tasks.protocols.criticbench import prompts
    from critic_tasks.protocols.criticbench.data import SAMPLE_DIR, load_docs

    rng = np.random.default_rng(seed)
    sample = SAMPLE_DIR / "obj_dev_data"
    out = root / "obj_dev_data"
    # how much to pad: the dev prompt length less the sample's own prompt length (the prompt wraps the texts)
    base = {dim: statistics.mean(len(render(d)) for d in load_docs(dim, "dev", data_dir="sample"))
            for dim, render in (("feedback", prompts.feedback_prompt), ("comparison", prompts.comparison_prompt),
                                ("meta", prompts.meta_prompt))}
    pad = {dim: max(0, int(PROMPT_CHARS[dim] - base[dim])) for dim in base}

    def cycled(path: Path, n: int) -> list[dict]:
        items = json.loads(path.read_text())
        return [json.loads(json.dumps(items[i % len(items)])) for i in range(n)]

    def spread(dim: str) -> int:  # prompt lengths vary around the mean, as the real ones do
        return int(pad[dim] * rng.uniform(0.3, 1.7))

    files: dict[str, list[dict]] = {}
    for d, n in FEEDBACK.items():
        items = cycled(sample / f"{d}_feedback_correction.json", n)
        for it in items:
            it["feedback_score"] = int(rng.integers(1, 8))
            it["metadata"]["quality"] = str(rng.choice(["low", "med", "high"]))
            it["generation"] = _pad(it["generation"], spread("feedback"))
        files[f"{d}_feedback_correction.json"] = items
    for d, n in CORRECTION_PART.items():
        items = cycled(sample / "correction_part" / f"{d}_feedback.json", n)
        for it in items:
            it["feedback_score"] = int(rng.integers(5, 8))
            it["generation"] = _pad(it["generation"], spread("feedback"))
        files[f"correction_part/{d}_feedback.json"] = items
    for d, n in PAIRS.items():
        items = cycled(sample / f"{d}_comp_feedback.json", n)
        for it in items:
            it["obj"]["preference"] = str(rng.choice(list("AB")))
            qa, qb = rng.choice(["low", "med", "high"], size=2)
            it["metadata"]["quality_a_sub"], it["metadata"]["quality_b_sub"] = str(qa), str(qb)
            extra = spread("comparison")
            it["obj"]["generation_a"] = _pad(it["obj"]["generation_a"], extra // 2)
            it["obj"]["generation_b"] = _pad(it["obj"]["generation_b"], extra - extra // 2)
        files[f"{d}_comp_feedback.json"] = items
    for d, n in META.items():
        items = cycled(sample / "meta_feedback_single" / f"meta_feedback_singlewise_{d}.json", n)
        for i, it in enumerate(items):
            it["meta_feedback_score"] = int(rng.integers(1, 8))
            it["raw_quality"] = ["low", "med", "high"][i % 3]
            it["generation"] = _pad(it["generation"], spread("meta"))
        files[f"meta_feedback_single/meta_feedback_singlewise_{d}.json"] = items
    for name, items in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(items, ensure_ascii=False))


def write_plain_task(root: Path, data_dir: Path) -> int:
    """The plain task: one document per request of ours, each prompt exactly as long as that request's, and its
    YAML. Returns the number of documents."""
    from critic_tasks.protocols.criticbench import prompts
    from critic_tasks.protocols.criticbench.data import load_docs

    lengths = [len(render(d)) for dim, render in (("feedback", prompts.feedback_prompt),
                                                   ("comparison", prompts.comparison_prompt),
                                                   ("meta", prompts.meta_prompt))
               for d in load_docs(dim, "dev", data_dir=str(data_dir))]
    task_dir = root / "plain_task"
    task_dir.mkdir()
    with open(task_dir / "plain.jsonl", "w") as fh:
        for i, n in enumerate(lengths):
            question = f"Question {i}: " + (FILLER * (n // len(FILLER) + 1))
            fh.write(json.dumps({"question": question[:n], "answer": f"Decision: {1 + i % 7}"}) + "\n")
    (task_dir / "overhead_plain.yaml").write_text(f"""task: overhead_plain
dataset_path: json
dataset_kwargs:
  data_files:
    test: {task_dir / 'plain.jsonl'}
test_split: test
output_type: generate_until
doc_to_text: question
doc_to_target: answer
generation_kwargs:
  until: []
  do_sample: false
  temperature: 0.0
  max_gen_toks: 512
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
""")
    return len(lengths)


# ----------------------------------------------------------------------------- one run (a child)

OURS = [0.0]  # seconds spent in our code in this run (a child of the "ours" side)


def _timed(fn):
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            OURS[0] += time.perf_counter() - start

    timed.__name__ = getattr(fn, "__name__", "timed")
    return timed


def time_our_hooks() -> None:
    """Count the time spent in our code: the import of our CLI (counted by the caller), the CLI's checks before
    lm-eval runs, and every hook the task YAML names (loader, prompts, per-document records, aggregations; the
    intervals are no lm-eval metrics: computed when the results are read). ``tasks/utils.py`` binds the methods
    of ``task_functions.TaskFunctions`` (its aggregation too, ``TaskFunctions.aggregate``) when lm-eval executes it,
    after this replaces them, so every call is timed. None of them calls another, so nothing is counted twice."""
    from critic_tasks.adapters.lm_eval import runner
    from critic_tasks.adapters.lm_eval.task_functions import TaskFunctions

    for name in ("preflight", "check_model_paths", "require_scorer_or_samples", "prior_runs"):
        setattr(runner, name, _timed(getattr(runner, name)))
    for name in ("load_docs", "doc_to_text", "doc_to_target", "process_results", "aggregate"):
        timed = _timed(getattr(TaskFunctions, name))
        setattr(TaskFunctions, name, staticmethod(timed) if name == "aggregate" else timed)



def child(side: str, root: Path, log_samples: bool, use_cache: bool, profile: str | None) -> None:
    import contextlib
    import io

    run_dir = Path(tempfile.mkdtemp(dir=root, prefix=f"run-{side}-"))
    extra = ["--log_samples", "--output_path", str(run_dir / "out")] if log_samples else []
    if use_cache:
        extra += ["--use_cache", str(run_dir / "cache" / "requests")]
    prof = None
    if profile == side:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    register_zero_cost_model()
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        if side == "ours":
            start = time.perf_counter()
            from critic_tasks.cli import main

            OURS[0] += time.perf_counter() - start
            time_our_hooks()
            rc = main(["--model", MODEL, "--tasks", TASKS, *([] if use_cache else ["--no_resume"]), *extra])
        else:
            from lm_eval.__main__ import cli_evaluate

            sys.argv = ["lm_eval", "--model", MODEL, "--include_path", str(root / "plain_task"),
                        "--tasks", "overhead_plain", *extra]
            rc = 0
            try:
                cli_evaluate()
            except SystemExit as exit_:
                rc = int(exit_.code or 0)
    wall = time.perf_counter() - T0
    ours = OURS[0] if side == "ours" else 0.0
    if prof is not None:
        prof.disable()
        prof.dump_stats(f"overhead-{side}.prof")
    if rc:
        sys.stderr.write(sink.getvalue())
        raise SystemExit(f"{side}: exit {rc}")
    print(json.dumps({"side": side, "wall": wall, "cpu": time.process_time(), "ours": ours, "table": sink.getvalue()}))


# ----------------------------------------------------------------------------- the comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side (after one warm-up each)")
    parser.add_argument("--log_samples", action="store_true", help="--log_samples --output_path on both sides")
    parser.add_argument("--use_cache", action="store_true", help="lm-eval's request cache on both sides")
    parser.add_argument("--profile", choices=("ours", "plain"), help="cProfile that side's timed runs "
                        "(overhead-<side>.prof in the current folder; the timings then include the profiler)")
    parser.add_argument("--child", choices=("ours", "plain"), help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        os.environ["CRITICBENCH_DATA_DIR"] = str(Path(args.root) / "criticbench")
        child(args.child, Path(args.root), args.log_samples, args.use_cache, args.profile)
        return

    import logging

    logging.getLogger("critic_tasks").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="critic-overhead-") as tmp:
        root = Path(tmp)
        write_dataset(root / "criticbench")
        n = write_plain_task(root, root / "criticbench")
        env = {**os.environ, "HF_DATASETS_CACHE": str(root / "hf-datasets"), "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                          env.get("PYTHONPATH")]))
        flags = [*(["--log_samples"] if args.log_samples else []), *(["--use_cache"] if args.use_cache else [])]

        def run(side: str, profile: bool) -> dict:
            cmd = [sys.executable, __file__, "--child", side, "--root", str(root), *flags,
                   *(["--profile", args.profile] if profile and args.profile else [])]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode:
                raise SystemExit(f"the {side} run failed:\n{proc.stderr[-4000:]}")
            return json.loads(proc.stdout.strip().splitlines()[-1])

        load = os.getloadavg()[0]
        warm = {side: run(side, False) for side in ("plain", "ours")}  # warm-up, discarded
        times: dict[str, list[dict]] = {"plain": [], "ours": []}
        for _ in range(args.repeats):
            for side in ("plain", "ours"):
                times[side].append(run(side, True))
        best = {s: min(r["wall"] for r in rs) for s, rs in times.items()}
        median = {s: statistics.median(r["wall"] for r in rs) for s, rs in times.items()}
        cpu = {s: min(r["cpu"] for r in rs) for s, rs in times.items()}
        ratio, ratio_median = best["ours"] / best["plain"], median["ours"] / median["plain"]
        print(f"{n} requests each side; {TASKS} (ours) vs one plain generate_until task (exact_match); "
              f"zero-cost model; bootstrap_iters 100000 (lm-eval's default), no intervals (read from logged samples), "
              f"log_samples {'on' if args.log_samples else 'off'}, request cache {'on' if args.use_cache else 'off'};"
              f" load {load:.1f} at the start")
        print(f"{'side':<40}{'best s':>9}{'median s':>10}{'cpu s':>8}   runs")
        for side, label in (("plain", "plain lm-eval task"), ("ours", "ours (critic-eval, 3 tasks)")):
            runs = " ".join(f"{r['wall']:.2f}" for r in times[side])
            print(f"{label:<40}{best[side]:>9.2f}{median[side]:>10.2f}{cpu[side]:>8.2f}   {runs}")
        print(f"ratio ours / plain: {ratio:.2f}x best, {ratio_median:.2f}x median (target <= 1.1x: "
              f"{'met' if ratio <= 1.1 else 'MISSED'})")
        mine = statistics.median(r["ours"] / r["wall"] for r in times["ours"])
        secs = statistics.median(r["ours"] for r in times["ours"])
        print(f"our share of the wall time of our run: {100 * mine:.0f}% ({secs:.2f} s in our code: our CLI's import "
              f"and checks, the loader, prompts, records and aggregations; the model costs nothing here, "
              f"so the rest is lm-eval's own work: indexing its task YAML files, building requests, the results)")
        if not all("critic_feedback" in r["table"] for r in times["ours"]) or not warm["ours"]["table"]:
            raise SystemExit("our run printed no results table")


if __name__ == "__main__":
    main()
