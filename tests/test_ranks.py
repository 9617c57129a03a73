"""Data-parallel ranks: a two-process lm-eval run gives the numbers of a one-process run, and the judge and the
sandbox run once per item, on the rank that owns it (docs/scaling.md).

The two-process run is real: ``torchrun --nproc_per_node 2`` (gloo, on CPU) runs ``critic-eval`` twice, each rank
loading SmolLM2-135M-Instruct through lm-eval's ``hf`` model (``tests/ranks_run.py``: the rank and world size taken
from the process group, which lm-eval reads only with several GPUs), generating its share of the documents and
scoring them; rank 0 gathers and aggregates with lm-eval's own code. The one-process run scores the same
generations (the two ranks' request caches, merged, so it asks the model for nothing) and must give every metric
value the two ranks gave, intervals included (computed from each run's samples files, rank-tagged rows put back in
document order). The judge is a stub OpenAI-compatible server that logs each request;
the sandbox is the ordinary executor, which also logs each program it runs (``CRITIC_EXECUTOR=counting``).

Three ranks' documents: each task has 3 items under ``--limit 3``, so rank 0 gets 2 and rank 1 gets 1 and pads
(repeats its last request); rank 0 has the low-quality feedback item and rank 1 the medium one, so the per-quality
keys differ between ranks. Both were bugs (a KeyError at the gather; a code item checked once per padding copy).
"""

import ast
import collections
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, free_port
from stub_server import StubServer

from critic_tasks.adapters.lm_eval import ranks
from critic_tasks.reports.results import read_results

JUDGED, CHECKED, OBJECTIVE = "critic_feedback_sub_chat", "critic_correction_code_exec", "critic_feedback_chat"
LIMIT = 3


def _run(tmp: Path, name: str, nproc: int, judge_url: str, cache: str, model_args: str) -> dict:
    out = tmp / name
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "CRITICBENCH_DATA_DIR": "sample", "ACCELERATE_USE_CPU": "1",
           "CRITIC_JUDGE_BACKEND": "openai", "CRITIC_JUDGE_MODEL": "stub", "CRITIC_JUDGE_BASE_URL": judge_url,
           "CRITIC_JUDGE_API_KEY": "not-a-key", "CRITIC_JUDGE_CACHE": str(out / "judge.sqlite"),  # each run asks
           "CRITIC_EXECUTOR": "counting", "CRITIC_TEST_EXEC_LOG": str(out / "exec.log"),
           "LMEVAL_LOG_LEVEL": "INFO"}  # lm-eval's "Requests remaining" line (critic-eval shows its warnings only)
    launch = ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--master_addr",
               "127.0.0.1", "--master_port", str(free_port())] if nproc > 1 else [sys.executable])
    argv = [*launch, str(REPO / "tests" / "ranks_run.py"), "--model", "hf-ranks", "--model_args",
            model_args, "--device", "cpu", "--tasks", f"{OBJECTIVE},{JUDGED},{CHECKED}",
            "--limit", str(LIMIT), "--apply_chat_template", "--gen_kwargs", "max_gen_toks=64", "--batch_size", "4",
            "--use_cache", cache, "--log_samples", "--output_path", str(out / "results")]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    results = list((out / "results").rglob("results_*.json"))
    assert len(results) == 1, results  # written once, by rank 0
    samples = {}
    for path in (out / "results").rglob("samples_*.jsonl"):
        task = path.name.split("_20")[0].removeprefix("samples_")
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    log = out / "exec.log"
    runs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    # read as critic-eval summary / report read it: the intervals computed from the samples files beside it
    return {"results": read_results(results[0]), "samples": samples, "runs": runs,
            "log": proc.stderr}


def _keys(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {k for (k,) in conn.execute("SELECT key FROM unnamed")}


def _merge(dbs: list[Path], into: Path) -> None:
    with sqlite3.connect(into) as conn:
        conn.execute("CREATE TABLE unnamed (key TEXT PRIMARY KEY, value BLOB)")
        for db in dbs:
            conn.execute("ATTACH DATABASE ? AS part", (str(db),))
            conn.execute("INSERT OR IGNORE INTO unnamed SELECT key, value FROM part.unnamed")
            conn.commit()
            conn.execute("DETACH DATABASE part")


@pytest.mark.parametrize("world", [2, 3, 4])
def test_rows_come_back_in_document_order(world):
    """lm-eval's sharding (rank r: documents r, r + W, ...) and gather (rank by rank), simulated: what the
    aggregation sees equals one process's rows, for a key every document feeds and for one only some do."""
    docs = list(range(11))
    feeds = {"all": lambda d: True, "some": lambda d: d % 3 == 1}  # "some": absent from some ranks
    gathered = {key: [] for key in feeds}
    for rank in range(world):
        per_rank = [ranks.every_key({k: {"doc": d} for k, f in feeds.items() if f(d)}, list(feeds), (rank, world))
                    for d in docs[rank::world]]
        for key in feeds:
            gathered[key] += [values[key] for values in per_rank]  # every rank has every key: no KeyError
    for key, fed in feeds.items():
        assert ranks.in_doc_order(gathered[key]) == [{"doc": d} for d in docs if fed(d)]
    from critic_tasks.adapters.lm_eval import task_functions

    assert task_functions.TaskFunctions.process_group() is None  # one process: the hooks call nothing of ranks, rows pass unchanged
    assert ranks.in_doc_order([{"doc": 1}, {"doc": 0}]) == [{"doc": 1}, {"doc": 0}]


def test_padding_replies_are_dropped():
    """lm-eval pads a short rank by repeating its last request: that instance gets the copies' replies too."""
    assert ranks.own_replies([["a"], ["b"], ["c", "c", "c"]], 1) == [["a"], ["b"], ["c"]]
    assert ranks.own_replies([list("abcde"), list("fghijfghij")], 5) == [list("abcde"), list("fghij")]
    assert ranks.own_replies([["a", "b"], ["c", "d"]], 1) == [["a", "b"], ["c", "d"]]  # not padding: kept


@pytest.mark.slow
def test_two_ranks_give_the_numbers_of_one_process(tmp_path, smollm2_model_args_fast):
    started = time.monotonic()
    with StubServer() as judge:
        two = _run(tmp_path, "two", 2, judge.base_url, str(tmp_path / "cache2" / "requests"), smollm2_model_args_fast)
        judged_two = judge.prompts()
        # every request generated once, split between the ranks: two request caches, disjoint, 3 tasks x LIMIT
        rank0, rank1 = tmp_path / "cache2" / "requests_rank0.db", tmp_path / "cache2" / "requests_rank1.db"
        assert _keys(rank0) and _keys(rank1) and not _keys(rank0) & _keys(rank1)
        assert len(_keys(rank0) | _keys(rank1)) == 3 * LIMIT
        (tmp_path / "cache1").mkdir()
        _merge([rank0, rank1], tmp_path / "cache1" / "requests_rank0.db")
        one = _run(tmp_path, "one", 1, judge.base_url, str(tmp_path / "cache1" / "requests"), smollm2_model_args_fast)
        judged_one = judge.prompts()[len(judged_two):]
    assert "Requests remaining: 0" in one["log"]  # the one-process run scored the ranks' generations

    # the setting this test is about: both ranks worked, and rank 1 padded (its last request has extra replies)
    for rank in (0, 1):
        assert f"Building contexts for {JUDGED} on rank {rank}..." in two["log"]
    assert any(len(resps) > 1 for s in two["samples"][CHECKED] for resps in s["resps"])

    # the same metric values, intervals included; a breakdown key no item feeds is null under ranks, absent in one
    for task, metrics in one["results"].items():
        assert {k: v for k, v in two["results"][task].items() if k in metrics} == metrics, task
        extra = {k: v for k, v in two["results"][task].items() if k not in metrics}
        assert all(v == ("N/A" if "_stderr," in k else None) for k, v in extra.items()), (task, extra)
    assert one["results"][OBJECTIVE]["spearman_low,none"] is not None  # fed by rank 0's items only
    assert one["results"][OBJECTIVE]["spearman_med,none"] is not None  # fed by rank 1's items only
    assert "spearman_ci_low,none" in one["results"][OBJECTIVE] and "pass_rate_ci_high,none" in one["results"][CHECKED]

    # every sample logged once (gathered to rank 0), in both runs
    for run in (one, two):
        for task in (OBJECTIVE, JUDGED, CHECKED):
            assert sorted(s["doc_id"] for s in run["samples"][task]) == list(range(LIMIT)), task

    # the judge: each item's prompt asked once across the ranks, the same prompts as one process
    assert len(judged_two) == LIMIT and len(set(judged_two)) == LIMIT
    assert collections.Counter(judged_two) == collections.Counter(judged_one)

    # the sandbox: each parsed revision run once, by the rank that owns it; the same programs as one process
    records = [r if isinstance(r, dict) else ast.literal_eval(r)  # lm-eval logs them as their repr
               for s in two["samples"][CHECKED] for r in s["filtered_resps"][0]]
    outcomes = [o for r in records for o in r["checks"]]  # each sample's check outcome, kept in its record
    assert len(outcomes) == LIMIT  # one per item: rank 1's padding copies were not checked
    parsed = sum(o["parsed"] for o in outcomes)
    assert parsed >= 1, "no revision had code to run: raise max_gen_toks"
    programs = collections.Counter(r["program"] for r in two["runs"])
    assert sum(programs.values()) == parsed and max(programs.values()) == 1
    assert programs == collections.Counter(r["program"] for r in one["runs"])
    assert {r["rank"] for r in two["runs"]} <= {0, 1} and len({(r["rank"], r["pid"]) for r in two["runs"]}) <= 2
    print(f"two ranks + one process: {time.monotonic() - started:.0f} s; judged {len(judged_two)}, "
          f"ran {sum(programs.values())} program(s)")
