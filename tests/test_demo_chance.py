"""The demo keeps its word (issue 46, item 6): it runs the first items of each domain (a pair: both orders), prints
each score beside its chance line on those items, and estimates its time left from the rate of its own first
replies, updated as it goes. Fast: no model (the real demo is timed in benchmarks/demo_time.py)."""

from __future__ import annotations

import pytest

from critic_tasks import chance
from critic_tasks.adapters.lm_eval import demo, private
from critic_tasks.engine import task_docs
from critic_tasks.reports.tables import format_table


def _first_per_domain(docs: list[dict], items: int, pairs: bool) -> list[int]:
    """By hand: the indices of the first ``items`` documents of each domain (``pairs``: the first ``items`` forward
    documents of each domain, each with the reverse that follows it)."""
    seen, out = {}, []
    for i, doc in enumerate(docs):
        if pairs and doc["order"] == "reverse":
            if out and out[-1] == i - 1:
                out.append(i)
            continue
        seen[doc["domain"]] = seen.get(doc["domain"], 0) + 1
        if seen[doc["domain"]] <= items:
            out.append(i)
    return out


def test_the_demo_runs_the_first_items_of_each_domain_and_whole_pairs(monkeypatch):
    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    samples = demo.demo_samples(["critic"])
    for task, pairs in (("critic_feedback", False), ("critic_meta", False), ("critic_correction", False),
                        ("critic_comparison", True)):
        docs = task_docs(task, data_dir="sample")
        assert samples[task] == _first_per_domain(docs, 1, pairs), task
        domains = {docs[i]["domain"] for i in samples[task]}
        assert domains == {d["domain"] for d in docs}  # every domain, the code ones (the sandbox) included
    assert demo.demo_generations(["critic"], samples) == sum(len(v) for v in samples.values()) == 40
    assert demo.demo_generations(["critic"]) == 141  # --per_domain 0: the whole sample
    assert demo.demo_samples(["critic"], 0) is None
    # documents without a domain (JudgeBench's categories): the task's whole bundled sample
    judgebench = demo.demo_samples(["critic_judgebench"])["critic_judgebench"]
    assert judgebench == list(range(len(task_docs("critic_judgebench", data_dir="sample"))))


def test_each_score_is_printed_beside_its_chance_line_on_the_items_run(monkeypatch):
    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    tasks = ["critic_feedback", "critic_comparison"]
    samples = demo.demo_samples(tasks)
    floors = demo.demo_chance(tasks, samples)
    for task in tasks:
        docs = task_docs(task, data_dir="sample")
        by_hand = chance.chance_line(task, [docs[i] for i in _first_per_domain(docs, 1, "comparison" in task)])
        assert floors[task] == by_hand.chance
    results = {"critic_feedback": {"spearman,none": 40.0, "score,none": 70.0, "parse_rate,none": 100.0},
               "critic_comparison": {"accuracy,none": 50.0, "consistency,none": 20.0}}
    main = format_table(results, floors).split("\n\n")[0]  # the dimension table (the judge-bias lines follow it)
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in main.splitlines()}
    assert rows[("task", "metric")] == ["value", "chance", "note"]
    assert rows[("critic_feedback", "spearman")] == ["40.00", f"{floors['critic_feedback']['spearman']:.2f}"]
    assert rows[("critic_comparison", "consistency")][:2] == ["20.00", "100.00"]  # a consistent coin reads nothing
    assert rows[("critic_feedback", "parse_rate")] == ["100.00", "-"]  # no floor for a parse rate
    assert "chance" not in format_table(results).splitlines()[0]  # other tables keep their columns


def test_the_time_left_is_estimated_from_the_first_replies_and_updated(capsys):
    kept = []
    for done, seconds, share in ((1, 4.0, 0.05), (7, 4.0, 0.2), (8, 10.0, 0.25), (9, 11.0, 0.3), (16, 20.0, 0.5),
                                 (31, 40.0, 0.8), (32, 41.0, 0.82), (40, 50.0, 1.0)):
        demo._report_progress(done, 40, seconds, share, kept)
    lines = capsys.readouterr().err.strip().splitlines()
    # after the first batch (a quarter of the work in 10 s: 30 s left), then at each further quarter, then at the end
    assert lines == ["critic-eval demo: 8/40 replies generated in 10 s: about 30 s left",
                     "critic-eval demo: 16/40 replies generated in 20 s: about 20 s left",
                     "critic-eval demo: 31/40 replies generated in 40 s: about 10 s left",
                     "critic-eval demo: 40/40 replies generated in 50 s"]


def test_generation_progress_counts_the_replies_the_model_generates(monkeypatch):
    from lm_eval.api.model import CacheHook
    from lm_eval.models.huggingface import HFLM

    def generate(self, requests, disable_tqdm=False):  # what HFLM does per reply: the cache hook, then the next
        out = []
        for request in requests:
            out.append(f"reply to {request}")
            self.cache_hook.add_partial("generate_until", (request.args[0], {}), out[-1])
        return out

    monkeypatch.setattr(HFLM, "generate_until", generate)
    model = HFLM.__new__(HFLM)
    model.cache_hook = CacheHook(None)
    seen = []

    class Request:  # lm-eval's Instance: its args are (context, gen_kwargs)
        def __init__(self, context):
            self.args = (context, {})

        def __str__(self):
            return self.args[0]

    requests = [Request("x" * 872), Request("y" * 372), Request("z" * 372)]  # weights 1000, 500, 500
    with private.generation_progress(lambda done, total, seconds, share, kept: seen.append((done, total, share))):
        assert HFLM.generate_until(model, requests) == [f"reply to {r}" for r in requests]
    assert seen == [(1, 3, 0.5), (2, 3, 0.75), (3, 3, 1.0)]
    assert HFLM.generate_until is generate and CacheHook.add_partial is not None  # restored
    HFLM.generate_until(model, [Request("d")])
    assert len(seen) == 3


def test_the_generation_bar_shows_its_count_not_its_own_estimate():
    """A newcomer's demo showed lm-eval's bar at '1/40 [03:22<2:11:18, 202.01s/it]' (its estimate from a first batch of
    8 replies at once) beside the demo's 'about 9 min 15 s left'; inside the demo the bar keeps the count and the
    elapsed time only. Other bars, and the bar after the demo, are lm-eval's own."""
    import io

    from lm_eval.models import huggingface

    def drawn(desc: str) -> str:
        out = io.StringIO()
        bar = huggingface.tqdm(total=40, desc=desc, file=out, mininterval=0, miniters=1)
        bar.update(8)
        bar.close()
        return out.getvalue().replace("\r", "\n").strip().splitlines()[-1]

    with private.generation_progress(lambda *args: None):
        line = drawn("Running generate_until requests")
        assert line.startswith("Running generate_until requests: 8/40 replies [") and "<" not in line, line
        assert "it/s" not in line and "s/it" not in line, line
        assert "<" in drawn("Running loglikelihood requests")  # lm-eval's other bars as they were
    assert "<" in drawn("Running generate_until requests")  # restored after the demo


@pytest.mark.parametrize("per_domain, expected", [(4, 115), (2, 62)])
def test_per_domain_sets_the_cut(monkeypatch, per_domain, expected):
    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    samples = demo.demo_samples(["critic"], per_domain)
    by_hand = 0
    for task, pairs in (("critic_feedback", False), ("critic_meta", False), ("critic_correction", False),
                        ("critic_comparison", True)):
        by_hand += len(_first_per_domain(task_docs(task, data_dir="sample"),
                                         max(1, per_domain // 2) if pairs else per_domain, pairs))
    assert demo.demo_generations(["critic"], samples) == by_hand == expected
