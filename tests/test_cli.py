"""critic-eval: lm_eval passthrough with our tasks, our own commands, one-line data errors."""

import json
from pathlib import Path

import pytest

import critic_tasks
from critic_tasks import cli


def test_tasks_dir(capsys):
    assert cli.main(["tasks-dir"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == critic_tasks.tasks_dir()
    assert (Path(out) / "critic.yaml").is_file() and (Path(out) / "utils.py").is_file()


@pytest.mark.slow
def test_tasks_lists_every_registered_task_group_and_tag(capsys):
    assert cli.main(["tasks"]) == 0
    rows = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.strip().splitlines()[1:]}
    yaml_tasks = {p.stem for p in Path(critic_tasks.tasks_dir()).glob("critic*.yaml")}
    assert {name for name, kind in rows.items() if kind in ("task", "group")} == yaml_tasks
    assert {name for name, kind in rows.items() if kind == "tag"} == {
        "critic_per_domain", "critic_sub_per_domain", "critic_test", "critic_feedback_per_domain",
        "critic_comparison_per_domain", "critic_meta_per_domain", "critic_correction_per_domain",
        "critic_correction_empty_per_domain", "critic_feedback_sub_per_domain", "critic_comparison_sub_per_domain",
        "critic_correction_sub_per_domain", "critic_correction_empty_sub_per_domain", "critic_critiquellm",
        "critic_self_per_domain", "critic_correction_self_per_domain", "critic_correction_self_sub_per_domain",
        "critic_self_feedback_per_domain",
        "critic_revision", "critic_revision_pool_per_domain", "critic_utility_per_domain",
        "critic_judgebench_per_category", "critic_processbench_subsets", "critic_realcritic_tasks",
        "critic_realcritic_direct_tasks", "critic_realcritic_self_tasks", "critic_rmbench_per_domain"}


@pytest.mark.slow
def test_passthrough_run_and_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    out = tmp_path / "out"
    rc = cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat,critic_comparison_chat",
                   "--output_path", str(out), "--log_samples"])
    assert rc == 0
    (results_file,) = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]
    # lm-eval's dummy model answers "lol": nothing parses, every score is the midpoint -> constant -> 0.
    assert results["critic_feedback_chat"]["parse_rate,none"] == 0.0
    assert results["critic_feedback_chat"]["spearman,none"] == 0.0
    assert results["critic_feedback_chat"]["spearman_warnings,none"] >= 1
    assert results["critic_comparison_chat"]["accuracy,none"] == 0.0
    assert len(list(out.rglob("samples_critic_feedback_chat_*.jsonl"))) == 1
    capsys.readouterr()
    assert cli.main(["summary", str(results_file)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # the run's name first (model · benchmarks · date), then the table
    assert "·" in lines[0] and lines[1].split() == ["task", "metric", "value", "note"]
    assert lines[-1].startswith("All values are x100")
    table = lines[2:lines.index("")]  # the dimension table; then the judge-bias block, then the scale note
    rows = [line.split()[:3] for line in table]
    bias = lines[lines.index("Judge-bias lines") + 2:-1]
    assert [line.split()[:3] for line in bias[:3]] == [
        ["critic_comparison_chat", "consistency", "0.00"], ["critic_comparison_chat", "first_position", "n/a"],
        ["critic_comparison_chat", "length_bias", "n/a"]]  # no verdict read: no slot or length preference to see
    # the paper's order (feedback before comparison), each task's headline keys, values as lm-eval wrote them
    assert "undefined correlation(s) reported as 0" in lines[2]
    assert rows == [
        ["critic_feedback_chat", "spearman", "0.00"], ["critic_feedback_chat", "score", "50.00"],
        ["critic_feedback_chat", "parse_rate", "0.00"],
        ["critic_comparison_chat", "accuracy", "0.00"], ["critic_comparison_chat", "accuracy_loose", "0.00"],
        ["critic_comparison_chat", "consistency", "0.00"], ["critic_comparison_chat", "score", "0.00"],
        ["critic_comparison_chat", "parse_rate", "0.00"]]


@pytest.mark.slow
def test_bad_data_is_one_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "obj_dev_data" / "chat_feedback_correction.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('[{"question": 1')
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", str(tmp_path))
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"critic-eval: data error: {bad}: malformed JSON at line 1, column 16: Expecting ',' delimiter"


def test_own_include_path_is_refused_with_advice(capsys):
    assert cli.main(["--include_path", "/x", "--tasks", "critic"]) == 2
    assert "lm_eval --include_path" in capsys.readouterr().err


def test_judge_without_model_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("CRITIC_JUDGE_MODEL", raising=False)
    assert cli.main(["judge", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "critic-eval: no judge model: pass --model or set CRITIC_JUDGE_MODEL"


@pytest.mark.parametrize("argv", [["judge", "/nonexistent", "--model", "m"]])
def test_judge_on_missing_samples(argv, capsys):
    assert cli.main(argv) == 2
    assert "/nonexistent: no such file or directory" in capsys.readouterr().err


def test_summary_table_orders_dimensions_and_marks_missing_labels():
    results = {
        "critic_meta": {"spearman,none": 10.0, "score,none": 55.0, "parse_rate,none": 100.0},
        "critic_feedback_chat": {"spearman,none": 20.0, "score,none": 60.0, "parse_rate,none": 90.0},
        "critic_feedback_test": {"parse_rate,none": 80.0, "labels_available,none": 0.0},
        "critic": {"score,none": 57.5},
    }
    lines = cli.format_table(results).splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["critic_feedback_chat"] * 3 + ["critic_feedback_test"] * 3 + [
        "critic_meta"] * 3 + ["critic"]
    assert lines[4].split() == ["critic_feedback_test", "spearman", "n/a", "no", "human", "labels", "in", "this", "split"]
    assert lines[-1].split() == ["critic", "overall", "57.50"]


@pytest.mark.slow
def test_output_into_a_closed_pipe_ends_quietly():
    """`critic-eval tasks | head -1`: the reader is gone before we write; no traceback."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "critic_tasks.cli", "tasks"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # closed before the command has imported, let alone printed
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_samples_reader_keeps_every_reply_of_a_repeated_task(tmp_path):
    """lm-eval logs one request per document; a repeated task (pass@k, self-consistency) holds its k replies in it:
    rescore, judge and revise must see all k, not the first."""
    from critic_tasks.cli.judge import read_all_samples

    path = tmp_path / "samples_critic_correction_sampled_2026.jsonl"
    rows = [{"doc": {"id": 1}, "resps": [["a", "b", "c"]]}, {"doc": {"id": 2}, "resps": [["only"]]},
            {"doc": {"id": 3}, "resps": [[]]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs, generations = read_all_samples(path)
    assert docs == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert generations == [["a", "b", "c"], ["only"], [None]]


def test_tasks_names_each_benchmarks_metadata_keys_as_the_run_checks_them(capsys):
    """docs/usage.md sent a newcomer to `critic-eval tasks` for the --metadata keys a task takes; it listed none.
    Each benchmark's `options` row names exactly the keys a run of its tasks accepts (registry.check_metadata)."""
    from critic_tasks import registry
    from critic_tasks.core.errors import ConfigError

    assert cli.main(["tasks"]) == 0
    rows = [line.split(None, 2) for line in capsys.readouterr().out.splitlines()[1:] if line.split()[1:2] == ["options"]]
    assert sorted(name for name, _, _ in rows) == sorted(p for p in registry.PROTOCOLS
                                                         if any(t.kind_spec.protocol == p for t in registry.TASKS.values()))
    every_key = {k for p in registry.PROTOCOLS.values() for k in p.options} | {"splt", "order"}
    for protocol, _, text in rows:
        listed = text.rsplit("): ", 1)[1].split(", ")
        for task in (t for t in registry.TASKS.values() if t.kind_spec.protocol == protocol):
            for key in every_key:
                if key in listed:
                    registry.check_metadata([task], {key: "x"})
                else:
                    with pytest.raises(ConfigError):
                        registry.check_metadata([task], {key: "x"})
