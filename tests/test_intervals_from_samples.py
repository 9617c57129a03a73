"""An lm-eval run's intervals come from the per-document rows lm-eval logs with --log_samples (issue 30, point 2):
hand-written results and samples files, the intervals computed here with numpy's percentile bootstrap, one resample
at a time, and compared with what `critic-eval summary / check` and `reports.results` show."""

import json

import numpy as np
import pytest
from scipy import stats

from critic_tasks import cli
from critic_tasks.reports.results import load_runs, read_results

B, SEED = 300, 5
TIME = "2026-11-25T10-00-00.123456"  # lm-eval's date_id: the results file and its samples files share it


def _likert_rows(n=36, seed=2):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        gold = float(rng.integers(1, 8))
        parsed = bool(rng.random() > 0.1)
        pred = float(np.clip(gold + rng.integers(-3, 4), 1, 7)) if parsed else 4.0
        rows.append({"kind": "likert", "domain": ["chat", "qa", "math_cot"][i % 3], "pred": pred, "parsed": parsed,
                     "gold": gold, "quality": ["low", "med", "high"][i % 3 if i % 5 else 0]})
    return rows


def _correction_rows(n=30, seed=4):
    rng = np.random.default_rng(seed)
    return [{"kind": "correction", "domain": ["math_cot", "code_exec", "qa"][i % 3],
             "quality": ["low", "med", "high"][i % 3], "passed": [bool(rng.random() < 0.3 + 0.2 * (i % 3))],
             "parsed": [True], "invalid": False, "truncated": [False], "isolation": [], "identical": False}
            for i in range(n)]


def _canonical(rows, fields):
    """The documented order the draws index into: by the record's fields, as text, in field order."""
    return sorted(rows, key=lambda r: tuple(str(tuple(r[f]) if isinstance(r[f], list) else r[f]) for f in fields))


def _percentiles(reps, level=0.95):
    a = 100 * (1 - level) / 2
    return float(np.percentile(reps, a)), float(np.percentile(reps, 100 - a))


def _spearman_ci(rows):
    rows = [r for r in _canonical(rows, ("domain", "pred", "parsed", "gold", "quality")) if r["gold"] is not None]
    pred, gold = np.array([r["pred"] for r in rows]), np.array([r["gold"] for r in rows])
    reps = []
    for draw in np.random.default_rng(SEED).integers(0, len(rows), size=(B, len(rows))):
        p, g = pred[draw], gold[draw]
        reps.append(0.0 if len(set(p)) < 2 or len(set(g)) < 2 else 100 * stats.spearmanr(p, g).statistic)
    return _percentiles(reps)


def _pass_rate_ci(rows):
    """Mean of domain means; each domain (sorted) draws its own items from one generator, in turn."""
    rows = _canonical(rows, ("domain", "quality", "passed", "parsed", "invalid", "truncated", "isolation", "identical"))
    rng = np.random.default_rng(SEED)
    domains = sorted({r["domain"] for r in rows})
    values = {d: [100.0 * sum(r["passed"]) / len(r["passed"]) for r in rows if r["domain"] == d] for d in domains}
    draws = {d: rng.integers(0, len(values[d]), size=(B, len(values[d]))) for d in domains}
    reps = [np.mean([np.mean([values[d][i] for i in draws[d][b]]) for d in domains]) for b in range(B)]
    return _percentiles(reps)


def _line(doc_id, row, keys):
    """One samples line as lm-eval writes it: the document's fields, then process_results' values under its keys."""
    return {"doc_id": doc_id, "doc": {"item_index": doc_id}, "target": "", "arguments": {}, "resps": [["reply"]],
            "filtered_resps": ["reply"], "filter": "none", "metrics": list(keys), **{k: row for k in keys}}


def _feedback_keys(row):
    return ["spearman", "score", "parse_rate", f"spearman_{row['quality']}"]


def _write_run(folder, samples=True, ranks=0):
    folder.mkdir(parents=True, exist_ok=True)
    likert, corr = _likert_rows(), _correction_rows()
    results = {"results": {"critic_feedback": {"spearman,none": 12.5, "score,none": 56.25, "parse_rate,none": 90.0},
                           "critic_correction": {"pass_rate,none": 50.0, "score,none": 50.0, "parse_rate,none": 100.0}},
               "config": {"model_args": "pretrained=scripted"}}
    (folder / f"results_{TIME}.json").write_text(json.dumps(results))
    if not samples:
        return likert, corr
    fb = [_line(i, r, _feedback_keys(r)) for i, r in enumerate(likert)]
    if ranks:  # a data-parallel run: rank by rank (rank r: documents r, r + W, ...), every key, each value wrapped
        keys = ["spearman", "score", "parse_rate", "spearman_low", "spearman_med", "spearman_high"]
        fb = [{**_line(i, likert[i], keys),
               **{k: {"critic_rank": r, "world": ranks, "row": likert[i] if k in _feedback_keys(likert[i]) else None}
                  for k in keys}}
              for r in range(ranks) for i in range(r, len(likert), ranks)]
    cr = [_line(i, r, ["pass_rate", "score", "parse_rate", f"pass_rate_{r['quality']}"]) for i, r in enumerate(corr)]
    for task, lines in (("critic_feedback", fb), ("critic_correction", cr)):
        (folder / f"samples_{task}_{TIME}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in lines))
    return likert, corr


@pytest.fixture(autouse=True)
def _settings(monkeypatch):
    monkeypatch.setenv("CRITIC_CI_RESAMPLES", str(B))
    monkeypatch.setenv("CRITIC_CI_SEED", str(SEED))
    monkeypatch.delenv("CRITIC_CI", raising=False)
    monkeypatch.delenv("CRITIC_CI_LEVEL", raising=False)


@pytest.mark.parametrize("ranks", [0, 2, 3])
def test_a_results_file_gets_each_interval_from_its_samples_file(tmp_path, ranks):
    likert, corr = _write_run(tmp_path / "scripted", ranks=ranks)
    (run,) = load_runs(tmp_path)
    low, high = _spearman_ci(likert)
    assert run.interval("critic_feedback", "spearman") == pytest.approx((low, high), abs=1e-9)
    assert run.interval("critic_feedback", "score") == pytest.approx(((low + 100) / 2, (high + 100) / 2), abs=1e-9)
    assert run.interval("critic_feedback", "spearman_low") == pytest.approx(
        _spearman_ci([r for r in likert if r["quality"] == "low"]), abs=1e-9)
    assert run.interval("critic_correction", "pass_rate") == pytest.approx(_pass_rate_ci(corr), abs=1e-9)
    assert run.interval("critic_correction", "pass_rate_high") == pytest.approx(
        _pass_rate_ci([r for r in corr if r["quality"] == "high"]), abs=1e-9)
    assert run.interval("critic_feedback", "parse_rate") is None  # declared without one
    # read as lm-eval results: the keys a live run used to carry, under their names
    results = read_results(tmp_path)
    assert results["critic_feedback"]["spearman_ci_low,none"] == pytest.approx(low, abs=1e-9)
    assert results["critic_correction"]["pass_rate_ci_high,none"] == pytest.approx(_pass_rate_ci(corr)[1], abs=1e-9)


def test_intervals_the_file_carries_win_and_none_are_computed_when_turned_off(tmp_path, monkeypatch, capsys):
    """Our own results files (rescore, judge, an older lm-eval run) keep their keys: those are shown, not the
    samples'; CRITIC_CI=off where the file is read computes none."""
    _write_run(tmp_path / "scripted")
    path = tmp_path / "scripted" / f"results_{TIME}.json"
    data = json.loads(path.read_text())
    data["results"]["critic_feedback"].update({"spearman_ci_low,none": -1.0, "spearman_ci_high,none": 30.0})
    path.write_text(json.dumps(data))
    (run,) = load_runs(path)
    assert run.interval("critic_feedback", "spearman") == (-1.0, 30.0)  # the file's
    assert run.interval("critic_correction", "pass_rate") is not None  # the samples'
    assert cli.main(["check", str(path), "--min", "critic_feedback.spearman=10"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "ok   critic_feedback.spearman = 12.50 (95% CI [-1.00, 30.00]) >= 10")
    monkeypatch.setenv("CRITIC_CI", "off")
    (run,) = load_runs(path)
    assert run.interval("critic_correction", "pass_rate") is None and run.value("critic_correction", "pass_rate") == 50


def test_summary_prints_each_value_with_the_interval_from_the_samples(tmp_path, capsys):
    likert, corr = _write_run(tmp_path / "scripted")
    assert cli.main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    low, high = _spearman_ci(likert)
    rows = {tuple(line.split()[:2]): " ".join(line.split()[2:]) for line in out.splitlines()}
    assert rows[("critic_feedback", "spearman")] == f"12.50 [{low:.2f}, {high:.2f}]"
    plow, phigh = _pass_rate_ci(corr)
    assert rows[("critic_correction", "pass_rate")] == f"50.00 [{plow:.2f}, {phigh:.2f}]"
    assert "--log_samples" not in out  # every interval there: no note


def test_without_samples_no_interval_and_one_note(tmp_path, capsys):
    _write_run(tmp_path / "scripted", samples=False)
    (run,) = load_runs(tmp_path)
    assert run.interval("critic_feedback", "spearman") is None
    assert cli.main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {tuple(line.split()[:2]): " ".join(line.split()[2:]) for line in out.splitlines()}
    assert rows[("critic_feedback", "spearman")] == "12.50"
    assert out.count("--log_samples") == 1  # said once, not per row


def test_a_samples_line_without_a_record_is_one_error_naming_it(tmp_path, capsys):
    _write_run(tmp_path / "scripted")
    samples = tmp_path / "scripted" / f"samples_critic_feedback_{TIME}.jsonl"
    lines = samples.read_text().splitlines()
    lines[2] = json.dumps({**json.loads(lines[2]), "spearman": 0.5})
    samples.write_text("\n".join(lines) + "\n")
    assert cli.main(["summary", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"critic-eval: data error: {samples}:3: critic_feedback.spearman = 0.5: not a critic_tasks record (an lm-eval "
        "samples file of this task holds one under each metric key)")


def test_critic_eval_keeps_the_samples_the_intervals_need(monkeypatch, capsys):
    """`critic-eval ... --output_path DIR` without --log_samples: the flag is added (one line says so), unless the
    user gave it or wants no intervals; without an output path there is nothing to write them to."""
    from critic_tasks.adapters.lm_eval.runner import with_log_samples

    for argv in (["--model", "hf", "--tasks", "critic_feedback", "--output_path", "out"],
                 ["--model", "hf", "--tasks", "critic_feedback", "-o", "out/results.json"]):
        assert with_log_samples(argv) == [*argv, "--log_samples"]
        assert capsys.readouterr().err.startswith("critic-eval: --log_samples added")
        for given in ([*argv, "-s"], [*argv, "--log_samples"]):
            assert with_log_samples(given) == given
    no_output = ["--model", "hf", "--tasks", "critic_feedback"]
    assert with_log_samples(no_output) == no_output
    monkeypatch.setenv("CRITIC_CI", "off")
    assert with_log_samples(argv) == argv
    assert capsys.readouterr().err == ""
