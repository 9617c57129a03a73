"""Subjective tasks: judged in the lm-eval run and afterwards from saved samples, with the same numbers."""

import ast
import hashlib
import json

import pytest
from helpers import InProcessBackend, backend_plugin, scripted_lm, with_logged_intervals

import critic_tasks
from critic_tasks import cli
from critic_tasks.llm.backends import Reply as JudgeReply
from critic_tasks.protocols.criticbench import data

pytestmark = pytest.mark.slow

lm_eval = pytest.importorskip("lm_eval")
from lm_eval.loggers import EvaluationTracker  # noqa: E402


def _judge_reply(prompt: str) -> str:
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    return "Hard to say." if h % 7 == 0 else f"Reasoning...\nScore: {h % 10 + 1}"


class CountingJudge(InProcessBackend):
    """An in-process judge backend plugin (what a third party would ship under the entry point)."""

    calls = 0

    def reply(self, prompt):
        CountingJudge.calls += 1
        return JudgeReply(_judge_reply(prompt))


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv(data.DATA_DIR_ENV, "sample")
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "counting")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "counting-judge")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    CountingJudge.calls = 0
    with backend_plugin("counting", CountingJudge):
        yield


def echo_critique(prompt: str) -> str:
    """A critic whose reply is derived from the prompt."""
    return f"Critique #{hashlib.md5(prompt.encode()).hexdigest()[:8]}"


def _expected(dimension):
    """Independent: build the judge prompts, apply the scripted judge, average per domain then over domains."""
    from critic_tasks.protocols.criticbench.judge import judge_prompt
    from critic_tasks.protocols.criticbench.prompts import critic_prompt

    docs = data.load_docs(dimension, "dev", data_dir="sample", fmt="sub")
    per_domain, per_group, failed = {}, {}, 0
    for doc in docs:
        reply = echo_critique(critic_prompt(doc))
        judged = _judge_reply(judge_prompt(doc, reply))
        if "Score:" not in judged:
            failed += 1  # no grade: counted 1, the scale's minimum (issue 34)
        score = float(judged.rsplit("Score:", 1)[1]) if "Score:" in judged else 1.0
        group = doc["difficulty"] if dimension == "comparison" else doc["quality"]
        per_domain.setdefault(doc["domain"], []).append(score)
        per_group.setdefault(group, {}).setdefault(doc["domain"], []).append(score)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    out = {"judge_score": mean([mean(v) for v in per_domain.values()]),
           "judge_parse_rate": 100 * (len(docs) - failed) / len(docs), "judge_failed": float(failed)}
    for group, domains in per_group.items():
        out[f"judge_score_{group}"] = mean([mean(v) for v in domains.values()])
    return out, len(docs)


def test_in_run_and_afterwards_judging_agree(tmp_path, capsys):
    out = lm_eval.simple_evaluate(model=scripted_lm(echo_critique), tasks=["critic_sub"], task_manager=critic_tasks.task_manager(),
                                  bootstrap_iters=0, log_samples=True)
    results = out["results"]
    # an interval is no lm-eval metric: the live run's, as `critic-eval summary` computes them from its logged rows
    intervals = with_logged_intervals(out)
    n_total = 0
    for task in ("critic_feedback_sub", "critic_comparison_sub", "critic_correction_sub"):
        expected, n = _expected(task.split("_")[1])
        n_total += n
        for key, value in expected.items():
            assert results[task][f"{key},none"] == pytest.approx(value, abs=1e-9), (task, key)
    assert CountingJudge.calls == n_total
    assert results["critic_sub"]["judge_score,none"] == pytest.approx(
        sum(results[t]["judge_score,none"] for t in ("critic_feedback_sub", "critic_comparison_sub",
                                                      "critic_correction_sub")) / 3)

    # Save the samples as lm-eval's CLI does, then judge them afterwards: same numbers, no new calls.
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.general_config_tracker.model_name_sanitized = "echo"
    tracker.date_id = "2026-11-21T10-00-00.000001"  # set by save_results_aggregated in a CLI run
    for task, samples in out["samples"].items():
        tracker.save_results_samples(task, samples)
    report_path = tmp_path / "judged.json"
    # Some scripted replies carry no score: without --allow_failures that is a non-zero exit, with it 0.
    assert cli.main(["judge", str(tmp_path / "run"), "--output", str(report_path), "--no_progress"]) == 1
    assert "items could not be judged" in capsys.readouterr().err
    assert cli.main(["judge", str(tmp_path / "run"), "--output", str(report_path), "--no_progress",
                     "--allow_failures"]) == 0
    assert CountingJudge.calls == n_total  # all from the cache
    report = json.loads(report_path.read_text())
    for task, metrics in report["results"].items():
        if task == "critic_sub":
            assert metrics["judge_score"] == pytest.approx(results["critic_sub"]["judge_score,none"])
            continue
        for key, value in metrics.items():
            assert intervals[task][f"{key},none"] == pytest.approx(value), (task, key)
    assert report["judge"]["model"] == "counting-judge" and "api_key" not in report["judge"]
    failures = sum(len(v) for v in report["failed"].values())
    assert failures == sum(results[t]["judge_failed,none"] for t in report["failed"])
    assert "critic_feedback_sub" in capsys.readouterr().out


def test_without_a_judge_generation_is_kept_and_judging_deferred(monkeypatch):
    monkeypatch.delenv("CRITIC_JUDGE_MODEL")
    out = lm_eval.simple_evaluate(model=scripted_lm(echo_critique), tasks=["critic_correction_sub_chat"],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0, log_samples=True)
    metrics = out["results"]["critic_correction_sub_chat"]
    assert metrics["judge_deferred,none"] == len(data.load_docs("correction", "dev", "chat", "sample", fmt="sub"))
    assert "judge_score,none" not in metrics
    assert CountingJudge.calls == 0
    assert all(s["resps"][0][0].startswith("Critique #") for s in out["samples"]["critic_correction_sub_chat"])


def test_calibrate_judge_reports_spearman_with_humans(capsys):
    from scipy import stats

    assert cli.main(["calibrate-judge", "--data_dir", "sample", "--domains", "chat,qa,math_cot"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    docs = data.load_meta("dev", "chat,qa,math_cot", "sample")
    from critic_tasks.protocols.criticbench.judge_prompts import feedback_judge_prompt

    scores = []
    for d in docs:
        reply = _judge_reply(feedback_judge_prompt({**d, "feedback": d["ground_truth_feedback"]}, d["evaluated_feedback"]))
        scores.append(float(reply.rsplit("Score:", 1)[1]) if "Score:" in reply else 5.5)
    expected = stats.spearmanr(scores, [d["meta_feedback_score"] for d in docs]).statistic * 100
    assert f"= {expected:.2f} over {len(docs)} critiques" in line


def test_lm_eval_run_judged_by_a_real_server_then_rejudged_from_cache(llama_server, monkeypatch, tmp_path):
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "openai")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "smollm2-135m")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", llama_server)
    monkeypatch.setenv("CRITIC_JUDGE_MAX_TOKENS", "48")
    monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "not-a-real-key")
    task = "critic_correction_sub_chat"
    out = lm_eval.simple_evaluate(model=scripted_lm(echo_critique), tasks=[task], task_manager=critic_tasks.task_manager(),
                                  bootstrap_iters=0, log_samples=True)
    metrics = out["results"][task]
    n = len(data.load_docs("correction", "dev", "chat", "sample", fmt="sub"))
    assert metrics["judge_failed,none"] + metrics["judge_parse_rate,none"] * n / 100 == pytest.approx(n)
    records = [s["filtered_resps"][0][0] for s in out["samples"][task]]
    assert all(r["judge_text"] for r in records)  # real replies from the server
    assert all(r["judge"]["base_url"] == llama_server and "api_key" not in r["judge"] for r in records)

    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.general_config_tracker.model_name_sanitized = "echo"
    tracker.date_id = "2026-11-21T10-00-00.000001"
    tracker.save_results_samples(task, out["samples"][task])
    report = tmp_path / "judged.json"
    # A 135M judge often writes no "Score:" line; the CLI then exits 1 unless failures are explicitly allowed.
    expected_exit = 1 if metrics["judge_failed,none"] else 0
    assert cli.main(["judge", str(tmp_path / "run"), "--output", str(report), "--no_progress"]) == expected_exit
    assert cli.main(["judge", str(tmp_path / "run"), "--output", str(report), "--no_progress", "--allow_failures"]) == 0
    again = json.loads(report.read_text())["results"][task]
    # a run's intervals come from its samples files (the CLI adds them after lm-eval; simple_evaluate has none)
    assert "judge_score_ci_low" in again
    for key, value in again.items():
        if "_ci_" not in key:
            assert metrics[f"{key},none"] == pytest.approx(value), key


def test_in_run_judging_exits_non_zero_when_items_could_not_be_judged(tmp_path, monkeypatch, capsys):
    """critic-eval with a judge configured: replies without a score (the counting judge's "Hard to say.") are
    counted, and the run exits 1 saying how many, unless the user accepts them."""
    out = tmp_path / "out"
    args = ["--model", "dummy", "--tasks", "critic_feedback_sub", "--output_path", str(out), "--log_samples"]
    monkeypatch.delenv("CRITIC_JUDGE_ALLOW_FAILURES", raising=False)
    assert cli.main(args) == 1
    samples = [json.loads(line) for p in out.rglob("samples_critic_feedback_sub_*.jsonl") for line in p.open()]
    # lm-eval writes each filtered record as its repr
    unjudged = sum(ast.literal_eval(s["filtered_resps"][0][0])["judge_text"] == "Hard to say." for s in samples)
    assert len(samples) == 44 and unjudged > 0
    assert f"critic-eval: {unjudged} item(s) could not be scored by the judge" in capsys.readouterr().err
    monkeypatch.setenv("CRITIC_JUDGE_ALLOW_FAILURES", "1")
    assert cli.main(args) == 0  # accepted; and every grade came from the cache
