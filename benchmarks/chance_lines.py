"""The chance computation (``critic_tasks.chance.chance_line``, what ``critic-eval report --chance`` runs per task)
on the released CritiqueLLM files in ../shared/data/critiquellm and on the bundled CriticBench sample (the demo's
data), timed per task for the package first on the path.

    python benchmarks/chance_lines.py [--repeats 3] [--tasks critic_alignbench_ref ...]
    PYTHONPATH=/path/to/old/checkout python benchmarks/chance_lines.py   # the baseline: another checkout's package

Printed: one row per task, the best of ``--repeats`` seconds and the headline lines, so that two checkouts' rows can
be set side by side (the lines should agree where the families agree). Target: the CritiqueLLM pointwise lines stay
within +-30% of the baseline's time on these files (their questions have one or two responses).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "critiquellm"
CRITIQUELLM = ("critic_alignbench_ref", "critic_alignbench_free", "critic_alignbench_pairwise_ref",
               "critic_alignbench_pairwise_free")
SAMPLE = ("critic_feedback", "critic_comparison", "critic_meta", "critic_correction")  # the demo's objective tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", nargs="*", help="default: CritiqueLLM's four on ../shared, the demo's on the sample")
    args = parser.parse_args()
    os.environ.setdefault("CRITIQUELLM_DATA_DIR", str(SHARED))
    os.environ.setdefault("CRITICBENCH_DATA_DIR", "sample")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from critic_tasks import chance, engine

    print(f"package: {Path(chance.__file__).resolve().parents[1]}")
    names = args.tasks or [*CRITIQUELLM, *SAMPLE]
    total = 0.0
    for name in names:
        try:
            docs = engine.task_docs(name)
        except Exception as err:  # a task whose data is not here: said, not timed
            print(f"| {name} | no data: {type(err).__name__} |")
            continue
        best, line = float("inf"), None
        for _ in range(args.repeats):
            start = time.perf_counter()
            line = chance.chance_line(name, docs)
            best = min(best, time.perf_counter() - start)
        total += best
        shown = ", ".join(f"{k} {v:.1f}" for k, v in line.chance.items()) if line.chance else line.skipped
        print(f"| {name} | {len(docs)} | {best:.2f} | {shown} |", flush=True)
    print(f"total (best of each): {total:.2f} s")


if __name__ == "__main__":
    main()
