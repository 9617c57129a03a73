"""Any registered task, scored outside lm-eval (OpenCompass's evaluator, re-scoring): documents, then records and
the registry's metric keys from one reply per document, whatever the protocol.

CriticBench keeps its own ``criticbench.evaluate`` (toolkit protocol, sandbox, judge); the other protocols are
scored here from their catalog steps: a parsed reply becomes a record (``Steps.record``), MetaCritique's critiques
go through its AIU judge, and the metrics are the family's values plus the bootstrap intervals the registry lists.
"""

from __future__ import annotations

from typing import Sequence

from critic_tasks import registry
from critic_tasks.core.records import Record
from critic_tasks.llm import LLMSettings
from critic_tasks.protocols import catalog
from critic_tasks.protocols.criticbench import evaluate as criticbench


def task_docs(task: str, data_dir=None, protocol: str | None = None, toolkit_dir: str | None = None) -> list[dict]:
    """The documents of a registered task, as its lm-eval YAML loads them (same options)."""
    spec = registry.task(task)
    if spec.dimension_spec.protocol == "criticbench":
        return criticbench.task_docs(task, data_dir, protocol, toolkit_dir)
    steps = registry.PROTOCOLS[spec.dimension_spec.protocol]
    return steps.load_docs(spec.dimension_spec.data_dimension, **dict(spec.options), data_dir=data_dir)


def prompt(doc: dict, task: str) -> str:
    return registry.PROTOCOLS[registry.task(task).dimension_spec.protocol].prompt(doc)


metrics = catalog.dimension_metrics


def score_task(task: str, docs: Sequence[dict], generations: Sequence[str | None], executor=None,
               judge: LLMSettings | None = None) -> tuple[dict[str, float], list[Record]]:
    """A registered task's metrics and per-item records from its documents and one reply per document."""
    spec = registry.task(task)
    dimension = spec.dimension_spec
    if dimension.protocol == "criticbench":
        return criticbench.score_task(task, docs, generations, executor=executor, judge=judge)
    if len(docs) != len(generations):
        raise ValueError(f"{len(docs)} documents but {len(generations)} generations")
    if dimension.scorer == "aiu_judge":
        from critic_tasks.protocols.metacritique.judge import judge_critiques

        records: list[Record] = list(judge_critiques(docs, generations, judge, progress=False))
    elif dimension.scorer == "parse":
        record = registry.PROTOCOLS[dimension.protocol].record
        records = [record(d, g) for d, g in zip(docs, generations)]
    else:
        raise ValueError(f"{task}: scored by {dimension.scorer!r}, not outside lm-eval")
    return metrics(dimension, records), records


def judge_identity(task: str, judge: LLMSettings) -> dict:
    if registry.task(task).dimension_spec.scorer == "aiu_judge":
        from critic_tasks.protocols.metacritique.judge import judge_identity as aiu_identity

        return aiu_identity(judge)
    return criticbench.judge_identity(judge)


def item_label(doc: dict) -> str:
    """How per-item details name a document: its file and index, else its id."""
    if "source_file" in doc:
        return f"{doc['source_file']}[{doc['item_index']}]"
    return str(doc.get("id", doc.get("pair_id", "")))
