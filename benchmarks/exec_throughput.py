"""Throughput of code checks in the sandbox against the toolkit's one plain ``subprocess.run`` per program.

Programs are shaped like CriticBench code corrections: a revised function and a HumanEval-style
``check(candidate)``. Ours is the real check: a candidate process wired to a trusted tester, each in its own
sandbox (``build_code_test_pair``, ``run_pairs``); the baseline runs the function and its tests in one plain
process, as the toolkit does (and as a forged pass needs). The mix is 80% passing, 15% failing an assert and 5%
timing out (half spin in a loop, half block forever, e.g. a deadlock). Both sides use the same timeout.

``--mix mbpp``: MBPP-shaped items instead (the function and top-level asserts), 80% passing, 15% failing, 5%
spinning until the timeout. ``--baseline-workers same``: the plain subprocesses run in a pool as wide as the
sandbox's (the default, 1, runs them one after another, as the toolkit does). ``--no-spinners``: the mix without
the items that run until the timeout (their CPU bounds both sides alike). ``--fresh-sandboxes``: two fresh sandboxes
per item instead of the pre-started ones (``reuse_sandboxes=False``; what an interpreter under /tmp got before).

    python benchmarks/exec_throughput.py [--n 300] [--timeout 1.0] [--workers N] [--chunk 100] [--mix mbpp]
                                         [--baseline-workers same] [--no-spinners] [--fresh-sandboxes]
"""

from __future__ import annotations

import argparse
import atexit
import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from critic_tasks.protocols.criticbench.correction.programs import PRELUDE, build_code_test_pair  # noqa: E402
from critic_tasks.sandbox import Pair, SandboxExecutor  # noqa: E402

UNIT_TEST = """def check(candidate):
    assert candidate([1, 2, 3], 2) == [2, 4, 6]
    assert candidate([], 5) == []
    assert candidate([-1, 0, 1], -3) == [3, 0, -3]
"""
BODIES = {
    "pass": "def scale(xs: List[int], k: int) -> List[int]:\n    out = []\n    for x in xs:\n"
            "        out.append(x * k)\n    return out\n",
    "fail": "def scale(xs: List[int], k: int) -> List[int]:\n    return [x + k for x in xs]\n",
    "spin": "def scale(xs: List[int], k: int) -> List[int]:\n    i = 0\n    while i < len(xs) or True:\n"
            "        i += 1\n",
    "block": "import threading\n_lock = threading.Lock()\n\ndef scale(xs: List[int], k: int) -> List[int]:\n"
             "    with _lock:\n        with _lock:\n            return [x * k for x in xs]\n",
}


MBPP_TEST = """assert scale([1, 2, 3], 2) == [2, 4, 6]
assert scale([], 5) == []
assert scale([-1, 0, 1], -3) == [3, 0, -3]
"""


def make_programs(n: int, seed: int = 0, mix: str = "humaneval", spinners: bool = True
                  ) -> list[tuple[str, Pair, str]]:
    """(kind, our candidate/tester pair, the toolkit's single program) per item."""
    kinds = ["pass"] * 80 + ["fail"] * 15
    if spinners:
        kinds += ["spin"] * 3 + ["block"] * 2 if mix == "humaneval" else ["spin"] * 5
    rng = random.Random(seed)
    picked = [kinds[i % len(kinds)] for i in range(n)]
    rng.shuffle(picked)
    if mix == "mbpp":
        pairs = {kind: Pair(*build_code_test_pair(body, MBPP_TEST, "mbpp", "scale")) for kind, body in BODIES.items()}
        single = {kind: f"{PRELUDE}\n{body}\n{MBPP_TEST}" for kind, body in BODIES.items()}
    else:
        pairs = {kind: Pair(*build_code_test_pair(body, UNIT_TEST, "humaneval", "scale"))
                 for kind, body in BODIES.items()}
        single = {kind: f"{PRELUDE}\n{body}\n{UNIT_TEST}\ncheck(scale)\n" for kind, body in BODIES.items()}
    return [(kind, pairs[kind], single[kind]) for kind in picked]


def cpu_meter():
    """CPU seconds used so far by this process and everything it started (sandboxes included), from a cgroup-v1
    cpuacct group of our own: unlike wall time, it does not depend on what else the machine is running.
    None where no such cgroup can be made."""
    root = "/sys/fs/cgroup/cpuacct"
    path = os.path.join(root, f"critic-bench-{os.getpid()}")
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError:
        return None

    def leave():
        with open(os.path.join(root, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        os.rmdir(path)

    atexit.register(leave)
    return lambda: int(open(os.path.join(path, "cpuacct.usage")).read()) / 1e9


def run_baseline(sources: list[str], timeout: float, workers: int = 1) -> list[str]:
    """One plain ``subprocess.run`` per program, ``workers`` at a time."""
    with tempfile.TemporaryDirectory() as tmp:
        def one(i: int) -> str:
            path = os.path.join(tmp, f"p{i}.py")
            with open(path, "w") as f:
                f.write(sources[i])
            try:
                proc = subprocess.run([sys.executable, path], capture_output=True, timeout=timeout,
                                      stdin=subprocess.DEVNULL)
                return "passed" if proc.returncode == 0 else "failed"
            except subprocess.TimeoutExpired:
                return "timeout"

        if workers == 1:
            return [one(i) for i in range(len(sources))]
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, range(len(sources))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--chunk", type=int, default=100, help="programs per alternation of the two sides")
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (default: the executor's, 2 x CPUs)")
    parser.add_argument("--mix", choices=["humaneval", "mbpp"], default="humaneval")
    parser.add_argument("--baseline-workers", default="1", help="1 (the toolkit: one after another) or 'same'")
    parser.add_argument("--no-spinners", action="store_true", help="leave out the items that run until the timeout")
    parser.add_argument("--fresh-sandboxes", action="store_true", help="two fresh sandboxes per item (no reuse)")
    args = parser.parse_args()

    programs = make_programs(args.n, mix=args.mix, spinners=not args.no_spinners)
    expected = {"pass": "passed", "fail": "failed", "spin": "timeout", "block": "timeout"}
    sources = [source for _, _, source in programs]
    pairs = [pair for _, pair, _ in programs]
    executor = SandboxExecutor(max_workers=args.workers, reuse_sandboxes=not args.fresh_sandboxes)
    width = executor.max_workers if args.baseline_workers == "same" else int(args.baseline_workers)
    print(f"mix {args.mix}, baseline pool width {width}; reused sandboxes: {executor.reuse_sandboxes}; "
          f"interpreter {sys.executable}")
    print(f"{args.n} programs {dict(Counter(kind for kind, _, _ in programs))}, timeout {args.timeout}s, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; sandbox: isolation={executor.isolation} "
          f"cgroup={bool(executor.cgroup)} workers={executor.max_workers}")

    # Alternate the two sides chunk by chunk, so a change in the machine's background load hits both alike.
    ours, base, wall, cpu = [], [], {"sandbox": 0.0, "baseline": 0.0}, {"sandbox": 0.0, "baseline": 0.0}
    meter = cpu_meter() or (lambda: float("nan"))
    for lo in range(0, args.n, args.chunk):
        chunk = sources[lo: lo + args.chunk]
        for side in ("sandbox", "baseline") if (lo // args.chunk) % 2 == 0 else ("baseline", "sandbox"):
            start, cpu_start = time.perf_counter(), meter()
            if side == "sandbox":
                ours += [r.trusted for r in executor.run_pairs(
                    [Pair(p.untrusted, p.trusted, args.timeout) for p in pairs[lo: lo + args.chunk]])]
            else:
                base += run_baseline(chunk, args.timeout, width)
            wall[side] += time.perf_counter() - start
            cpu[side] += meter() - cpu_start

    executor.close()  # its pre-started sandboxes (they count in the CPU meter's group until they end)
    for name, statuses in (("sandbox", [r.status for r in ours]), ("baseline", base)):
        wrong = sum(s != expected[kind] for s, (kind, _, _) in zip(statuses, programs))
        print(f"  {name:9s} statuses {dict(Counter(statuses))}  unexpected: {wrong}")
    print(f"  {'':9s} {'seconds':>9s} {'programs/s':>11s} {'CPU-seconds':>12s}")
    for side in ("sandbox", "baseline"):
        print(f"  {side:9s} {wall[side]:9.2f} {args.n / wall[side]:11.1f} {cpu[side]:12.2f}")
    print(f"  speed-up {wall['baseline'] / wall['sandbox']:.2f}x (target >= 2x); "
          f"load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
