"""`critic-eval compare` (issue 36, point 1): two made-up runs written as lm-eval output folders (results JSON +
--log_samples rows); B - A with its paired bootstrap interval and p-value checked against numpy / scipy written out
here, one resample at a time; identical runs give 0 and p = 1; runs on different items and an unknown --metric are
refused in one line."""

import json
from math import comb

import numpy as np
import pytest
from helpers import one_line
from scipy import stats
from test_intervals_from_samples import TIME, _line

from critic_tasks import cli, registry
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.core.records import Record
from critic_tasks.reports.compare import compare_runs
from critic_tasks.reports.results import load_runs

B, SEED, LEVEL = 200, 7, 0.95
SETTINGS = BootstrapSettings(resamples=B, level=LEVEL, seed=SEED)
N_FEEDBACK, N_PAIRS = 24, 20
DOMAINS = ["code_exec"] * 5 + ["math_cot"] * 9 + ["qa"] * 12  # unequal domains: a mean of domain means


@pytest.fixture(autouse=True)
def _settings(monkeypatch):
    monkeypatch.setenv("CRITIC_CI_RESAMPLES", str(B))
    monkeypatch.setenv("CRITIC_CI_SEED", str(SEED))
    monkeypatch.delenv("CRITIC_CI", raising=False)
    monkeypatch.delenv("CRITIC_CI_LEVEL", raising=False)


# ----------------------------------------------------------------------------- made-up runs


def _feedback(seed):
    """Likert records: the same gold scores in every run, the critic's predictions from ``seed``."""
    gold_rng, rng = np.random.default_rng(1), np.random.default_rng(seed)
    gold = gold_rng.integers(1, 8, N_FEEDBACK)
    return [{"kind": "likert", "domain": "chat", "pred": float(np.clip(g + rng.integers(-2 - seed % 3, 3), 1, 7)),
             "parsed": True, "gold": float(g), "quality": "low"} for g in gold]


def _comparison(seed):
    """Pairwise records, two documents (forward, reverse) per pair; each order's verdict right with some chance."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(N_PAIRS):
        gold = "AB"[p % 2]
        swapped = {"A": "B", "B": "A"}[gold]
        right = rng.random(2) < (0.55 + 0.03 * seed)
        forward = gold if right[0] else swapped
        reverse = swapped if right[1] else gold
        for order, verdict in (("forward", forward), ("reverse", reverse)):
            rows.append({"kind": "verdict", "domain": "chat", "pair_id": f"p{p:02d}", "order": order,
                         "verdict": verdict, "parsed": True, "gold": gold, "difficulty": "easy", "rule": "paper"})
    return rows


def _correction(seed):
    rng = np.random.default_rng(seed)
    return [{"kind": "correction", "domain": d, "quality": "low", "passed": [bool(rng.random() < 0.3 + 0.1 * seed)],
             "parsed": [True], "invalid": False, "truncated": [False], "isolation": [], "identical": False}
            for d in DOMAINS]


def _doc(task, i, variant):
    """The logged document, the same in both runs under the same doc_id but for the prompt variant each run chose
    (a run setting the loaders write into the document), and lm-eval's hash of it."""
    return {"doc": {"item_index": i, "task": task, "question": f"Question {i}?", "variant": variant},
            "doc_hash": f"{task}-{i}-{variant}"}


def _write_run(folder, seed, drop=None, variant="paper"):
    """An lm-eval output folder: results_<time>.json and a samples file per task (``drop``: a doc_id left out)."""
    folder.mkdir(parents=True, exist_ok=True)
    runs = {"critic_feedback": (_feedback(seed), ["spearman", "score"]),
            "critic_comparison": (_comparison(seed), ["accuracy"]),
            "critic_correction": (_correction(seed), ["pass_rate", "score"])}
    results = {"results": {}, "config": {"model_args": f"pretrained=critic-{seed}"}}
    for task, (rows, keys) in runs.items():
        lines = [{**_line(i, row, keys), **_doc(task, i, variant)} for i, row in enumerate(rows) if i != drop]
        (folder / f"samples_{task}_{TIME}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in lines))
        results["results"][task] = {f"{k},none": _reported(task, k, [s[k] for s in lines]) for k in keys}
    (folder / f"results_{TIME}.json").write_text(json.dumps(results))
    return {task: rows for task, (rows, _) in runs.items()}


def _reported(task, key, rows):
    """What the results file reports under ``key``: its metric over the rows' records (the tasks' aggregation)."""
    metric = registry.result_metric(task, key)
    value = registry.metric_value(metric.family, metric.base,
                                  [r for r in map(Record.from_dict, rows) if metric.accepts(r)])
    return 0.0 if value is None else float(value)


# ----------------------------------------------------------------------------- the reference, written out


def _percentiles(reps):
    a = 100 * (1 - LEVEL) / 2
    return float(np.percentile(reps, a)), float(np.percentile(reps, 100 - a))


def _spearman(p, g):
    return 0.0 if len(set(p)) < 2 or len(set(g)) < 2 else 100 * stats.spearmanr(p, g).statistic


def _permutation_p(diff, n):
    """(1 + #{|d*| >= |d|}) / (1 + B): each unit's two runs swapped where a fair coin (rng.integers(0, 2)) says."""
    observed = diff(np.zeros(n, bool))
    masks = np.random.default_rng(SEED).integers(0, 2, size=(B, n)).astype(bool)
    reached = sum(abs(diff(m)) >= abs(observed) - 1e-9 for m in masks)
    return (1 + reached) / (1 + B)


def _unit_order(names):
    """The units in the order the draws index: sorted by their names' text ('doc 10' before 'doc 2')."""
    return sorted(range(len(names)), key=lambda i: names[i])


def _feedback_reference(a, b):
    order = _unit_order([f"doc {i}" for i in range(N_FEEDBACK)])
    pa = np.array([a[i]["pred"] for i in order])
    pb = np.array([b[i]["pred"] for i in order])
    g = np.array([a[i]["gold"] for i in order])
    reps = []
    for draw in np.random.default_rng(SEED).integers(0, N_FEEDBACK, size=(B, N_FEEDBACK)):
        reps.append(_spearman(pb[draw], g[draw]) - _spearman(pa[draw], g[draw]))
    p = _permutation_p(lambda m: _spearman(np.where(m, pa, pb), g) - _spearman(np.where(m, pb, pa), g), N_FEEDBACK)
    return _spearman(pb, g) - _spearman(pa, g), _percentiles(reps), p


def _pair_flags(rows):
    """Per pair (in pair-id order): both orders gave the gold verdict (the paper's rule, written out)."""
    flags = []
    for p in range(N_PAIRS):
        fwd, rev = rows[2 * p], rows[2 * p + 1]
        flags.append(fwd["verdict"] == fwd["gold"] and rev["verdict"] != rev["gold"] and fwd["verdict"] != rev["verdict"])
    return np.array(flags, dtype=float) * 100


def _exact_mcnemar(n01, n10):
    n = n01 + n10
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(comb(n, k) for k in range(min(n01, n10) + 1)) / 2 ** n)


def _comparison_reference(a, b):
    fa, fb = _pair_flags(a), _pair_flags(b)  # 'pair p00' .. 'pair p19' sort as the pairs do
    reps = [fb[d].mean() - fa[d].mean()
            for d in np.random.default_rng(SEED).integers(0, N_PAIRS, size=(B, N_PAIRS))]
    n01 = int(((fa == 0) & (fb == 100)).sum())
    n10 = int(((fa == 100) & (fb == 0)).sum())
    return fb.mean() - fa.mean(), _percentiles(reps), _exact_mcnemar(n01, n10)


def _correction_reference(a, b):
    order = _unit_order([f"doc {i}" for i in range(len(DOMAINS))])
    va = np.array([100.0 * a[i]["passed"][0] for i in order])
    vb = np.array([100.0 * b[i]["passed"][0] for i in order])
    dom = np.array([DOMAINS[i] for i in order])
    rng = np.random.default_rng(SEED)
    draws = {}
    for d in sorted(set(DOMAINS)):  # each domain draws its own units, domains in sorted order, one generator
        positions = np.flatnonzero(dom == d)
        draws[d] = positions[rng.integers(0, len(positions), size=(B, len(positions)))]

    def domain_mean(values, picks):  # picks: domain -> the positions drawn from it
        return np.mean([values[picks[d]].mean() for d in sorted(set(DOMAINS))])

    reps = []
    for r in range(B):
        drawn = {d: draws[d][r] for d in draws}
        reps.append(domain_mean(vb, drawn) - domain_mean(va, drawn))
    everyone = {d: np.flatnonzero(dom == d) for d in set(DOMAINS)}
    p = _permutation_p(lambda m: domain_mean(np.where(m, va, vb), everyone) - domain_mean(np.where(m, vb, va), everyone),
                       len(DOMAINS))
    return domain_mean(vb, everyone) - domain_mean(va, everyone), _percentiles(reps), p


# ----------------------------------------------------------------------------- the tests


def _runs(tmp_path, seed_b=2, drop=None):
    a = _write_run(tmp_path / "a", seed=1)
    b = _write_run(tmp_path / "b", seed=seed_b, drop=drop, variant="short")  # two prompt variants: the same items
    (run_a,), (run_b,) = load_runs(tmp_path / "a"), load_runs(tmp_path / "b")
    return a, b, run_a, run_b


def test_paired_differences_match_numpy_and_scipy_written_out(tmp_path):
    a, b, run_a, run_b = _runs(tmp_path)
    found = {f"{c.task}.{c.key}": c for c in compare_runs(run_a, run_b, settings=SETTINGS)}
    assert set(found) == {"critic_feedback.spearman", "critic_feedback.score", "critic_comparison.accuracy",
                          "critic_correction.pass_rate", "critic_correction.score"}
    for name, reference in (("critic_feedback.spearman", _feedback_reference(a["critic_feedback"], b["critic_feedback"])),
                            ("critic_comparison.accuracy",
                             _comparison_reference(a["critic_comparison"], b["critic_comparison"])),
                            ("critic_correction.pass_rate",
                             _correction_reference(a["critic_correction"], b["critic_correction"]))):
        difference, interval, p = reference
        got = found[name]
        assert got.difference == pytest.approx(difference, abs=1e-9), name
        assert got.interval == pytest.approx(interval, abs=1e-9), name
        assert got.p_value == pytest.approx(p, abs=1e-12), name
    assert found["critic_comparison.accuracy"].test.startswith("McNemar")
    assert found["critic_comparison.accuracy"].units == N_PAIRS  # pairs, both orders together
    assert found["critic_feedback.spearman"].test == found["critic_correction.pass_rate"].test == "permutation"
    # the made-up runs differ on each metric (else the comparison above could not tell a wrong sign or side)
    assert all(abs(found[n].difference) > 1 for n in ("critic_feedback.spearman", "critic_comparison.accuracy",
                                                       "critic_correction.pass_rate"))


def test_identical_runs_differ_by_zero_with_p_one(tmp_path, capsys):
    _runs(tmp_path, seed_b=1)
    comparisons = compare_runs(*load_runs(tmp_path / "a"), *load_runs(tmp_path / "b"), settings=SETTINGS)
    assert len(comparisons) == 5
    for c in comparisons:
        assert (c.difference, c.interval, c.p_value) == (0.0, (0.0, 0.0), 1.0), c
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| critic_")]
    assert len(rows) == 5 and all("| +0.00 | [0.00, 0.00] | 1 |" in row for row in rows), rows


def test_the_cli_table_shows_b_minus_a_for_the_named_metric(tmp_path, capsys):
    a, b, _, _ = _runs(tmp_path)
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                     "--metric", "critic_comparison.accuracy"]) == 0
    out = capsys.readouterr().out
    assert "difference = B - A" in out
    (row,) = [line for line in out.splitlines() if line.startswith("| critic_")]
    difference, (low, high), p = _comparison_reference(a["critic_comparison"], b["critic_comparison"])
    assert row.startswith(f"| critic_comparison.accuracy | {_pair_flags(a['critic_comparison']).mean():.2f} | "
                          f"{_pair_flags(b['critic_comparison']).mean():.2f} | {difference:+.2f} | "
                          f"[{low:.2f}, {high:.2f}] | {p:.3g} | McNemar")


def test_runs_on_different_items_are_refused_in_one_line(tmp_path, capsys):
    _runs(tmp_path, seed_b=1, drop=3)
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    line = one_line(capsys)
    assert "critic_" in line and "1 item differs" in line and "1 only in A" in line
    assert line.startswith("critic-eval: compare: critic_")  # one prefix: not "data error: compare:" (issue 46)


def test_a_changed_document_under_the_same_doc_id_is_refused(tmp_path, capsys):
    _runs(tmp_path, seed_b=1)
    path = tmp_path / "b" / f"samples_critic_comparison_{TIME}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["doc"]["question"] = "Another question?"  # another document under doc_id 0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                     "--metric", "critic_comparison.accuracy"]) == 2
    assert "critic_comparison: 1 item differs" in one_line(capsys)


def test_an_unknown_metric_is_refused_in_one_line(tmp_path, capsys):
    _runs(tmp_path)
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "critic_feedback.nope"]) == 2
    line = one_line(capsys)
    assert "--metric critic_feedback.nope" in line and "critic_feedback.spearman" in line


def test_report_paired_adds_the_section(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CRITIC_CI_RESAMPLES", "40")  # the section's numbers are checked above; here: that it is there
    a, b, _, _ = _runs(tmp_path)
    assert cli.main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--paired"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("## Paired comparison"):]
    (row,) = [line for line in section.splitlines() if line.startswith("| critic_comparison.accuracy |")]
    difference = _pair_flags(b["critic_comparison"]).mean() - _pair_flags(a["critic_comparison"]).mean()
    assert row.split("|")[-2].strip().startswith(f"{difference:.2f} [")  # the last cell: B − A [its interval]
    assert f"| {_pair_flags(a['critic_comparison']).mean():.2f} | {_pair_flags(b['critic_comparison']).mean():.2f} |" in row
    assert cli.main(["report", str(tmp_path / "a"), "--paired"]) == 2
    assert "--paired compares two runs" in one_line(capsys)


def _rewrite(path, change):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in rows))


def test_rows_of_a_data_parallel_run_pair_with_a_plain_one(tmp_path):
    """lm-eval under two ranks logs each value wrapped with its rank (``rank_rows.every_key``): unwrapped and paired
    by doc_id, the same numbers as the plain rows."""
    a, b, run_a, run_b = _runs(tmp_path)
    reference = _feedback_reference(a["critic_feedback"], b["critic_feedback"])
    _rewrite(tmp_path / "b" / f"samples_critic_feedback_{TIME}.jsonl",
             lambda r: {**r, **{k: {"critic_rank": r["doc_id"] % 2, "world": 2, "row": r[k]} for k in r["metrics"]}})
    (got,) = compare_runs(run_a, run_b, ["critic_feedback.spearman"], settings=SETTINGS)
    difference, interval, p = reference
    assert got.difference == pytest.approx(difference, abs=1e-9)
    assert got.interval == pytest.approx(interval, abs=1e-9) and got.p_value == pytest.approx(p, abs=1e-12)


def test_a_row_that_is_no_record_is_one_line(tmp_path, capsys):
    _runs(tmp_path)
    _rewrite(tmp_path / "b" / f"samples_critic_comparison_{TIME}.jsonl",
             lambda r: {**r, "accuracy": "the critic's reply"} if r["doc_id"] == 4 else r)
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                     "--metric", "critic_comparison.accuracy"]) == 2
    line = one_line(capsys)
    assert f"samples_critic_comparison_{TIME}.jsonl:5" in line and "not a critic_tasks record" in line


def test_the_units_column_counts_in_words():
    """issue 46 (newcomer): "1 pairs"."""
    from critic_tasks.reports.compare import Comparison, format_comparisons

    rows = [Comparison("critic_judgebench", "accuracy", 50.0, 100.0, None, 1.0, "McNemar (1 only B, 0 only A)", n, unit)
            for n, unit in ((1, "pair"), (2, "pair"), (1, "item"), (3, "question"))]
    shown = [line.rsplit("|", 2)[1].strip() for line in format_comparisons(rows, "a", "b", 0.95).splitlines()
             if line.startswith("| critic_")]
    assert shown == ["1 pair", "2 pairs", "1 item", "3 questions"]


def test_opencompass_summaries_are_refused_naming_what_compare_pairs(tmp_path, capsys):
    """ocnew (newcomer, OpenCompass): two OpenCompass runs' critic_results files were told 'run A and B has no
    per-item rows ...: run it with lm-eval --log_samples', advice for an lm-eval run; an lm-eval pair without samples
    files keeps that advice (in grammar). Since compare reads OpenCompass runs' own per-item files, summaries whose
    run folders lack them are told where compare looks."""
    results = {"critic_feedback": {"spearman,none": 37.5, "spearman_ci_low,none": 10.0, "spearman_ci_high,none": 60.0,
                                   "score,none": 68.75, "parse_rate,none": 100.0}}
    paths = []
    for stamp in ("20261128_140258", "20261128_141200"):
        path = tmp_path / stamp / f"critic_results_m_hf_{stamp}.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"results": results, "groups": {},
                                    "config": {"model": "m_hf", "harness": "opencompass"}}))
        paths.append(str(path))
    assert cli.main(["compare", *paths]) == 2
    line = one_line(capsys)
    assert line.startswith("critic-eval: compare: run A and B (OpenCompass) have no per-item files of "
                           "critic_feedback (model m_hf): compare reads predictions/<model>/<task>.json and "
                           "results/<model>/<task>.json in the run's folder"), line
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / f"results_{TIME}.json").write_text(json.dumps({"results": results}))
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "run A and B have no per-item rows of critic_feedback: run it with lm-eval --log_samples" in one_line(capsys)


# ----------------------------------------------------------------------------- rows compare cannot trust (red team)


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_document_logged_twice_is_refused_in_one_line(tmp_path, capsys):
    """Red team: two rows of doc_id 3 in B's samples file were both read, the last one replacing the first (B's value
    hung on the rows' order). lm-eval 0.4.13 logs each document once per filter, its repeats inside the one row
    (``evaluator.evaluate``): a second row is not one run's. Another filter's row of the document is (compare reads
    the "none" filter's)."""
    _runs(tmp_path)
    path = tmp_path / "b" / f"samples_critic_comparison_{TIME}.jsonl"
    rows = _rows(path)
    _write_rows(path, rows + [{**rows[3], "filter": "strict-match"}])
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                     "--metric", "critic_comparison.accuracy"]) == 0
    capsys.readouterr()
    flipped = {**rows[3]["accuracy"], "verdict": {"A": "B", "B": "A"}[rows[3]["accuracy"]["verdict"]]}
    _write_rows(path, rows + [{**rows[3], "accuracy": flipped}])
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                     "--metric", "critic_comparison.accuracy"]) == 2
    line = one_line(capsys)
    assert f"{path}:{len(rows) + 1}: doc_id 3 repeats {path}:4" in line, line


def _judged_run(folder, seed):
    """A run of critic_feedback_sub: a judge's 1-10 grade of each of 12 critiques, their mean the headline (its
    interval in the results file, as the task's aggregation writes it: not computed again from the samples)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    rows = [{"kind": "judged", "domain": "chat", "group": "low", "score": float(rng.integers(1, 11)), "item": f"critique {i}"}
            for i in range(12)]
    lines = [{**_line(i, row, ["judge_score"]), **_doc("critic_feedback_sub", i, "paper")} for i, row in enumerate(rows)]
    _write_rows(folder / f"samples_critic_feedback_sub_{TIME}.jsonl", lines)
    (folder / f"results_{TIME}.json").write_text(json.dumps({
        "results": {"critic_feedback_sub": {"judge_score,none": _reported("critic_feedback_sub", "judge_score", rows),
                                            "judge_score_ci_low,none": 1.0, "judge_score_ci_high,none": 10.0}},
        "config": {"model_args": f"pretrained=critic-{seed}"}}))
    return folder


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_record_holding_nan_or_inf_is_refused_in_one_line(tmp_path, capsys, bad):
    """Red team: a NaN in a logged record (a judge's grade) was compared: B nan, its interval (nan, nan). Refused as a
    NaN in the results file is, in one line naming the file, the item and the field."""
    a, b = _judged_run(tmp_path / "a", 1), _judged_run(tmp_path / "b", 2)
    path = b / f"samples_critic_feedback_sub_{TIME}.jsonl"
    assert cli.main(["compare", str(a), str(b)]) == 0
    capsys.readouterr()
    _rewrite(path, lambda r: {**r, "judge_score": {**r["judge_score"], "score": bad}} if r["doc_id"] == 4 else r)
    assert cli.main(["compare", str(a), str(b)]) == 2
    line = one_line(capsys)
    assert f"{path}:5: critic_feedback_sub.judge_score of doc_id 4: field 'score' = {json.dumps(bad)}" in line, line
    assert "not a finite number" in line


def test_a_results_file_its_rows_do_not_give_is_refused_in_one_line(tmp_path, capsys):
    """Red team: B's results file said 12.0 where its samples gave another accuracy, and compare showed the rows'
    value without a word. Refused naming the task, the metric and both values; a value off by float rounding only
    (lm-eval sums the items in document order, compare in its units' order) still compares."""
    a, b, _, _ = _runs(tmp_path)
    given = _pair_flags(b["critic_comparison"]).mean()
    path = tmp_path / "b" / f"results_{TIME}.json"
    results = json.loads(path.read_text())
    for value, refused in ((given + 1e-10, False), (12.0, True)):
        results["results"]["critic_comparison"]["accuracy,none"] = value
        path.write_text(json.dumps(results))
        assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                         "--metric", "critic_comparison.accuracy"]) == (2 if refused else 0)
    line = one_line(capsys)
    assert f"critic_comparison.accuracy = 12, but run B's per-item rows give {given:g}" in line, line
    assert given != 12.0
