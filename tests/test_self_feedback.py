"""SAvg and the text-domain EAvg (CriticBench correction columns): the critic revises with its own feedback (from
a stage-1 run's saved samples) or with none; objective checks on math / code, the judge on the text domains."""

import json
import re

import pytest
from helpers import InProcessBackend, backend_plugin, correction_reply, expected_pass, scripted_cli_model, scripted_lm

import critic_tasks
from critic_tasks import cli
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.llm.backends import Reply as JudgeReply
from critic_tasks.protocols.criticbench import data, prompts
from critic_tasks.protocols.criticbench import self_feedback as savg

lm_eval = pytest.importorskip("lm_eval")


class RecordingJudge(InProcessBackend):
    """An in-process judge backend: grades 7, remembers every prompt."""

    prompts: list[str] = []

    def reply(self, prompt):
        RecordingJudge.prompts.append(prompt)
        return JudgeReply("Fine.\nScore: 7")


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv(data.DATA_DIR_ENV, "sample")
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "recording")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "recording-judge")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", "off")
    monkeypatch.delenv("CRITIC_SELF_FEEDBACK", raising=False)
    RecordingJudge.prompts = []
    with backend_plugin("recording", RecordingJudge):
        yield


def _run(lm, tasks, **kwargs):
    return lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=critic_tasks.task_manager(), bootstrap_iters=0,
                                   **kwargs)


# ----------------------------------------------------------------------------- EAvg on the text domains


@pytest.mark.slow
def test_empty_feedback_sub_prompts_carry_no_feedback_and_are_judged_without_one():
    docs = data.load_correction("dev", None, "sample", fmt="sub")
    lm = scripted_lm(lambda prompt: "A revised response.")
    out = _run(lm, ["critic_correction_empty_sub"])
    assert len(lm.prompts) == len(docs) > 0
    for prompt in lm.prompts:
        assert "### Feedback:" not in prompt and "feedback" not in prompt.lower()
    for doc in docs:  # not one annotated critique reached the critic or the judge
        assert not any(doc["feedback"] in p for p in lm.prompts + RecordingJudge.prompts)
    assert len(RecordingJudge.prompts) == len(docs)
    assert all("Critique of the original response" not in p and "without any critique" in p
               for p in RecordingJudge.prompts)
    metrics = out["results"]["critic_correction_empty_sub"]
    assert metrics["judge_score,none"] == 7 and metrics["judge_parse_rate,none"] == 100


def test_with_feedback_judge_prompt_keeps_the_critique():
    from critic_tasks.protocols.criticbench.judge_prompts import correction_judge_prompt

    doc = data.load_correction("dev", "chat", "sample", fmt="sub")[0]
    # the critique stands whole in its own fenced section (model text is fenced since the judge-input work)
    section = re.compile(r"### Critique of the original response\n<<<BEGIN \S+ [0-9a-f]{12}>>>\n"
                         + re.escape(doc["feedback"].strip()) + r"\n<<<END ")
    assert section.search(correction_judge_prompt(doc, "x"))
    assert doc["feedback"].strip() not in correction_judge_prompt({**doc, "with_feedback": False}, "x")


# ----------------------------------------------------------------------------- SAvg

OWN = re.compile(r"OWN-FEEDBACK <(?P<key>[^>]+)>")
STAGE1 = {prompts.critic_prompt(d): d for d in data.stage1_docs("dev", None, "sample")}
KEYS = {d["item_key"]: d for d in STAGE1.values()}


def critic(prompt: str) -> str:
    """Stage 1: a critique naming its item; stage 2: the sample's planned revision, only when the prompt carries
    the critic's own critique (so a run fed the annotated one fails every item)."""
    if prompt in STAGE1:
        return f"OWN-FEEDBACK <{STAGE1[prompt]['item_key']}> the response has a flaw."
    found = OWN.search(prompt)
    if found is None:
        return "no own feedback in sight"
    doc = KEYS[found["key"]]
    return correction_reply(doc) if doc["correction_fmt"] == "obj" else f"Revised for {found['key']}."


def _save_samples(out, folder):
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(folder))
    tracker.general_config_tracker.model_name_sanitized = "scripted"
    tracker.date_id = "2026-11-22T10-00-00.000001"
    for task, samples in out["samples"].items():
        tracker.save_results_samples(task, samples)
    return sorted(folder.rglob("samples_*.jsonl"))


@pytest.fixture(scope="module")
def stage1(tmp_path_factory):
    """One stage-1 run over every domain, its samples saved as lm-eval's CLI saves them."""
    lm = scripted_lm(critic)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(data.DATA_DIR_ENV, "sample")
        out = _run(lm, ["critic_self_feedback"], log_samples=True)
    folder = tmp_path_factory.mktemp("stage1")
    files = _save_samples(out, folder)
    return folder, files, out, lm


def _expected_pass_rate(docs):
    by_domain = {}
    for d in docs:
        by_domain.setdefault(d["domain"], []).append(expected_pass(d)[1])
    return 100 * sum(sum(v) / len(v) for v in by_domain.values()) / len(by_domain)


@pytest.mark.slow
def test_stage1_asks_for_feedback_on_exactly_the_correction_items(stage1):
    folder, files, out, lm = stage1
    obj = data.load_correction("dev", None, "sample", fmt="obj")
    sub = data.load_correction("dev", None, "sample", fmt="sub")
    assert len(lm.prompts) == len(obj) + len(sub) == len(STAGE1)
    assert {d["domain"] for d in STAGE1.values()} == set(data.DOMAINS)
    assert all("Write a critique of the response" in p and "### Feedback:" not in p for p in lm.prompts)
    assert out["results"]["critic_self_feedback"]["parse_rate,none"] == 100
    assert [f.name for f in files] == ["samples_critic_self_feedback_2026-11-22T10-00-00.000001.jsonl"]
    assert len(files[0].read_text().splitlines()) == len(STAGE1)


@pytest.mark.slow
def test_stage2_revises_with_the_critics_own_feedback(stage1, monkeypatch):
    folder, *_ = stage1
    monkeypatch.setenv(savg.SELF_FEEDBACK_ENV, str(folder))
    lm = scripted_lm(critic)
    out = _run(lm, ["critic_correction_self", "critic_correction_self_sub"])
    obj = data.load_correction("dev", None, "sample", fmt="obj")
    sub = data.load_correction("dev", None, "sample", fmt="sub")
    assert len(lm.prompts) == len(obj) + len(sub)
    for doc in obj + sub:  # each prompt carries its item's own critique, never the annotated one
        key = data.item_key(doc)
        (prompt,) = [p for p in lm.prompts if f"<{key}>" in p]
        assert f"### Feedback:\nOWN-FEEDBACK <{key}> the response has a flaw.\n" in prompt
        assert doc["feedback"].strip() not in prompt
    metrics = out["results"]["critic_correction_self"]
    expected = _expected_pass_rate(obj)
    assert 0 < expected < 100 and metrics["pass_rate,none"] == pytest.approx(expected, abs=1e-9)
    assert metrics["parse_rate,none"] == pytest.approx(100 * sum(expected_pass(d)[0] for d in obj) / len(obj))
    # the text domains: the judge grades the revision against the critique the critic itself wrote
    assert len(RecordingJudge.prompts) == len(sub)
    for doc in sub:
        key = data.item_key(doc)
        (judged,) = [p for p in RecordingJudge.prompts if f"Revised for {key}." in p]
        # the critic's own critique, whole, in its fenced section
        assert re.search(r"### Critique of the original response\n<<<BEGIN \S+ [0-9a-f]{12}>>>\n"
                         + re.escape(f"OWN-FEEDBACK <{key}>"), judged)
    assert out["results"]["critic_correction_self_sub"]["judge_score,none"] == 7


@pytest.mark.slow
def test_stage2_with_the_annotated_feedback_would_fail_every_item(monkeypatch):
    """The control: the same critic on critic_correction (annotated feedback) passes nothing."""
    out = _run(scripted_lm(critic), ["critic_correction_math_cot"])
    assert out["results"]["critic_correction_math_cot"]["pass_rate,none"] == 0


@pytest.mark.slow
def test_without_self_feedback_the_task_says_how_to_get_it():
    lm = scripted_lm(critic)
    with pytest.raises(ConfigError, match=f"--tasks {savg.STAGE1_TASK} with --log_samples .*{savg.SELF_FEEDBACK_ENV}"):
        _run(lm, ["critic_correction_self_math_cot"])
    assert lm.prompts == []


def _samples_lines(stage1):
    return stage1[1][0].read_text().splitlines()


def _bad_inputs(stage1, tmp_path):
    lines = _samples_lines(stage1)
    first = json.loads(lines[0])
    missing = tmp_path / "missing" / "samples_critic_self_feedback_2026-11-22T10-00-00.jsonl"
    missing.parent.mkdir()
    missing.write_text("\n".join(lines[1:]) + "\n")
    other = tmp_path / "other_task" / "samples_critic_correction_sub_2026-11-22T10-00-00.jsonl"
    other.parent.mkdir()
    other.write_text(json.dumps({"doc": {"dimension": "correction", "question": "q"}, "resps": [["x"]]}) + "\n")
    changed = tmp_path / "changed.jsonl"
    first["doc"]["question"] = "Some other question?"
    changed.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return [
        (tmp_path / "nowhere", "no such file or directory"),
        (missing.parent, f"no feedback for item {first['doc']['item_key']}"),
        (other, "not a sample of the stage-1 task critic_self_feedback"),
        (changed, "holds another question"),
        (other.parent, "no stage-1 samples"),  # a folder holding another task's samples only
    ]


@pytest.mark.slow
def test_bad_self_feedback_stops_the_run_before_any_generation(stage1, tmp_path, monkeypatch):
    for path, message in _bad_inputs(stage1, tmp_path)[:4]:
        monkeypatch.setenv(savg.SELF_FEEDBACK_ENV, str(path))
        lm = scripted_lm(critic)
        with pytest.raises(DataError, match=re.escape(message)):
            _run(lm, ["critic_correction_self"])
        assert lm.prompts == []


# ----------------------------------------------------------------------------- critic-eval: one command


class _CliModel:
    """The scripted critic under a model name the lm-eval CLI can load (``--model critic_scripted_savg``)."""

    lm = None


@pytest.fixture
def cli_model():
    _CliModel.lm = scripted_cli_model("critic_scripted_savg", critic)
    return _CliModel


@pytest.mark.slow
def test_one_command_runs_stage1_then_the_requested_tasks(cli_model, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["--model", "critic_scripted_savg", "--tasks", "critic_correction_self_math_cot,critic_correction_self_sub_chat",
                   "--output_path", str(out), "--log_samples"])
    assert rc == 0, capsys.readouterr().err[-3000:]
    prompts_asked = cli_model.lm.prompts
    math = data.load_correction("dev", "math_cot", "sample", fmt="obj")
    chat = data.load_correction("dev", "chat", "sample", fmt="sub")
    n1 = len(math) + len(chat)
    assert len(prompts_asked) == 2 * n1
    assert all(p in STAGE1 for p in prompts_asked[:n1])  # stage 1 first, on exactly the two domains
    assert all(OWN.search(p) and p not in STAGE1 for p in prompts_asked[n1:])
    stage1_files = sorted((out / "self_feedback").rglob("samples_critic_self_feedback_*.jsonl"))
    assert {f.name.split("_2")[0] for f in stage1_files} == {"samples_critic_self_feedback_math_cot",
                                                              "samples_critic_self_feedback_chat"}
    (results_file,) = [f for f in out.rglob("results_*.json") if "self_feedback" not in f.parts]
    results = json.loads(results_file.read_text())["results"]
    assert results["critic_correction_self_math_cot"]["pass_rate,none"] == pytest.approx(_expected_pass_rate(math))
    assert results["critic_correction_self_sub_chat"]["judge_score,none"] == 7
    assert results_file.parent.parent == out  # the requested run's results where the user asked


@pytest.mark.slow
def test_one_command_without_output_path_uses_a_temporary_folder(cli_model, capsys):
    assert cli.main(["--model", "critic_scripted_savg", "--tasks", "critic_correction_self_math_cot"]) == 0
    assert "temporary folder" in capsys.readouterr().err
    n = len(data.load_correction("dev", "math_cot", "sample", fmt="obj"))
    assert len(cli_model.lm.prompts) == 2 * n


@pytest.mark.slow
def test_bad_self_feedback_is_one_line_exit_2_and_the_model_is_never_called(cli_model, stage1, tmp_path, capsys):
    for path, message in _bad_inputs(stage1, tmp_path):
        rc = cli.main(["--model", "critic_scripted_savg", "--tasks", "critic_correction_self",
                       "--metadata", json.dumps({"self_feedback": str(path)})])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("critic-eval: "), err
        assert message in err[0] and str(path) in err[0]
    assert cli_model.lm.prompts == []


@pytest.mark.slow
def test_with_limit_only_the_items_asked_need_feedback(stage1, tmp_path, monkeypatch):
    """Stage 1 cut short (its last item missing): a run asking fewer items works; one asking that item stops."""
    lines = _samples_lines(stage1)
    last = json.loads(lines[-1])["doc"]
    short = tmp_path / "samples_critic_self_feedback_2026-11-22T10-00-00.jsonl"
    short.write_text("\n".join(lines[:-1]) + "\n")
    monkeypatch.setenv(savg.SELF_FEEDBACK_ENV, str(short))
    task = "critic_correction_self_sub_" + last["domain"] if last["correction_fmt"] == "sub" else \
        "critic_correction_self_" + last["domain"]
    lm = scripted_lm(critic)
    _run(lm, [task], limit=1)
    assert len(lm.prompts) == 1 and OWN.search(lm.prompts[0])
    lm = scripted_lm(critic)
    with pytest.raises(DataError, match=re.escape(f"no feedback for item {last['item_key']}")):
        _run(lm, [task])
    assert lm.prompts == []


@pytest.mark.slow
def test_one_command_with_limit_runs_stage1_per_domain_with_the_same_limit(cli_model, capsys):
    assert cli.main(["--model", "critic_scripted_savg", "--tasks", "critic_correction_self", "--limit", "2"]) == 0, \
        capsys.readouterr().err[-3000:]
    asked = cli_model.lm.prompts
    stage1_prompts = [p for p in asked if p in STAGE1]
    assert len(stage1_prompts) == 2 * 4 and {STAGE1[p]["domain"] for p in stage1_prompts} == {
        "math_cot", "math_pot", "code_exec", "code_not_exec"}
    assert len(asked) == 8 + 2 and all(OWN.search(p) for p in asked[8:])


def test_stage1_argv_keeps_the_model_flags_and_replaces_tasks_and_output(tmp_path):
    from critic_tasks.adapters.lm_eval import stages
    from critic_tasks.adapters.lm_eval.flags import run_metadata, run_tasks

    argv = ["--model", "hf", "--model_args", "pretrained=m", "--tasks", "critic_correction_self_math_cot",
            "critic_feedback_chat", "--limit", "2", "-s", "-o", str(tmp_path / "out"), "--metadata", "data_dir=sample",
            "--apply_chat_template"]
    assert [t.name for t in run_tasks(argv)] == ["critic_correction_self_math_cot", "critic_feedback_chat"]
    with stages.self_feedback_stage(argv) as (stage1, stage2):
        folder = stage1[-1]
        assert stage1 == ["--model", "hf", "--model_args", "pretrained=m", "--limit", "2", "--metadata", "data_dir=sample",
                          "--apply_chat_template", "--tasks", "critic_self_feedback_math_cot", "--log_samples",
                          "--output_path", folder]
        assert folder.startswith(str(tmp_path / "out" / "self_feedback"))
        assert stage2 == [*argv, "--metadata", json.dumps({"self_feedback": folder})]
        assert run_metadata(stage2) == {"data_dir": "sample", "self_feedback": folder}
    assert stages.self_feedback_stage(stage2) is None  # given: no stage 1
    assert stages.self_feedback_stage(["--model", "hf", "--tasks", "critic_correction_math_cot"]) is None


def test_summary_table_shows_the_new_columns_after_the_annotated_ones():
    from critic_tasks.reports.tables import format_table

    results = {"critic_self_feedback": {"parse_rate,none": 100.0},
               "critic_correction_self_sub": {"judge_score,none": 6.0, "judge_parse_rate,none": 100.0},
               "critic_correction_self": {"pass_rate,none": 40.0, "score,none": 40.0},
               "critic_correction_empty_sub": {"judge_score,none": 5.0, "judge_parse_rate,none": 100.0},
               "critic_correction_sub": {"judge_score,none": 7.0, "judge_parse_rate,none": 100.0}}
    rows = [line.split()[:3] for line in format_table(results).splitlines()[1:]]
    assert list(dict.fromkeys(r[0] for r in rows)) == [
        "critic_correction_sub", "critic_correction_empty_sub", "critic_correction_self", "critic_correction_self_sub",
        "critic_self_feedback"]
    assert ["critic_correction_self", "pass_rate", "40.00"] in rows
