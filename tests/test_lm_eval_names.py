"""The YAML reads as the task: filters and aggregations are names in lm-eval's own registries, registered by every
way lm-eval loads our tasks (issue 30, point 1)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import critic_tasks

pytest.importorskip("lm_eval")

ROOT = Path(__file__).resolve().parents[1]
TASKS = Path(critic_tasks.tasks_dir())


def _yaml(name: str) -> dict:
    # lm-eval's "!function" tag: kept as text, the way a reader sees it
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_constructor("!function", lambda loader, node: f"!function {node.value}")
    return yaml.load((TASKS / name).read_text(), Loader=loader)


def test_a_yaml_names_its_filter_and_aggregations_in_words():
    """As lm-eval's gsm8k.yaml: ``function: <registered filter>``, ``aggregation: <registered name>``; the only
    ``!function`` hooks left are the loader and the three per-document hooks."""
    correction = _yaml("critic_correction.yaml")
    assert correction["filter_list"] == [{"name": "none", "filter": [{"function": "critic_sandbox"}]}]
    entries = {m["metric"]: m["aggregation"] for m in correction["metric_list"]}
    assert entries["pass_rate"] == "critic_correction_pass_rate"
    assert entries["pass_rate_low"] == "critic_correction_pass_rate"  # a breakdown: same value, its own records
    assert entries["pass@5"] == "critic_correction_pass@5"
    # no interval bound is an lm-eval metric (computed from the --log_samples rows when results are read)
    assert not [m["metric"] for path in TASKS.glob("*yaml") for m in _yaml(path.name).get("metric_list") or []
                if "_ci_" in m["metric"]]
    feedback = _yaml("critic_feedback.yaml")
    assert "filter_list" not in feedback  # parsed one reply at a time: lm-eval's default take_first
    assert {m["metric"]: m["aggregation"] for m in feedback["metric_list"]}["spearman"] == "critic_likert_spearman"
    assert _yaml("critic_alignbench_ref_sc.yaml")["filter_list"][0]["filter"] == [
        {"function": "critic_keep_samples", "repeats": 5}]
    functions = {line.split("!function ")[1].strip() for path in TASKS.glob("*yaml")
                 for line in path.read_text().splitlines() if "!function" in line}
    assert functions == {"utils.load_docs", "utils.doc_to_text", "utils.doc_to_target", "utils.process_results"}


ROUTE = textwrap.dedent('''
    import json, sys
    route, folder = sys.argv[1], sys.argv[2]
    if route == "task_manager":  # critic_tasks.task_manager(): what critic-eval and simple_evaluate users build
        import critic_tasks
        manager = critic_tasks.task_manager()
    else:  # plain `lm_eval --include_path DIR` builds this TaskManager; `register-lm-eval`'s include-only folder too
        from lm_eval.tasks import TaskManager
        manager = TaskManager(include_path=folder, include_defaults=False)
    assert "critic_tasks.adapters.lm_eval.hooks" not in sys.modules  # nothing registered before lm-eval loads a YAML
    tasks = manager.load(["critic_feedback_chat", "critic_correction_math_cot"])["tasks"]
    feedback, correction = tasks["critic_feedback_chat"], tasks["critic_correction_math_cot"]
    # hand-made Likert records: predicted 1, 2, 3, 4 against gold 1, 3, 2, 4 (Spearman 0.8, reported x100)
    rows = [{"kind": "likert", "domain": "chat", "pred": p, "gold": g, "parsed": True} for p, g in ((1, 1), (2, 3), (3, 2), (4, 4))]
    filters = [type(f.func(**f.keywords)).__name__ for f in correction._filters[0].filters]
    print(json.dumps({"spearman": feedback.aggregation()["spearman"](rows), "filters": filters,
                      "names": sorted(f.__name__ for f in (feedback.aggregation()["spearman"],
                                                            correction.aggregation()["pass@5"])),
                      "intervals": sorted(k for t in tasks.values() for k in t.aggregation() if "_ci_" in k)}))
''')


@pytest.mark.slow
@pytest.mark.parametrize("route", ["include_path", "task_manager", "register_lm_eval"])
def test_every_route_registers_the_names_before_lm_eval_resolves_them(route, tmp_path):
    """Each way of loading our tasks, in a fresh process (nothing imported before): the YAML's names resolve to our
    filter and aggregations, and the aggregation computes the Spearman of hand-made records."""
    from critic_tasks.adapters.lm_eval import register

    folder = str(TASKS)
    if route == "register_lm_eval":  # the folder register-lm-eval places in lm-eval's tree, here in a temporary one
        for name, text in register.pointer_files().items():
            (tmp_path / name).write_text(text)
        folder = str(tmp_path)
    env = {**os.environ, "CRITICBENCH_DATA_DIR": "sample", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", ROUTE, route, folder], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["spearman"] == pytest.approx(80.0)  # 1 - 6 * (0 + 1 + 1 + 0) / (4 * 15) = 0.8
    assert got["filters"] == ["ScoreFilter[sandbox]"]
    assert got["names"] == ["critic_correction_pass@5", "critic_likert_spearman"]
    assert got["intervals"] == []  # no interval is an lm-eval metric (reports.results computes them from samples)
