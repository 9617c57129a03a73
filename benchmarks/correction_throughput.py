"""Code corrections checked through ``check_corrections`` (the default executor: the sandbox with its pre-started
sandboxes) against one plain ``python -c`` per program in a pool of the same width.

The mix: MBPP-shaped items of ten small tasks (a prose question, top-level asserts), each revised right or wrong
(80% right; the wrong ones fail an assert or raise), none running until the timeout: the cost measured is each
program's start, run and end, not a spinner's CPU. Ours is one ``check_corrections("code_not_exec", ...)`` call per
chunk, executor not given (so each call builds the executor ``CRITIC_EXECUTOR`` names and boots its sandboxes, as a
caller without one does); the baseline builds the toolkit's program per item (the header, the revised code, the
asserts) and runs it with ``python -c`` in a thread pool as wide as the sandbox's. Chunks alternate between the two
sides, so the machine's background load hits both alike.

``--profile``: instead, where the time of one item goes in a pre-started worker (one worker, items one after
another): the executor's phases, timed from the harness, and each process's CPU (the harness, each side's zygote,
as root its janitor, what each zygote reaped: the items' processes).

    python benchmarks/correction_throughput.py [--n 240] [--chunk 120] [--timeout 4] [--workers N]
    python benchmarks/correction_throughput.py --profile [--n 200]

Under another interpreter (a venv under /tmp) or user (not root), run the script with that interpreter or user:
benchmarks/README.md has the commands.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from critic_tasks.protocols.criticbench.correction import check_corrections  # noqa: E402
from critic_tasks.protocols.criticbench.correction.programs import PRELUDE  # noqa: E402

# (function, question, asserts, a right body, wrong bodies): MBPP's shape (a prose question, top-level asserts)
TASKS = [
    ("remove_odd", "Write a python function to remove odd numbers from a given list.",
     "assert remove_odd([1,2,3]) == [2]\nassert remove_odd([2,4,6]) == [2,4,6]\nassert remove_odd([10,20,3]) == [10,20]\n",
     "def remove_odd(l):\n    return [x for x in l if x % 2 == 0]\n",
     ["def remove_odd(l):\n    return [x for x in l if x % 2]\n",
      "def remove_odd(l):\n    for x in l:\n        if x % 2:\n            l.remove(x)\n    return l[1:]\n"]),
    ("max_of_nth", "Write a function to find the maximum of the n-th column of a given tuple list.",
     "assert max_of_nth([(5, 6, 7), (1, 3, 5), (8, 9, 19)], 2) == 19\n"
     "assert max_of_nth([(6, 7, 8), (2, 4, 6), (9, 10, 20)], 1) == 10\n"
     "assert max_of_nth([(7, 8, 9), (3, 5, 7), (10, 11, 21)], 1) == 11\n",
     "def max_of_nth(test_list, N):\n    return max([sub[N] for sub in test_list])\n",
     ["def max_of_nth(test_list, N):\n    return max(test_list[N])\n",
      "def max_of_nth(test_list, N):\n    return max([sub[N + 1] for sub in test_list])\n"]),
    ("is_palindrome", "Write a function to check whether a given string is a palindrome, ignoring case and spaces.",
     "assert is_palindrome('Never odd or even') == True\nassert is_palindrome('abc') == False\n"
     "assert is_palindrome('') == True\n",
     "def is_palindrome(s):\n    t = ''.join(s.lower().split())\n    return t == t[::-1]\n",
     ["def is_palindrome(s):\n    return s == s[::-1]\n"]),
    ("count_vowels", "Write a python function to count the vowels in a string.",
     "assert count_vowels('python') == 1\nassert count_vowels('AEIOU aeiou') == 10\nassert count_vowels('') == 0\n",
     "def count_vowels(s):\n    return sum(1 for ch in s.lower() if ch in 'aeiou')\n",
     ["def count_vowels(s):\n    return sum(1 for ch in s if ch in 'aeiou')\n"]),
    ("sum_digits", "Write a function to get the sum of the digits of a non-negative integer.",
     "assert sum_digits(345) == 12\nassert sum_digits(12) == 3\nassert sum_digits(97) == 16\n",
     "def sum_digits(n):\n    total = 0\n    while n:\n        total += n % 10\n        n //= 10\n    return total\n",
     ["def sum_digits(n):\n    return sum(int(d) for d in str(n)[1:])\n"]),
    ("find_char_long", "Write a function to find all words which are at least 4 characters long in a string.",
     "assert set(find_char_long('Please move back to stream')) == set(['Please', 'move', 'back', 'stream'])\n"
     "assert set(find_char_long('Jing Eco and Tech')) == set(['Jing', 'Tech'])\n"
     "assert set(find_char_long('Jhingai wulu road Zone 3')) == set(['Jhingai', 'wulu', 'road', 'Zone'])\n",
     "import re\n\ndef find_char_long(text):\n    return re.findall(r\"\\b\\w{4,}\\b\", text)\n",
     ["import re\n\ndef find_char_long(text):\n    return re.findall(r\"\\b\\w{5,}\\b\", text)\n"]),
    ("similar_elements", "Write a function to find the shared elements from the given two lists.",
     "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))\n"
     "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))\n"
     "assert set(similar_elements((11, 12, 14, 13),(17, 15, 14, 13))) == set((13, 14))\n",
     "def similar_elements(test_tup1, test_tup2):\n    return tuple(set(test_tup1) & set(test_tup2))\n",
     ["def similar_elements(test_tup1, test_tup2):\n    return tuple(set(test_tup1) | set(test_tup2))\n"]),
    ("binary_to_decimal", "Write a function to convert a binary number (given as an int of 0s and 1s) to decimal.",
     "assert binary_to_decimal(100) == 4\nassert binary_to_decimal(1011) == 11\nassert binary_to_decimal(1101101) == 109\n",
     "def binary_to_decimal(binary):\n    decimal, i = 0, 0\n    while binary != 0:\n        dec = binary % 10\n"
     "        decimal = decimal + dec * pow(2, i)\n        binary = binary // 10\n        i += 1\n    return decimal\n",
     ["def binary_to_decimal(binary):\n    return int(str(binary), 10)\n"]),
    ("first_repeated_char", "Write a python function to find the first repeated character in a given string.",
     "assert first_repeated_char('abcabc') == 'a'\nassert first_repeated_char('abc') == None\n"
     "assert first_repeated_char('123123') == '1'\n",
     "def first_repeated_char(str1):\n    seen = set()\n    for c in str1:\n        if c in seen:\n"
     "            return c\n        seen.add(c)\n    return None\n",
     ["def first_repeated_char(str1):\n    return Counter(str1).most_common(1)[0][0]\n"]),
    ("heap_queue_largest", "Write a function to find the n largest integers from a given list of numbers, "
     "returned in descending order.",
     "assert heap_queue_largest([25, 35, 22, 85, 14, 65, 75, 22, 58], 3) == [85, 75, 65]\n"
     "assert heap_queue_largest([25, 35, 22, 85, 14, 65, 75, 22, 58], 2) == [85, 75]\n"
     "assert heap_queue_largest([25, 35, 22, 85, 14, 65, 75, 22, 58], 5) == [85, 75, 65, 58, 35]\n",
     "import heapq as hq\n\ndef heap_queue_largest(nums, n):\n    return hq.nlargest(n, nums)\n",
     ["import heapq as hq\n\ndef heap_queue_largest(nums, n):\n    return hq.nsmallest(n, nums)\n"]),
]
RIGHT_SHARE = 0.8


def make_items(n: int, seed: int = 0) -> list[tuple[str, dict, str]]:
    """(expected status, item, revision) for ``n`` items: the tasks in turn, 80% revised right."""
    rng = random.Random(seed)
    made = []
    for i in range(n):
        name, question, tests, right, wrongs = TASKS[i % len(TASKS)]
        ok = rng.random() < RIGHT_SHARE
        body = right if ok else rng.choice(wrongs)
        item = {"question": question, "unit_test": tests, "data_source": "mbpp"}
        made.append(("passed" if ok else "failed", item, f"Here is the corrected code.\n```python\n{body}```\n"))
    return made


def toolkit_program(item: dict, revision: str) -> str:
    """The program the toolkit runs for an MBPP item: its import header, the revised code, the asserts."""
    code = revision.split("```python\n", 1)[1].split("```", 1)[0]
    return f"{PRELUDE}\n{code}\n{item['unit_test']}"


def run_plain(sources: list[str], timeout: float, width: int) -> list[str]:
    """One plain ``python -c`` per program, ``width`` at a time."""
    def one(source: str) -> str:
        try:
            proc = subprocess.run([sys.executable, "-c", source], capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
            return "passed" if proc.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            return "timeout"

    with concurrent.futures.ThreadPoolExecutor(width) as pool:
        return list(pool.map(one, sources))


def cpu_meter():
    """CPU seconds of this process and all it started, from a cgroup-v1 cpuacct group (exec_throughput.py's);
    a function returning nan where none can be made (not root)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from exec_throughput import cpu_meter as meter

    return meter() or (lambda: float("nan"))


def compare(args) -> None:
    from critic_tasks.sandbox import get_executor

    probe = get_executor(**({"max_workers": args.workers} if args.workers else {}))  # the width, and the layer
    width, layer, reused = probe.max_workers, probe.isolation, probe.reuse_sandboxes
    probe.close()
    del probe
    made = make_items(args.n)
    expected = [status for status, _, _ in made]
    print(f"{args.n} items {dict(Counter(expected))}, timeout {args.timeout}s, {os.cpu_count()} CPUs, uid {os.getuid()}, "
          f"interpreter {sys.executable}; sandbox: isolation={layer} workers={width} pre-started={reused}; "
          f"load average {os.getloadavg()[0]:.1f}")
    options = {"max_workers": args.workers} if args.workers else {}
    ours, base, wall, cpu = [], [], {"ours": 0.0, "plain": 0.0}, {"ours": 0.0, "plain": 0.0}
    meter = cpu_meter()
    for lo in range(0, args.n, args.chunk):
        chunk = made[lo: lo + args.chunk]
        for side in ("ours", "plain") if (lo // args.chunk) % 2 == 0 else ("plain", "ours"):
            start, cpu_start = time.perf_counter(), meter()
            if side == "ours":
                executor = get_executor(**options) if options else None  # None: check_corrections builds it
                ours += [r.status for r in check_corrections("code_not_exec", [r for _, _, r in chunk],
                                                             [item for _, item, _ in chunk], executor=executor,
                                                             timeout_s=args.timeout)]
                if executor is not None:
                    executor.close()
                del executor
                gc.collect()  # the executor check_corrections built (a cycle) ends its sandboxes: counted here
            else:
                base += run_plain([toolkit_program(item, rev) for _, item, rev in chunk], args.timeout, width)
            wall[side] += time.perf_counter() - start
            cpu[side] += meter() - cpu_start
    for name, statuses in (("ours", ours), ("plain", base)):
        wrong = sum(s != e for s, e in zip(statuses, expected))
        print(f"  {name:6s} statuses {dict(Counter(statuses))}  unexpected: {wrong}")
    print(f"  {'':6s} {'seconds':>9s} {'items/s':>9s} {'CPU-seconds':>12s} {'CPU ms/item':>12s}")
    for side in ("ours", "plain"):
        print(f"  {side:6s} {wall[side]:9.2f} {args.n / wall[side]:9.1f} {cpu[side]:12.2f} "
              f"{1000 * cpu[side] / args.n:12.1f}")
    print(f"  ours vs plain: {wall['plain'] / wall['ours']:.2f}x (target >= 2x); load average now "
          f"{os.getloadavg()[0]:.1f}")


def profile(args) -> None:
    """Where one item's time goes in a pre-started worker (see the module's docstring)."""
    from critic_tasks.protocols.criticbench.correction.programs import build_code_test_pair, find_entry_point
    from critic_tasks.sandbox import Pair, SandboxExecutor, _workers

    marks: list[tuple[str, float]] = []
    current = []
    send, wait, run = _workers._Side.send, _workers._Worker._await, _workers._Worker.run

    def side_name(worker, side):
        return "tester" if side is worker.tester else "candidate"

    def timed_send(self, line, fds=()):
        marks.append((f"sent {line.split()[0]} to the {side_name(current[0], self)}", time.perf_counter()))
        return send(self, line, fds)

    def timed_await(self, side, wants, until, statuses):
        reply = wait(self, side, wants, until, statuses)
        marks.append((f"the {side_name(self, side)} said {reply.split()[0]}", time.perf_counter()))
        return reply

    def timed_run(self, pair, start):
        current[:] = [self]
        marks.append(("start", time.perf_counter()))
        try:
            return run(self, pair, start)
        finally:
            marks.append(("done", time.perf_counter()))

    _workers._Side.send, _workers._Worker._await, _workers._Worker.run = timed_send, timed_await, timed_run
    pairs = []
    for _, item, revision in make_items(args.n):
        code = revision.split("```python\n", 1)[1].split("```", 1)[0]
        pairs.append(Pair(*build_code_test_pair(code, item["unit_test"], "mbpp", find_entry_point(code)),
                          timeout_s=args.timeout))
    executor = SandboxExecutor(max_workers=1)
    print(f"{args.n} items one after another in one worker; isolation={executor.isolation} "
          f"pre-started={executor.reuse_sandboxes} uid {os.getuid()}; load average {os.getloadavg()[0]:.1f}")
    executor.run_pairs(pairs[:2])  # its sandboxes boot
    worker = executor._live[0]
    zygotes = {name: _zygote_pid(side.running.proc.pid) for name, side in (("tester", worker.tester),
                                                                              ("candidate", worker.candidate))}
    janitors = {name: _children(pid) for name, pid in zygotes.items()}  # as root: the zygote's one child between items
    before = {name: _cpu_of(pid) for name, pid in zygotes.items()}
    before_janitors = {name: sum(_cpu_of(pid)[0] for pid in pids) for name, pids in janitors.items()}
    marks.clear()
    wall, own = time.perf_counter(), time.process_time()
    executor.run_pairs(pairs)
    wall, own = time.perf_counter() - wall, time.process_time() - own
    after = {name: _cpu_of(pid) for name, pid in zygotes.items()}
    after_janitors = {name: sum(_cpu_of(pid)[0] for pid in pids) for name, pids in janitors.items()}
    executor.close()
    phases, previous = defaultdict(list), None
    for name, at in marks:
        if previous is not None and name != "start":
            phases[f"{previous[0]} -> {name}"].append(1000 * (at - previous[1]))
        previous = (name, at)
    print(f"  wall per item {1000 * wall / args.n:.1f} ms")
    for name, times in phases.items():
        print(f"    {name:52s} median {statistics.median(times):6.2f} ms, mean {statistics.mean(times):6.2f}")
    print(f"  CPU per item: harness {1000 * own / args.n:.2f} ms" + "".join(
        f"; {name}'s zygote {1000 * (after[name][0] - before[name][0]) / args.n:.2f} ms, its janitor "
        f"{1000 * (after_janitors[name] - before_janitors[name]) / args.n:.2f} ms, its items' processes "
        f"{1000 * (after[name][1] - before[name][1]) / args.n:.2f} ms" for name in zygotes))


def _zygote_pid(pid: int) -> int:
    """The zygote under a worker's launch (bwrap, bwrap's init in the PID namespace, the interpreter): the first
    process down the first children that is not bwrap."""
    while open(f"/proc/{pid}/comm").read().strip() == "bwrap":
        pid = _children(pid)[0]
    return pid


def _children(pid: int) -> list[int]:
    return [int(c) for task in os.listdir(f"/proc/{pid}/task") for c in open(f"/proc/{pid}/task/{task}/children").read().split()]


def _cpu_of(pid: int) -> tuple[float, float]:
    """(CPU seconds of ``pid`` itself, of the children it reaped)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=240)
    parser.add_argument("--chunk", type=int, default=120, help="items per check_corrections call (and per alternation)")
    parser.add_argument("--timeout", type=float, default=4.0, help="check_corrections' default")
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (default: the executor's, 2 x CPUs)")
    parser.add_argument("--profile", action="store_true", help="where one item's time goes (see above)")
    args = parser.parse_args()
    profile(args) if args.profile else compare(args)


if __name__ == "__main__":
    main()
