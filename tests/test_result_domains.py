"""Results a gate can trust (issue 18, part 3): `summary`, `check` and `report` refuse a value no run of these tasks can
write, with one line naming file, task and key; the items a pass rate left out are said beside it; `rescore` refuses
replies that are not text. Every results file here is made by hand; every expected line is written out."""

import json

import pytest

from critic_tasks import cli

VALID = {
    "critic_feedback": {"alias": "critic_feedback", "spearman,none": 45.0, "spearman_stderr,none": "N/A",
                        "spearman_ci_low,none": 40.0, "spearman_ci_high,none": 50.0, "score,none": 72.5,
                        "parse_rate,none": 98.0, "spearman_warnings,none": 0.0, "spearman_low,none": None},
    "critic_correction": {"pass_rate,none": 50.0, "score,none": 50.0, "parse_rate,none": 90.0,
                          "truncated,none": 3.0, "invalid_items,none": 3.0, "isolation,none": "bwrap"},
    "critic_feedback_sub": {"judge_score,none": 10, "judge_parse_rate,none": 100.0, "judge_failed,none": 0},
    "gsm8k": {"exact_match,none": 12345.0},  # another harness task: not ours to judge
}


def _write(tmp_path, results, name="run.json"):
    path = tmp_path / name
    # json.dumps writes float("nan") as NaN, as Python's json (and lm-eval) would
    path.write_text(json.dumps({"results": results, "model_name": "tiny"}))
    return path


def _with(task, key, value):
    results = json.loads(json.dumps(VALID))
    results.setdefault(task, {})[f"{key},none"] = value
    return results


# The issue's attacks, and one per kind of domain (breakdowns, interval bounds, text, lm-eval's stderr).
ATTACKS = [
    ("critic_correction", "pass_rate", 99999, "99999: outside the domain of a x100 rate ([0, 100])"),
    ("critic_correction", "pass_rate", float("nan"), "NaN: not a finite number (a x100 rate expected)"),
    ("critic_correction", "pass_rate", True, "true: not a number (a x100 rate expected)"),
    ("critic_correction", "invalid_items", -3, "-3: outside the domain of a count (>= 0)"),
    ("critic_feedback", "spearman", 150, "150: outside the domain of a x100 correlation ([-100, 100])"),
    ("critic_feedback", "spearman", float("inf"), "Infinity: not a finite number (a x100 correlation expected)"),
    ("critic_feedback", "spearman", "45", "\"45\": not a number (a x100 correlation expected)"),
    ("critic_feedback", "spearman_low", -101, "-101: outside the domain of a x100 correlation ([-100, 100])"),
    ("critic_feedback", "spearman_ci_high", 100.5, "100.5: outside the domain of a x100 correlation ([-100, 100])"),
    ("critic_feedback", "spearman_warnings", 1.5, "1.5: not a whole number (a count)"),
    ("critic_feedback", "spearman_stderr", -1.0, "-1.0: outside the domain of the standard error of a x100 correlation"),
    ("critic_feedback", "score", -0.01, "-0.01: outside the domain of a x100 rate ([0, 100])"),
    ("critic_correction", "pass@1", 101, "101: outside the domain of a x100 rate ([0, 100])"),
    ("critic_correction", "isolation", 1, "1: expected text"),
    ("critic_feedback_sub", "judge_score", 0.5, "0.5: outside the domain of a 1-10 judge score ([1, 10])"),
    ("critic_feedback_sub", "judge_score_low", 11, "11: outside the domain of a 1-10 judge score ([1, 10])"),
    ("critic_alignbench_ref", "text_pearson_math", 100.1, "100.1: outside the domain of a x100 correlation"),
    ("critic_alignbench_ref", "system_models", -1, "-1: outside the domain of a count (>= 0)"),
    ("critic_metacritique", "f1_micro", 250, "250: outside the domain of a x100 rate ([0, 100])"),
    ("critic_revision_pool", "r_sub", 12, "12: outside the domain of a 1-10 judge score ([1, 10])"),
    ("critic_utility", "critique_utility", 100.5, "100.5: outside the domain of a x100 rate ([0, 100])"),
    ("critic", "score", 101, "101: outside the domain of a x100 rate ([0, 100])"),  # a group's overall
    ("critic_sub", "judge_score", 0, "0: outside the domain of a 1-10 judge score ([1, 10])"),
]


@pytest.mark.parametrize("command", [["summary"], ["report"], ["check", "--min", "critic_feedback.score=1"]],
                         ids=["summary", "report", "check"])
@pytest.mark.parametrize("task, key, value, problem", ATTACKS, ids=[f"{t}.{k}={v!r}" for t, k, v, _ in ATTACKS])
def test_an_impossible_value_is_refused_in_one_line(tmp_path, capsys, command, task, key, value, problem):
    path = _write(tmp_path, _with(task, key, value))
    assert cli.main([command[0], str(path), *command[1:]]) == 2
    out = capsys.readouterr()
    err = out.err.strip()
    assert err.startswith(f"critic-eval: data error: {path}: {task}.{key} = {problem}") and "\n" not in err, err
    assert "n/a" not in out.out and "ok " not in out.out  # nothing printed as if it were a result


def test_the_issue_attack_no_longer_passes_the_gate(tmp_path, capsys):
    """Before: 99999 printed as 99999.00 and passed `--min pass_rate=50` with exit 0."""
    path = _write(tmp_path, _with("critic_correction", "pass_rate", 99999))
    assert cli.main(["check", str(path), "--min", "critic_correction.pass_rate=50"]) == 2
    assert capsys.readouterr().err == (f"critic-eval: data error: {path}: critic_correction.pass_rate = 99999: "
                                       "outside the domain of a x100 rate ([0, 100])\n")


def test_an_inverted_interval_is_refused(tmp_path, capsys):
    """A low bound above the high one would widen what `check --baseline` allows (the half-widths are squared)."""
    results = _with("critic_feedback", "spearman_ci_low", 60.0)
    path = _write(tmp_path, results)
    assert cli.main(["summary", str(path)]) == 2
    assert capsys.readouterr().err == (f"critic-eval: data error: {path}: critic_feedback.spearman_ci_low = 60.0 is "
                                       "above critic_feedback.spearman_ci_high = 50.0: not an interval\n")


def test_a_baseline_file_is_checked_too(tmp_path, capsys):
    run = _write(tmp_path, VALID)
    base = _write(tmp_path, _with("critic_feedback", "spearman_ci_high", float("nan")), "base.json")
    assert cli.main(["check", str(run), "--baseline", str(base)]) == 2
    assert capsys.readouterr().err.strip() == (f"critic-eval: data error: {base}: critic_feedback.spearman_ci_high = NaN:"
                                               " not a finite number (a x100 correlation expected)")


def test_an_opencompass_summary_file_is_checked_per_model(tmp_path, capsys):
    path = tmp_path / "critic_summary_20260101.json"
    path.write_text(json.dumps({"model-a": VALID, "model-b": _with("critic_feedback", "spearman", -150)}))
    assert cli.main(["report", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (f"critic-eval: data error: {path}: critic_feedback.spearman = -150: "
                                               "outside the domain of a x100 correlation ([-100, 100])")


def test_the_edges_of_each_domain_nulls_and_lm_eval_extras_are_accepted(tmp_path, capsys):
    results = json.loads(json.dumps(VALID))
    results["critic_feedback"].update({"spearman,none": -100, "spearman_ci_low,none": -100, "spearman_ci_high,none": 100,
                                       "score,none": 0, "spearman_stderr,none": 200.0})
    results["critic_correction"].update({"pass_rate,none": 100, "pass_rate_ci_low,none": None,
                                         "pass_rate_ci_high,none": None, "invalid_items,none": 0})
    results["critic_feedback_sub"].update({"judge_score,none": 1.0, "judge_deferred,none": 7.0})
    results["critic_revision_pool"] = {"r_obj,none": None, "models,none": '{"revisers": ["a"]}', "alias": " - pool"}
    path = _write(tmp_path, results)
    assert cli.main(["summary", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["critic_feedback", "spearman", "-100.00", "[-100.00,", "100.00]"]
    assert ["critic_correction", "pass_rate", "100.00"] in [line.split() for line in lines]  # 0 invalid: no note
    assert ["critic_revision_pool", "r_obj", "n/a"] in [line.split() for line in lines]
    assert cli.main(["check", str(path), "--min", "critic_feedback_sub.judge_score=1"]) == 0


# ----------------------------------------------------------------------------- invalid_items beside the rate

RUN = {
    "critic_feedback": {"spearman,none": 40.0, "score,none": 70.0, "parse_rate,none": 99.0},
    "critic_comparison": {"accuracy,none": 30.0, "score,none": 30.0},
    "critic_meta": {"spearman,none": 20.0, "score,none": 60.0},
    "critic_correction": {"pass_rate,none": 50.0, "pass_rate_ci_low,none": 44.0, "pass_rate_ci_high,none": 56.0,
                          "score,none": 50.0, "parse_rate,none": 90.0, "truncated,none": 3.0, "invalid_items,none": 4.0,
                          "pass_rate_low,none": 25.0},
    "critic_correction_math_pot": {"pass_rate,none": 40.0, "invalid_items,none": 1.0},
    "critic": {"score,none": 52.5},
    "critic_utility": {"critique_utility,none": 55.0, "rqs,none": 6.0, "refine_accuracy,none": 70.0,
                       "judge_parse_rate,none": 100.0, "invalid_items,none": 2.0},
}
NOTE = "invalid_items left out (no usable gold answer or unit test)"


def _rows(text):
    """(task, metric) -> the row, its columns' padding reduced to one space."""
    return {tuple(line.split()[:2]): " ".join(line.split()) for line in text.splitlines()}


def test_summary_says_how_many_items_a_rate_left_out(tmp_path, capsys):
    path = _write(tmp_path, RUN)
    assert cli.main(["summary", str(path)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows[("critic_correction", "pass_rate")] == f"critic_correction pass_rate 50.00 [44.00, 56.00] 4 {NOTE}"
    assert rows[("critic_correction", "score")] == f"critic_correction score 50.00 4 {NOTE}"
    assert rows[("critic_correction", "parse_rate")] == "critic_correction parse_rate 90.00"  # not a checked rate
    assert rows[("critic_correction_math_pot", "pass_rate")] == f"critic_correction_math_pot pass_rate 40.00 1 {NOTE}"
    assert rows[("critic_utility", "refine_accuracy")] == f"critic_utility refine_accuracy 70.00 2 {NOTE}"
    assert rows[("critic_utility", "critique_utility")] == "critic_utility critique_utility 55.00"  # every item
    assert rows[("critic", "overall")] == f"critic overall 52.50 4 {NOTE}"  # the overall averages correction's rate


def test_check_says_how_many_items_a_rate_left_out(tmp_path, capsys):
    path = _write(tmp_path, RUN)
    assert cli.main(["check", str(path), "--min", "critic_correction.pass_rate=45", "--min", "critic.score=50",
                     "--max", "critic_correction.truncated=5"]) == 0
    assert capsys.readouterr().out.splitlines()[:3] == [
        f"ok   critic_correction.pass_rate = 50.00 (95% CI [44.00, 56.00]) >= 45; 4 {NOTE}",
        f"ok   critic.score = 52.50 (no interval) >= 50; 4 {NOTE}",
        "ok   critic_correction.truncated = 3.00 (no interval) <= 5"]
    assert cli.main(["check", str(path), "--min", "critic_correction.pass_rate=55"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        f"FAIL critic_correction.pass_rate = 50.00 (95% CI [44.00, 56.00]) is below the minimum 55 by 5.00; 4 {NOTE}")


def test_report_says_how_many_items_a_rate_left_out(tmp_path, capsys):
    path = _write(tmp_path, RUN)
    assert cli.main(["report", str(path), "-o", str(tmp_path / "report")]) == 0
    md = capsys.readouterr().out
    assert f"| critic_correction | pass_rate | 50.00 [44.00, 56.00]; 4 {NOTE} |" in md
    assert f"| critic_utility | refine_accuracy | 70.00; 2 {NOTE} |" in md
    assert "| critic_utility | critique_utility | 55.00 |" in md
    assert f"| pass_rate_low | 25.00; 4 {NOTE} |" in md  # the quality breakdown
    assert f"| math_pot | 40.00; 1 {NOTE} |" in md  # the per-domain table
    assert f"| 50.00 [44.00, 56.00]; 4 {NOTE} | 52.50; 4 {NOTE} |" in md  # the overview: correction, overall
    assert f"(4 {NOTE})" in (tmp_path / "report" / "report.html").read_text()


# ----------------------------------------------------------------------------- rescore: replies that are not text


@pytest.mark.parametrize("resps, shown", [([[123]], "[[123]]"), ("Decision: 5", '"Decision: 5"'),
                                          ([[{"text": "x"}]], '[[{"text": "x"}]]'), ({"a": "b"}, '{"a": "b"}')])
def test_rescore_refuses_replies_that_are_not_text(tmp_path, capsys, resps, shown):
    """Before: [[123]] raised a TypeError traceback from the parser; a string was scored character by character."""
    from critic_tasks.protocols.criticbench import data

    doc = data.load_docs("feedback", "dev", domains="chat", data_dir="sample")[0]
    good = {"doc_id": 0, "doc": doc, "resps": [["Decision: 5"]]}
    path = tmp_path / "samples_critic_feedback_chat_2026-01-01T00-00-00.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "doc_id": 1, "resps": resps}) + "\n")
    assert cli.main(["rescore", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"critic-eval: {path}:2: 'resps' should hold the model's replies as text, got {shown}\n"
