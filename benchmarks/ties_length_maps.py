"""RewardBench 2's Ties chance line by length (issue 44.3): the time of the task's chance line on the bundled sample,
today's (every monotone map of the length, an integer programme) against the line at ``--old`` (two-level maps
only), and the search on Ties data of the real set's size (51 numbers; the data is on the Hub only, so drawn here).

    python benchmarks/ties_length_maps.py [--old 1774bc6] [--repeats 3] [--numbers 51] [--seeds 2] [--seconds 60]

Each side of the sample comparison runs in a child process with its own package first on the path (the old one
``git archive``d into a temporary folder): the first line's time (imports included) and the best of ``--repeats``
after it. The drawn data: per number a tied prompt of 2-25 correct and 1-15 incorrect answers and a reference of
one correct and 1-8 incorrect answers of their own, lengths log-normal (median 20 characters); printed per seed and
direction: the best two-level map's score (the old family), the search's, whether HiGHS proved it in ``--seconds``
(else its bound on the best), and the search's time.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AUTHORS = ROOT.parent / "shared" / "data" / "rewardbench"

CHILD = """
import sys, time
started = time.perf_counter()
from critic_tasks import chance, engine
docs = engine.task_docs("critic_rewardbench2")
line = chance.chance_line("critic_rewardbench2", docs)
first = time.perf_counter() - started
best = None
for _ in range(int(sys.argv[1])):
    started = time.perf_counter()
    chance.chance_line("critic_rewardbench2", docs)
    best = min(best or 1e9, time.perf_counter() - started)
print(first, best, line.chance["ties"])
"""


def sample_line(package: Path, repeats: int) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": str(package), "REWARDBENCH2_DATA_DIR": "sample", "HF_HUB_OFFLINE": "1",
           "REWARDBENCH_AUTHORS_DIR": str(AUTHORS)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(repeats)], env=env, cwd=package, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def drawn_ties(numbers: int, seed: int) -> dict[str, tuple[list[int], int]]:
    rng = random.Random(seed)

    def length() -> int:
        return max(1, int(rng.lognormvariate(3, 1)))

    out = {}
    for n in range(numbers):
        correct, incorrect = rng.randint(2, 25), rng.randint(1, 15)
        out[f"tied:{n}"] = ([length() for _ in range(correct + incorrect)], correct)
        out[f"ref:{n}"] = ([length() for _ in range(1 + rng.randint(1, 8))], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="1774bc6")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--numbers", type=int, default=51)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "old.tar"
        subprocess.run(["git", "archive", "-o", str(archive), args.old], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(folder) / "old", filter="data")
        old = sample_line(Path(folder) / "old", args.repeats)
    new = sample_line(ROOT, args.repeats)
    print("sample chance line: first s (imports included) / best s after / ties")
    print(f"  old {old[0]:.2f} / {old[1]:.3f} / {old[2]:.2f}")
    print(f"  new {new[0]:.2f} / {new[1]:.3f} / {new[2]:.2f}   ratio {new[0] / old[0]:.2f}x / {new[1] / old[1]:.2f}x")

    sys.path.insert(0, str(ROOT))
    from critic_tasks.protocols.rewardbench2 import chance

    print(f"drawn Ties, {args.numbers} numbers: seed direction | two-level | search (proven, or bound) | s")
    for seed in range(args.seeds):
        prompts = drawn_ties(args.numbers, seed)
        for direction in ("longer", "shorter"):
            sign = 1 if direction == "longer" else -1
            cuts = sorted({sign * n for lengths, _ in prompts.values() for n in lengths})
            two_level = max(chance.ties_value(prompts, lambda n, cut=cut, sign=sign: 10 if sign * n >= cut else 1)
                            for cut in cuts)
            started = time.perf_counter()
            found = chance.best_ties_map(prompts, direction, args.seconds)
            took = time.perf_counter() - started
            proof = "proven" if found.proven else f"not proven, at most {found.bound:.3f}"
            print(f"  {seed} {direction:7} | {two_level:.3f} | {found.value:.3f} ({proof}, ratings "
                  f"{sorted(set(found.ratings))}) | {took:.1f}")


if __name__ == "__main__":
    main()
