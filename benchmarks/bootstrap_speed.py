"""Every bootstrap interval of a full CriticBench dev run, vectorised vs a naive loop (target: < 2 s on 2 cores).

    python benchmarks/bootstrap_speed.py [--resamples 1000] [--naive_resamples 100]

Synthetic records shaped like the dev split (item counts per domain from the released predictions; qualities,
difficulties, judge groups as in the data): every registered dev task (all-domain and per-domain, objective and
judge-scored) and every interval key the registry declares for it, computed the way a run computes them (the
records each key accepts, the family's interval function). The baseline recomputes the metric family itself on
each resample in a Python loop, on the same keys; it runs fewer resamples and is scaled up to the same count.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from critic_tasks import registry
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, percentile_interval
from critic_tasks.protocols.criticbench import scoring
from critic_tasks.protocols.criticbench.prompts import DOMAIN_NAMES
from critic_tasks.protocols.criticbench.scoring import CorrectionRecord, JudgedRecord, LikertRecord, VerdictRecord

FEEDBACK = {d: 50 for d in DOMAIN_NAMES} | {"code_exec": 63, "code_not_exec": 41}
META = {d: 60 for d in DOMAIN_NAMES} | {"math_cot": 72, "math_pot": 72, "summary": 58}
PAIRS = {d: 50 for d in DOMAIN_NAMES}
SUB = {d: 60 for d in DOMAIN_NAMES}


def records(rng) -> dict[str, list]:
    """Task kind name -> records of every domain."""
    out: dict[str, list] = {}
    out["feedback"] = [LikertRecord(d, pred=float(rng.integers(1, 8)), parsed=True, gold=float(rng.integers(1, 8)),
                                    quality=str(rng.choice(["low", "med", "high", "super-high"])))
                       for d, n in FEEDBACK.items() for _ in range(n + 10)]
    out["meta"] = [LikertRecord(d, pred=float(rng.integers(1, 8)), parsed=True, gold=float(rng.integers(1, 8)),
                                quality=str(rng.choice(["low", "med", "high"]))) for d, n in META.items() for _ in range(n)]
    out["comparison"] = [VerdictRecord(d, pair_id=f"{d}-{i}", order=o, verdict=str(rng.choice(list("ABC"))), parsed=True,
                                       gold=str(rng.choice(list("AB"))), difficulty=["easy", "hard"][i % 2])
                         for d, n in PAIRS.items() for i in range(n) for o in ("forward", "reverse")]
    out["correction"] = [CorrectionRecord(d, quality=str(rng.choice(["low", "med", "high"])),
                                          passed=(bool(rng.random() < 0.4),), parsed=(True,), truncated=(False,))
                         for d in ("math_cot", "math_pot", "code_exec", "code_not_exec") for _ in range(FEEDBACK[d])]
    for dim, groups in (("feedback_sub", ["low", "med", "high", "super-high"]), ("comparison_sub", ["easy", "hard"]),
                        ("correction_sub", ["low", "med", "high"])):
        domains = DOMAIN_NAMES if dim != "correction_sub" else ("translate", "chat", "qa", "summary", "harmlessness")
        out[dim] = [JudgedRecord(d, group=str(rng.choice(groups)), score=float(rng.integers(1, 11)), item=f"{d}-{i}")
                    for d in domains for i in range(SUB[d])]
    return out


def workload(recs: dict[str, list]) -> list[tuple[registry.Metric, list]]:
    """(interval metric, the records it accepts) for every dev task of the registry, as a run routes them."""
    jobs = []
    for task in registry.TASKS.values():
        if task.split != "dev" or task.repeats > 1:
            continue
        pool = [r for r in recs[task.kind] if r.domain in task.domains]
        for m in task.kind_spec.metrics:
            if m.ci == "low":
                jobs.append((m, [r for r in pool if m.accepts(r)]))
    return jobs


def vectorised(jobs, settings) -> float:
    start = time.perf_counter()
    for m, rs in jobs:
        scoring.INTERVALS[m.family](rs, m.base, settings)
    return time.perf_counter() - start


def naive(jobs, resamples: int, seed: int = 0) -> float:
    """The family recomputed on each resample of units (pairs kept together; domains as strata where the metric is
    a mean of domain means), one resample at a time."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for m, rs in jobs:
        family = scoring.FAMILIES[m.family]
        if m.family == "pairwise":
            units: dict = {}
            for r in rs:
                units.setdefault(r.pair_id, []).append(r)
            groups = {"all": list(units.values())}
        elif m.family in ("correction", "judge"):
            groups = {}
            for r in rs:
                groups.setdefault(r.domain, []).append([r])
        else:
            groups = {"all": [[r] for r in rs]}
        reps = []
        for _ in range(resamples):
            sample = [r for g in groups.values() for i in rng.integers(0, len(g), len(g)) for r in g[i]]
            if m.family == "pairwise":  # a pair drawn twice counts twice: give each draw its own id
                sample = [VerdictRecord(**{**vars(r), "pair_id": f"{r.pair_id}#{k // 2}"}) for k, r in enumerate(sample)]
            reps.append(family(sample).get(m.base, 0.0))
        percentile_interval(np.array(reps), 0.95)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--naive_resamples", type=int, default=20, help="the loop baseline's resamples (scaled up)")
    args = parser.parse_args()
    import logging

    logging.getLogger("critic_tasks").setLevel(logging.ERROR)  # undefined per-subset correlations warn
    recs = records(np.random.default_rng(0))
    jobs = workload(recs)
    settings = BootstrapSettings(resamples=args.resamples)
    vectorised(jobs[:3], settings)  # warm-up (imports, first allocations)
    ours = min(vectorised(jobs, settings) for _ in range(3))
    base = naive(jobs, args.naive_resamples) * args.resamples / args.naive_resamples
    n_items = sum(len(v) for v in recs.values())
    print(f"{len(jobs)} intervals over {len({m.key for m, _ in jobs})} keys; {n_items} records in the all-domain pools; "
          f"{args.resamples} resamples each")
    print(f"{'method':<34}{'seconds':>10}{'ratio':>10}")
    print(f"{'naive loop (family per resample)':<34}{base:>10.2f}{1.0:>10.1f}   "
          f"(ran {args.naive_resamples} resamples, scaled x{args.resamples / args.naive_resamples:g})")
    print(f"{'vectorised (ours)':<34}{ours:>10.2f}{base / ours:>10.1f}x  target < 2 s: "
          f"{'met' if ours < 2 else 'MISSED'}")
    print("our share of the wall time: 100% (metric arithmetic on records: no model or server runs here)")


if __name__ == "__main__":
    main()
