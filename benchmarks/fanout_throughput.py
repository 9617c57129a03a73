"""Judge (or reviser) fan-out: one model behind two latency-bound servers vs behind one.

    python benchmarks/fanout_throughput.py [--servers 2 --latency 0.5 --slots 32 --concurrency 32 --n 256]
                                           [--role judge|reviser] [--repeats 2] [--json FILE]

Starts ``--servers`` copies of ``latency_server.py`` (this folder): each answers a request after ``--latency``
seconds with ``--slots`` in service at once, so one server's capacity at our concurrency is
``min(slots, concurrency) / latency`` requests/s and the servers' summed capacity is that times ``--servers``. Our
client (``OpenAIBackend``, as ``critic_tasks.llm.complete`` calls it, below the cache) sends the same ``--n``
prompts to the first server alone (``BASE_URL=url1``) and to all of them (``BASE_URL=url1,url2,...``; CONCURRENCY is
per endpoint, so the pool keeps ``servers x concurrency`` in flight), in ABBA order over ``--repeats``. Reported:
requests/s of each, the ratio (target >= 1.8x with two servers), the pool's share of the summed capacity over the
whole call (target >= 90% at 0.5 s) and over the servers' span (first request served to last), the client's CPU per
request (this process; the servers are others), and how many requests each server answered. ``--role reviser`` runs
the same with reviser settings and reviser replies (the reviser pool uses the same backend).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import latency_server  # noqa: E402
from judge_throughput import make_prompts  # noqa: E402

from critic_tasks.llm import LLMSettings  # noqa: E402
from critic_tasks.llm.backends.openai_compatible import OpenAIBackend  # noqa: E402


def reviser_prompts(n: int) -> list[str]:
    return [f"Revise the response given the feedback.\n[Feedback]\n{latency_server.plan(f'The answer is {i}.')}"
            for i in range(n)]


def run(settings: LLMSettings, prompts: list[str], urls: list[str]) -> dict:
    for url in urls:
        latency_server.fetch_stats(url, reset=True)
    backend = OpenAIBackend(settings)
    start, cpu = time.monotonic(), time.process_time()
    replies = backend.generate(prompts, progress=False)
    wall, cpu = time.monotonic() - start, time.process_time() - cpu  # the client's CPU (servers: other processes)
    failed = [r.error for r in replies if r.text is None]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, e.g. {failed[0]}")
    stats = [latency_server.fetch_stats(url) for url in urls]
    served = [s["served"] for s in stats]
    used = [s for s in stats if s["served"]]
    span = max(s["last_end"] for s in used) - min(s["first_start"] for s in used)
    return {"wall_s": wall, "req_per_s": len(prompts) / wall, "span_req_per_s": sum(served) / span,
            "cpu_ms_per_request": 1000 * cpu / len(prompts),
            "served": served, "texts": [r.text for r in replies]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--slots", type=int, default=32, help="requests each server serves at once")
    ap.add_argument("--concurrency", type=int, default=32, help="our requests in flight per endpoint")
    ap.add_argument("--n", type=int, default=256, help="prompts per run")
    ap.add_argument("--role", choices=("judge", "reviser"), default="judge")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    reply = "judge" if args.role == "judge" else "reviser"
    servers = [latency_server.start_server(args.latency, args.slots, reply=reply) for _ in range(args.servers)]
    urls = [url for _, url in servers]
    one_capacity = min(args.slots, args.concurrency) / args.latency
    pool_capacity = one_capacity * args.servers
    prompts = make_prompts(args.n) if args.role == "judge" else reviser_prompts(args.n)
    common = dict(backend="openai", model="m", api_key="none", cache=None, concurrency=args.concurrency,
                  max_tokens=32, timeout=600, max_tries=1, role=args.role)
    sides = {"one server": LLMSettings(base_url=urls[0], **common),
             f"{args.servers} servers": LLMSettings(base_url=",".join(urls), **common)}
    try:
        run(sides["one server"], prompts[:4], urls)  # warm up outside the timings
        runs = {name: [] for name in sides}
        for rep in range(args.repeats):
            order = list(sides.items()) if rep % 2 == 0 else list(sides.items())[::-1]  # ABBA
            for name, settings in order:
                runs[name].append(run(settings, prompts, urls))
                print(f"  run {rep + 1}: {name}: {runs[name][-1]['wall_s']:.2f} s", flush=True)
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=30)

    def pooled(rs):
        wall = sum(r["wall_s"] for r in rs)
        return {"wall_s": wall / len(rs), "req_per_s": args.n * len(rs) / wall,
                "span_req_per_s": statistics.fmean(r["span_req_per_s"] for r in rs),
                "cpu_ms_per_request": statistics.fmean(r["cpu_ms_per_request"] for r in rs),
                "served": [sum(r["served"][i] for r in rs) for i in range(args.servers)], "texts": rs[0]["texts"]}

    rows = {name: pooled(rs) for name, rs in runs.items()}
    (_, one), (_, pool) = rows.items()
    same = sum(a == b for a, b in zip(one["texts"], pool["texts"]))
    caps = {"one server": one_capacity, f"{args.servers} servers": pool_capacity}
    print(f"\n{args.servers} latency servers (latency {args.latency} s, {args.slots} slots each); {args.role}; "
          f"concurrency {args.concurrency} per endpoint; {args.n} prompts x {args.repeats} repeat(s); identical "
          f"replies: {same}/{args.n}\n")
    print(f"{'':14s} {'wall s':>7s} {'req/s':>7s} {'capacity':>9s} {'share':>6s} {'in span':>7s} {'CPU ms/req':>10s}"
          "  served per server")
    for name, r in rows.items():
        print(f"{name:14s} {r['wall_s']:7.2f} {r['req_per_s']:7.1f} {caps[name]:9.1f} "
              f"{r['req_per_s'] / caps[name]:6.0%} {r['span_req_per_s'] / caps[name]:7.0%} "
              f"{r['cpu_ms_per_request']:10.2f}  {r['served']}")
    ratio = pool["req_per_s"] / one["req_per_s"]
    print(f"\n{args.servers} servers / one: {ratio:.2f}x (target >= 1.8x with two); the pool at "
          f"{pool['req_per_s'] / pool_capacity:.0%} of the servers' summed capacity ({pool_capacity:.0f} req/s; "
          f"target >= 90%) over the whole call, {pool['span_req_per_s'] / pool_capacity:.0%} over the servers' span")
    for name, r in rows.items():  # our CPU in this process over the call's wall time; the rest is the servers' latency
        print(f"our share of the wall time ({name}): {r['cpu_ms_per_request'] * r['req_per_s'] / 1000:.0%} (the "
              f"client's CPU); the rest is waiting on the servers")
    if args.json:
        out = {k: {m: v for m, v in r.items() if m != "texts"} for k, r in rows.items()}
        out.update(ratio=ratio, capacity_one=one_capacity, capacity_pool=pool_capacity, args=vars(args),
                   identical_replies=same)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
