"""`critic-eval preflight` on JudgeBench / ProcessBench / RealCritic set-ups a newcomer gets wrong (issue 38): each
broken layout is refused in one line naming the file (or setting) and the fix, before any model loads; the right
layouts pass. The data settings mean the same to preflight and to the run's loaders; RealCritic obeys HF_HUB_OFFLINE.
And the demo's lines for these tasks: how many generations, the budget they need, no CriticEval leaderboard."""

import json
import shutil
from pathlib import Path

import pytest
from helpers import cli_without_services

from critic_tasks import cli
from critic_tasks.core.errors import DataError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
JUDGEBENCH, PROCESSBENCH, REALCRITIC = SHARED / "judgebench", SHARED / "processbench", SHARED / "realcritic"
PACKAGE = Path(__file__).resolve().parents[1] / "critic_tasks" / "protocols"
GPT_FILE = "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl"
DATA_ENVS = ("JUDGEBENCH_DATA_DIR", "PROCESSBENCH_DATA_DIR", "REALCRITIC_DATA_DIR")
ALL_THREE = "critic_judgebench,critic_processbench,critic_realcritic"

pytestmark = pytest.mark.skipif(not JUDGEBENCH.is_dir(), reason=f"shared data not found at {SHARED}")


@pytest.fixture(autouse=True)
def local_samples(monkeypatch, tmp_path):
    """Each benchmark on its bundled sample unless a test says otherwise; caches in empty folders."""
    cli_without_services(monkeypatch)
    for env in DATA_ENVS:
        monkeypatch.setenv(env, "sample")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def preflight(capsys, tasks: str = ALL_THREE) -> tuple[int, str]:
    code = cli.main(["preflight", "--tasks", tasks])
    out = capsys.readouterr()
    lines = [line for line in out.err.strip().splitlines() if line.strip()]
    return code, lines[0] if len(lines) == 1 else "\n".join(lines) or out.out


# ----------------------------------------------------------------------------- local copies: loaded as the run will


def test_the_right_layouts_pass(monkeypatch, capsys):
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(JUDGEBENCH))  # the paper repository: data/ inside
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", str(PROCESSBENCH))  # dataset/ inside, without omnimath
    monkeypatch.setenv("REALCRITIC_DATA_DIR", str(REALCRITIC / "data" / "mix_data"))  # the mix_data folder itself
    code, line = preflight(capsys, "critic_judgebench,critic_processbench_gsm8k,critic_processbench_math,"
                                   "critic_processbench_olympiadbench,critic_realcritic")
    assert code == 0 and line.startswith("critic-eval preflight: ok"), line
    monkeypatch.setenv("REALCRITIC_DATA_DIR", str(REALCRITIC))  # the checkout
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", "sample")  # every subset, omnimath included
    assert preflight(capsys)[0] == 0


def test_an_empty_judgebench_folder_names_the_file_it_lacks(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(tmp_path))
    assert preflight(capsys) == (2, f"critic-eval: data error: {tmp_path / GPT_FILE}: file not found (expected "
                                    f"{GPT_FILE} under {tmp_path} or {tmp_path / 'data'}, the layout of the paper "
                                    "repository's data/)")


def test_another_benchmarks_folder_is_refused(monkeypatch, capsys):
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(PROCESSBENCH))
    code, line = preflight(capsys, "critic_judgebench")
    assert code == 2 and line.startswith(f"critic-eval: data error: {PROCESSBENCH / GPT_FILE}: file not found")
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", str(REALCRITIC))
    code, line = preflight(capsys, "critic_processbench_gsm8k")
    assert code == 2 and line.startswith(f"critic-eval: data error: {REALCRITIC / 'gsm8k.json'}: file not found")


def test_a_field_missing_in_a_local_copy_is_named(monkeypatch, capsys, tmp_path):
    rows = [json.loads(line) for line in (JUDGEBENCH / "data" / GPT_FILE).read_text().splitlines() if line.strip()]
    del rows[3]["label"]
    (tmp_path / GPT_FILE).write_text("".join(json.dumps(row) + "\n" for row in rows))
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(tmp_path))
    assert preflight(capsys) == (2, f"critic-eval: data error: {tmp_path / GPT_FILE}[3]: missing field 'label'")


def test_a_processbench_copy_without_omnimath_names_its_path_and_the_fix(monkeypatch, capsys):
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", str(PROCESSBENCH))
    code, line = preflight(capsys, "critic_processbench")
    held = sorted(p.stem for p in (PROCESSBENCH / "dataset").glob("*.json"))
    assert held == ["gsm8k", "math", "olympiadbench"]
    assert code == 2 and line == (
        f"critic-eval: data error: {PROCESSBENCH / 'dataset' / 'omnimath.json'}: file not found (this copy holds only "
        "gsm8k, math, olympiadbench); add omnimath.json there from the Hub's Qwen/ProcessBench, unset "
        "PROCESSBENCH_DATA_DIR to read every subset from the Hub, or ask only for the subsets it holds (--tasks "
        "critic_processbench_gsm8k,critic_processbench_math,critic_processbench_olympiadbench)")


def test_a_realcritic_folder_one_level_off_is_refused(monkeypatch, capsys):
    monkeypatch.setenv("REALCRITIC_DATA_DIR", str(REALCRITIC / "data"))
    code, line = preflight(capsys, "critic_realcritic")
    wanted = REALCRITIC / "data" / "data" / "mix_data" / "arc-challenge" / "test.jsonl"
    assert code == 2 and line.startswith(f"critic-eval: data error: {wanted}: file not found"), line


def test_a_broken_realcritic_line_is_named(monkeypatch, capsys, tmp_path):
    task = tmp_path / "gsm8k"
    task.mkdir()
    shutil.copy(REALCRITIC / "data" / "mix_data" / "gsm8k" / "test.jsonl", task / "test.jsonl")
    lines = (task / "test.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["gt"] = ""
    lines[1] = json.dumps(row)
    (task / "test.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("REALCRITIC_DATA_DIR", str(tmp_path))
    code, line = preflight(capsys, "critic_realcritic_gsm8k")
    assert code == 2 and line == f"critic-eval: data error: {task / 'test.jsonl'}:2: field 'gt' is empty"


# ----------------------------------------------------------------------------- the published copies


@pytest.fixture
def offline_and_empty(monkeypatch, tmp_path):
    import datasets.config
    from huggingface_hub import constants

    for env in DATA_ENVS:
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    return tmp_path


@pytest.mark.parametrize("task, message", [
    ("critic_judgebench", "HF_HUB_OFFLINE is set and hf://datasets/ScalerLab/JudgeBench (split 'gpt') is not in the "
                          "local cache; set JUDGEBENCH_DATA_DIR to a local copy of the data files, or to 'sample' for "
                          "the bundled sample"),
    ("critic_processbench_gsm8k", "HF_HUB_OFFLINE is set and hf://datasets/Qwen/ProcessBench/gsm8k.json is not in "
                                  "the local Hub cache ({hub}); set PROCESSBENCH_DATA_DIR to a local copy of the "
                                  "dataset, or to 'sample' for the bundled sample"),
    ("critic_realcritic_gsm8k", "HF_HUB_OFFLINE is set and tangzhy/RealCritic's data/mix_data/gsm8k/test.jsonl is "
                                "not in the local cache ({xdg}); set REALCRITIC_DATA_DIR to a local checkout of "
                                "tangzhy/RealCritic, or to 'sample' for the bundled sample"),
])
def test_offline_with_an_empty_cache_is_refused(offline_and_empty, capsys, task, message):
    tmp = offline_and_empty
    xdg = tmp / "xdg" / "critic_tasks" / "realcritic" / "data" / "mix_data" / "gsm8k" / "test.jsonl"
    assert preflight(capsys, task) == (2, "critic-eval: data error: " + message.format(hub=tmp / "hub", xdg=xdg))


def test_offline_with_the_files_cached_passes(offline_and_empty, capsys):
    cached = offline_and_empty / "xdg" / "critic_tasks" / "realcritic" / "data" / "mix_data" / "gsm8k" / "test.jsonl"
    cached.parent.mkdir(parents=True)
    shutil.copy(REALCRITIC / "data" / "mix_data" / "gsm8k" / "test.jsonl", cached)
    # and the authors' prompt templates and answer reader (utils.py, parser.py), cached by an earlier online run
    from critic_tasks.protocols.realcritic.authors_grading import PARSER
    from critic_tasks.protocols.realcritic.prompts import UTILS

    for spec in (UTILS, PARSER):
        cached_file = offline_and_empty / "xdg" / "critic_tasks" / "authors" / spec.repo / spec.commit / spec.path
        cached_file.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REALCRITIC / spec.path, cached_file)
    code, line = preflight(capsys, "critic_realcritic_gsm8k")
    assert code == 0 and "data from tangzhy/RealCritic (in the local cache;" in line, line


def test_realcritic_reads_no_network_offline(offline_and_empty, monkeypatch):
    import urllib.request

    from critic_tasks.protocols.realcritic import data

    calls = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: calls.append(a) or 1 / 0)
    with pytest.raises(DataError, match=r"^HF_HUB_OFFLINE is set and .*or to 'sample' for the bundled sample$"):
        data.load_task("math")
    assert calls == []


def test_a_realcritic_download_failure_offers_the_sample(monkeypatch, tmp_path):
    import urllib.request

    from huggingface_hub import constants

    from critic_tasks.protocols.realcritic import data

    monkeypatch.delenv("REALCRITIC_DATA_DIR")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    def refuse(*args, **kwargs):
        raise OSError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(DataError) as err:
        data.load_task("math")
    assert str(err.value) == (f"{data.REPO_URL}/data/mix_data/math/test.jsonl: could not be downloaded (OSError: no "
                              "route to host); set REALCRITIC_DATA_DIR to a local checkout of tangzhy/RealCritic, or "
                              "to 'sample' for the bundled sample")


@pytest.mark.parametrize("task, repo", [("critic_judgebench", "ScalerLab/JudgeBench"),
                                        ("critic_processbench_gsm8k", "Qwen/ProcessBench")])
def test_online_an_unreachable_hub_is_refused(monkeypatch, capsys, task, repo):
    from huggingface_hub import constants

    for env in DATA_ENVS:
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    code, line = preflight(capsys, task)
    assert code == 2 and line.startswith(f"critic-eval: data error: the Hub (http://127.0.0.1:9) cannot be reached "
                                         f"for {repo} (") and line.endswith("or to 'sample' for the bundled sample")


# ----------------------------------------------------------------------------- one meaning for every value


@pytest.mark.parametrize("env, task", [("JUDGEBENCH_DATA_DIR", "critic_judgebench"),
                                       ("PROCESSBENCH_DATA_DIR", "critic_processbench_gsm8k"),
                                       ("REALCRITIC_DATA_DIR", "critic_realcritic_gsm8k")])
@pytest.mark.parametrize("value", ["repo", "hub"])
def test_preflight_and_the_loader_agree_on_a_word(monkeypatch, capsys, tmp_path, env, task, value):
    """An undocumented word is no folder for either: preflight refuses it as the run's loader does, in its words
    (run from an empty folder, so the word is no folder there)."""
    from critic_tasks import registry

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(env, value)
    spec = registry.TASKS[task]
    steps = registry.PROTOCOLS[spec.kind_spec.protocol]
    with pytest.raises(DataError) as err:
        steps.load_docs(spec.kind_spec.data_dimension, **steps.task_options(spec))
    assert str(err.value) == f"{env}={value}: not a directory"
    assert preflight(capsys, task) == (2, f"critic-eval: data error: {err.value}")


@pytest.mark.parametrize("env, where", [("JUDGEBENCH_DATA_DIR", "the Hub"), ("PROCESSBENCH_DATA_DIR", "the Hub"),
                                        ("REALCRITIC_DATA_DIR", "the repository's own files")])
def test_set_but_empty_names_only_documented_values(monkeypatch, capsys, env, where):
    monkeypatch.setenv(env, "")
    assert preflight(capsys) == (2, f"critic-eval: data error: {env} is set but empty; give a local copy of the "
                                    f"dataset, 'sample' for the bundled sample, or unset it for {where}")


# ----------------------------------------------------------------------------- the demo and the help


def test_the_demo_counts_the_generations_of_its_tasks(monkeypatch, capsys):
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.delenv("CRITICBENCH_DATA_DIR")  # the demo's own default: every benchmark's bundled sample
    monkeypatch.setattr(demo, "smollm2_model_args", lambda: "pretrained=unused")
    monkeypatch.setattr(demo, "_demo_evaluate", lambda *args: {"results": {}, "samples": {}})
    pairs = [line for line in (PACKAGE / "judgebench" / "sample_data" / GPT_FILE).read_text().splitlines()
             if line.strip()]
    steps = len(json.loads((PACKAGE / "processbench" / "sample_data" / "gsm8k.json").read_text()))
    demo.run_demo(["critic_judgebench", "critic_processbench_gsm8k"], 32, "1", None)
    err = capsys.readouterr().err
    assert f"({2 * len(pairs) + steps} generations; " in err and "critic group: 141 generations" not in err


@pytest.mark.parametrize("tasks, results, hinted, leaderboard", [
    ("critic_judgebench", {"critic_judgebench": {"parse_rate,none": 0.0, "accuracy,none": 0.0}}, True, False),
    ("critic_processbench_gsm8k", {"critic_processbench_gsm8k": {"parse_rate,none": 12.5}}, True, False),
    ("critic_judgebench", {"critic_judgebench": {"parse_rate,none": 90.0, "accuracy,none": 60.0}}, False, False),
    ("critic_feedback_chat", {"critic_feedback_chat": {"parse_rate,none": 100.0, "spearman,none": 20.0}}, False,
     True),
])
def test_the_demo_says_which_budget_a_task_needs(monkeypatch, capsys, tasks, results, hinted, leaderboard):
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.setattr(demo, "run_demo", lambda *args: results)
    assert cli.main(["demo", "--tasks", tasks]) == 0
    out = capsys.readouterr().out
    hints = [line for line in out.splitlines() if "--max_gen_toks" in line]
    if hinted:  # the tasks' own budget (registry.JUDGEBENCH_BUDGET / PROCESSBENCH_BUDGET), and how to pass it
        from critic_tasks import registry

        budget = registry.task(tasks).kind_spec.max_gen_toks  # the authors' (JudgeBench 4096, ProcessBench 8192)
        assert hints == [f"critic-eval demo: {tasks}: most replies unparsed at 32 tokens a reply: the answer comes "
                         f"after the reasoning, and these tasks give {budget} tokens; for their real numbers: "
                         f"critic-eval demo --tasks {tasks} --max_gen_toks {budget} (slower on a CPU)"]
    else:
        assert hints == []
    assert ("CriticEval leaderboard" in out) is leaderboard
    assert "All values are x100" in out


def test_the_demo_does_not_blame_the_budget_for_a_task_that_asks_its_answer_first(monkeypatch, capsys):
    """The default demo (critic, 32 tokens) told a newcomer that critic_feedback and critic_meta went unparsed
    because 'the answer comes after the reasoning' and to rerun them at 1024 tokens: their prompts ask for the score
    on the first line (a short budget holds it). Only the correction is sent to its budget."""
    from critic_tasks.adapters.lm_eval import demo

    results = {"critic_feedback": {"parse_rate,none": 22.2}, "critic_comparison": {"parse_rate,none": 55.6},
               "critic_meta": {"parse_rate,none": 0.0}, "critic_correction": {"parse_rate,none": 25.0}}
    monkeypatch.setattr(demo, "run_demo", lambda *args: results)
    assert cli.main(["demo"]) == 0
    hints = [line for line in capsys.readouterr().out.splitlines() if "most replies unparsed" in line]
    assert hints == [
        "critic-eval demo: critic_feedback, critic_meta: most replies unparsed, though the prompt asks for the answer "
        "on the first line: the model did not write it in the asked format (SmolLM2-135M often repeats the prompt "
        "instead; docs/usage.md)",
        "critic-eval demo: critic_correction: most replies unparsed at 32 tokens a reply: the answer comes after the "
        "reasoning, and these tasks give 1024 tokens; for their real numbers: critic-eval demo --tasks "
        "critic_correction --max_gen_toks 1024 (slower on a CPU)"]


@pytest.mark.parametrize("tasks, stage1, about", [
    ("critic_realcritic_self_gsm8k", "critic_realcritic_direct_gsm8k", "the critic's own solutions (direct CoT)"),
    ("critic_realcritic_self", "critic_realcritic_direct", "the critic's own solutions (direct CoT)"),
    ("critic_correction_self", "critic_self_feedback", "the critic's own feedback"),
])
def test_the_demo_refuses_a_two_stage_task_before_loading_its_model(monkeypatch, capsys, tasks, stage1, about):
    """`critic-eval demo --tasks critic_realcritic_self_gsm8k` loaded the model, then stopped on the missing stage-1
    samples with advice the demo cannot take (--metadata); now one line before the load, naming stage 1's tasks."""
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.delenv("CRITIC_SELF_FEEDBACK", raising=False)
    monkeypatch.setattr(demo, "_demo_pass", lambda *args, **kwargs: pytest.fail("the model was loaded"))
    assert cli.main(["demo", "--tasks", tasks]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith(f"critic-eval: demo: {tasks}: stage 2 of a two-stage run (it reads "
                                                 f"{about} from a stage-1 run)"), line
    assert line.endswith(f"or run stage 1 alone in the demo: --tasks {stage1}"), line


def test_rescore_puts_criticevals_leaderboard_only_beside_criticevals_tasks(tmp_path, capsys):
    """`critic-eval rescore` of a newcomer's JudgeBench run printed 'For scale, the published CriticEval leaderboard
    ... GPT-4-turbo feedback 63.54' under JudgeBench's table (summary and the demo already leave it out)."""
    from critic_tasks.engine import task_docs

    docs = task_docs("critic_judgebench", data_dir="sample")[:2]
    path = tmp_path / "samples_critic_judgebench_2026-01-01T00-00-00.jsonl"
    path.write_text("".join(json.dumps({"doc_id": i, "doc": d, "resps": [["[[A>B]]"]]}) + "\n"
                            for i, d in enumerate(docs)))
    assert cli.main(["rescore", str(path)]) == 0
    out = capsys.readouterr().out
    assert "critic_judgebench" in out and "All values are x100" in out and "CriticEval leaderboard" not in out


def test_help_lists_every_data_setting(capsys):
    assert cli.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for env in ("CRITICBENCH_DATA_DIR", "CRITIQUELLM_DATA_DIR", "METACRITIQUE_DATA_DIR", *DATA_ENVS):
        assert env in text


def test_the_runs_metadata_split_is_the_file_checked(monkeypatch, capsys, tmp_path):
    """A copy holding only the Claude pairs passes for a run asking that split (--metadata), as the run reads it
    (our prompt: the copy holds no authors' templates, and this machine reaches no GitHub)."""
    claude = "dataset=judgebench,response_model=claude-3-5-sonnet-20240620.jsonl"
    shutil.copy(JUDGEBENCH / "data" / claude, tmp_path / claude)
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(tmp_path))
    assert cli.main(["preflight", "--tasks", "critic_judgebench", "--metadata",
                     '{"split": "claude", "prompt": "ours"}']) == 0
    capsys.readouterr()
    code, line = preflight(capsys, "critic_judgebench")
    assert code == 2 and line.startswith(f"critic-eval: data error: {tmp_path / GPT_FILE}: file not found")
