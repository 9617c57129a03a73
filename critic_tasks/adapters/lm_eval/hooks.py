"""What the generated YAML files name (``!function utils.<name>``): the generated ``tasks/utils.py`` binds each name
to this module's hooks, one line each (``agg_likert_spearman = aggregation("likert", "spearman")``).

A thin adapter over the core and the protocols: data loading, prompts, parsing, checks, judging and metrics live
there. ``process_results`` turns each document's output into a record and hands it to exactly the metric keys the
registry routes it to (a ``spearman_low`` key only for low-quality items, say), so every aggregation is one
metric family over a list of records, and pooling across domains happens naturally.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import itertools
import json
import logging
import os
import time
from pathlib import Path

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.metrics.bootstrap import settings_from_env
from critic_tasks.core.records import CheckOutcome, JudgedRecord, Record
from critic_tasks.preflight import check_scorer
from critic_tasks.protocols import catalog
from critic_tasks.protocols.criticbench import scoring
from critic_tasks.protocols.criticbench.correction import check_samples
from critic_tasks.protocols.criticbench.judge import deferred_record, judge_docs, judge_identity, judge_settings
from critic_tasks.protocols.metacritique import judge as metacritique_judge
from critic_tasks.protocols.revision import pipeline as revision_pipeline
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


logging.getLogger("lm_eval.api.task").addFilter(_CustomKwargsWarning())

def _dimension(doc: dict) -> registry.Dimension:
    return registry.dimension_for(doc["dimension"], doc.get("fmt", "obj"))


def load_docs(**kwargs):
    """``custom_dataset``: lm-eval passes the task's ``dataset_kwargs`` and ``metadata`` (``--metadata``) together."""
    import datasets

    from critic_tasks.adapters.lm_eval.docs import DocsDataset

    dimension = kwargs.get("dimension")
    if dimension is None:
        raise ConfigError("dataset_kwargs needs 'dimension' (feedback, comparison, meta or correction)")
    dim = registry.dimension_for(dimension, kwargs.get("fmt", "obj"))
    _quiet_expected_count_warnings()
    # Settings this task's scoring needs are checked now, while the task is built: before any generation.
    check_scorer(dim.scorer)
    settings_from_env()  # CRITIC_CI_* (bootstrap intervals) checked before any generation too
    steps = registry.PROTOCOLS[dim.protocol]
    # lm-eval passes other metadata (version, ...) too: only the options the protocol's loader takes go through
    docs = steps.load_docs(dimension, **{k: kwargs[k] for k in steps.options if k in kwargs})
    return datasets.DatasetDict({"eval": DocsDataset.from_list(docs)})  # rows decoded once, not on every pass


def doc_to_text(doc: dict) -> str:
    return registry.PROTOCOLS[_dimension(doc).protocol].prompt(doc)


def doc_to_target(doc: dict) -> str:
    return registry.PROTOCOLS[_dimension(doc).protocol].target(doc)


def _record(doc: dict, results: list, dim: registry.Dimension) -> Record:
    if dim.scorer in ("judge", "aiu_judge", "revision"):
        return Record.from_dict(results[0][0])  # the judge (or revision) filter's record for this document
    if dim.scorer == "sandbox":
        outcomes = results[0]
        if isinstance(outcomes, dict):  # one sample
            outcomes = [outcomes]
        return scoring.correction_record(doc, [CheckOutcome(**o) for o in outcomes])
    # one reply; or every sample of the item where the KeepSamples filter kept them (self-consistency)
    return registry.PROTOCOLS[dim.protocol].record(doc, results[0] if results else None)


def process_results(doc: dict, results: list) -> dict:
    dim = _dimension(doc)
    rec = _record(doc, results, dim)
    row = rec.as_dict()  # plain JSON in --log_samples files
    # the same row under every key its metrics accept: an interval's two bounds are computed once (see _interval)
    intervals = settings_from_env().enabled  # CRITIC_CI=off: the *_ci_low / *_ci_high keys are left out
    return {m.key: row for m in dim.metrics if m.accepts(rec) and (intervals or not m.ci)}


# ----------------------------------------------------------------------------- aggregations


def aggregation_name(family: str, base: str) -> str:
    return "agg_" + "_".join(filter(None, (family, base.replace("@", "_at_").replace("-", "_"))))


def aggregation(family: str, base: str):
    """The lm-eval aggregation of a metric key reporting ``base`` of ``family`` over the rows routed to it."""
    compute = catalog.FAMILIES[family]

    def aggregate(rows):
        # a value the family leaves out (nothing to average: every verdict unreadable, say) is null, never NaN
        return compute([Record.from_dict(r) for r in rows]).get(base)

    aggregate.__name__ = aggregation_name(family, base)
    return aggregate


def metric_aggregation_name(metric: registry.Metric) -> str:
    """The hook a metric's YAML entry names: ``agg_likert_spearman``, ``agg_likert_spearman_ci_low``, ..."""
    return aggregation_name(metric.family, metric.base + (f"_ci_{metric.ci}" if metric.ci else ""))


class _Rows:
    """The rows of a metric key, equal to other rows of the same content: the key under which ``_interval``
    remembers an interval, so that its two bounds (two lm-eval aggregations over the same rows) cost one bootstrap."""

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self.content = json.dumps(rows, default=str)

    def __hash__(self) -> int:
        return hash(self.content)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Rows) and self.content == other.content


@functools.lru_cache(maxsize=1)
def _interval(family: str, base: str, settings, rows: _Rows):
    """The bootstrap interval of (family, base) over ``rows`` (a pure function of its arguments: remembered, never
    stale)."""
    return catalog.INTERVALS[family]([Record.from_dict(r) for r in rows.rows], base, settings)


def interval_bound(family: str, base: str, bound: str):
    """A bound of the bootstrap interval of (family, base) over the rows lm-eval routed to the key (the base
    metric's rows: same subset, same filters). Settings: CRITIC_CI_RESAMPLES, CRITIC_CI_LEVEL, CRITIC_CI_SEED."""

    def aggregate(rows):
        ci = _interval(family, base, settings_from_env(), _Rows(rows))
        return None if ci is None else ci[0 if bound == "low" else 1]

    aggregate.__name__ = aggregation_name(family, f"{base}_ci_{bound}")
    return aggregate


# ----------------------------------------------------------------------------- filters


RESCUE_DIR_ENV = "CRITIC_RESCUE_DIR"
_RESCUES = itertools.count()


class ScoringFailed(RuntimeError):
    """Scoring a task's generations failed after they were made; they were saved first (see the message)."""


def _scored_or_rescued(kind: str, resps, docs, score):
    """Run ``score()``; if it raises, first save every generation in lm-eval's samples format, then say how to
    re-score them, so a late failure never throws away a finished generation run."""
    try:
        return score()
    except Exception as err:
        folder = Path(os.environ.get(RESCUE_DIR_ENV) or "critic-eval-rescue").resolve()
        folder.mkdir(parents=True, exist_ok=True)
        dim = _dimension(docs[0])
        task = f"critic_{dim.data_dimension}{'_sub' if dim.fmt == 'sub' and dim.protocol == 'criticbench' else ''}"
        path = folder / f"samples_{task}_{time.strftime('%Y-%m-%dT%H-%M-%S')}.{os.getpid()}-{next(_RESCUES)}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for i, (doc, resp) in enumerate(zip(docs, resps)):
                fh.write(json.dumps({"doc_id": i, "doc": doc, "resps": [list(resp)]}, default=str) + "\n")
        how = {"judge": f"critic-eval judge {path}", "revision": f"critic-eval revise {path}"}.get(
            kind, f"critic-eval rescore {path}") + " (once the cause is fixed)"
        raise ScoringFailed(f"{kind} scoring failed ({type(err).__name__}: {err}); the {len(docs)} generations are "
                            f"saved in {path}; re-score them with: {how}") from err


class CorrectionCheck:
    """lm-eval filter: check every revision of the task in one batch, so programs run in parallel.

    Replaces each document's generations with their check outcomes (dicts, kept in ``--log_samples`` output).
    Items whose gold answer or unit test is unusable are marked ``invalid``, excluded from pass rates and counted
    in ``invalid_items``.
    """

    def __init__(self, **kwargs):
        self.executor_name = kwargs.get("executor") or os.environ.get("CRITIC_EXECUTOR", "sandbox")

    def apply(self, resps, docs):
        return _scored_or_rescued("sandbox", resps, docs, lambda: self._check(resps, docs))

    def _check(self, resps, docs):
        per_doc = check_samples(resps, docs, executor=get_executor(self.executor_name), invalid="mark")
        for doc, outcomes in zip(docs, per_doc):
            for outcome in outcomes:
                if outcome.status == "invalid":
                    log.warning("critic_tasks: %s[%s] excluded: %s", doc["source_file"], doc["item_index"],
                                outcome.detail)
        return [[dataclasses.asdict(outcome) for outcome in outcomes] for outcomes in per_doc]


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


class JudgeFilter:
    """lm-eval filter for the judge-scored tasks: judge every generation of the task concurrently.

    Settings come from CRITIC_JUDGE_* (see ``critic_tasks.llm.settings``). Without a judge model configured,
    judging is deferred: the run keeps its generations (use ``--log_samples``) and ``critic-eval judge <output
    dir>`` scores them later, with the same numbers.
    """

    def __init__(self, **kwargs):
        pass

    def apply(self, resps, docs):
        settings = judge_settings()
        if not settings.model:
            log.warning("critic_tasks: no judge configured (CRITIC_JUDGE_MODEL unset): judging deferred; "
                        "keep generations with --log_samples and run `critic-eval judge <output_path>`")
            return [[deferred_record(doc).as_dict()] for doc in docs]
        records: list[JudgedRecord] = _scored_or_rescued(
            "judge", resps, docs, lambda: judge_docs(docs, [r[0] if r else None for r in resps], settings))
        _report_unscored(rec.item for rec in records if rec.score is None)
        identity = judge_identity(settings)
        return [[{**rec.as_dict(), "judge": identity}] for rec in records]


class KeepSamples:
    """lm-eval filter: keep every sample of an item (lm-eval's default keeps the first), for tasks that read all
    k of them (CritiqueLLM's self-consistency: the mean of k sampled ratings)."""

    def __init__(self, **kwargs):
        pass

    def apply(self, resps, docs):
        return [list(r) for r in resps]


class AIUJudgeFilter:
    """lm-eval filter for MetaCritique: the judge extracts each critique's AIUs and checks precision and recall
    (``protocols.metacritique.judge``; CRITIC_JUDGE_* settings, cached per step). Without a judge model, judging
    is deferred as for the CriticBench judge (``critic-eval judge <output dir>`` scores the saved samples)."""

    def __init__(self, **kwargs):
        pass

    def apply(self, resps, docs):
        settings = metacritique_judge.judge_settings()
        if not settings.model:
            log.warning("critic_tasks: no judge configured (CRITIC_JUDGE_MODEL unset): MetaCritique judging "
                        "deferred; keep generations with --log_samples and run `critic-eval judge <output_path>`")
            return [[metacritique_judge.deferred_record(doc).as_dict()] for doc in docs]
        records = _scored_or_rescued("judge", resps, docs, lambda: metacritique_judge.judge_critiques(
            docs, [r[0] if r else None for r in resps], settings))
        identity = metacritique_judge.judge_identity(settings)
        return [[{**rec.as_dict(), "judge": identity}] for rec in records]


class RevisionFilter:
    """lm-eval filter for the revision protocols (MultiCritique, RCO): the critiques go to the revisers
    (CRITIC_REVISER_* or a CRITIC_REVISERS pool), the revisions to the answer checks / sandbox and the judge
    (CRITIC_JUDGE_*), all through ``protocols.revision.pipeline`` (cached per step). Without the revisers or a needed
    judge, scoring is deferred: keep the generations (``--log_samples``) and run ``critic-eval revise <output dir>``.
    Failed reviser / judge calls and unreadable verdicts are counted per item and make ``critic-eval`` exit 1."""

    def __init__(self, **kwargs):
        self.executor_name = kwargs.get("executor") or os.environ.get("CRITIC_EXECUTOR", "sandbox")

    def apply(self, resps, docs):
        protocol = _dimension(docs[0]).protocol
        revisers, judge = revision_pipeline.reviser_pool(), revision_pipeline.judge_settings()
        why = revision_pipeline.missing(protocol, docs, revisers, judge)
        if why:
            log.warning("critic_tasks: %s scoring deferred (set %s); keep generations with --log_samples and run "
                        "`critic-eval revise <output_path>`", protocol, why)
            return [[revision_pipeline.deferred_record(doc).as_dict()] for doc in docs]
        records = _scored_or_rescued("revision", resps, docs, lambda: revision_pipeline.run(
            protocol, docs, [r[0] if r else None for r in resps], revisers, judge, get_executor(self.executor_name)))
        _report_unscored(rec.item for rec in records if rec.failed)
        rates = revision_pipeline.per_reviser_pass_rates(records)
        if rates:  # per reviser: not a registry key (the pool is configured at run time); also in `critic-eval revise`
            log.info("critic_tasks: %s pass rate per reviser: %s", protocol,
                     ", ".join(f"{name} {rate:.2f}" for name, rate in rates.items()))
        return [[rec.as_dict()] for rec in records]  # each names the revisers, judge and prompt versions (models)
