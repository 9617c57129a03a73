"""--limit keeps pairs whole (issue 46, item 7): under critic-eval, --limit N on a task that asks each pair in both
orders (JudgeBench, CriticBench's objective comparison, CritiqueLLM's pairwise tasks) runs its first N pairs, both
orders of each, and the results' task metadata says so (``limit_pairs``); JudgeBench --limit 1 used to ask one order
of one pair, so its inconsistency was blank. Plain lm_eval keeps its own count of documents (docs/usage.md). Fast:
lm-eval's dummy model on the bundled samples."""

from __future__ import annotations

import json
import math

import pytest
from helpers import cli_without_services

from critic_tasks import cli, registry
from critic_tasks.adapters.lm_eval.private import whole_pair_limit
from critic_tasks.engine import task_docs

PAIRED_ON_SAMPLES = [t.name for t in registry.TASKS.values() if t.kind_spec.pairwise
                     and t.kind_spec.protocol in ("criticbench", "judgebench")]


def _swapped(forward: dict, reverse: dict) -> bool:
    """The reverse document shows the forward one's two responses the other way round (every *_a / *_b pair of
    fields swapped); the rest differs only in what the order changes (the order, a prompt rendered from them)."""
    pairs = [k[:-2] for k in forward if k.endswith("_a") and k[:-2] + "_b" in forward]
    return bool(pairs) and all(forward[p + "_a"] == reverse[p + "_b"] and forward[p + "_b"] == reverse[p + "_a"]
                               for p in pairs)


@pytest.mark.parametrize("name", PAIRED_ON_SAMPLES)
@pytest.mark.parametrize("limit", [1, 2, 3, 0.5, 0.01, 1000])
def test_a_limit_counts_pairs_and_covers_both_orders_of_each(name, limit):
    docs = task_docs(name, data_dir="sample")
    pair_count = sum(d["order"] == "forward" for d in docs)
    count, pairs = whole_pair_limit(name, docs, limit)
    wanted = min(pair_count, math.ceil(pair_count * limit) if limit < 1 else limit)  # lm-eval's rounding, in pairs
    assert pairs == wanted
    kept = docs[:count]
    assert [d["order"] for d in kept] == ["forward", "reverse"] * wanted  # every pair here asked in both orders
    assert all(_swapped(kept[i], kept[i + 1]) for i in range(0, len(kept), 2))


def test_other_tasks_keep_lm_evals_count():
    assert whole_pair_limit("critic_feedback", task_docs("critic_feedback", data_dir="sample"), 3) is None
    assert whole_pair_limit("some_lm_eval_task", [], 3) is None


@pytest.mark.parametrize(("task", "pair_field"), [("critic_judgebench", "pair_id"),
                                                  ("critic_comparison", "item_index")])
def test_critic_eval_limit_1_asks_both_orders_of_one_pair_and_says_so(task, pair_field, monkeypatch, tmp_path):
    cli_without_services(monkeypatch)
    out = tmp_path / "out"
    assert cli.main(["--model", "dummy", "--tasks", task, "--limit", "1", "--metadata", '{"data_dir": "sample"}',
                     "--output_path", str(out), "--log_samples"]) == 0
    [samples_file] = out.rglob(f"samples_{task}_*.jsonl")
    rows = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert [r["doc"]["order"] for r in rows] == ["forward", "reverse"]
    assert rows[0]["doc"][pair_field] == rows[1]["doc"][pair_field]
    [results_file] = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    assert results["n-samples"][task]["effective"] == 2
    assert results["configs"][task]["metadata"]["limit_pairs"] == 1


@pytest.mark.parametrize("limit", [1, 2, 0.5])
def test_an_rmbench_limit_counts_comparisons_both_orders_of_each(limit, monkeypatch, tmp_path):
    """RM-Bench asks each of a prompt's 3 x 3 comparisons in both orders (a pairwise kind): --limit N is its first
    N comparisons (docs/usage.md said only CriticBench's, JudgeBench's and CritiqueLLM's tasks counted pairs)."""
    from rewardbench_authors import REWARDBENCH, authors_mirror

    if not REWARDBENCH.is_dir():
        pytest.skip(f"{REWARDBENCH} (the authors' checkout, shared data) is absent")
    from critic_tasks.protocols import authors
    from critic_tasks.protocols.rewardbench import authors_prompts

    monkeypatch.setenv(authors.MIRROR_ENV, str(authors_mirror(tmp_path / "mirror")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for cached in (authors._text, authors_prompts.pairwise_v1):
        cached.cache_clear()
    docs = task_docs("critic_rmbench", data_dir="sample")
    comparisons = len({d["pair_id"] for d in docs})
    count, asked = whole_pair_limit("critic_rmbench", docs, limit)
    wanted = math.ceil(comparisons * limit) if limit < 1 else limit
    assert asked == wanted and count == 2 * wanted
    kept = docs[:count]
    assert [d["order"] for d in kept] == ["forward", "reverse"] * wanted
    assert all(kept[i]["pair_id"] == kept[i + 1]["pair_id"] and _swapped(kept[i], kept[i + 1])
               for i in range(0, count, 2))
    for cached in (authors._text, authors_prompts.pairwise_v1):
        cached.cache_clear()


def test_a_rewardbench_limit_under_orders_both_counts_pairs(monkeypatch, tmp_path):
    """RewardBench asks a pair once by default (lm-eval's count of documents), and both orders with `orders: both`:
    then --limit 1 asked the forward order alone, so its inconsistency was blank (docs/protocols/rewardbench.md's
    open item). Its documents say which: under `orders: both` N counts pairs, both orders of each."""
    from rewardbench_authors import REWARDBENCH, authors_mirror

    if not REWARDBENCH.is_dir():
        pytest.skip(f"{REWARDBENCH} (the authors' checkout, shared data) is absent")
    from critic_tasks.protocols import authors
    from critic_tasks.protocols.rewardbench import authors_prompts

    cli_without_services(monkeypatch)
    monkeypatch.setenv(authors.MIRROR_ENV, str(authors_mirror(tmp_path / "mirror")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for cached in (authors._text, authors_prompts.pairwise_v1, authors_prompts.sections):
        cached.cache_clear()
    single = task_docs("critic_rewardbench", data_dir="sample")
    assert whole_pair_limit("critic_rewardbench", single, 3) is None  # one seeded order a pair: documents counted
    both = task_docs("critic_rewardbench", data_dir="sample", orders="both")
    pairs = len({d["pair_id"] for d in both})
    for limit, wanted in ((1, 1), (3, 3), (0.5, math.ceil(pairs / 2)), (1000, pairs)):
        count, asked = whole_pair_limit("critic_rewardbench", both, limit)
        assert (count, asked) == (2 * wanted, wanted)
        assert [d["order"] for d in both[:count]] == ["forward", "reverse"] * wanted
        assert all(both[i]["pair_id"] == both[i + 1]["pair_id"] for i in range(0, count, 2))
    out = tmp_path / "out"
    assert cli.main(["--model", "dummy", "--tasks", "critic_rewardbench", "--limit", "1", "--metadata",
                     '{"data_dir": "sample", "orders": "both"}', "--output_path", str(out), "--log_samples"]) == 0
    [samples_file] = out.rglob("samples_critic_rewardbench_*.jsonl")
    rows = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert [r["doc"]["order"] for r in rows] == ["forward", "reverse"]
    [results_file] = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    assert results["configs"]["critic_rewardbench"]["metadata"]["limit_pairs"] == 1
    assert isinstance(results["results"]["critic_rewardbench"]["inconsistency,none"], float)
    for cached in (authors._text, authors_prompts.pairwise_v1, authors_prompts.sections):
        cached.cache_clear()
