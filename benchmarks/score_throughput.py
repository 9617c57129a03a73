"""Scoring throughput on a CriticBench-sized workload (~6k items) from recorded model outputs.

    python benchmarks/score_throughput.py [--items 6000]

Replies are DeepSeek-67B-Chat's released CriticEval outputs (../shared/data/...), cycled up to
the requested size; human labels are synthetic (seeded), since the released predictions carry
none. Two ways of scoring the same records run side by side:

* ours: the lm-eval path users run (TaskFunctions.process_results per item, then
  TaskFunctions.aggregate per metric key, the per-quality / per-difficulty breakdowns included);
* baseline: the original toolkit's per-item parsing (regex + eval fallback) and one scipy
  Spearman per dimension — what the published numbers were computed with.

Target: ours under 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from scipy import stats

from critic_tasks import registry
from critic_tasks.adapters.lm_eval.task_functions import TaskFunctions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from toolkit_reference import toolkit_extract, toolkit_option  # noqa: E402  (shared with the parser tests)

PRED_DIR = Path(__file__).resolve().parents[2] / "shared/data/criticeval/example-predictions/deepseek-67b-chat-hf"
QUALITIES = ("low", "med", "high", "super-high")


def load_workload(n_items: int, seed: int = 0):
    rng = random.Random(seed)
    replies = {"feedback": [], "meta": [], "comparison": []}
    for path in sorted(PRED_DIR.glob("*_obj*.json")):
        kind = "comparison" if "comp_feedback" in path.name else "meta" if "meta" in path.name else \
            "feedback" if "feedback_obj" in path.name else None
        if kind:
            replies[kind] += [v["prediction"] for v in json.loads(path.read_text()).values()]
    share = {"feedback": 0.4, "meta": 0.25, "comparison": 0.35}
    docs = []
    for dim, frac in share.items():
        pool, count = replies[dim], int(n_items * frac)
        for i in range(count):
            text = pool[i % len(pool)]
            if dim == "comparison":
                pair = i // 2
                doc = {"dimension": dim, "domain": "chat", "pair_id": f"p{pair}",
                       "order": "forward" if i % 2 == 0 else "reverse",
                       "preference": "ABC"[pair % 3], "difficulty": "easy" if pair % 3 == 0 else "hard"}
            else:
                key = "feedback_score" if dim == "feedback" else "meta_feedback_score"
                doc = {"dimension": dim, "domain": "chat", key: float(rng.randint(1, 7)),
                       ("quality" if dim == "feedback" else "raw_quality"): QUALITIES[rng.randrange(3)]}
            docs.append((doc, text))
    return docs


def score_ours(workload):
    """The lm-eval path: each kind's ``process_results`` per item (a row per metric key, carrying its (family,
    base)), then ``TaskFunctions.aggregate`` on each key's rows, as the generated YAMLs name them."""
    functions = {dim: TaskFunctions(registry.kind_for(dim, "obj")) for dim in ("feedback", "meta", "comparison")}
    keyed: dict[tuple[str, str], list] = {}
    for doc, text in workload:
        for key, row in functions[doc["dimension"]].process_results(doc, [text]).items():
            keyed.setdefault((doc["dimension"], key), []).append(row)
    return {f"{dim}/{key}": TaskFunctions.aggregate(rows) for (dim, key), rows in keyed.items()}


def score_baseline(workload):
    preds, gold, pairs = {"feedback": [], "meta": []}, {"feedback": [], "meta": []}, {}
    for doc, text in workload:
        dim = doc["dimension"]
        if dim == "comparison":
            option = toolkit_option(text)
            pairs.setdefault(doc["pair_id"], {})[doc["order"]] = (option, doc["preference"])
        else:
            value = toolkit_extract(text, "Decision" if dim == "feedback" else "Score")
            preds[dim].append(value if value != "" else 0.0)
            gold[dim].append(doc["feedback_score" if dim == "feedback" else "meta_feedback_score"])
    out = {f"{d}/spearman": stats.spearmanr(preds[d], gold[d]).statistic * 100 for d in preds}
    hits = [p["forward"][0] == p["forward"][1] and p.get("reverse", ("",))[0] not in ("", p["forward"][0])
            for p in pairs.values() if "forward" in p]
    out["comparison/accuracy_loose"] = 100 * sum(hits) / len(hits)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=6000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    workload = load_workload(args.items)
    timings = {}
    for name, fn in (("ours", score_ours), ("toolkit baseline", score_baseline)):
        best = min(_timed(fn, workload) for _ in range(args.repeats))
        timings[name] = best
        print(f"{name:18s} {len(workload)} items  {best:7.3f} s  {len(workload) / best:10.0f} items/s")
    ratio = timings["toolkit baseline"] / timings["ours"]
    print(f"ratio (baseline time / ours): {ratio:.2f}x   target: ours < 30 s -> "
          f"{'met' if timings['ours'] < 30 else 'MISSED'}")
    print("our share of the wall time: 100% (scoring recorded outputs: no model or server runs here)")


def _timed(fn, workload):
    start = time.perf_counter()
    fn(workload)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
