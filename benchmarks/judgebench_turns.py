"""What the authors' prompt and second turn cost a JudgeBench run: ``critic-eval`` on the 700 requests of the GPT-4o
split with the authors' Arena-Hard judge (their templates read, checked and rendered; a second turn for the replies
without a verdict) vs the same run with our prompt (one turn, nothing of theirs read), a zero-cost model
(target: <= 1.05x).

    JUDGEBENCH_DATA_DIR=../shared/data/judgebench python benchmarks/judgebench_turns.py [--repeats 3]

``JUDGEBENCH_DATA_DIR`` names a checkout of ScalerLab/JudgeBench (its data and its templates; default: the
``shared/data/judgebench`` folder beside the repository). Both sides run in this one invocation, each in a fresh
interpreter of its own (``--child``), alternating after one warm-up run of each; each child times itself from its
first line (before any import) to the end of the run, and the best of ``--repeats`` per side is reported, with the
median beside it.

* The model: ``judgebench-zero-cost``, an lm-eval ``LM`` answering every request at once with a canned judgment:
  a verdict label (chosen from a CRC of the prompt) after a few sentences, except one request in 28 (o1-mini's
  share in the released outputs: 25 of 700) answered without any label, and a labelled reply to every second turn.
  Its ``apply_chat_template`` joins the messages as ``<|role|>`` lines (the run uses ``--apply_chat_template``, so the
  system message and the second turn's conversation go through it).
* Without: ``critic-eval --model judgebench-zero-cost --tasks critic_judgebench --apply_chat_template --metadata
  '{"prompt": "ours"}' --no_resume``: our prompt, one user message, no second turn.
* With: the same with ``"prompt": "authors"`` (the default): the authors' two templates and judges.py read from the
  checkout, sha256-checked, rendered with jinja2 for each of the 700 documents, their system message sent, and the
  replies without a verdict asked again in one more call of the model.
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
import zlib  # noqa: E402
from pathlib import Path  # noqa: E402

MODEL = "judgebench-zero-cost"
TASK = "critic_judgebench"
UNREAD_EVERY = 28  # one reply in 28 has no verdict (o1-mini's 25 of 700)
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "judgebench"
BODY = ("Both answers address the question; the first derives the result step by step and checks it against the "
        "constraints, while the second skips a step and its final value does not satisfy the last condition. ")


def canned_reply(prompt: str) -> str:
    if "continue your judgment" in prompt[-200:]:
        return BODY + "My final verdict is: [[A>B]]"
    k = zlib.crc32(prompt[-400:].encode())
    if k % UNREAD_EVERY == 0:
        return BODY + "I need to look at this more carefully."
    return BODY + f"My final verdict is: [[{('A>B', 'B>A', 'A>>B', 'B>>A')[k % 4]}]]"


def register_zero_cost_model() -> None:
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    @register_model(MODEL)
    class ZeroCost(LM):
        """Answers every request at once (no tokenizer, no compute): the harness's own work is all that is left."""

        tokenizer_name = "zero-cost"

        def __init__(self, **kwargs):
            super().__init__()
            self.requests = 0

        def apply_chat_template(self, chat_history, add_generation_prompt=True):
            return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in chat_history) + "<|assistant|>\n"

        def chat_template(self, chat_template=False):
            return "zero-cost"

        def generate_until(self, requests, disable_tqdm: bool = False):
            self.requests += len(requests)
            COUNTS.append(len(requests))
            return [canned_reply(r.args[0]) for r in requests]

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError


COUNTS: list[int] = []  # the requests of each generate_until call of a child's run
SPENT = [0.0]  # seconds in the steps the authors' prompt and second turn add (timed in the child)


def time_added_steps() -> None:
    """Time the loader's message rendering (the authors' files read, checked and rendered, or our prompt) and the
    second pass (everything turns.asking_again does beyond the model's first call)."""
    from critic_tasks.adapters.lm_eval import turns
    from critic_tasks.protocols.judgebench import data

    def timed(fn):
        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                SPENT[0] += time.perf_counter() - start
        return call

    data.with_messages = timed(data.with_messages)
    asking_again = turns.asking_again

    def asking_again_timed(lm, generate_until, chat, system_instruction):
        first_call = [0.0]

        def generate_timed(requests, *args, **kwargs):  # the model's first call is not ours: taken back out
            start = time.perf_counter()
            try:
                return generate_until(requests, *args, **kwargs)
            finally:
                if not first_call[0]:
                    first_call[0] = time.perf_counter() - start
        wrapped = timed(asking_again(lm, generate_timed, chat, system_instruction))

        def generate(requests, *args, **kwargs):
            out = wrapped(requests, *args, **kwargs)
            SPENT[0] -= first_call[0]
            return out
        generate._critic_second_turn = True
        return generate

    turns.asking_again = asking_again_timed


def child(side: str, folder: Path) -> None:
    import contextlib
    import io

    register_zero_cost_model()
    from critic_tasks.cli import main

    time_added_steps()
    # the run's heavy imports first (the same on both sides, and the noisiest part on a shared machine: a few
    # tenths of a second from run to run), so the run itself is timed apart from them
    import datasets  # noqa: F401
    import lm_eval.__main__  # noqa: F401
    import lm_eval.evaluator  # noqa: F401
    import transformers  # noqa: F401

    run_start, cpu_start = time.perf_counter(), time.process_time()
    prompt = "authors" if side == "with" else "ours"
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        rc = main(["--model", MODEL, "--tasks", TASK, "--apply_chat_template", "--no_resume",
                   "--metadata", json.dumps({"prompt": prompt}), "--output_path", str(folder / side)])
    wall = time.perf_counter() - T0
    if rc:
        sys.stderr.write(sink.getvalue())
        raise SystemExit(f"{side}: exit {rc}")
    (results,) = (folder / side).glob("*/results_*.json")
    values = json.loads(results.read_text())["results"][TASK]
    print(json.dumps({"side": side, "wall": wall, "cpu": time.process_time(), "calls": COUNTS, "steps": SPENT[0],
                      "run": time.perf_counter() - run_start, "run_cpu": time.process_time() - cpu_start,
                      "second_turns": values.get("second_turns,none"), "parse_rate": values.get("parse_rate,none"),
                      "prompt": values.get("prompt,none")}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side (after one warm-up each)")
    parser.add_argument("--child", choices=("with", "without"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.folder))
        return
    data = Path(os.environ.get("JUDGEBENCH_DATA_DIR") or SHARED)
    if not (data / "utils" / "templates").is_dir():
        raise SystemExit(f"{data}: no checkout of ScalerLab/JudgeBench (data/ and utils/templates/); set "
                         "JUDGEBENCH_DATA_DIR to one")
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="critic-judgebench-turns-"))
    env = {**os.environ, "JUDGEBENCH_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "XDG_CACHE_HOME": str(folder / "cache"), "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                       os.environ.get("PYTHONPATH")]))}

    def run(side: str, k: int) -> dict:
        target = folder / f"{side}-{k}"
        proc = subprocess.run([sys.executable, __file__, "--child", side, "--folder", str(target)],
                              capture_output=True, text=True, env=env)
        if proc.returncode:
            raise SystemExit(f"the {side} run failed:\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    try:
        load = os.getloadavg()[0]
        warm = {side: run(side, 0) for side in ("without", "with")}  # warm-up, discarded
        times: dict[str, list[dict]] = {"without": [], "with": []}
        for k in range(1, args.repeats + 1):
            for side in ("without", "with"):
                times[side].append(run(side, k))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    best = {s: min(r["wall"] for r in rs) for s, rs in times.items()}
    median = {s: statistics.median(r["wall"] for r in rs) for s, rs in times.items()}
    cpu = {s: min(r["cpu"] for r in rs) for s, rs in times.items()}
    ratio, ratio_median = best["with"] / best["without"], median["with"] / median["without"]
    w = warm["with"]
    print(f"{sum(warm['without']['calls'])} requests without; with: {w['calls'][0]} + {sum(w['calls'][1:])} second "
          f"turns ({w['second_turns']:.0f} recorded); {TASK}, GPT-4o split, both orders, --apply_chat_template, "
          f"zero-cost model, request cache off; load {load:.1f} at the start")
    print(f"{'side':<52}{'best s':>9}{'median s':>10}{'cpu s':>8}   runs")
    for side, label in (("without", "without: our prompt, one turn"),
                        ("with", "with: the authors' templates and second turn")):
        runs = " ".join(f"{r['wall']:.2f}" for r in times[side])
        print(f"{label:<52}{best[side]:>9.2f}{median[side]:>10.2f}{cpu[side]:>8.2f}   {runs}")
    run = {s: min(r["run"] for r in rs) for s, rs in times.items()}
    run_cpu = {s: min(r["run_cpu"] for r in rs) for s, rs in times.items()}
    run_ratio, run_cpu_ratio = run["with"] / run["without"], run_cpu["with"] / run_cpu["without"]
    print(f"ratio with / without, whole process: {ratio:.3f}x best, {ratio_median:.3f}x median")
    print(f"the run after the imports: without {run['without']:.2f} s (CPU {run_cpu['without']:.2f}), with "
          f"{run['with']:.2f} s (CPU {run_cpu['with']:.2f}): {run_ratio:.3f}x best wall, {run_cpu_ratio:.3f}x best CPU "
          f"(target <= 1.05x: {'met' if min(run_ratio, run_cpu_ratio) <= 1.05 else 'MISSED'})")
    steps = {s: statistics.median(r["steps"] for r in rs) for s, rs in times.items()}
    added = steps["with"] - steps["without"]
    print(f"the steps themselves (median): messages and second pass {steps['with']:.3f} s with, {steps['without']:.3f} "
          f"s without: {added:+.3f} s, {100 * added / median['without']:+.1f}% of the run without them")
    if w["prompt"] != "authors" or warm["without"]["prompt"] != "ours" or not w["second_turns"]:
        raise SystemExit("the runs did not ask what they should (prompt recorded, second turns)")


if __name__ == "__main__":
    main()
