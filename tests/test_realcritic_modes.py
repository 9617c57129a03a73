"""RealCritic's self-critique and multi-round critique (issue 37, point 3): the stage-2 / round-k documents built from
an earlier run's logged samples (our own samples files, in lm-eval's --log_samples schema), their scores counted by
hand, critic-eval's chain of runs, bad samples files refused in one line, OpenCompass refusing the two-stage tasks."""

from __future__ import annotations

import json
import re

import pytest
from helpers import scripted_cli_model

from critic_tasks import cli, engine
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols.realcritic import data, prompts, scoring, stages

SAMPLE_GSM8K = data.load_task("gsm8k", "sample")  # idx 0: gold 21 (the shown solution right); idx 1: gold 17 (wrong)
SAMPLE_ARC = data.load_task("arc-challenge", "sample")  # idx 0: gold C (solution A, wrong); idx 1: gold B (B, right)
STAMP = "2026-11-22T10-00-00.123456"


def _sample_line(doc: dict, reply, n: int) -> str:
    """One line of lm-eval's samples file (the keys its EvaluationTracker writes)."""
    return json.dumps({"doc_id": n, "doc": doc, "target": doc["gold"], "arguments": {"gen_args_0": {"arg_0": "p"}},
                       "resps": [[reply]], "filtered_resps": [reply], "filter": "none", "metrics": ["accuracy"],
                       "doc_hash": "x", "prompt_hash": "y", "target_hash": "z", "accuracy": {}})


def _write_samples(folder, task: str, docs: list[dict], replies: list, stamp: str = STAMP):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_{stamp}.jsonl"
    path.write_text("".join(_sample_line(d, r, n) + "\n" for n, (d, r) in enumerate(zip(docs, replies))))
    return path


def _direct_docs(task: str) -> list[dict]:
    """Stage 1's documents as lm-eval logs them: the task's items asked as direct-CoT questions."""
    return [{**d, "dimension": "realcritic_direct", "round": 1, "stage_error": ""} for d in data.load_task(task, "sample")]


def _docs(dimension: str, task: str, **options) -> list[dict]:
    return stages.load_task_docs(dimension, "sample", subset=task, **options)


# ----------------------------------------------------------------------------- self-critique: stage 2's documents


def test_self_critique_shows_the_critic_its_own_direct_reply_graded_by_hand(tmp_path):
    stage1 = tmp_path / "stage1"
    own = ["4 bags of 6 is 24, minus 3... I get \\boxed{20}", "5 pens are 15 dollars, with the notebook \\boxed{17}"]
    _write_samples(stage1, "critic_realcritic_direct_gsm8k", _direct_docs("gsm8k"), own)
    docs = _docs("realcritic_self", "gsm8k", self_solution=str(stage1))
    assert [d["solution"] for d in docs] == own  # the critic's own replies, whole, replace the released solutions
    assert [d["solution_answer"] for d in docs] == ["20", "17"]
    assert [scoring.shown_correct(d) for d in docs] == [False, True]  # 20 != 21; 17 == 17
    assert all("Solution\n" + o in prompts.critic_prompt(d) for d, o in zip(docs, own))

    # the critic fixes its wrong first answer and breaks its right one
    values, _ = engine.score_task("critic_realcritic_self_gsm8k", docs, ["fixed: \\boxed{21}", "now \\boxed{18}"])
    first = [False, True]
    corrected = [True, False]  # 21 == gold 21; 18 != gold 17
    assert values["accuracy"] == pytest.approx(100 * sum(corrected) / 2)
    assert values["solution_accuracy"] == pytest.approx(100 * sum(first) / 2)  # the direct-CoT baseline
    fixed = [c for f, c in zip(first, corrected) if not f]
    broken = [not c for f, c in zip(first, corrected) if f]
    assert values["incorrect_to_correct"] == pytest.approx(100 * sum(fixed) / len(fixed))
    assert values["correct_to_incorrect"] == pytest.approx(100 * sum(broken) / len(broken))


def test_the_direct_task_asks_the_question_alone_and_scores_its_accuracy():
    docs = engine.task_docs("critic_realcritic_direct_arc_challenge", data_dir="sample")
    text = prompts.critic_prompt(docs[0])
    assert docs[0]["question"] in text and docs[0]["solution"] not in text and "letter of the correct option" in text
    values, _ = engine.score_task("critic_realcritic_direct_arc_challenge", docs, ["\\boxed{C}", "no box"])
    golds = [d["gold"] for d in SAMPLE_ARC]
    assert values["accuracy"] == pytest.approx(100 * sum(a == g for a, g in zip(["C", None], golds)) / 2)
    assert values["parse_rate"] == 50
    assert "correct_to_incorrect" not in values and "solution_accuracy" not in values  # no solution was shown


def test_an_unreadable_or_non_text_first_reply_is_a_wrong_solution_counted_not_dropped(tmp_path):
    _write_samples(tmp_path, "critic_realcritic_direct_arc_challenge", _direct_docs("arc-challenge"),
                   [None, "I think it is \\boxed{A or B}"])
    docs = _docs("realcritic_self", "arc-challenge", self_solution=str(tmp_path))
    assert [(d["solution"], d["solution_answer"], scoring.shown_correct(d)) for d in docs] == [
        ("", "", False), ("I think it is \\boxed{A or B}", "", False)]
    values, _ = engine.score_task("critic_realcritic_self_arc_challenge", docs, ["\\boxed{C}", "\\boxed{B}"])
    assert values["solution_accuracy"] == 0 and values["accuracy"] == 100 and values["incorrect_to_correct"] == 100


def test_the_newest_samples_file_of_the_stage1_task_is_read_from_a_folder(tmp_path):
    _write_samples(tmp_path / "m", "critic_realcritic_direct_gsm8k", _direct_docs("gsm8k"), ["\\boxed{1}"] * 2,
                   stamp="2026-11-21T10-00-00.1")
    _write_samples(tmp_path / "m", "critic_realcritic_direct_gsm8k", _direct_docs("gsm8k"), ["\\boxed{21}"] * 2)
    _write_samples(tmp_path / "m", "critic_realcritic_direct_math", _direct_docs("math"), ["x"] * 2,
                   stamp="2026-11-23T10-00-00.1")  # another task, newer: not read
    docs = _docs("realcritic_self", "gsm8k", self_solution=str(tmp_path))
    assert [d["solution_answer"] for d in docs] == ["21", "21"]


# ----------------------------------------------------------------------------- bad stage-1 samples: one line


def _bad_files(tmp_path):
    docs = _direct_docs("gsm8k")
    yield (_write_samples(tmp_path / "cross", "critic_realcritic_direct_gsm8k",
                          [{**d, "dimension": "realcritic"} for d in docs], ["a", "b"]),
           "not a sample of critic_realcritic_direct_gsm8k", ":1")
    no_resps = tmp_path / "noresps" / f"samples_critic_realcritic_direct_gsm8k_{STAMP}.jsonl"
    no_resps.parent.mkdir()
    no_resps.write_text(_sample_line(docs[0], "a", 0) + "\n" + json.dumps({"doc": docs[1], "resps": []}) + "\n")
    yield no_resps, "item gsm8k[1] has no generation", ":2"
    yield (_write_samples(tmp_path / "other", "critic_realcritic_direct_gsm8k",
                          [{**docs[0], "question": "another question"}, docs[1]], ["a", "b"]),
           "item gsm8k[0] holds another question", ":1")
    twice = _write_samples(tmp_path / "twice", "critic_realcritic_direct_gsm8k", [docs[0], docs[0]], ["a", "b"])
    yield twice, "item gsm8k[0] has another reply than", ":2"
    broken = tmp_path / "broken" / f"samples_critic_realcritic_direct_gsm8k_{STAMP}.jsonl"
    broken.parent.mkdir()
    broken.write_text("{not json\n")
    yield broken, "malformed JSON line", ":1"
    (tmp_path / "empty").mkdir()
    yield tmp_path / "empty", "no samples of critic_realcritic_direct_gsm8k", ""
    yield tmp_path / "nowhere", "no such file or directory", ""


def test_bad_stage1_files_are_one_error_naming_the_file_line_and_item(tmp_path):
    for path, message, line in _bad_files(tmp_path):
        with pytest.raises(DataError) as err:
            _docs("realcritic_self", "gsm8k", self_solution=str(path))
        text = str(err.value)
        assert message in text and str(path) + line in text and "\n" not in text, text


def test_an_item_stage1_did_not_cover_stops_its_prompt_and_only_its(tmp_path):
    _write_samples(tmp_path, "critic_realcritic_direct_gsm8k", _direct_docs("gsm8k")[:1], ["\\boxed{21}"])
    docs = _docs("realcritic_self", "gsm8k", self_solution=str(tmp_path))
    assert "\\boxed{21}" in prompts.critic_prompt(docs[0])  # a --limit 1 run works
    with pytest.raises(DataError, match=re.escape("no reply for item gsm8k[1] (line 2 of the task file)")):
        prompts.critic_prompt(docs[1])


def test_self_critique_without_stage1_names_the_stage1_task_when_the_prompt_is_built():
    docs = _docs("realcritic_self", "gsm8k")  # the data itself still loads (a preflight checks it before stage 1)
    with pytest.raises(DataError, match="run the same model on --tasks critic_realcritic_direct_gsm8k"):
        prompts.critic_prompt(docs[0])


# ----------------------------------------------------------------------------- multi-round: round k's documents


def test_round_two_critiques_round_one_replies_and_measures_against_them(tmp_path):
    round1_docs = _docs("realcritic", "gsm8k")
    replies = ["the solution is right: \\boxed{21}", "the cost is 15 + 2 = \\boxed{17}"]
    _write_samples(tmp_path / "round_1", "critic_realcritic_gsm8k", round1_docs, replies)
    docs = _docs("realcritic", "gsm8k", previous_round=str(tmp_path / "round_1"), round=2, rounds=2)
    assert [d["solution"] for d in docs] == replies and [d["round"] for d in docs] == [2, 2]
    assert [scoring.shown_correct(d) for d in docs] == [True, True]  # round 1 fixed item 1 (the released 15 was wrong)
    values, _ = engine.score_task("critic_realcritic_gsm8k", docs, ["\\boxed{21}", "\\boxed{16}"])
    assert values["accuracy"] == 50 and values["solution_accuracy"] == 100  # round 1's accuracy
    assert values["correct_to_incorrect"] == 50 and "incorrect_to_correct" not in values  # none wrong after round 1


def test_self_critique_rounds_chain_on_the_self_task(tmp_path):
    _write_samples(tmp_path / "s1", "critic_realcritic_direct_gsm8k", _direct_docs("gsm8k"), ["\\boxed{20}"] * 2)
    round1 = _docs("realcritic_self", "gsm8k", self_solution=str(tmp_path / "s1"))
    _write_samples(tmp_path / "r1", "critic_realcritic_self_gsm8k", round1, ["\\boxed{21}", "\\boxed{20}"])
    docs = _docs("realcritic_self", "gsm8k", self_solution=str(tmp_path / "s1"), previous_round=str(tmp_path / "r1"),
                 round=2)
    assert [d["solution_answer"] for d in docs] == ["21", "20"] and [scoring.shown_correct(d) for d in docs] == [True, False]


@pytest.mark.parametrize("options, message", [
    ({"rounds": 2, "round": 2}, "critiques round 1's replies"),
    ({"previous_round": "x", "round": 1}, "given for round 1"),
    ({"rounds": 2, "round": 3, "previous_round": "x"}, "round=3 is past rounds=2"),
    ({"rounds": "two"}, "rounds='two': expected a whole number"),
    ({"rounds": 0}, "expected a whole number of rounds, 1 or more"),
])
def test_bad_round_options_are_one_config_error(options, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _docs("realcritic", "gsm8k", **options)


def test_the_direct_task_has_no_rounds():
    with pytest.raises(ConfigError, match="critic_realcritic_direct_gsm8k solves each question once"):
        _docs("realcritic_direct", "gsm8k", previous_round="x", round=2)
    # a multi-round self-critique's --metadata reaches its stage 1 too: one pass, the question alone
    assert [d["round"] for d in _docs("realcritic_direct", "gsm8k", rounds=2)] == [1, 1]


# ----------------------------------------------------------------------------- critic-eval's chain of runs


BASE = ["--model", "hf", "--model_args", "pretrained=m", "--limit", "2", "--apply_chat_template"]


def _meta(argv):
    from critic_tasks.adapters.lm_eval.flags import run_metadata

    return run_metadata(argv)


def test_self_critique_runs_the_direct_tasks_first_into_the_output_folder(tmp_path):
    from critic_tasks.adapters.lm_eval import stages

    argv = [*BASE, "--tasks", "critic_realcritic_self_gsm8k,critic_realcritic_self_gpqa", "-s", "-o",
            str(tmp_path / "out")]
    with stages.prior_runs(argv) as runs:
        assert len(runs) == 2
        stage1, final = runs
        folder = stage1[-1]
        assert stage1 == [*BASE, "--tasks", "critic_realcritic_direct_gsm8k,critic_realcritic_direct_gpqa",
                          "--log_samples", "--output_path", folder]
        assert folder.startswith(str(tmp_path / "out" / "self_solution"))
        assert final == [*argv, "--metadata", json.dumps({"self_solution": folder})]
    assert stages.prior_runs(final) is None  # given: nothing to run first
    # the group expands to its eight tasks, each with its direct task
    with stages.prior_runs([*BASE, "--tasks", "critic_realcritic_self"]) as (stage1, final):
        assert stage1[stage1.index("--tasks") + 1].split(",") == [
            f"critic_realcritic_direct_{t.replace('-', '_')}" for t in data.TASKS]


def test_rounds_chain_each_run_on_the_previous_rounds_samples(tmp_path):
    from critic_tasks.adapters.lm_eval import stages

    argv = [*BASE, "--tasks", "critic_realcritic_gsm8k,critic_realcritic_direct_math", "--metadata",
            '{"rounds": 3}', "-o", str(tmp_path / "out")]
    with stages.prior_runs(argv) as runs:
        assert len(runs) == 3
        folders = [r[-1] for r in runs[:2]]
        assert [f.rsplit("/", 1)[-1] for f in folders] == ["round_1", "round_2"]
        assert all(f.startswith(str(tmp_path / "out" / "rounds")) for f in folders)
        for run in runs[:2]:  # only the tasks with rounds run the earlier rounds
            assert run[run.index("--tasks") + 1] == "critic_realcritic_gsm8k" and "--log_samples" in run
        assert _meta(runs[0]) == {"rounds": 3, "round": 1}
        assert _meta(runs[1]) == {"rounds": 3, "round": 2, "previous_round": folders[0]}
        assert runs[2][:len(argv)] == argv and _meta(runs[2]) == {"rounds": 3, "round": 3,
                                                                  "previous_round": folders[1]}


def test_self_critique_with_rounds_and_savg_in_one_command(tmp_path):
    from critic_tasks.adapters.lm_eval import stages

    argv = [*BASE, "--tasks", "critic_realcritic_self_gsm8k,critic_correction_self_math_cot", "--metadata",
            "rounds=2"]
    with stages.prior_runs(argv) as runs:
        tasks = [r[r.index("--tasks") + 1] for r in runs[:-1]]
        assert tasks == ["critic_realcritic_direct_gsm8k", "critic_self_feedback_math_cot", "critic_realcritic_self_gsm8k"]
        own, savg, round1, final = runs
        assert _meta(round1) == {"rounds": 2, "round": 1, "self_solution": own[-1], "self_feedback": savg[-1]}
        assert _meta(final) == {"rounds": 2, "round": 2, "self_solution": own[-1], "self_feedback": savg[-1],
                                "previous_round": round1[-1]}


@pytest.mark.parametrize("tasks, metadata, message", [
    ("critic_realcritic_gsm8k", '{"rounds": -1}', "rounds=-1: expected a whole number of rounds"),
    ("critic_realcritic_direct_gsm8k", '{"rounds": 2}', "none of --tasks has rounds"),
])
def test_bad_rounds_are_refused_before_any_run(tasks, metadata, message):
    from critic_tasks.adapters.lm_eval import stages

    with pytest.raises(ConfigError, match=re.escape(message)):
        stages.prior_runs([*BASE, "--tasks", tasks, "--metadata", metadata])


def test_one_round_or_the_cross_task_alone_needs_no_chain():
    from critic_tasks.adapters.lm_eval import stages

    assert stages.prior_runs([*BASE, "--tasks", "critic_realcritic_gsm8k"]) is None
    assert stages.prior_runs([*BASE, "--tasks", "critic_realcritic_gsm8k", "--metadata", "rounds=1"]) is None


# ----------------------------------------------------------------------------- OpenCompass


def test_opencompass_refuses_self_critique_in_one_line_and_runs_the_direct_task(capsys):
    from critic_tasks.adapters.opencompass.spec import supported
    from critic_tasks.registry import TASKS

    assert cli.main(["opencompass", "--datasets", "critic_realcritic_self_gsm8k_gen", "--hf-path", "x"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "two stages" in lines[0] and lines[0].endswith("--tasks critic_realcritic_self_gsm8k")
    assert supported(TASKS["critic_realcritic_direct_gsm8k"]) and supported(TASKS["critic_realcritic_gsm8k"])


# ----------------------------------------------------------------------------- the real chain through lm-eval


class _CliModel:
    lm = None


def _critic(prompt: str) -> str:
    """Direct CoT: always 20 (gsm8k's golds are 21 and 17); a critique of a 20: 21; of a 21: keeps it."""
    if "## Your solution" in prompt:
        return "I compute \\boxed{20}"
    return "the right answer is \\boxed{21}" if "\\boxed{20}" in prompt else "it stands: \\boxed{21}"


@pytest.mark.slow
def test_one_command_runs_direct_then_self_critique_then_a_second_round(tmp_path, capsys):
    _CliModel.lm = scripted_cli_model("critic_scripted_realcritic", _critic)
    out = tmp_path / "out"
    rc = cli.main(["--model", "critic_scripted_realcritic", "--tasks", "critic_realcritic_self_gsm8k",
                   "--metadata", json.dumps({"data_dir": "sample", "rounds": 2}), "--output_path", str(out),
                   "--log_samples"])
    assert rc == 0, capsys.readouterr().err[-3000:]
    asked = _CliModel.lm.prompts
    assert len(asked) == 3 * 2 and all("## Your solution" in p for p in asked[:2])  # direct, round 1, round 2
    assert all("\\boxed{20}" in p for p in asked[2:4]) and all("\\boxed{21}" in p for p in asked[4:])
    golds = [d["gold"] for d in SAMPLE_GSM8K]
    (final,) = [f for f in out.glob("*/results_*.json")]
    values = json.loads(final.read_text())["results"]["critic_realcritic_self_gsm8k"]
    # round 2 critiques round 1's replies (21, 21): both kept at 21
    assert values["accuracy,none"] == pytest.approx(100 * sum(g == "21" for g in golds) / 2)
    assert values["solution_accuracy,none"] == pytest.approx(100 * sum(g == "21" for g in golds) / 2)
    (round1,) = (out / "rounds").rglob("results_*.json")
    first = json.loads(round1.read_text())["results"]["critic_realcritic_self_gsm8k"]
    assert first["solution_accuracy,none"] == 0  # the direct answers (20) were all wrong
    assert "round 1: critic_realcritic_self_gsm8k accuracy 50.0" in capsys.readouterr().out


def test_preflight_refuses_a_second_stage_without_its_first_in_one_line(monkeypatch, capsys):
    """Before a plain lm_eval run: a task with a prior stage (RealCritic's self-critique, CriticBench's SAvg) and no
    stage-1 samples named is one line naming the --metadata key; with it named, that check passes."""
    from critic_tasks import cli

    monkeypatch.setenv("REALCRITIC_DATA_DIR", "sample")
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.delenv("CRITIC_SELF_FEEDBACK", raising=False)
    assert cli.main(["preflight", "--tasks", "critic_realcritic_self_gsm8k"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "critic_realcritic_self_gsm8k: plain lm_eval needs the critic's own solutions" in err
    assert '"self_solution"' in err
    assert cli.main(["preflight", "--tasks", "critic_correction_self"]) == 2
    assert '"self_feedback"' in capsys.readouterr().err
