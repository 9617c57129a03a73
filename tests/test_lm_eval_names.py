"""The YAML names its own functions, as lm-eval's ifeval does: each task kind's hooks, its filter and one
aggregation per metric value are functions of the generated ``tasks/utils.py`` (``!function utils.<name>``), not
names registered in lm-eval's global registries (issue 35, point 1)."""

import ast
import inspect
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


def test_a_yaml_names_its_kinds_functions():
    """critic_feedback names the feedback kind's four hooks and the likert family's aggregations; critic_correction
    the correction kind's filter; no kind is guessed from a document and nothing is a registered name."""
    feedback = _yaml("critic_feedback.yaml")
    assert [feedback[k] for k in ("custom_dataset", "doc_to_text", "doc_to_target", "process_results")] == [
        "!function utils.feedback_load_docs", "!function utils.feedback_doc_to_text",
        "!function utils.feedback_doc_to_target", "!function utils.feedback_process_results"]
    assert "filter_list" not in feedback  # parsed one reply at a time: lm-eval's default take_first
    entries = {m["metric"]: m["aggregation"] for m in feedback["metric_list"]}
    # one aggregation for every key, as ifeval names its agg_inst_level_acc: each value carries its (family, base)
    assert entries["spearman"] == entries["spearman_low"] == entries["score"] == "!function utils.aggregate"
    correction = _yaml("critic_correction.yaml")
    assert correction["filter_list"] == [{"name": "none", "filter": [{"function": "!function utils.correction_filter"}]}]
    entries = {m["metric"]: m["aggregation"] for m in correction["metric_list"]}
    assert entries["pass@5"] == "!function utils.aggregate"
    assert _yaml("critic_alignbench_ref_sc.yaml")["filter_list"][0]["filter"] == [
        {"function": "!function utils.keep_samples", "repeats": 5}]
    # every aggregation and filter of every task is a utils function; no interval bound is an lm-eval metric
    for path in TASKS.glob("critic_*.yaml"):
        config = _yaml(path.name)
        for m in config.get("metric_list") or []:
            assert m["aggregation"] == "!function utils.aggregate", (path.name, m)
            assert "_ci_" not in m["metric"], (path.name, m)


def test_utils_binds_each_function_to_its_kind_and_defines_nothing_else():
    """utils.py read as Python: one table of names, no function of its own. Each kind's names are methods of its own
    ``TaskFunctions`` (``_FEEDBACK = TaskFunctions.of("feedback")`` for ``feedback_*``); ``keep_samples`` and the one
    aggregation, ``aggregate``, for every metric key; no registration, no dispatch on a document's fields."""
    from critic_tasks import registry

    tree = ast.parse((TASKS / "utils.py").read_text())
    assert not [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    kinds = {node.targets[0].id: node.value.args[0].value for node in tree.body if isinstance(node, ast.Assign)
             and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "TaskFunctions.of"}
    bound = {node.targets[0].id: ast.unparse(node.value) for node in tree.body if isinstance(node, ast.Assign)
             and node.targets[0].id not in kinds}
    assert len(bound) > 40 and len(kinds) == len(registry.TASK_KINDS)
    for name, value in bound.items():
        if name in ("keep_samples", "aggregate"):
            continue
        holder, method = value.split(".")
        assert name.startswith(kinds[holder] + "_") and name.endswith(method.replace("score_", "")), (name, value)
    assert bound["aggregate"] == "TaskFunctions.aggregate" and bound["keep_samples"] == "TaskFunctions.keep_samples"
    text = (TASKS / "utils.py").read_text()
    assert "register" not in text and 'doc["dimension"]' not in text


ROUTE = textwrap.dedent('''
    import json, sys
    route, folder = sys.argv[1], sys.argv[2]
    if route == "task_manager":  # critic_tasks.task_manager(): what critic-eval and simple_evaluate users build
        import critic_tasks
        manager = critic_tasks.task_manager()
    else:  # plain `lm_eval --include_path DIR` builds this TaskManager; `register-lm-eval`'s include-only folder too
        from lm_eval.tasks import TaskManager
        manager = TaskManager(include_path=folder, include_defaults=False)
    from lm_eval.api.registry import AGGREGATION_REGISTRY, FILTER_REGISTRY
    tasks = manager.load(["critic_feedback_chat", "critic_correction_math_cot"])["tasks"]
    feedback, correction = tasks["critic_feedback_chat"], tasks["critic_correction_math_cot"]
    # hand-made Likert records: predicted 1, 2, 3, 4 against gold 1, 3, 2, 4 (Spearman 0.8, reported x100)
    from critic_tasks.core.records import KeyedRow
    rows = [KeyedRow({"kind": "likert", "domain": "chat", "pred": p, "gold": g, "parsed": True}, ("likert", "spearman"))
            for p, g in ((1, 1), (2, 3), (3, 2), (4, 4))]
    made = [f.func(**f.keywords) for f in correction._filters[0].filters]
    config = json.loads(json.dumps({name: t.dump_config() for name, t in tasks.items()}, default=str))
    print(json.dumps({"spearman": feedback.aggregation()["spearman"](rows),
                      "filters": [[type(f).__name__, f.kind.name] for f in made],
                      "names": sorted(f.__name__ for f in (feedback.aggregation()["spearman"],
                                                            correction.aggregation()["pass@5"])),
                      "ours_registered": sorted(n for n in [*AGGREGATION_REGISTRY, *FILTER_REGISTRY]
                                                if n.startswith("critic")),
                      "prompt": feedback.doc_to_text(feedback.eval_docs[0])[:20],
                      "config": config["critic_feedback_chat"]["metric_list"][0]["aggregation"],
                      "intervals": sorted(k for t in tasks.values() for k in t.aggregation() if "_ci_" in k)}))
''')


@pytest.mark.slow
@pytest.mark.parametrize("route", ["include_path", "task_manager", "register_lm_eval"])
def test_every_route_finds_the_yamls_functions(route, tmp_path):
    """Each way of loading our tasks, in a fresh process: the YAML's functions resolve to our filter and
    aggregations (nothing of ours in lm-eval's registries), the aggregation computes the Spearman of hand-made
    records, and the task's config (callables included) serializes as lm-eval's results JSON does."""
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
    assert got["filters"] == [["ScoreFilter", "correction"]]
    assert got["names"] == ["aggregate", "aggregate"]
    assert got["ours_registered"] == []
    assert got["prompt"] == "You will see a user "
    # the function's source, as lm-eval writes it: the value of the (family, base) each row carries
    from critic_tasks.adapters.lm_eval.task_functions import TaskFunctions

    assert got["config"] == inspect.getsource(TaskFunctions.aggregate)
    assert got["intervals"] == []  # no interval is an lm-eval metric (reports.results computes them from samples)


def test_every_metric_value_has_its_own_function(monkeypatch):
    """Each (family, base) a registry key reports is one function of ``registry.METRICS`` (no family computed whole
    to read one value off), the one lm-eval's aggregation and ``engine.kind_metrics`` call."""
    from critic_tasks import engine, registry
    from critic_tasks.core.metrics.bootstrap import BootstrapSettings
    from critic_tasks.protocols.criticbench.scoring import LikertRecord

    assert {(m.family, m.base) for kind in registry.TASK_KINDS.values() for m in kind.metrics} <= set(registry.METRICS)
    # the engine reads the same table at call time: a function put there is what kind_metrics reports
    monkeypatch.setitem(registry.METRICS, ("likert", "spearman"), lambda records: 12.5 * len(records))
    records = [LikertRecord("chat", pred=p, parsed=True, gold=g, quality="low") for p, g in ((1.0, 2.0), (3.0, 4.0))]
    off = BootstrapSettings(enabled=False)
    assert engine.kind_metrics(registry.TASK_KINDS["feedback"], records, intervals=off)["spearman"] == 25.0
