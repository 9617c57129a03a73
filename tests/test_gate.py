"""critic-eval check: thresholds, config file, baseline, and errors for unknown names, on hand-made results files."""

import json
import math

import pytest

from critic_tasks import cli


def _results(**tasks):
    """lm-eval's results shape from {task: {key: value or (value, low, high)}}."""
    out = {}
    for task, metrics in tasks.items():
        row = {}
        for key, v in metrics.items():
            value, *ci = v if isinstance(v, tuple) else (v,)
            row[f"{key},none"] = value
            if ci:
                row[f"{key}_ci_low,none"], row[f"{key}_ci_high,none"] = ci
        out[task] = row
    return {"results": out, "model_name": "tiny"}


RUN = _results(
    critic_feedback={"spearman": (45.0, 40.0, 50.0), "score": (72.5, 70.0, 75.0), "parse_rate": 98.0},
    critic_comparison={"accuracy": (30.0, 26.0, 34.0), "score": (30.0, 26.0, 34.0)},
    critic_meta={"spearman": (20.0, 14.0, 26.0), "score": (60.0, 57.0, 63.0)},
    critic_correction={"pass_rate": (50.0, 44.0, 56.0), "score": (50.0, 44.0, 56.0), "truncated": 3.0},
    critic={"score": 53.125},
)


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_thresholds_pass_and_fail_with_amount_and_interval(tmp_path, capsys):
    run = _write(tmp_path, "run.json", RUN)
    assert cli.main(["check", str(run), "--min", "critic_feedback.spearman=40", "--max",
                     "critic_correction.truncated=5"]) == 0
    assert cli.main(["check", str(run), "--min", "critic_feedback.spearman=40", "--min", "critic.score=55"]) == 1
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    # the group's interval: members' half-widths combined, sqrt(sum h^2) / 4 on each side
    half = math.sqrt(2.5**2 + 4**2 + 3**2 + 6**2) / 4
    assert lines[-2] == "ok   critic_feedback.spearman = 45.00 (95% CI [40.00, 50.00]) >= 40"
    assert lines[-1] == (f"FAIL critic.score = 53.12 (95% CI [{53.125 - half:.2f}, {53.125 + half:.2f}]) is below the "
                         "minimum 55 by 1.88")
    assert "failed: critic.score" in out.err


def test_max_threshold_fails_for_a_lower_is_better_metric(tmp_path, capsys):
    run = _write(tmp_path, "run.json", RUN)
    assert cli.main(["check", str(run), "--max", "critic_correction.truncated=2.5"]) == 1
    assert "FAIL critic_correction.truncated = 3.00 (no interval) is above the maximum 2.5 by 0.50" in capsys.readouterr().out


@pytest.mark.parametrize("arg, message", [
    ("critic_feedbak.spearman=40", "--min: 'critic_feedbak.spearman': unknown task 'critic_feedbak'"),
    ("critic_feedback.spearmann=40", "--min: 'critic_feedback.spearmann': critic_feedback has no metric 'spearmann'"),
    ("critic.spearman=40", "--min: 'critic.spearman': group critic reports only critic.score (its overall)"),
    ("critic_feedback.spearman=high", "--min: 'critic_feedback.spearman=high': the threshold 'high' is not a number"),
    ("critic_feedback=40", "--min: 'critic_feedback': expected TASK.METRIC"),
])
def test_unknown_names_and_bad_values_are_errors(tmp_path, capsys, arg, message):
    run = _write(tmp_path, "run.json", RUN)
    assert cli.main(["check", str(run), "--min", arg]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"critic-eval: {message}") and "\n" not in err


def test_a_misspelt_task_or_metric_gets_the_nearest_names(tmp_path, capsys):
    """A newcomer's `check --min critic_judgebench.acuracy=10` listed 31 names, 16 of them interval bounds, and no
    'did you mean'."""
    run = _write(tmp_path, "run.json", RUN)
    assert cli.main(["check", str(run), "--min", "critic_judgebench.acuracy=10"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("critic-eval: --min: 'critic_judgebench.acuracy': critic_judgebench has no metric 'acuracy'; "
                           "did you mean accuracy? (it has: accuracy, accuracy_knowledge, ") and "\n" not in line, line
    assert "_ci_low," not in line and line.endswith("; and the _ci_low / _ci_high of each with an interval)"), line
    assert cli.main(["check", str(run), "--min", "critic_feedbak.spearman=40"]) == 2
    assert capsys.readouterr().err.strip() == (
        "critic-eval: --min: 'critic_feedbak.spearman': unknown task 'critic_feedbak'; did you mean critic_feedback, "
        "critic_feedback_qa, critic_feedback_sub? (`critic-eval tasks` lists them)")


def test_a_known_metric_missing_from_the_results_is_an_error_not_a_pass(tmp_path, capsys):
    run = _write(tmp_path, "run.json", RUN)
    assert cli.main(["check", str(run), "--min", "critic_feedback_sub.judge_score=5"]) == 2
    assert "task critic_feedback_sub is not in" in capsys.readouterr().err
    assert cli.main(["check", str(run), "--min", "critic_comparison.consistency=5"]) == 2
    assert "has no value for consistency in critic_comparison" in capsys.readouterr().err
    assert cli.main(["check", str(run)]) == 2  # nothing to check is not a pass either


def test_config_file_thresholds_and_baseline(tmp_path, capsys):
    run = _write(tmp_path, "run.json", RUN)
    # baseline: feedback spearman 52 [47, 57] vs now 45 [40, 50]: drop 7 <= hypot(5, 5) = 7.07 -> holds;
    # meta spearman 30 [25, 35] vs 20 [14, 26]: drop 10 > hypot(6, 5) = 7.81 -> fails
    base = json.loads(json.dumps(RUN))
    base["results"]["critic_feedback"].update({"spearman,none": 52.0, "spearman_ci_low,none": 47.0,
                                               "spearman_ci_high,none": 57.0})
    base["results"]["critic_meta"].update({"spearman,none": 30.0, "spearman_ci_low,none": 25.0,
                                           "spearman_ci_high,none": 35.0})
    (tmp_path / "base").mkdir()
    _write(tmp_path / "base", "results.json", base)
    config = tmp_path / "gate.yaml"
    config.write_text("min:\n  critic_feedback.spearman: 40\nmax:\n  critic_correction.truncated: 5\n"
                      "baseline: base/results.json\n")
    assert cli.main(["check", str(run), "--config", str(config)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAIL")]
    assert failed == ["FAIL critic_meta.spearman dropped 10.00: 30.00 (95% CI [25.00, 35.00]) -> 20.00 (95% CI "
                      f"[14.00, 26.00]); allowed {math.hypot(6, 5):.2f}"]
    assert any(line.startswith("ok   critic_feedback.spearman dropped 7.00") for line in lines)
    assert "ok   critic_feedback.spearman = 45.00 (95% CI [40.00, 50.00]) >= 40" in lines
    # the run against itself: nothing moved, everything holds
    assert cli.main(["check", str(run), "--baseline", str(run)]) == 0


def test_bad_config_file_is_one_line(tmp_path, capsys):
    run = _write(tmp_path, "run.json", RUN)
    config = tmp_path / "gate.yaml"
    config.write_text("minimum:\n  critic.score: 50\n")
    assert cli.main(["check", str(run), "--config", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (f"critic-eval: {config}: unknown setting(s) minimum "
                                               "(expected min, max, baseline, compare, allow_judge_failures)")
    config.write_text("min:\n  critic.scor: 50\n")
    assert cli.main(["check", str(run), "--config", str(config)]) == 2
    assert "group critic reports only critic.score" in capsys.readouterr().err


def test_compare_picks_the_baseline_metrics_and_needs_intervals(tmp_path, capsys):
    run = _write(tmp_path, "run.json", RUN)
    base = json.loads(json.dumps(RUN))
    base["results"]["critic_comparison"].update({"accuracy,none": 40.0, "accuracy_ci_low,none": 37.0,
                                                 "accuracy_ci_high,none": 43.0})
    base_path = _write(tmp_path, "base.json", base)
    # by default every headline metric is compared: accuracy 40 [37, 43] -> 30 [26, 34] drops 10 > hypot(4, 3) = 5
    assert cli.main(["check", str(run), "--baseline", str(base_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in out if line.startswith("FAIL")] == ["critic_comparison.accuracy"]
    assert cli.main(["check", str(run), "--baseline", str(base_path), "--compare", "critic_meta.spearman"]) == 0
    assert capsys.readouterr().out.splitlines() == ["ok   critic_meta.spearman 20.00 -> 20.00 (95% CI [14.00, 26.00])",
                                                    "critic-eval check: 1 of 1 held"]
    assert cli.main(["check", str(run), "--baseline", str(base_path), "--compare", "critic_feedback.parse_rate"]) == 2
    assert "critic_feedback.parse_rate has no interval" in capsys.readouterr().err
    assert cli.main(["check", str(run), "--baseline", str(base_path), "--compare", "critic_feedback.nope"]) == 2
    assert "critic_feedback has no metric 'nope'" in capsys.readouterr().err


def _judgebench_run(tmp_path, name, metrics, metadata=None, limit=None):
    data = _results(critic_judgebench=metrics)
    data["config"] = {"model_args": "pretrained=tiny", "limit": limit}
    data["configs"] = {"critic_judgebench": {"metadata": {"version": 1.0, **(metadata or {})}}}
    return _write(tmp_path, name, data)


def test_an_undefined_value_is_explained_by_its_real_cause(tmp_path, capsys):
    """Issue 46.5: no reply with a verdict, pairs asked in one order, a --limit that split the pairs, no labels."""
    cases = [
        (_judgebench_run(tmp_path, "unread.json", {"accuracy": 0.0, "parse_rate": 0.0, "inconsistency": 100.0}),
         "no reply could be read (parse_rate = 0"),
        (_judgebench_run(tmp_path, "single.json", {"accuracy": 40.0, "parse_rate": 90.0}, {"orders": "single"}),
         "each pair was asked in one order only (orders=single)"),
        (_judgebench_run(tmp_path, "limit.json", {"accuracy": 40.0, "parse_rate": 90.0}, limit=1),
         "no pair was asked in both orders (--limit 1"),
        (_judgebench_run(tmp_path, "ties.json", {"accuracy": 0.0, "parse_rate": 100.0, "tie_rate": 100.0}),
         "every verdict was a tie"),
    ]
    for path, cause in cases:
        assert cli.main(["check", str(path), "--max", "critic_judgebench.first_position=60"]) == 2
        line = capsys.readouterr().err.strip()
        assert "\n" not in line and cause in line and "intervals turned off" not in line, line
    test_split = _write(tmp_path, "test.json", _results(critic_comparison_test={"parse_rate": 100.0}))
    assert cli.main(["check", str(test_split), "--min", "critic_comparison_test.accuracy=5"]) == 2
    assert "no human labels in this split" in capsys.readouterr().err


def test_every_overall_name_the_summary_prints_is_accepted(tmp_path, capsys):
    """`summary` prints ProcessBench's overall as "average F1" and the docs as average_f1; both name the group's f1."""
    run = _write(tmp_path, "pb.json", _results(critic_processbench={"f1": 42.0}, critic_processbench_gsm8k={"f1": 42.0}))
    assert cli.main(["check", str(run), "--min", "critic_processbench.average_f1=40"]) == 0
    assert "ok   critic_processbench.f1 = 42.00" in capsys.readouterr().out
    assert cli.main(["check", str(run), "--min", "critic_processbench.f1=40"]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(run), "--min", "critic_processbench.accuracy=40"]) == 2
    assert "also named critic_processbench.average_f1 as the summary prints it" in capsys.readouterr().err
    config = _write(tmp_path, "gate.json", {"min": {"critic_processbench.average_f1": 50}})
    assert cli.main(["check", str(run), "--config", str(config)]) == 1


def test_a_bias_line_is_judged_by_its_distance_from_its_target(tmp_path, capsys):
    """Issue 45: ``first_position`` is best at 50 (no slot preferred) and ``length_bias`` at 0, not lower-is-better.
    A judge going from 52 [48, 56] to 40 [36, 44] first-slot verdicts moved from 2 to 10 points off 50: a worse
    judge, which lower-is-better passed as an improvement. The distances from 50: now 10 [6, 14], then 2 [0, 6]; the
    facing half-widths 4 and 4."""
    def with_first_position(value, low, high):
        data = json.loads(json.dumps(RUN))
        data["results"]["critic_comparison"].update({"first_position,none": value, "first_position_ci_low,none": low,
                                                     "first_position_ci_high,none": high})
        return data

    base = _write(tmp_path, "base.json", with_first_position(52.0, 48.0, 56.0))
    away = _write(tmp_path, "away.json", with_first_position(40.0, 36.0, 44.0))
    assert cli.main(["check", str(away), "--baseline", str(base), "--compare", "critic_comparison.first_position"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        "FAIL critic_comparison.first_position moved 12.00 away from 50: 52.00 (95% CI [48.00, 56.00]) -> 40.00 "
        f"(95% CI [36.00, 44.00]); allowed {math.hypot(4, 4):.2f}")
    # the mirror image on the other side of 50 is as far from it: it holds
    mirror = _write(tmp_path, "mirror.json", with_first_position(48.0, 44.0, 52.0))
    assert cli.main(["check", str(mirror), "--baseline", str(base), "--compare", "critic_comparison.first_position"]) == 0
    # a count or a share of ties describes the run: no better side to judge a drop by
    assert cli.main(["check", str(base), "--baseline", str(base), "--compare", "critic_judgebench.tie_rate"]) == 2
    assert "critic_judgebench.tie_rate has no better side" in capsys.readouterr().err


def test_the_directions_the_generated_yaml_declares():
    """lm-eval's ``higher_is_better`` per key: null for the bias lines (best at a target), JudgeBench's tie rate and
    pair count (descriptions) and every text key; false for the failure counts."""
    import yaml

    from critic_tasks.adapters.lm_eval.generate import TASKS_DIR

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))

    def directions(task):
        config = yaml.load((TASKS_DIR / f"{task}.yaml").read_text(), Loader=Loader)  # noqa: S506 (a safe loader)
        return {m["metric"]: m["higher_is_better"] for m in config["metric_list"]}

    judgebench = directions("critic_judgebench")
    assert {k: judgebench[k] for k in ("accuracy", "inconsistency", "tie_rate", "pairs", "first_position",
                                       "length_bias")} == {"accuracy": True, "inconsistency": False, "tie_rate": None,
                                                           "pairs": None, "first_position": None, "length_bias": None}
    correction = directions("critic_correction")
    assert (correction["pass_rate"], correction["invalid_items"], correction["isolation"]) == (True, False, None)
