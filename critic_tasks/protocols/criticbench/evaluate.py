"""Score one registered task's generations, harness-free: documents + replies -> records -> the registry's metrics.

What an lm-eval run computes item by item (``process_results``) and per task (the aggregations), in one call, for
callers that hold a whole task's generations at once: the OpenCompass evaluator and ``critic-eval score``. The
records and metric families are the same functions, so the numbers are the same.
"""

from __future__ import annotations

from typing import Sequence

from critic_tasks import registry
from critic_tasks.core.records import Record
from critic_tasks.llm import LLMSettings
from critic_tasks.protocols import catalog
from critic_tasks.protocols.criticbench import scoring
from critic_tasks.protocols.criticbench.correction import check_by_domain
from critic_tasks.protocols.criticbench.judge import judge_docs, judge_identity, judge_settings
from critic_tasks.protocols.criticbench.loading import load_task_docs


def task_docs(task: str, data_dir=None, protocol: str | None = None, toolkit_dir: str | None = None) -> list[dict]:
    """The documents of a registered task, as its lm-eval YAML loads them (same split, domains and options)."""
    spec = registry.task(task)
    dim = spec.dimension_spec
    options = {"with_feedback": False} if not spec.with_feedback else {}
    return load_task_docs(dim.data_dimension, spec.split, list(spec.domains), data_dir, fmt=dim.fmt,
                          protocol=protocol, toolkit_dir=toolkit_dir, **options)


def task_records(dimension: registry.Dimension, docs: Sequence[dict], generations: Sequence[str | None],
                 executor=None, judge: LLMSettings | None = None, progress: bool = False) -> list[Record]:
    """One record per document: parsed (feedback, comparison, meta), checked in the sandbox (correction, all
    programs of a domain in one batch) or graded by the judge (the ``_sub`` dimensions)."""
    if len(docs) != len(generations):
        raise ValueError(f"{len(docs)} documents but {len(generations)} generations")
    if dimension.scorer == "parse":
        return [scoring.record(d, g) for d, g in zip(docs, generations)]
    if dimension.scorer == "judge":
        return list(judge_docs(docs, generations, judge or judge_settings(), progress=progress))
    outcomes = check_by_domain(generations, docs, executor=executor, invalid="mark")
    return [scoring.correction_record(doc, [outcome]) for doc, outcome in zip(docs, outcomes)]


dimension_metrics = catalog.dimension_metrics  # one implementation for every protocol (see there)


def score_task(task: str, docs: Sequence[dict], generations: Sequence[str | None], executor=None,
               judge: LLMSettings | None = None) -> tuple[dict[str, float], list[Record]]:
    """A registered task's metrics and per-item records from its documents and one reply per document."""
    dimension = registry.task(task).dimension_spec
    records = task_records(dimension, docs, generations, executor=executor, judge=judge)
    return dimension_metrics(dimension, records), records


__all__ = ["task_docs", "task_records", "dimension_metrics", "score_task", "judge_identity"]
