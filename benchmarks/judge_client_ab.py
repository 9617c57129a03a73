"""One judge backend file against the current one, side by side in one process (e.g. main's, before a change).

    python benchmarks/judge_client_ab.py --old /path/to/other/critic_tasks/llm/backends/openai_compatible.py
        [--n 128 --repeats 8 --latency 0.5 --slots 64]

Both ``OpenAIBackend`` classes (the other file loaded under another module name; its imports resolve to this
checkout) send the same prompts to one ``latency_server.py`` (concurrency = slots), alternating old/new, new/old, ...
after one warm-up call each; identical replies are required. Printed per side (medians over the runs): requests/s
over the whole call (backend built, event loop, connections and all) as a share of the capacity (slots / latency),
the same over the server's span (its first request's start to its last one's end), and this process's CPU per
request (the client's: the server is another process), which is also our share of the wall time.
"""

from __future__ import annotations

import argparse
import importlib.util
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the other openai_compatible.py")
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--slots", type=int, default=64)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("critic_old_backend", args.old)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    sides = {"old": old.OpenAIBackend, "new": OpenAIBackend}
    capacity = args.slots / args.latency
    proc, url = latency_server.start_server(args.latency, args.slots, reply="judge")
    runs: dict[str, list] = {name: [] for name in sides}
    try:
        settings = LLMSettings(role="judge", backend="openai", model="judge", base_url=url, cache=None,
                               concurrency=args.slots, max_tokens=32, timeout=600, max_tries=1)
        prompts = make_prompts(args.n)
        for cls in sides.values():
            cls(settings).generate(prompts[:2], progress=False)  # warm-up: imports, TLS context
        texts = {}
        for rep in range(args.repeats):
            for name in (("old", "new") if rep % 2 == 0 else ("new", "old")):
                latency_server.fetch_stats(url, reset=True)
                start, cpu = time.monotonic(), time.process_time()
                replies = sides[name](settings).generate(prompts, progress=False)
                wall, cpu = time.monotonic() - start, time.process_time() - cpu
                stats = latency_server.fetch_stats(url)
                texts[name] = [r.text for r in replies]
                if any(t is None for t in texts[name]):
                    raise SystemExit(f"{name}: a request failed: {next(r.error for r in replies if r.text is None)}")
                runs[name].append({"whole": args.n / wall / capacity, "cpu_ms": 1000 * cpu / args.n, "share": cpu / wall,
                                   "span": stats["served"] / (stats["last_end"] - stats["first_start"]) / capacity})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"latency {args.latency} s, {args.slots} slots, concurrency {args.slots}, {args.n} prompts x {args.repeats} "
          f"runs a side; identical replies: {texts['old'] == texts['new']}")
    for name, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"{name}: whole call {med['whole']:.0%} of the capacity (best {max(r['whole'] for r in rs):.0%}), "
              f"server span {med['span']:.0%}, client CPU {med['cpu_ms']:.2f} ms/req; our share of the wall time "
              f"{med['share']:.0%}; runs {' '.join(format(r['whole'], '.0%') for r in rs)}")


if __name__ == "__main__":
    main()
