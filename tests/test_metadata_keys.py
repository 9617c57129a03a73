"""Every --metadata key is checked where it is read (issue 46, items 1 and 2): each task's keys come from its
protocol's declared options (``registry.Protocol.options``) less those its tasks set themselves; an unknown key, or
another benchmark's, is one line naming the task and its keys, under ``critic-eval`` (before the model loads), under
lm-eval's own CLI (``lm_eval --include_path``: the tasks' loader), and in ``critic-eval preflight``, which reads
--metadata exactly as lm-eval's CLI does. Fast: the lm-eval runs use its dummy model on the bundled samples."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from helpers import cli_without_services, one_line

from critic_tasks import cli, registry, tasks_dir
from critic_tasks.core.errors import ConfigError


def _lm_eval_tasks(names: list[str], metadata: dict):
    """The tasks built by lm-eval's own TaskManager with this metadata, as lm_eval --include_path builds them."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=tasks_dir(), include_defaults=False, metadata=metadata).load(names)


# (tasks, --metadata, what the line must say): the three mistakes and a misspelt key of another protocol
MISTAKES = [
    (["critic_judgebench"], {"splt": "claude"},
     "--metadata splt: no task of this run takes it (critic_judgebench takes data_dir, split, orders"),
    (["critic_processbench_gsm8k"], {"split": "test"}, "split is a key of JudgeBench's tasks"),
    (["critic_feedback"], {"split": "test"}, "critic_feedback sets split=dev itself"),
    (["critic_realcritic_gsm8k"], {"round": 2, "rouns": 3}, "did you mean round"),
]


@pytest.mark.parametrize(("tasks", "metadata", "expected"), MISTAKES)
def test_a_key_no_task_takes_stops_lm_evals_own_task_build_in_one_line(tasks, metadata, expected, monkeypatch):
    """Plain lm-eval: the loader, called by lm-eval with --metadata and the task's options together, names the key.
    critic_feedback's split used to be Python's 'got multiple values for keyword argument' (lm-eval merges both into
    one call); processbench's split and judgebench's splt were dropped silently."""
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    with pytest.raises(ConfigError) as refused:
        _lm_eval_tasks(tasks, {"data_dir": "sample", **metadata})
    assert expected in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(("tasks", "metadata", "expected"), MISTAKES)
def test_critic_eval_and_preflight_refuse_the_same_keys_before_the_model_loads(tasks, metadata, expected, monkeypatch,
                                                                              capsys):
    import lm_eval
    from lm_eval.models.dummy import DummyLM

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr(DummyLM, "__init__", refuse)
    monkeypatch.setattr(lm_eval, "simple_evaluate", refuse)
    cli_without_services(monkeypatch)
    flags = ["--tasks", ",".join(tasks), "--metadata", __import__("json").dumps({"data_dir": "sample", **metadata})]
    assert cli.main(["--model", "dummy", *flags]) == 2
    assert expected in one_line(capsys)
    assert cli.main(["preflight", *flags]) == 2
    assert expected in one_line(capsys)


def test_a_key_one_task_of_a_mixed_run_takes_reaches_it_and_leaves_the_others_alone(monkeypatch):
    """lm-eval hands every task the same --metadata: JudgeBench's split in a run with critic_feedback is JudgeBench's
    (the claude pairs: its sample's claude file), and critic_feedback keeps its own dev split."""
    import lm_eval

    from critic_tasks.protocols.criticbench.data import load_docs as criticbench_docs
    from critic_tasks.protocols.judgebench.data import load_task_docs as judgebench_docs

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    seen = {}

    def record(lm, **kwargs):  # the tasks simple_evaluate built, not run
        seen.update({name: list(task.eval_docs) for name, task in _tasks_of(kwargs["task_dict"])})
        return {"results": {}}

    monkeypatch.setattr(lm_eval.evaluator, "evaluate", record)
    from critic_tasks import task_manager

    lm_eval.simple_evaluate(model="dummy", model_args="some_model_arg=1", tasks=["critic_feedback", "critic_judgebench"],
                            task_manager=task_manager(metadata={"data_dir": "sample", "split": "claude"}))
    claude = judgebench_docs(data_dir="sample", split="claude")
    assert [d["pair_id"] for d in seen["critic_judgebench"]] == [d["pair_id"] for d in claude]
    assert claude != judgebench_docs(data_dir="sample", split="gpt")
    dev = criticbench_docs("feedback", "dev", data_dir="sample")
    assert [(d["source_file"], d["item_index"]) for d in seen["critic_feedback"]] == [
        (d["source_file"], d["item_index"]) for d in dev]
    assert {d["split"] for d in seen["critic_feedback"]} == {"dev"}


def _tasks_of(task_dict):
    for name, value in task_dict.items():
        if isinstance(value, dict):
            yield from _tasks_of(value)
        else:
            yield getattr(name, "group_name", name), value


def test_model_arguments_lm_eval_merges_into_the_metadata_are_not_taken_for_keys(monkeypatch):
    """lm-eval's CLI merges --model_args into every task's metadata: the loader tells them apart (the simple_evaluate
    call's model_args), so a model argument is no unknown key."""
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    out = subprocess.run([sys.executable, "-m", "lm_eval", "--include_path", tasks_dir(), "--model", "dummy",
                          "--model_args", "some_model_arg=1", "--tasks", "critic_processbench_gsm8k", "--limit", "1",
                          "--metadata", "data_dir=sample"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "critic_processbench_gsm8k" in out.stdout


def test_every_declared_option_is_a_key_or_set_by_the_tasks():
    """The keys come from the declarations: a protocol's options are its tasks' own settings or --metadata keys,
    never both; a key a helper adds to Protocol.options is a key at once."""
    for name, protocol in registry.PROTOCOLS.items():
        tasks = [t for t in registry.TASKS.values() if t.kind_spec.protocol == name]
        keys = registry.protocol_metadata_keys(name)
        set_by_tasks = {k for t in tasks for k in registry.loader_options(t)}
        assert set(keys) == set(protocol.options) - set_by_tasks, name
        assert "data_dir" in keys, name
    assert registry.metadata_keys(registry.TASKS["critic_judgebench"])[:3] == ("data_dir", "split", "orders")


# ----------------------------------------------------------------------------- --metadata read as lm-eval reads it


def _lm_evals_reading(argv: list[str]) -> dict:
    """lm-eval's own argparse action on the same words (its CLI's --metadata: nargs='+', MergeDictAction)."""
    from lm_eval._cli.utils import MergeDictAction

    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--metadata", default=None, nargs="+", action=MergeDictAction)
    parser.add_argument("--tasks")
    return parser.parse_args(argv).metadata or {}


@pytest.mark.parametrize("argv", [
    ["--metadata", '{"split": "claude", "orders": "single"}'],
    ["--metadata", "split=claude", "orders=single", "--tasks", "x"],
    ["--metadata", "rounds=2"],  # a number, as lm-eval's literal_eval reads it
    ["--metadata", "data_dir=sample,split=claude"],  # several keys in one word
    ["--metadata", '{"split": "gpt"}', "--metadata", "split=claude"],  # the later occurrence wins
    ["--metadata=split=claude"],
])
def test_metadata_is_parsed_exactly_as_lm_evals_cli_parses_it(argv):
    from critic_tasks.adapters.lm_eval.flags import run_metadata

    assert run_metadata(argv) == _lm_evals_reading(argv)


@pytest.mark.parametrize(("value", "expected"), [
    ('{"split": claude}', "critic-eval: --metadata {\"split\": claude}: not valid JSON"),
    ("[1, 2]", "critic-eval: --metadata [1, 2]: expected a JSON object"),
    ("claude", "critic-eval: --metadata claude: expected a JSON object"),
    ('{"splt": "claude"}', "critic-eval: --metadata splt: no task of this run takes it"),
])
def test_preflight_reads_metadata_as_the_run_does(value, expected, monkeypatch, capsys):
    """What lm-eval refuses (bad JSON, a list, a word without '='), and a key no task takes: one line, exit 2 (it
    said "ok" to all of them)."""
    cli_without_services(monkeypatch)
    assert cli.main(["preflight", "--tasks", "critic_judgebench", "--metadata", value]) == 2
    assert one_line(capsys).startswith(expected)
    assert cli.main(["preflight", "--tasks", "critic_judgebench", "--metadata", '{"data_dir": "sample"}']) == 0
