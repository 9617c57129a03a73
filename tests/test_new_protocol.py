"""A new protocol is its own package plus registry entries (issue 35): nothing in the engine, the lm-eval hooks or
the OpenCompass evaluator's path names it. This test plays the newcomer: a toy protocol with a batch step of its own
(a scorer none of our modules knows) is declared the way the registry declares every protocol, and a task of it is
scored by the engine (OpenCompass's evaluator, ``critic-eval rescore``) and by lm-eval's hooks (filter,
process_results, aggregation), with numbers counted by hand."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from critic_tasks import engine, registry
from critic_tasks.adapters.lm_eval import task_functions
from critic_tasks.core.records import Record, rate, register_record
from critic_tasks.protocols.scorer import Scorer


@register_record
@dataclass(frozen=True)
class MajorityRecord(Record):
    kind = "toy_majority"
    answer: str = ""
    correct: bool = False
    agrees: bool = False  # the reply is the batch's most common answer: only known with the whole batch


class MajorityScorer(Scorer):
    """A batch step of the toy protocol's own: each reply is read, then compared with the batch's commonest answer."""

    name, label, command = "toy_majority", "toy", "rescore"
    about = "each reply's answer compared with the gold and with the batch's commonest answer"

    def batch(self, kind, docs, samples, ctx):
        answers = [(s[0] if s else "").strip().lower() for s in samples]
        commonest = max(set(answers), key=answers.count)
        return [MajorityRecord(doc["domain"], a, a == doc["gold"], a == commonest) for doc, a in zip(docs, answers)]


DOCS = [{"domain": "toy", "question": f"q{i}", "gold": gold} for i, gold in enumerate(["yes", "no", "yes", "no"])]
REPLIES = ["Yes", "yes", "yes ", "No"]  # right, wrong, right, right; the commonest answer is "yes" (3 of 4)


@pytest.fixture
def toy_task(monkeypatch):
    """The toy protocol's registry entries, as a package would add them: its data setting, its Protocol, its scorer,
    its metric functions, a TaskKind and a Task."""
    from critic_tasks.core import settings

    monkeypatch.setitem(settings.SETTINGS, "TOY_DATA_DIR",
                        settings.Setting("TOY_DATA_DIR", "", "path", "a local copy of the toy protocol's data"))
    protocol = registry.Protocol(
        "toy", "A toy protocol", "none", load_docs=lambda dimension, **options: [dict(d) for d in DOCS], options=(),
        prompt=lambda doc: f"Answer yes or no: {doc['question']}", target=lambda doc: doc["gold"], record=None,
        data_env="TOY_DATA_DIR", source="toy")
    monkeypatch.setitem(registry.PROTOCOLS, "toy", protocol)
    monkeypatch.setitem(registry.SCORERS, MajorityScorer.name, MajorityScorer())
    monkeypatch.setitem(registry.METRICS, ("toy", "accuracy"), lambda records: rate(r.correct for r in records))
    monkeypatch.setitem(registry.METRICS, ("toy", "agreement"), lambda records: rate(r.agrees for r in records))
    kind = registry.TaskKind("toy", "toy", "toy", "obj", MajorityScorer.name,
                             (registry.Metric("accuracy", "toy"), registry.Metric("agreement", "toy")),
                             headline=("accuracy",), about="answer yes or no")
    monkeypatch.setitem(registry.TASK_KINDS, "toy", kind)
    monkeypatch.setitem(registry.TASKS, "critic_toy", registry.Task("critic_toy", "toy", domains=("toy",)))
    return kind


def test_the_engine_scores_a_new_protocol_through_its_own_scorer(toy_task):
    docs = engine.task_docs("critic_toy")
    metrics, records = engine.score_task("critic_toy", docs, REPLIES)
    assert [r.correct for r in records] == [True, False, True, True]
    assert [r.agrees for r in records] == [True, True, True, False]
    assert metrics == {"accuracy": pytest.approx(100 * 3 / 4), "agreement": pytest.approx(100 * 3 / 4)}


def test_lm_evals_hooks_score_a_new_protocol_through_its_own_scorer(toy_task):
    docs = task_functions.TaskFunctions(toy_task).load_docs()["eval"]
    assert [task_functions.TaskFunctions(toy_task).doc_to_text(d) for d in docs][:1] == ["Answer yes or no: q0"]
    kept = task_functions.TaskFunctions(toy_task).score_filter().apply([[r] for r in REPLIES], list(docs))  # lm-eval's filter step
    # lm-eval hands process_results each document's filtered response (the filter's one-row list) in a list
    rows = [task_functions.TaskFunctions(toy_task).process_results(doc, [out]) for doc, out in zip(docs, kept)]
    by_key = {key: [row[key] for row in rows if key in row] for key in ("accuracy", "agreement")}
    assert task_functions.TaskFunctions.aggregate(by_key["accuracy"]) == pytest.approx(75.0)
    assert task_functions.TaskFunctions.aggregate(by_key["agreement"]) == pytest.approx(75.0)


def test_the_generators_write_a_new_protocols_files(toy_task):
    """``python -m critic_tasks.generate`` needs no edit either: the toy task gets its lm-eval YAML, naming its filter
    and its aggregations, their functions in tasks/utils.py, and its OpenCompass dataset config."""
    from critic_tasks.adapters.lm_eval import generate as lm_eval_files
    from critic_tasks.adapters.opencompass import generate as opencompass_files

    files = lm_eval_files.render()
    task_yaml = files["critic_toy.yaml"]
    assert "function: !function utils.toy_filter" in task_yaml
    assert "aggregation: !function utils.aggregate" in task_yaml
    assert "(test_new_protocol.MajorityScorer)" in task_yaml  # the YAML names the scorer where it lives
    utils = lm_eval_files.render_utils(files)
    assert "\ntoy_filter = _TOY.score_filter\n" in utils
    assert "\naggregate = TaskFunctions.aggregate\n" in utils
    assert "critic_toy_datasets = [" in opencompass_files.render()["datasets/critic_toy_gen.py"]


def test_a_protocol_whose_data_setting_is_undeclared_is_one_clear_error():
    with pytest.raises(ValueError, match="protocol toy: its data setting TOY_UNDECLARED_DIR is not declared in "
                                         "core/settings.py's SETTINGS"):
        registry.Protocol("toy", "A toy protocol", "none", load_docs=lambda dimension: [], options=(),
                          prompt=str, target=str, record=None, data_env="TOY_UNDECLARED_DIR", source="toy")
