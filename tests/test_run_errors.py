"""Bad settings and bad input stop a run before the model generates anything, in one line, with a non-zero exit; a
failure late in a run keeps the generations and says how to rescore them."""

import json

import pytest
from helpers import scripted_lm

import critic_tasks
from critic_tasks import cli
from critic_tasks.core.errors import ConfigError
from critic_tasks.llm import LLMSettings

lm_eval = pytest.importorskip("lm_eval")


@pytest.fixture(autouse=True)
def sample_data(monkeypatch, tmp_path):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    for var in ("CRITIC_JUDGE_MODEL", "CRITIC_JUDGE_BACKEND", "CRITIC_JUDGE_CONCURRENCY", "CRITIC_EXECUTOR"):
        monkeypatch.delenv(var, raising=False)


BAD_SETTINGS = [
    ("critic_feedback_sub_chat", "CRITIC_JUDGE_CONCURRENCY", "abc", "CRITIC_JUDGE_CONCURRENCY must be an integer, got 'abc'"),
    ("critic_feedback_sub_chat", "CRITIC_JUDGE_CONCURRENCY", "0", "CRITIC_JUDGE_CONCURRENCY must be >= 1, got 0"),
    ("critic_feedback_sub_chat", "CRITIC_JUDGE_BACKEND", "bogus", "unknown judge backend 'bogus' (CRITIC_JUDGE_BACKEND)"),
    ("critic_feedback_sub_chat", "CRITIC_JUDGE_CACHE", "/proc/version/judge.sqlite",
     "CRITIC_JUDGE_CACHE=/proc/version/judge.sqlite"),
    ("critic_correction_math_pot", "CRITIC_EXECUTOR", "bogus", "no code executor named 'bogus' (CRITIC_EXECUTOR)"),
]


@pytest.mark.slow
@pytest.mark.parametrize("task,var,value,message", BAD_SETTINGS)
def test_bad_setting_fails_while_tasks_are_built_before_any_generation(monkeypatch, task, var, value, message):
    monkeypatch.setenv(var, value)
    lm = scripted_lm(lambda prompt: "Decision: 4")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
    assert lm.prompts == []  # the model was never called


@pytest.mark.slow
@pytest.mark.parametrize("task,var,value,message", BAD_SETTINGS)
def test_bad_setting_is_one_line_from_the_cli_before_lm_eval_starts(monkeypatch, capsys, task, var, value, message):
    monkeypatch.setenv(var, value)
    assert cli.main(["--model", "dummy", "--tasks", task]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("critic-eval: ") and message in err[0]


def test_judge_cache_may_be_a_directory(tmp_path):
    settings = LLMSettings(model="m", cache=str(tmp_path))
    assert settings.cache == str(tmp_path / "judge.sqlite")


def test_no_arguments_and_help_show_our_commands(capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out == err + "\n" or out.strip() == err.strip()
    for command in ("demo", "summary", "judge", "calibrate-judge", "tasks", "tasks-dir"):
        assert f"\n  {command} " in out
    assert "critic-eval run --help" in out


@pytest.mark.parametrize("content,message", [
    (None, "no such results file"),
    ("[1, 2]", "not lm-eval results"),
    ("not json", "not a JSON results file"),
    (json.dumps({"results": {"gsm8k": {"exact_match,none": 0.5}}}), "no critic task in these results (found: gsm8k)"),
])
def test_summary_bad_input_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    assert cli.main(["summary", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"critic-eval: {path}: {message}"] or (len(err) == 1 and message in err[0] and str(path) in err[0])


@pytest.mark.slow
def test_summary_of_an_output_directory_explains_zeros_and_deferred_judging(tmp_path, capsys):
    run = tmp_path / "out" / "model"
    run.mkdir(parents=True)
    (run / "results_2026-11-22T10-00-00.json").write_text(json.dumps({"results": {
        "critic_feedback": {"spearman,none": 0.0, "score,none": 50.0, "parse_rate,none": 0.0,
                            "spearman_warnings,none": 3.0},
        "critic_feedback_sub": {"judge_deferred,none": 44.0}}}))
    assert cli.main(["summary", str(tmp_path / "out")]) == 0
    rows = capsys.readouterr().out.splitlines()
    spearman = next(r for r in rows if r.startswith("critic_feedback ") and " spearman " in r)
    assert "0.00" in spearman and "3 undefined correlation(s) reported as 0" in spearman
    judged = next(r for r in rows if r.startswith("critic_feedback_sub ") and " judge_score " in r)
    assert "n/a" in judged and "44 items not judged yet: run `critic-eval judge <output_path>`" in judged


@pytest.mark.slow
def test_late_scoring_failure_saves_generations_and_says_how_to_rescore(monkeypatch, tmp_path, capsys):
    """The judge fails only after all generation (a backend that breaks mid-run): nothing is lost."""
    from critic_tasks.hookspecs import hookimpl, plugin_manager
    from critic_tasks.llm.backends import Reply

    class BrokenBackend:
        def generate(self, prompts, progress=True, on_result=None):
            raise RuntimeError("GPU fell off the bus")

    class GoodBackend:
        def generate(self, prompts, progress=True, on_result=None):
            return [Reply(f"Fine. Score: {len(p) % 10 + 1}") for p in prompts]

    class Plugin:
        @hookimpl
        def critic_llm_backend(self, name, settings):
            return {"broken": BrokenBackend, "good": GoodBackend}.get(name, lambda: None)()

    pm = plugin_manager()
    pm.register(Plugin(), name="rescue-test")
    try:
        monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "broken")
        monkeypatch.setenv("CRITIC_JUDGE_MODEL", "m")
        monkeypatch.setenv("CRITIC_RESCUE_DIR", str(tmp_path / "rescue"))
        lm = scripted_lm(lambda prompt: f"critique {len(prompt)}")
        with pytest.raises(Exception) as err:
            lm_eval.simple_evaluate(model=lm, tasks=["critic_feedback_sub_chat"],
                                    task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
        message = str(err.value)
        assert "GPU fell off the bus" in message and "critic-eval judge " in message
        (saved,) = (tmp_path / "rescue").glob("samples_critic_feedback_sub_*.jsonl")
        lines = [json.loads(line) for line in saved.read_text().splitlines()]
        assert len(lines) == len(lm.prompts) > 0  # every generation, in order, with its document
        assert [row["resps"][0][0] for row in lines] == [f"critique {len(p)}" for p in lm.prompts]

        monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "good")
        assert cli.main(["judge", str(saved), "--no_progress"]) == 0
        assert "critic_feedback_sub" in capsys.readouterr().out
    finally:
        pm.unregister(name="rescue-test")


@pytest.mark.slow
def test_late_sandbox_failure_saves_generations_and_rescore_gives_the_live_numbers(monkeypatch, tmp_path, capsys):
    """The executor breaks after generation: the revisions are saved; `critic-eval rescore` on that file, with a
    working executor, reports what a run that had worked reports."""
    from critic_tasks.hookspecs import hookimpl, plugin_manager
    from critic_tasks.sandbox import get_executor

    class BrokenExecutor:
        isolation = "broken"

        def run(self, programs):
            raise OSError("cgroup vanished")

    class Plugin:
        @hookimpl
        def critic_executor(self, name, options):
            return BrokenExecutor() if name == "broken" else None

    from critic_tasks.protocols.criticbench import data

    docs = [d for d in data.load_docs("correction", "dev", data_dir="sample") if d["domain"] == "math_pot"]

    def reply(prompt):  # the right value for even items, a wrong one for odd ones
        doc = next(d for d in docs if d["question"] in prompt)
        answer = doc["ground_truth_answer"] if doc["item_index"] % 2 == 0 else "-12345"
        return f"```python\nclass Solution:\n    def solution(self):\n        return {answer}\n```"

    pm = plugin_manager()
    pm.register(Plugin(), name="sandbox-rescue-test")
    try:
        monkeypatch.setenv("CRITIC_RESCUE_DIR", str(tmp_path / "rescue"))
        monkeypatch.setenv("CRITIC_CI", "off")
        monkeypatch.setenv("CRITIC_EXECUTOR", "broken")
        lm = scripted_lm(reply)
        with pytest.raises(Exception) as err:
            lm_eval.simple_evaluate(model=lm, tasks=["critic_correction_math_pot"],
                                    task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
        message = str(err.value)
        assert "cgroup vanished" in message and "critic-eval rescore " in message
        (saved,) = (tmp_path / "rescue").glob("samples_critic_correction_*.jsonl")
        assert len(saved.read_text().splitlines()) == len(lm.prompts) > 0

        monkeypatch.setenv("CRITIC_EXECUTOR", "sandbox")
        live = lm_eval.simple_evaluate(model=scripted_lm(reply), tasks=["critic_correction_math_pot"],
                                       task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
        expected = live["results"]["critic_correction_math_pot"]
        out = tmp_path / "rescored.json"
        assert cli.main(["rescore", str(saved), "--output", str(out)]) == 0
        (rescored,) = json.loads(out.read_text())["results"].values()
        for key in ("pass_rate,none", "parse_rate,none", "truncated,none", "isolation,none"):
            assert rescored[key] == expected[key], key
        assert rescored["isolation,none"] == get_executor("sandbox").isolation
        assert 0 < expected["pass_rate,none"] < 100
        assert "pass_rate" in capsys.readouterr().out
    finally:
        pm.unregister(name="sandbox-rescue-test")


def test_rescore_bad_input_is_one_line(tmp_path, capsys):
    assert cli.main(["rescore", str(tmp_path / "nope")]) == 2
    bad = tmp_path / "samples_critic_feedback_2026-11-22T10-00-00.jsonl"
    bad.write_text("{not json\n")
    assert cli.main(["rescore", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such file" in err[0] and f"{bad}:1: not an lm-eval sample line" in err[1]


@pytest.mark.slow
def test_preflight_command_checks_settings_for_plain_lm_eval(monkeypatch, capsys):
    assert cli.main(["preflight", "--tasks", "critic_correction_math_pot,hellaswag"]) == 0
    assert "ok (1 critic task(s)" in capsys.readouterr().out
    monkeypatch.setenv("CRITIC_EXECUTOR", "bogus")
    assert cli.main(["preflight", "--tasks", "critic_correction_math_pot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no code executor named 'bogus' (CRITIC_EXECUTOR)" in err[0]
    assert cli.main(["preflight", "--tasks", "critic_feedback", "--metadata", '{"data_dir": "/nope"}']) == 2
    assert "/nope" in capsys.readouterr().err
    assert cli.main(["preflight"]) == 2
    assert "preflight needs --tasks" in capsys.readouterr().err
    monkeypatch.delenv("CRITIC_EXECUTOR")
    # a typo of ours, SAvg without its stage 1, a URL without a scheme: one line each, before any model loads
    assert cli.main(["preflight", "--tasks", "critic_feedbak"]) == 2
    assert "unknown critic task 'critic_feedbak'; did you mean critic_feedback" in capsys.readouterr().err
    assert cli.main(["preflight", "--tasks", "critic_correction_self"]) == 2
    assert "needs the critic's own feedback from a stage-1 run" in capsys.readouterr().err
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "j")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", "notaurl")
    assert cli.main(["preflight", "--tasks", "critic_feedback_sub_chat"]) == 2
    assert "CRITIC_JUDGE_BASE_URL=notaurl: expected an http:// or https:// URL" in capsys.readouterr().err
    monkeypatch.delenv("CRITIC_JUDGE_MODEL")
    monkeypatch.delenv("CRITIC_JUDGE_BASE_URL")
    assert cli.main(["preflight", "--tasks", "critic_feedback_sub_chat"]) == 0
    assert "note: no judge model (CRITIC_JUDGE_MODEL): judging will be deferred" in capsys.readouterr().out
    assert cli.main(["preflight", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: critic-eval preflight")


@pytest.mark.slow
def test_a_task_name_lm_eval_does_not_know_is_one_line(capsys):
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedbak"]) == 2
    assert "unknown critic task 'critic_feedbak'" in capsys.readouterr().err
    assert cli.main(["--model", "dummy", "--tasks", "hellaswagg_nonexistent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Tasks not found" in err[0] and "hellaswagg_nonexistent" in err[0]
