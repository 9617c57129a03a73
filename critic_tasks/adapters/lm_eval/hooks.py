"""What the generated YAML files name: the four hooks ``tasks/utils.py`` binds (``!function utils.load_docs``,
``doc_to_text``, ``doc_to_target``, ``process_results``), and the filters and aggregations this module registers by
name in lm-eval's registries when it is imported (``function: critic_sandbox``, ``aggregation:
critic_likert_spearman``: ``register``).

A thin adapter over the core and the protocols: data loading, prompts, parsing, checks, judging and metrics live
there. Each task kind's ``Route`` is bound once: ``process_results`` turns each document's output into a record
(the protocol's parser, or the record the task's ScoreFilter kept) and hands it to exactly the metric keys that
accept it (a ``spearman_low`` key only for low-quality items, say), so every aggregation is one metric family over
a list of records, and pooling across domains happens naturally.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import itertools
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from critic_tasks import registry
from critic_tasks.adapters.lm_eval import private, ranks
from critic_tasks.adapters.lm_eval.names import FILTER_NAMES, KEEP_SAMPLES, aggregation_name
from critic_tasks.core.columns import check_one_type_per_field
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.metrics.bootstrap import settings_from_env
from critic_tasks.core.records import Metric, Record, warn_identical
from critic_tasks.core.settings import read_setting
from critic_tasks.engine import SCORERS, Scorer
from critic_tasks.protocols.catalog import FAMILIES
from critic_tasks.sandbox import get_executor

log = logging.getLogger("critic_tasks")

class _ExpectedCountWarning(logging.Filter):
    """lm-eval warns for every critic task that its metrics were "not scored on the same number of documents":
    expected, since a per-quality key sees only its quality's items (and groups average only the headline metric,
    unweighted). Dropped for our tasks, explained once."""

    def __init__(self):
        super().__init__()
        self.explained = False

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("[critic_") and "not scored on the same number of documents" in message:
            if not self.explained:
                self.explained = True
                log.info("critic_tasks: breakdown metrics (per quality, difficulty, ...) are computed on their own "
                         "items, so lm-eval's 'not scored on the same number of documents' notes are expected")
            return False
        return True


def _quiet_expected_count_warnings() -> None:
    """Install the filter on lm-eval's logger once a critic task is built (not when this module is imported)."""
    logger = logging.getLogger("lm_eval.evaluator_utils")
    if not any(isinstance(f, _ExpectedCountWarning) for f in logger.filters):
        logger.addFilter(_ExpectedCountWarning())



class _CustomKwargsWarning(logging.Filter):
    """lm-eval warns, for every task built from a ``custom_dataset`` (all of ours), that "Custom kwargs can be passed
    to `--metadata`": four identical warnings for four tasks, about options our README documents. Dropped for ours."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("critic_") and "Custom kwargs can be passed to `--metadata`" in message)


# Installed on import, i.e. when lm-eval loads our tasks' utils.py: the warning is logged before any of our code runs
# for a task (lm-eval's download() warns, then calls our loader), so no later point would catch the first one.
logging.getLogger("lm_eval.api.task").addFilter(_CustomKwargsWarning())


def _kept(doc: dict, kept: list) -> Record:
    """A batch-scored document's record: the one its ScoreFilter made, as lm-eval hands it on (a one-row list)."""
    return Record.from_dict(kept[0])


@dataclasses.dataclass(frozen=True)
class Route:
    """What one task kind's documents go through, bound once (not looked up per document): the protocol's prompt and
    gold text, the function that makes a document's record (the protocol's parser, e.g.
    ``protocols.criticbench.scoring.record``, for a parsed kind; ``_kept`` for one its filter scores), and the
    metric keys a record is routed to, each taking the records its ``Metric.accepts``."""

    kind: registry.TaskKind
    prompt: Callable[[dict], str]
    target: Callable[[dict], str]
    record: Callable[[dict, Any], Record]
    metrics: tuple[Metric, ...]  # the keys process_results feeds: no interval bound (computed from the samples)

    @classmethod
    def of(cls, kind: registry.TaskKind) -> "Route":
        protocol = registry.PROTOCOLS[kind.protocol]
        record = protocol.record if SCORERS[kind.scorer].per_reply else _kept
        return cls(kind, protocol.prompt, protocol.target, record, tuple(m for m in kind.metrics if not m.ci))


# (data dimension, format) -> its Route: the first registered task kind of each, as ``registry.kind_for`` finds
_ROUTES: dict[tuple[str, str], Route] = {}
for _kind in registry.TASK_KINDS.values():
    _ROUTES.setdefault((_kind.data_dimension, _kind.fmt), Route.of(_kind))


def _route(doc: dict) -> Route:
    route = _ROUTES.get((doc["dimension"], doc.get("fmt", "obj")))
    if route is None:  # not one of our documents: the registry's one-line error
        registry.kind_for(doc["dimension"], doc.get("fmt", "obj"))
    return route


def _kind_of(doc: dict) -> registry.TaskKind:
    return _route(doc).kind


def load_docs(**kwargs):
    """``custom_dataset``: lm-eval passes the task's ``dataset_kwargs`` and ``metadata`` (``--metadata``) together."""
    from critic_tasks.adapters.lm_eval.docs import Docs

    dimension = kwargs.get("dimension")
    if dimension is None:
        raise ConfigError("dataset_kwargs needs 'dimension' (feedback, comparison, meta or correction)")
    kind = registry.kind_for(dimension, kwargs.get("fmt", "obj"))
    _quiet_expected_count_warnings()
    # Settings this task's scoring needs are checked now, while the task is built: before any generation.
    SCORERS[kind.scorer].check_settings()
    # CRITIC_CI_* checked before any generation too: read with the --log_samples rows (reports.results)
    settings_from_env()
    steps = registry.PROTOCOLS[kind.protocol]
    # lm-eval passes other metadata (version, ...) too: only the options the protocol's loader takes go through
    private.install_distinct_seeds()  # repeats of a sampled request get distinct seeds through lm-eval's API models
    docs = steps.load_docs(dimension, **{k: kwargs[k] for k in steps.options if k in kwargs})
    check_one_type_per_field(docs)  # a field mixing types: one line naming file and field, not pyarrow's traceback
    return {"eval": Docs.from_list(docs)}  # rows decoded once, not on every pass


def doc_to_text(doc: dict) -> str:
    return _route(doc).prompt(doc)


def doc_to_target(doc: dict) -> str:
    return _route(doc).target(doc)


def process_results(doc: dict, results: list) -> dict:
    """The document's record (from its reply, its samples where KeepSamples kept them all, or what its ScoreFilter
    kept) under every metric key that accepts it, as a plain row (JSON in --log_samples files, where
    ``reports.results`` reads it back for the intervals)."""
    route = _route(doc)
    rec = route.record(doc, results[0] if results else None)
    row = rec.as_dict()
    fed = {m.key: row for m in route.metrics if m.accepts(rec)}
    group = process_group()
    # several ranks: every key on every document, each value tagged with its rank (ranks.every_key)
    return fed if group is None else ranks.every_key(fed, [m.key for m in route.metrics], group)


def process_group() -> tuple[int, int] | None:
    """(rank, world size) of the torch.distributed process group this process belongs to; None outside one (or in
    a group of one): then nothing of ``ranks`` runs. torch is not imported for this: a process that has not imported
    it is in no group."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    world = dist.get_world_size()
    return (dist.get_rank(), world) if world > 1 else None


# ----------------------------------------------------------------------------- aggregations


def aggregate(family: str, base: str, rows: list) -> object:
    """``base`` of ``family`` over the rows lm-eval routed to a metric key (``process_results``: the records the
    key's metric accepts): ``engine.metric_value``'s two steps, the ones ``engine.kind_metrics`` takes for each
    key, with the family's function called here (no call leads back into a module already left)."""
    if rows and isinstance(rows[0], dict) and ranks.SLOT in rows[0]:  # gathered from several ranks
        rows = ranks.in_doc_order(rows)
    records = [Record.from_dict(r) for r in rows]
    if base == "identical_samples":  # a sampled task whose backend did not sample: one warning line
        warn_identical(records)
    return FAMILIES[family](records).get(base)  # None (null in the results), never NaN


def aggregation(family: str, base: str):
    """The lm-eval aggregation of a metric key reporting ``base`` of ``family`` over the rows routed to it."""

    def aggregated(rows):
        return aggregate(family, base, rows)

    aggregated.__name__ = aggregation_name(family, base)
    return aggregated


# ----------------------------------------------------------------------------- filters


RESCUE_DIR_ENV = "CRITIC_RESCUE_DIR"
_RESCUES = itertools.count()


class ScoringFailed(RuntimeError):
    """Scoring a task's generations failed after they were made; they were saved first (see the message)."""


def _scored_or_rescued(scorer: Scorer, resps, docs, score):
    """Run ``score()``; if it raises, first save every generation in lm-eval's samples format, then say how to
    re-score them, so a late failure never throws away a finished generation run."""
    try:
        return score()
    except Exception as err:
        folder = Path(read_setting(RESCUE_DIR_ENV)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        kind = _kind_of(docs[0])
        task = f"critic_{kind.data_dimension}{'_sub' if kind.fmt == 'sub' and kind.protocol == 'criticbench' else ''}"
        path = folder / f"samples_{task}_{time.strftime('%Y-%m-%dT%H-%M-%S')}.{os.getpid()}-{next(_RESCUES)}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for i, (doc, resp) in enumerate(zip(docs, resps)):
                fh.write(json.dumps({"doc_id": i, "doc": doc, "resps": [list(resp)]}, default=str) + "\n")
        how = scorer.rescore_hint.replace("<output_path>", str(path)) + " (once the cause is fixed)"
        raise ScoringFailed(f"{scorer.label} scoring failed ({type(err).__name__}: {err}); the {len(docs)} generations "
                            f"are saved in {path}; re-score them with: {how}") from err


# The list ``unscored_items`` collects into while its block runs (lm-eval builds the filters: nothing can be handed
# to them directly); outside such a block, unscored items are only counted in the results (judge_failed, ...).
_UNSCORED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("critic_tasks_unscored", default=None)


@contextlib.contextmanager
def unscored_items(into: list[str]):
    """While the block runs, the items the judge or the revisers could not score (failed calls, replies without a
    score or verdict) are appended to ``into``: `critic-eval` exits 1 when any are left, as `critic-eval judge`
    does."""
    token = _UNSCORED.set(into)
    try:
        yield into
    finally:
        _UNSCORED.reset(token)


def _report_unscored(items) -> None:
    collecting = _UNSCORED.get()
    if collecting is not None:
        collecting.extend(items)


class ScoreFilter:
    """lm-eval filter for every task scored a whole batch at once (``engine.SCORERS``: its ``scorer`` argument,
    written in the YAML): programs run in parallel in the sandbox (``sandbox``), judge calls run concurrently
    (``judge``: CriticBench's 1-10 grades; ``aiu_judge``: MetaCritique's AIU extraction, precision and recall), and
    the revision protocols' revisers, checks and judge (``revision``), all cached per step.

    Replaces each document's generations with its record (the scorer's ``batch`` step), kept in ``--log_samples``
    output: a correction record keeps each sample's check outcome in ``checks`` (items whose gold answer or unit
    test is unusable are marked ``invalid``, logged, excluded from pass rates and counted in ``invalid_items``); a
    judged record comes with the judge's identity.
    Settings come from CRITIC_JUDGE_*, CRITIC_REVISER_* / CRITIC_REVISERS and CRITIC_EXECUTOR (or the ``executor``
    argument). Without a judge or reviser configured, scoring is deferred: the run keeps its generations (use
    ``--log_samples``) and the scorer's command (``critic-eval judge / revise <output dir>``) scores them later,
    with the same numbers. Failed calls and unreadable replies are counted per item and make ``critic-eval`` exit 1.
    """

    def __init__(self, scorer: str, **kwargs):
        self.scorer = SCORERS[scorer]
        self.repeats = int(kwargs.get("repeats", 1))  # the task's repeats (samples per item)
        # the executor is resolved when lm-eval builds the task (a bad CRITIC_EXECUTOR stops the run before any
        # generation); the scoring step only runs programs
        name = kwargs.get("executor") or read_setting("CRITIC_EXECUTOR")
        self.executor = get_executor(name) if self.scorer.uses_executor else None

    def apply(self, resps, docs):
        if process_group() is not None:  # no item checked or judged twice under data parallel
            resps = ranks.own_replies(resps, self.repeats)
        scorer, kind = self.scorer, _kind_of(docs[0]) if docs else None
        context = scorer.context_from_env(progress=True, executor=self.executor)
        why = scorer.defers(kind, docs, context)
        if why:
            log.warning(why)
            return [[scorer.deferred_record(doc).as_dict()] for doc in docs]
        records = _scored_or_rescued(scorer, resps, docs, lambda: scorer.batch(kind, docs, resps, context))
        for line in scorer.warnings(docs, records):
            log.warning(line)
        if scorer.live_failures:
            _report_unscored(rec.item for rec in records if scorer.failed(rec))
        summary = scorer.summary(kind, records)
        if summary:
            log.info(summary)
        identity = scorer.identity(context.judge)
        identity = {} if identity is None else {"judge": identity}
        # a revision's record names the revisers, judge and prompt versions itself (models); a correction record
        # keeps each sample's check outcome (``checks``)
        return [[{**rec.as_dict(), **identity}] for rec in records]


class KeepSamples:
    """lm-eval filter: keep every sample of an item (lm-eval's default keeps the first), for tasks that read all
    k of them (CritiqueLLM's self-consistency: the mean of k sampled ratings), less data-parallel padding."""

    def __init__(self, **kwargs):
        self.repeats = int(kwargs.get("repeats", 1))  # the task's repeats (k)

    def apply(self, resps, docs):
        return resps if process_group() is None else ranks.own_replies(resps, self.repeats)


# ----------------------------------------------------------------------------- names in lm-eval's registries

def _score_filter(scorer: str) -> type:
    class Scored(ScoreFilter):
        def __init__(self, **kwargs):
            super().__init__(scorer, **kwargs)

    Scored.__name__ = Scored.__qualname__ = f"ScoreFilter[{scorer}]"
    return Scored


def registered_names() -> dict[str, dict[str, object]]:
    """What ``register`` puts in lm-eval's registries: {"filter": {name: class}, "aggregation": {name: function}}."""
    aggregations = {aggregation_name(f, b): aggregation(f, b) for f, b in registry.aggregations()}
    filters = {name: _score_filter(scorer) for name, scorer in FILTER_NAMES.items()}
    filters[KEEP_SAMPLES] = KeepSamples
    return {"filter": filters, "aggregation": aggregations}


def register() -> None:
    """Our filters and aggregations under their names in lm-eval's registries (``register_filter``,
    ``register_aggregation``), once per process. lm-eval resolves a YAML's ``filter_list`` functions and
    ``aggregation`` names when it builds the task (``ConfigurableTask.__init__``), after reading the YAML, whose
    ``!function utils.<hook>`` tags import ``tasks/utils.py`` and so this module: every way of loading our tasks
    (``lm_eval --include_path``, ``critic-eval``, ``task_manager()``, ``register-lm-eval``'s folder) registers first."""
    # lm-eval fills its aggregation registry with its own names ("mean", which our groups use) on first lookup only
    # while the registry is empty: its metrics module is imported first, so ours never stand in for those.
    import lm_eval.api.metrics  # noqa: F401
    from lm_eval.api.registry import aggregation_registry, filter_registry, register_aggregation, register_filter

    names = registered_names()
    for kind, held_by, add in (("filter", filter_registry, register_filter),
                               ("aggregation", aggregation_registry, register_aggregation)):
        for name, obj in names[kind].items():
            held = held_by.get(name, None)
            if held is None:
                add(name)(obj)
            elif not getattr(held, "__module__", "").startswith("critic_tasks"):
                raise ConfigError(f"lm-eval's {kind} registry already holds {name!r} from {held!r}: critic_tasks "
                                  "cannot register its own under that name")


register()
