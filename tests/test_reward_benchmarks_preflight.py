"""`critic-eval preflight`, and `critic-eval` before the model loads, on RewardBench, RewardBench 2 and RM-Bench
(issue 46's newcomer check): a bad `--metadata` value, the authors' prompt file out of reach (offline, nothing
cached) and a local RM-Bench copy without its math file were each said only once the model had loaded (1.5 to 2
minutes for SmolLM2 on 2 busy cores), while `preflight` printed "ok". Each is now one line, exit 2, before any model
loads; the suggested way round a missing prompt file is one these tasks have (they take no `prompt` option)."""

from __future__ import annotations

import json
import shutil
import urllib.error

import pytest
from helpers import cli_without_services
from rewardbench_authors import authors_mirror, needs_rewardbench

from critic_tasks import cli
from critic_tasks.protocols import authors
from critic_tasks.protocols.rewardbench import authors_prompts as rb_prompts
from critic_tasks.protocols.rewardbench2 import authors_prompts as rb2_prompts
from critic_tasks.protocols.rmbench import data as rm_data

pytestmark = [needs_rewardbench]
DATA_ENVS = ("REWARDBENCH_DATA_DIR", "REWARDBENCH2_DATA_DIR", "RMBENCH_DATA_DIR")
CACHED = (authors._text, rb_prompts.pairwise_v1, rb_prompts.sections, rb2_prompts.prompts)


@pytest.fixture(autouse=True)
def samples_with_the_authors_files(monkeypatch, tmp_path):
    """Each benchmark on its bundled sample; the authors' files from a mirror of the shared checkout; an empty cache;
    no model ever built (lm-eval's dummy model counts its constructions)."""
    from lm_eval.models.dummy import DummyLM

    cli_without_services(monkeypatch)
    for env in DATA_ENVS:
        monkeypatch.setenv(env, "sample")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(authors.MIRROR_ENV, str(authors_mirror(tmp_path / "mirror")))
    built = []
    original = DummyLM.__init__
    monkeypatch.setattr(DummyLM, "__init__", lambda self, *a, **k: (built.append(1), original(self, *a, **k))[1])
    for cached in CACHED:
        cached.cache_clear()
    yield built
    for cached in CACHED:
        cached.cache_clear()


def refused(capsys, argv: list[str]) -> tuple[int, str]:
    code = cli.main(argv)
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert len(err) == 1, err
    return code, err[0]


@pytest.mark.parametrize("task, metadata, line", [
    ("critic_rewardbench", {"orders": "bth"}, "critic-eval: rewardbench orders 'bth': expected one of random, both"),
    ("critic_rewardbench", {"seed": "x"}, "critic-eval: rewardbench seed 'x': expected a whole number"),
    ("critic_rewardbench2", {"ratings": "sometimes"}, "critic-eval: rewardbench2 ratings 'sometimes': expected true or false"),
    ("critic_rewardbench2", {"seed": "1.5"}, "critic-eval: rewardbench2 seed '1.5': expected a whole number"),
])
def test_a_bad_option_value_is_one_line_in_preflight_and_before_the_model_loads(samples_with_the_authors_files,
                                                                                  capsys, task, metadata, line):
    given = ["--tasks", task, "--metadata", json.dumps(metadata)]
    assert refused(capsys, ["preflight", *given]) == (2, line)
    assert refused(capsys, ["--model", "dummy", "--limit", "1", *given]) == (2, line)
    assert samples_with_the_authors_files == []  # said before lm-eval built the model


def test_the_right_options_pass_and_the_ok_line_says_the_data_was_loaded(capsys):
    metadata = json.dumps({"orders": "both", "seed": 3, "ratings": "true"})
    assert cli.main(["preflight", "--tasks", "critic_rewardbench,critic_rewardbench2,critic_rmbench",
                     "--metadata", metadata]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "critic-eval preflight: ok (3 critic task(s): settings and executor checked; data sample (loaded); "
        "data sample (loaded); data sample (loaded))")


@pytest.mark.parametrize("task, path", [
    ("critic_rewardbench", "rewardbench/constants.py"),  # the subsets' weights are read first
    ("critic_rewardbench2", "rewardbench/generative_v2.py"),
    ("critic_rmbench", "rewardbench/generative.py"),
])
def test_the_authors_file_out_of_reach_is_one_line_naming_a_way_these_tasks_have(samples_with_the_authors_files,
                                                                                  monkeypatch, capsys, task, path):
    monkeypatch.delenv(authors.MIRROR_ENV)

    def offline(url):
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(authors, "_download", offline)
    for argv in (["preflight", "--tasks", task], ["--model", "dummy", "--limit", "1", "--tasks", task]):
        code, line = refused(capsys, argv)
        assert code == 2 and line.startswith(f"critic-eval: data error: allenai/reward-bench's {path} "), line
        assert "URLError" in line and "set REWARDBENCH_AUTHORS_DIR to a checkout of" in line, line
        # the mirror's layout, which a newcomer with the file at hand cannot guess
        assert (f"or CRITIC_AUTHORS_MIRROR to a folder holding it as allenai/reward-bench/{rb_prompts.COMMIT}/{path}, "
                "or ") in line, line
        assert "prompt: ours" not in line and line.endswith(
            "run once where GitHub can be reached (the file is then read from the cache)"), line
    assert samples_with_the_authors_files == []


def test_an_rmbench_copy_without_its_math_file_stops_the_math_task_before_the_model_loads(
        samples_with_the_authors_files, monkeypatch, capsys, tmp_path):
    copy = tmp_path / "rmbench"
    copy.mkdir()
    for source in rm_data.SAMPLE_DIR.glob("*_filtered.json"):
        if not source.name.startswith("math"):
            shutil.copy(source, copy / source.name)
    monkeypatch.setenv("RMBENCH_DATA_DIR", str(copy))
    line = (f"critic-eval: data error: {copy / 'math_filtered.json'}: file not found (nor under {copy / 'data'}); "
            "THU-KEG/RM-Bench's repository lacks the math file, the Hub's THU-KEG/RM-Bench (total_dataset.json) has "
            "every domain")
    assert refused(capsys, ["preflight", "--tasks", "critic_rmbench_math"]) == (2, line)
    assert refused(capsys, ["--model", "dummy", "--limit", "1", "--tasks", "critic_rmbench_math"]) == (2, line)
    assert samples_with_the_authors_files == []
    # every domain: math left out in one line (the run says it too), the others loaded
    assert cli.main(["preflight", "--tasks", "critic_rmbench"]) == 0
    out = capsys.readouterr()
    assert out.out.strip().splitlines()[-1].startswith("critic-eval preflight: ok (1 critic task(s)")


@pytest.mark.parametrize("env, task", [("REWARDBENCH_DATA_DIR", "critic_rewardbench"),
                                       ("REWARDBENCH2_DATA_DIR", "critic_rewardbench2"),
                                       ("RMBENCH_DATA_DIR", "critic_rmbench"), ("CRITICBENCH_DATA_DIR", "critic_feedback"),
                                       ("JUDGEBENCH_DATA_DIR", "critic_judgebench")])
@pytest.mark.parametrize("value, hinted", [("samples", True), ("Sample", True), ("smaple", True), ("repo", False),
                                           ("./samples", False)])
def test_a_data_setting_one_typo_from_sample_is_named(monkeypatch, capsys, env, task, value, hinted):
    """RMBENCH_DATA_DIR=samples said 'not a directory' and nothing of the word the newcomer meant."""
    monkeypatch.setenv(env, value)
    hint = "; did you mean 'sample' (the bundled sample)?" if hinted else ""
    assert refused(capsys, ["preflight", "--tasks", task]) == (
        2, f"critic-eval: data error: {env}={value}: not a directory{hint}")


@pytest.mark.parametrize("tasks", ["", " , "])
def test_preflight_refuses_an_empty_tasks_list_as_the_run_does(capsys, tasks):
    """`critic-eval preflight --tasks ''` printed 'ok (0 critic task(s): ...)' and exited 0; the run says it is empty."""
    line = ("critic-eval: --tasks is empty: name at least one task, e.g. --tasks critic_feedback (`critic-eval tasks` "
            "lists ours)")
    assert refused(capsys, ["preflight", "--tasks", tasks]) == (2, line)
    assert refused(capsys, ["--model", "dummy", "--tasks", tasks]) == (2, line)
