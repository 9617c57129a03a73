"""Critique -> revision pipeline throughput against a latency-bound OpenAI-compatible server, vs the toolkit's pattern.

    python benchmarks/revision_pipeline.py [--items 64 --revisers 2 --latency 0.5 --slots 64 --concurrency 64]
                                           [--protocol rco|multicritique] [--baseline-items N]

One ``latency_server.py`` (this folder) plays every model: each request is answered after ``--latency`` seconds with
``--slots`` served at once (a hosted API). Items are CriticBench-shaped documents built here (no data files, no
network): math_cot questions (gold answer), a few code_not_exec problems (unit tests, run in the sandbox) and a few
qa items (judged). Each item comes with a critique; the critique carries the revision the server's "reviser" will
return (``latency_server.plan``), so outcomes are known: most revisions fix the answer, every 4th math one does not.
The same work runs two ways:

* ours: ``critic_tasks.protocols.revision.pipeline.run`` -- every reviser's revisions at once (the pool in threads,
  each reviser with ``concurrency / revisers`` requests in flight, so ``--concurrency`` in all), then every judgment
  at once (``--concurrency``), asked while the checks run (answers, and the programs in one parallel sandbox batch);
* toolkit pattern (CriticEval's ``batch_chat``): the same prompts, reviser by reviser, in batches of 8, each batch
  on a fresh ``multiprocessing.Pool(2)`` with a fresh connection per request (``judge_throughput.run_toolkit``);
  then the same judge prompts in the same pattern; then the checks one after another as the toolkit's
  ``correction_evaluator`` does: answers inline, each program a plain ``python`` subprocess with the toolkit's
  import header (``utils/exec.py``: numpy, ``from sympy import *``), 2 s timeout (``--toolkit-timeout``: that
  import alone can pass 2 s on a loaded machine, and the outcomes then differ). This side runs in a fresh
  interpreter of its own (``--toolkit-child``), timed there, as the toolkit runs as its own script.

Reported: items/s for both and the ratio (target >= 5x); the requests a run makes (revisions + judgments) over the
server's capacity at the configured concurrency, ``min(slots, concurrency) / latency`` requests/s, gives the items/s
a run could reach if only the server bounded it; ours as a share of that (target >= 90%), over the whole call and
over the server's span (first request's start to last one's end). Both sides must reach the same outcomes (pass
counts, judge values). The baseline is slow by design (about 4 x latency per 8 requests); ``--baseline-items``
runs it on the first N items only and reports its items/s from those.

Measured on our 2-core machine (the server and the client share its two cores), ``python
benchmarks/revision_pipeline.py`` (64 items: 48 math_cot, 8 code_not_exec, 8 qa; 2 revisers; rco; latency 0.5 s,
64 slots, concurrency 64)::

    64 items {'math_cot': 48, 'code_not_exec': 8, 'qa': 8}, 2 revisers, protocol rco; 320 requests (5.00 per item)
    server: latency 0.5 s, 64 slots; concurrency 64: capacity 128.0 req/s = 25.60 items/s; sandbox isolation bwrap
    same outcomes on both sides: True {'failed': 10, ..., 'passed': 102, ...}

                                                items   wall s  items/s  capacity
    toolkit pattern (batches of 8, Pool(2))        64    87.00    0.736      2.9%
    ours (pipeline.run, concurrency 64)            64     3.12   20.508     80.1%

    speed-up (ours / toolkit pattern): 27.88x (target >= 5x)
    ours at 80% of the server's capacity over the whole call (target >= 90%), 83% over the server's span; check
    phase 0.43 s of 3.12 s; server max in service 64

Before the judgments overlapped the checks: 24.1x and 68% (3.69 s, the checks 0.54 s of it between the two request
phases). What is left at 0.5 s is the client's own CPU (about 2 ms per request on one event loop, on the cores the
server also uses) and each phase's start. With ``--latency 2.0 --baseline-items 8`` (a hosted API's latency; the
toolkit side on the first 8 items): ours 10.67 s = 6.00 items/s, 94% of the capacity (95% over the server's span),
toolkit 0.194 items/s, 30.9x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import latency_server  # noqa: E402
from judge_throughput import run_toolkit, toolkit_child  # noqa: E402

from critic_tasks.core.answers import answers_match, extract_final_answer  # noqa: E402
from critic_tasks.core.parsing import parse_bracket_rating, parse_bracket_verdict  # noqa: E402
from critic_tasks.llm import LLMSettings  # noqa: E402
from critic_tasks.llm.backends.openai_compatible import OpenAIBackend  # noqa: E402
from critic_tasks.protocols.criticbench.correction import gold_answer  # noqa: E402
from critic_tasks.protocols.criticbench.correction.check import extract_code  # noqa: E402
from critic_tasks.protocols.revision import pipeline, prompts  # noqa: E402
from critic_tasks.protocols.revision.data import _doc, resolve_failure_rule  # noqa: E402
from critic_tasks.sandbox import SandboxExecutor  # noqa: E402

# utils/exec.py's header (exec_code_no_unit_test), as the toolkit prepends it to every program it runs
TOOLKIT_HEADER = (
    "import sys\nimport time\nimport itertools\nfrom itertools import accumulate, product, permutations, combinations\n"
    "import collections\nfrom collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\nimport math\nfrom math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, "
    "log, log2\nimport fractions\nfrom typing import List, Tuple\nimport numpy as np\nimport random\nimport heapq\n"
    "from heapq import *\nfrom sympy import *\n")
TOOLKIT_TIMEOUT = 2.0


# ---- the workload -------------------------------------------------------------------------------------------


def make_items(n: int) -> tuple[list[dict], list[str]]:
    """(documents, critiques): 3/4 math_cot, 1/8 code_not_exec, 1/8 qa, interleaved; outcomes planned."""
    docs, critiques = [], []
    for i in range(n):
        kind = "code" if i % 8 == 3 else "qa" if i % 8 == 6 else "math"
        a, b = 17 + 3 * i, 29 + 5 * i
        if kind == "math":
            wrong_fix = i % 4 == 1  # the reviser keeps an error
            answer = a * b + (1 if wrong_fix else 0)
            docs.append(_doc("utility", domain="math_cot", question=f"A crate holds {a} rows of {b} apples. How many "
                             f"apples are in the crate?", generation=f"{a} x {b} = {a * b + 10}. The answer is "
                             f"{a * b + 10}.", ground_truth_answer=f"{a} x {b} = {a * b}. The answer is {a * b}.",
                             quality="low", source_file="bench_math_cot.json", item_index=i))
            critiques.append(f"The multiplication is off: {a} x {b} is not {a * b + 10}. Recompute the product.\n"
                             + latency_server.plan(f"Recomputing: {a} x {b} = {answer}.\nThe answer is {answer}."))
        elif kind == "code":
            k = 2 + i % 5
            docs.append(_doc("utility", domain="code_not_exec", data_source="mbpp",
                             question=f"Write a function scale_{i}(xs) that multiplies every element of xs by {k}.",
                             generation=f"def scale_{i}(xs):\n    return [x + {k} for x in xs]\n",
                             unit_test=f"assert scale_{i}([1, 2, 3]) == [{k}, {2 * k}, {3 * k}]\n"
                                       f"assert scale_{i}([]) == []\nassert scale_{i}([-1, 0]) == [{-k}, 0]\n",
                             quality="med", source_file="bench_code_not_exec.json", item_index=i))
            fixed = f"def scale_{i}(xs):\n    return [x * {k} for x in xs]\n"
            critiques.append(f"It adds {k} instead of multiplying by {k}.\n"
                             + latency_server.plan(f"Fixed:\n```python\n{fixed}```"))
        else:
            docs.append(_doc("utility", domain="qa", question=f"Which is larger, {a} or {b}?",
                             generation=f"{a} is larger.", quality="high", source_file="bench_qa.json",
                             item_index=i))
            critiques.append(f"{b} is larger than {a}.\n" + latency_server.plan(f"{max(a, b)} is larger than {min(a, b)}."))
    for doc in docs:  # what the loader records on every document: the short variant's prompts, the default rule
        doc["variant"], doc["failure_rule"], doc["toolkit_dir"] = "short", resolve_failure_rule(None), ""
    return docs, critiques


def judge_jobs(protocol: str, docs: list[dict], first: list[str | None]) -> list[tuple[int, str, str]]:
    """The judgments ``pipeline.run`` asks for, in its order (for the toolkit side)."""
    jobs = []
    for i, (doc, text) in enumerate(zip(docs, first)):
        if text is None:
            continue
        if protocol == "multicritique" and not doc["check"]:
            jobs.append((i, "rqs", prompts.rating_prompt(doc, text)))
        elif protocol == "rco":
            jobs += [(i, "forward", prompts.pairwise_prompt(doc, doc["generation"], text)),
                     (i, "reverse", prompts.pairwise_prompt(doc, text, doc["generation"])),
                     (i, "rqs", prompts.rating_prompt(doc, text))]
    return jobs


# ---- the toolkit's pattern ----------------------------------------------------------------------------------


def toolkit_check(doc: dict, text: str | None, timeout: float = TOOLKIT_TIMEOUT) -> bool | None:
    """correction_evaluator's checks, one at a time: answers inline, code in a plain subprocess (toolkit header)."""
    if not doc["check"] or text is None:
        return None
    if doc["check"] == "final_answer":
        answer = extract_final_answer(text, doc["question"])
        return answer is not None and answers_match(answer, gold_answer(doc))
    code = extract_code(text)
    if not code:
        return False
    with tempfile.NamedTemporaryFile("w", suffix=".py", encoding="utf-8") as tf:
        tf.write(TOOLKIT_HEADER + code.rstrip() + "\n" + doc["unit_test"])
        tf.flush()
        try:
            return subprocess.run([sys.executable, tf.name], capture_output=True, timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            return False


def run_baseline(protocol, docs, critiques, revisers, judge, url, timeout=TOOLKIT_TIMEOUT):
    asks = [prompts.reviser_prompt(d, c) for d, c in zip(docs, critiques)]
    texts = []
    for s in revisers:
        payloads = [OpenAIBackend(s)._payload(p) for p in asks]
        texts.append(run_toolkit(url, payloads)[0])
    jobs = judge_jobs(protocol, docs, texts[0])
    verdicts = run_toolkit(url, [OpenAIBackend(judge)._payload(p) for _, _, p in jobs])[0] if jobs else []
    passed = [[toolkit_check(doc, t[i], timeout) for i, doc in enumerate(docs)] for t in texts]
    return outcome_summary(passed, jobs, verdicts), len(asks) * len(revisers) + len(jobs)


def _toolkit_child_main():
    """The toolkit side in a fresh interpreter (``--toolkit-child``, JSON in on stdin, out on stdout), timed there:
    the toolkit runs as its own single-threaded script, and forking its pools from our process (client and sandbox
    threads alive) could deadlock a child."""
    data = json.load(sys.stdin)
    docs, critiques = make_items(data["items"])
    revisers, judge = make_settings(data["url"], data["revisers"], data["concurrency"])
    start = time.monotonic()
    summary, requests = run_baseline(data["protocol"], docs, critiques, revisers, judge, f"{data['url']}/chat/completions",
                                     data["toolkit_timeout"])
    print(json.dumps({"summary": summary, "requests": requests, "t0": start, "t1": time.monotonic()}))


def outcome_summary(passed, jobs, verdicts) -> dict:
    out = Counter()
    for per in passed:
        out.update("passed" if p else "failed" for p in per if p is not None)
    for (_, kind, _), text in zip(jobs, verdicts):
        out[f"{kind}={parse_bracket_rating(text) if kind == 'rqs' else parse_bracket_verdict(text)}"] += 1
    return dict(sorted(out.items()))


# ---- ours ---------------------------------------------------------------------------------------------------


def run_ours(protocol, docs, critiques, revisers, judge, executor):
    phases = {}
    real_check = pipeline.check

    def timed_check(*args, **kwargs):  # the check phase's share of the wall time
        start = time.monotonic()
        try:
            return real_check(*args, **kwargs)
        finally:
            phases["check_s"] = time.monotonic() - start

    pipeline.check = timed_check
    try:
        records = pipeline.run(protocol, docs, critiques, revisers, judge, executor=executor, progress=False)
    finally:
        pipeline.check = real_check
    failed = [r.error for r in records if r.error]
    if failed:
        raise SystemExit(f"{len(failed)} items failed, e.g. {failed[0]}")
    passed = [[r.passed[k] for r in records] for k in range(len(revisers))]
    jobs, verdicts = [], []
    for i, r in enumerate(records):  # back to (kind, reply-like) pairs for the summary
        if r.judge_asked:
            values = dict(zip(("forward", "reverse"), r.prefs)) if protocol == "rco" else {}
            for kind in ("forward", "reverse"):
                if kind in values:
                    side = {"forward": {1.0: "B", 0.5: "C", 0.0: "A"}, "reverse": {1.0: "A", 0.5: "C", 0.0: "B"}}
                    jobs.append((i, kind, ""))
                    verdicts.append(f"[[{side[kind][values[kind]]}]]")
            jobs.append((i, "rqs", ""))
            verdicts.append(f"[[{int(r.rqs)}]]" if r.rqs is not None else "")
    return outcome_summary(passed, jobs, verdicts), phases


# ---- main ---------------------------------------------------------------------------------------------------


def make_settings(url: str, n_revisers: int, concurrency: int) -> tuple[list[LLMSettings], LLMSettings]:
    common = dict(backend="openai", base_url=url, cache=None, max_tokens=256, timeout=600, max_tries=1)
    revisers = [LLMSettings(role="reviser", model=f"reviser-{k}", member=f"r{k}",
                            concurrency=max(1, concurrency // n_revisers), **common) for k in range(n_revisers)]
    return revisers, LLMSettings(role="judge", model="judge", concurrency=concurrency, **common)


def main():
    if sys.argv[1:] == ["--toolkit-child"]:
        return _toolkit_child_main()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=64)
    ap.add_argument("--revisers", type=int, default=2, help="revisers in the pool")
    ap.add_argument("--protocol", choices=pipeline.PROTOCOLS, default="rco")
    ap.add_argument("--latency", type=float, default=0.5, help="the server's seconds per request")
    ap.add_argument("--slots", type=int, default=64, help="requests the server serves at once")
    ap.add_argument("--concurrency", type=int, default=64, help="our requests in flight (split over the revisers)")
    ap.add_argument("--baseline-items", type=int, default=None, help="run the toolkit pattern on the first N items")
    ap.add_argument("--repeats", type=int, default=1, help="runs of ours (the best and the mean are shown)")
    ap.add_argument("--toolkit-timeout", type=float, default=TOOLKIT_TIMEOUT,
                    help="the toolkit side's seconds per program (default: the toolkit's 2 s; its header imports "
                         "numpy and sympy, which alone can take longer than that on a loaded machine)")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    if args.concurrency < args.revisers:
        ap.error("--concurrency must be at least --revisers")

    docs, critiques = make_items(args.items)
    n_base = min(args.baseline_items or args.items, args.items)
    executor = SandboxExecutor()
    proc, url = latency_server.start_server(args.latency, args.slots, reply="auto")
    try:
        revisers, judge = make_settings(url, args.revisers, args.concurrency)
        capacity_rps = min(args.slots, args.concurrency) / args.latency

        pipeline.run(args.protocol, docs[:8], critiques[:8], revisers, judge, executor=executor, progress=False)  # warm-up
        ours_runs = []
        for _ in range(args.repeats):
            latency_server.fetch_stats(url, reset=True)
            start, cpu = time.monotonic(), time.process_time()
            ours_summary, phases = run_ours(args.protocol, docs, critiques, revisers, judge, executor)
            wall, cpu = time.monotonic() - start, time.process_time() - cpu  # this process: the sandbox's programs
            stats = latency_server.fetch_stats(url)                        # and the server run elsewhere
            ours_runs.append({"wall_s": wall, "cpu_s": cpu, "requests": stats["served"], "check_s": phases.get("check_s", 0.0),
                              "span_s": stats["last_end"] - stats["first_start"], "server_max": stats["max_in_service"]})
            print(f"  ours: {wall:.2f} s, {stats['served']} requests", flush=True)

        latency_server.fetch_stats(url, reset=True)
        child = toolkit_child(["--toolkit-child"], {"url": url, "items": n_base, "revisers": args.revisers,
                                                    "concurrency": args.concurrency, "protocol": args.protocol,
                                                    "toolkit_timeout": args.toolkit_timeout},
                              script=os.path.abspath(__file__))
        base_summary, base_wall = child["summary"], child["t1"] - child["t0"]
        base_stats = latency_server.fetch_stats(url)
        print(f"  toolkit pattern: {base_wall:.2f} s, {base_stats['served']} requests", flush=True)
        if n_base == args.items:
            same = base_summary == ours_summary
        else:
            same_sub, _ = run_ours(args.protocol, docs[:n_base], critiques[:n_base], revisers, judge, executor)
            same = same_sub == base_summary
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    best = min(ours_runs, key=lambda r: r["wall_s"])
    mean_wall = statistics.fmean(r["wall_s"] for r in ours_runs)
    requests = best["requests"]
    ideal_items_s = args.items / (requests / capacity_rps)
    ours_items_s = args.items / mean_wall
    base_items_s = n_base / base_wall
    ratio = ours_items_s / base_items_s
    share = ours_items_s / ideal_items_s
    span_share = statistics.fmean(r["requests"] / r["span_s"] for r in ours_runs) / capacity_rps
    kinds = Counter(d["domain"] for d in docs)

    print(f"\n{args.items} items {dict(kinds)}, {args.revisers} revisers, protocol {args.protocol}; "
          f"{requests} requests ({requests / args.items:.2f} per item)")
    print(f"server: latency {args.latency} s, {args.slots} slots; concurrency {args.concurrency}: capacity "
          f"{capacity_rps:.1f} req/s = {ideal_items_s:.2f} items/s; sandbox isolation {executor.isolation}")
    print(f"same outcomes on both sides: {same} {ours_summary}" + ("" if same else f"; toolkit: {base_summary}") + "\n")
    print(f"{'':42s} {'items':>6s} {'wall s':>8s} {'items/s':>8s} {'capacity':>9s}")
    print(f"{'toolkit pattern (batches of 8, Pool(2))':42s} {n_base:6d} {base_wall:8.2f} {base_items_s:8.3f} "
          f"{base_items_s / ideal_items_s:9.1%}")
    print(f"{f'ours (pipeline.run, concurrency {args.concurrency})':42s} {args.items:6d} {mean_wall:8.2f} "
          f"{ours_items_s:8.3f} {share:9.1%}")
    print(f"\nspeed-up (ours / toolkit pattern): {ratio:.2f}x (target >= 5x)")
    print(f"ours at {share:.0%} of the server's capacity over the whole call (target >= 90%), {span_share:.0%} over "
          f"the server's span; check phase {statistics.fmean(r['check_s'] for r in ours_runs):.2f} s of "
          f"{mean_wall:.2f} s; server max in service {max(r['server_max'] for r in ours_runs)}")
    print(f"our share of the wall time: {sum(r['cpu_s'] for r in ours_runs) / sum(r['wall_s'] for r in ours_runs):.0%} "
          "(this process's CPU: the pipeline, client and sandbox driver; the programs run in child processes); the "
          "rest is waiting on the server and the checks")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"items": args.items, "revisers": args.revisers, "protocol": args.protocol,
                       "latency": args.latency, "slots": args.slots, "concurrency": args.concurrency,
                       "requests": requests, "capacity_rps": capacity_rps, "ideal_items_per_s": ideal_items_s,
                       "ours": {"items_per_s": ours_items_s, "runs": ours_runs, "capacity_share": share,
                                "span_share": span_share},
                       "toolkit": {"items": n_base, "wall_s": base_wall, "items_per_s": base_items_s},
                       "ratio": ratio, "same_outcomes": same, "outcomes": ours_summary}, f, indent=2)


if __name__ == "__main__":
    main()
