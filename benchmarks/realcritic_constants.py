"""RealCritic's chance line on the released free-form tasks: how long the exact constant search takes, and a check
that its pruning never refuses a pair the scorer would accept.

    # the time of each task's search (``chance._task_best``), first run and again (the gradings are per process)
    python benchmarks/realcritic_constants.py time --data ../shared/data/realcritic --grading authors
    # soundness: every (constant, gold) pair ``scoring.could_match`` refuses, graded by the scorer (``scoring.grade``)
    python benchmarks/realcritic_constants.py check --data ../shared/data/realcritic --grading strict \\
        --task math --shard 0/2 --seconds 300 --out check.json

``check`` takes the pairs in a seeded random order and stops at ``--seconds``: it says how many it graded of how
many, and lists every pair the scorer accepted (a pruning that is wrong). Measured results: docs/reports.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FREE_FORM = ("math", "minerva_math", "olympiadbench", "college_math", "gsm8k")


def _docs(data: str, task: str, grading: str) -> list[dict]:
    from critic_tasks.protocols.realcritic import scoring, stages

    docs = stages.load_task_docs(stages.CROSS, data, subset=task, grading=grading)
    for doc in docs:
        scoring.shown_correct(doc)
    return docs


def time_search(args) -> None:
    from critic_tasks.protocols.realcritic import chance, scoring

    counted = {"grade": 0}
    grade = scoring.grade

    def counting(*a):
        counted["grade"] += 1
        return grade(*a)

    scoring.grade = counting
    for task in args.task or FREE_FORM[:4]:
        docs = _docs(args.data, task, args.grading)
        counted["grade"] = 0
        start = time.perf_counter()
        best, left_open = chance._task_best(docs, args.budget, args.search_seconds)
        spent = time.perf_counter() - start
        print(json.dumps({"task": task, "grading": args.grading, "items": len(docs),
                          "golds": len(chance.constant_candidates(docs)), "seconds": round(spent, 1),
                          "symbolic_gradings": counted["grade"], "left_open": left_open,
                          "best": {k: [round(v, 3), a] for k, (v, a) in best.items()}}), flush=True)


def check(args) -> None:
    from critic_tasks.protocols.realcritic import chance, scoring

    task = args.task[0]
    docs = _docs(args.data, task, args.grading)
    readable: dict = {}
    refused: dict[tuple, tuple[str, dict]] = {}
    open_pairs = 0
    start = time.perf_counter()
    for answer_text in chance.constant_candidates(docs):
        reply, reads = chance.boxed(answer_text), {}
        for doc in docs:
            kind = scoring.reading_of(doc)
            if kind not in reads:
                reads[kind] = scoring.read(doc, reply)[0]
            answer = reads[kind]
            if scoring.grade_without_symbolic(answer, doc, chance._gold_readable(doc, readable)) is not None:
                continue
            key = (answer, chance._gold_key(doc))
            open_pairs += 1
            if key not in refused and not scoring.could_match(answer, doc):
                refused[key] = (answer, doc)
    filtered = time.perf_counter() - start
    keys = sorted(refused, key=repr)
    random.Random(44).shuffle(keys)
    if args.structured_first:
        keys.sort(key=lambda key: not _structured(*refused[key]))  # stable: random order within each group
    index, shards = (int(x) for x in args.shard.split("/"))
    mine = keys[index::shards]
    accepted, graded = [], 0
    deadline = time.perf_counter() + args.seconds
    for key in mine:
        if time.perf_counter() > deadline:
            break
        answer, doc = refused[key]
        if scoring.grade(answer, doc)[0]:
            accepted.append([answer, list(key[1])])
        graded += 1
    structured = sum(_structured(*refused[key]) for key in mine[:graded])
    result = {"task": task, "grading": args.grading, "shard": args.shard, "open_pairs": open_pairs,
              "graded_structured": structured,
              "refused_distinct": len(keys), "in_shard": len(mine), "graded": graded, "accepted": accepted,
              "filter_seconds": round(filtered, 1), "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(result), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result))


def _structured(answer: str, doc: dict) -> bool:
    """A pair the grader's necessary condition refuses by more than two scalar values far apart. The authors' rule:
    an equation, a text no parser reads, an undefined function, a set, tuple or matrix on either side. The strict
    rule: a relation on both sides (``sympy_compare_relational``'s condition), a side with a value only at the
    second point (``_mv_points``), or a side math-verify reads with a derivative, integral or substitution
    (``calculus_done``)."""
    from critic_tasks.core.answers import mv_signature
    from critic_tasks.protocols.realcritic import authors_grading, scoring

    if scoring.rule_of(doc) != scoring.AUTHORS_RULE:
        sides = (mv_signature(answer), mv_signature(doc["gold"]))
        if any(side is None for side in sides):
            return False
        second_only = any(d is not None and d[0] == "expr" and d[1] is not None and d[1][1] is None
                          and d[1][2] is not None for side in sides for d in side)
        return (second_only or all(any(d is not None and d[0] == "rel" for d in side) for side in sides)
                or any(_has_calculus(text) for text in (answer, doc["gold"])))
    sides = (authors_grading.facts_of(answer.strip()), authors_grading.facts_of(doc["authors_gold"].strip(), True))
    return "=" in answer + doc["authors_gold"] or any(
        f is None or f["kind"] != "expr" or re.search(r"\w\(", f["str"]) for f in sides)


def _has_calculus(text: str) -> bool:
    from sympy import Basic, Derivative, Integral, Subs

    from critic_tasks.core.answers import _mv_parse_here

    return any(isinstance(x, Basic) and x.has(Derivative, Integral, Subs) for x in _mv_parse_here(text))


def main() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("time", "check"))
    parser.add_argument("--data", required=True, help="a checkout of tangzhy/RealCritic (../shared/data/realcritic)")
    parser.add_argument("--grading", default="authors", choices=("authors", "strict"))
    parser.add_argument("--task", action="append", help="a free-form task (repeat; check takes one)")
    parser.add_argument("--budget", type=int, default=None, help="time: at most this many symbolic gradings a task")
    parser.add_argument("--search-seconds", type=float, default=None,
                        help="time: the search's bound a task (default chance.SYMBOLIC_SECONDS)")
    parser.add_argument("--shard", default="0/1", help="check: this process's share, i/n")
    parser.add_argument("--seconds", type=float, default=300.0, help="check: stop grading after this long")
    parser.add_argument("--out", help="check: write the result here as JSON")
    parser.add_argument("--structured-first", action="store_true",
                        help="check: grade first the pairs refused by more than two far values (the authors' "
                             "rule: an equation, text, function, set, tuple or matrix; strict: two relations, a value "
                             "only at the second point, a derivative or integral)")
    args = parser.parse_args()
    if args.mode == "time":
        time_search(args)
    else:
        check(args)


if __name__ == "__main__":
    main()
