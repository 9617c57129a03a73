"""The scoring engine: any registered task scored from its documents and replies, outside lm-eval's own loop.

Each TaskKind names how its replies are scored (``registry.TaskKind.scorer``, a key of ``registry.SCORERS``); the
scorer lives with its protocol (the base and its steps: ``protocols/scorer.py``). The engine sits above the
protocols and the registry (it reads both; neither reads it) and below the adapters and the CLI: ``score``
(documents + replies -> records, through the kind's scorer's batch step), ``kind_metrics`` (records -> the
registry's keys), ``task_docs`` / ``score_task`` for a whole registered task (OpenCompass's evaluator, ``critic-eval score``;
``critic-eval rescore / judge / revise`` and the chance lines call ``score`` and ``kind_metrics``).
"""

from __future__ import annotations

from typing import Sequence

from critic_tasks import registry
from critic_tasks.core.columns import check_one_type_per_field
from critic_tasks.core.metrics.bootstrap import settings_from_env
from critic_tasks.core.records import Record
from critic_tasks.llm import LLMSettings
from critic_tasks.protocols.scorer import Context

# ----------------------------------------------------------------------------- metrics


def kind_metrics(kind: registry.TaskKind, records, intervals=None) -> dict[str, float]:
    """The registry's metric keys for ``kind``, each over the records its metric accepts (``Metric.accepts``):
    the one route from records to metrics and intervals. lm-eval's aggregations (``task_functions.aggregation``: the same
    ``registry.METRICS`` function ``registry.metric_value`` calls, over the rows ``process_results`` routed to a key; an lm-eval
    run's intervals: ``registry.metric_interval``
    over the same rows read back from its samples files, ``reports/results.py``), the OpenCompass evaluator,
    ``critic-eval rescore / judge / revise`` and the chance lines all take it.

    A key none of the records feeds is absent (a live run has no rows for it); interval keys
    (``spearman_ci_low`` / ``_ci_high``) come from one bootstrap on their metric's records (``intervals``: a
    ``BootstrapSettings``, default from CRITIC_CI_*; disabled: no interval keys)."""
    records = list(records)
    settings = settings_from_env() if intervals is None else intervals
    out: dict[str, float] = {}
    for m in kind.metrics:
        rows = [r for r in records if m.accepts(r)]
        if not rows or (m.ci and not settings.enabled):
            continue
        if m.ci == "low":  # both bounds from one bootstrap
            ci = registry.metric_interval(m.family, m.base, rows, settings)
            if ci is not None:
                out[m.key], out[m.key.removesuffix("_low") + "_high"] = ci
        elif not m.ci:
            value = registry.metric_value(m.family, m.base, rows)
            if value is not None:
                out[m.key] = value
    return out


# ----------------------------------------------------------------------------- scoring


def score(kind: registry.TaskKind, docs: Sequence[dict], samples: Sequence[Sequence[str | None]],
          context: Context = Context()) -> list[Record]:
    """One record per document from its replies (``samples[i]``: document i's, as lm-eval keeps them), through
    the kind's scorer's batch step (a parsed kind: each document's first reply)."""
    if len(docs) != len(samples):
        raise ValueError(f"{len(docs)} documents but {len(samples)} generations")
    return registry.SCORERS[kind.scorer].batch(kind, docs, samples, context)


# ----------------------------------------------------------------------------- a whole registered task


def task_docs(task: str, data_dir=None, protocol: str | None = None, toolkit_dir: str | None = None,
              prompt: str | None = None, **options) -> list[dict]:
    """The documents of a registered task, as its lm-eval YAML loads them (same split, domains and options);
    ``protocol`` / ``toolkit_dir`` reach the loaders that take them (CriticBench's), ``prompt`` (authors | ours) the
    benchmarks that follow their authors' prompts, and any other option (RealCritic's ``grading``) the protocols
    that declare it; an option a protocol does not take is left out, as for a mixed run's --metadata."""
    spec = registry.task(task)
    steps = registry.PROTOCOLS[spec.kind_spec.protocol]
    given = {"data_dir": data_dir, "protocol": protocol, "toolkit_dir": toolkit_dir,
             **({"prompt": prompt} if prompt is not None else {}), **options}
    # the task's own options win, as lm-eval's dataset_kwargs win over --metadata
    docs = steps.load_docs(spec.kind_spec.data_dimension,
                           **{**{k: v for k, v in given.items() if k in steps.options}, **steps.task_options(spec)})
    check_one_type_per_field(docs)  # as lm-eval's loader does: both harnesses refuse the same files alike
    return docs


def prompt(doc: dict, task: str) -> str:
    return registry.PROTOCOLS[registry.task(task).kind_spec.protocol].prompt(doc)


def score_task(task: str, docs: Sequence[dict], generations: Sequence[str | None], executor=None,
               judge: LLMSettings | None = None) -> tuple[dict[str, float], list[Record]]:
    """A registered task's metrics and per-item records from its documents and one reply per document (OpenCompass's
    evaluator, ``critic-eval score``): the same records and metric families as a live run, so the same numbers."""
    kind = registry.task(task).kind_spec
    if len(docs) != len(generations):
        raise ValueError(f"{len(docs)} documents but {len(generations)} generations")
    if registry.SCORERS[kind.scorer].lm_eval_only:
        raise ValueError(f"{task}: scored by {kind.scorer!r}, not outside lm-eval")
    records = score(kind, docs, [[g] for g in generations], Context(executor=executor, judge=judge))
    return kind_metrics(kind, records), records


def judge_identity(task: str, judge: LLMSettings) -> dict | None:
    return registry.SCORERS[registry.task(task).scorer].identity(judge)
