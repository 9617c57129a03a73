"""lm-eval's task functions: each task kind's (loader, prompt, gold text, per-document record, filter) are the methods
of its ``TaskFunctions``, which the generated ``tasks/utils.py`` binds by name (``feedback_doc_to_text =
_FEEDBACK.doc_to_text``), with ``keep_samples`` and the one aggregation (``aggregate``); the YAML names them with
``!function``, as lm-eval's ifeval names its own, so nothing is registered by name in lm-eval's registries.

A thin adapter over the core and the protocols: data loading, prompts, parsing, checks, judging and metrics live
there. ``process_results`` turns each document's output into a record (the protocol's parser, or the record the
task's ScoreFilter kept) and hands it to exactly the metric keys that accept it (a ``spearman_low`` key only for
low-quality items, say), each value carrying its key's (family, base), so one aggregation computes every key: one
metric value over a list of records (``registry.metric_value``), and pooling across domains happens naturally.
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
from typing import TYPE_CHECKING

from critic_tasks import registry
from critic_tasks.adapters.lm_eval import private, ranks
from critic_tasks.core.columns import check_one_type_per_field
from critic_tasks.core.records import Record, keyed_rows
from critic_tasks.core.settings import read_setting
from critic_tasks.protocols.scorer import Scorer
from critic_tasks.sandbox import get_executor

if TYPE_CHECKING:
    import datasets

log = logging.getLogger("critic_tasks")


class TaskFunctions:
    """One task kind's functions, as lm-eval calls them: the generated ``tasks/utils.py`` binds them by name, one
    table of lines (``feedback_doc_to_text = _FEEDBACK.doc_to_text``), and binds ``aggregate`` (every metric key's
    aggregation) and each batch-scored kind's filter (``correction_filter = _CORRECTION.score_filter``) the same way.
    ``TaskFunctions.of(name)`` gives a kind's one instance: lm-eval executes utils.py afresh for every ``!function``
    tag, and the executor checked at task build must reach the filter built later."""

    _made: dict[str, TaskFunctions] = {}

    # Everything lm-eval reaches of ours is a member of this class (its logging filters, its document list, the
    # lm-eval internals the loader reads), so that a reader of a task reads this file once, not again at each step.

    class ExpectedCountWarning(logging.Filter):
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

    class CustomKwargsWarning(logging.Filter):
        """lm-eval warns, for every task built from a ``custom_dataset`` (all of ours), that "Custom kwargs can be passed
        to `--metadata`": four identical warnings for four tasks, about options our README documents. Dropped for ours."""

        def filter(self, record: logging.LogRecord) -> bool:
            message = record.getMessage()
            return not (message.startswith("critic_") and "Custom kwargs can be passed to `--metadata`" in message)

    class Docs(list):
        """The documents ``load_docs`` hands lm-eval: a list (``Task.eval_docs`` is typed ``datasets.Dataset |
        list[dict]``), decoded from Arrow once instead of on every pass.

        lm-eval walks a task's documents several times (building the requests, then scoring each reply; the test
        document at task build), and ``datasets.Dataset.__iter__`` turns each row back into a dict on each walk: a
        one-row table slice and a per-column decode, ~0.1 ms a row for our documents of 20-30 fields, about a second of
        a CriticBench dev run's own time. The documents still pass through one Arrow table (``Dataset.from_list``: one
        type per column, a missing field null in every row, as a ``datasets`` loader gives them), read back in one batch
        (``to_list``); each walk (and each ``docs[i]``) then hands out a fresh copy of a row, as ``datasets`` does, so
        a caller may add keys to its document without another walk seeing them, and ``features``, which lm-eval reads
        for the column names. A table Arrow refuses (a field whose values mix types across documents) stops the run with
        one line naming the file, the items and the field (``core.columns.check_one_type_per_field``), else with Arrow's
        own error: well-formed documents are never walked for it."""

        def __init__(self, rows: list[dict], features: datasets.Features):
            super().__init__(rows)
            self.features = features

        @classmethod
        def from_list(cls, docs: list[dict]) -> TaskFunctions.Docs:
            import datasets  # imported by lm-eval anyway; not by the CLI, which imports this module too
            import pyarrow

            try:
                table = datasets.Dataset.from_list(docs)
            except pyarrow.ArrowException:  # one line naming file and field, not pyarrow's traceback
                check_one_type_per_field(docs)
                raise
            return cls(table.to_list(), table.features)

        def __iter__(self):
            for row in super().__iter__():
                yield dict(row)

        def __getitem__(self, index):
            item = super().__getitem__(index)
            return [dict(row) for row in item] if isinstance(index, slice) else dict(item)

    @dataclasses.dataclass(frozen=True)
    class EvaluateCall:  # what ``evaluate_call`` reads of the ``simple_evaluate`` call building the tasks
        model_arg_names: frozenset[str]  # the keys of its model_args (lm-eval merges them into every task's metadata)
        tasks: tuple[str, ...]  # the task, group and tag names asked (objects and inline configs left out)

    # what our YAML files put in a task's metadata beside the version (generate._task_config)
    OWN_METADATA_KEYS = frozenset({"distinct_seeds"})
    # what lm-eval 0.4.13 itself puts in a task's metadata (tasks/_factory.py: the YAML's file, a placeholder config, a
    # metadata that is no mapping; the YAML's version)
    LM_EVAL_METADATA_KEYS = frozenset({"config_source", "config", "_metadata", "version"})
    # A task's lm-eval YAML hands its loader its name and ``registry.loader_options`` under these two keys of its
    # dataset_kwargs (nested: lm-eval calls the loader with them and the run's --metadata merged,
    # custom_dataset(**metadata, **dataset_kwargs), where a --metadata key equal to a task option would be Python's
    # TypeError, not our line)
    TASK_NAME_KEY, TASK_OPTIONS_KEY = "critic_task", "critic_task_options"

    def __init__(self, kind: registry.TaskKind, scorer: Scorer | None = None):
        self.kind, self.protocol = kind, kind.protocol_spec
        # how its replies are scored (``registry.SCORERS``; ``of`` hands it over with the kind)
        self.scorer = scorer if scorer is not None else self.scorer_of(kind)
        # the keys lm-eval computes (interval bounds are no lm-eval keys: computed from the logged rows)
        self.keys = [m for m in kind.metrics if not m.ci]
        # the executors built while lm-eval builds a task of this kind (``check_settings``), until that task's
        # ScoreFilter takes its own: lm-eval hands a filter nothing of the task build, and it calls the filter's
        # factory again when it filters (``FilterEnsemble.apply``), so the executor checked at task build travels
        # to the filter through here
        self.checked_executors: list = []

    def __deepcopy__(self, memo) -> TaskFunctions:  # lm-eval deep-copies each task's config, our bound methods in it:
        return self  # a kind's one instance stays one (the executor checked at task build reaches its filter)

    @classmethod
    def of(cls, name: str) -> TaskFunctions:
        if name not in cls._made:
            kind = registry.TASK_KINDS[name]
            cls._made[name] = cls(kind, registry.SCORERS[kind.scorer])
        return cls._made[name]

    @staticmethod
    def scorer_of(kind: registry.TaskKind) -> Scorer:
        return registry.SCORERS[kind.scorer]

    def load_docs(self, **kwargs):
        """``custom_dataset``: lm-eval passes the task's ``dataset_kwargs`` (its name and its own loader options,
        nested: ``generate._task_config``) and its ``metadata`` (the run's ``--metadata``, ``--model_args``,
        lm-eval's keys) together. Every ``--metadata`` key is checked here, where it is read, against the keys the
        run's critic tasks take (``registry.check_metadata``), under ``critic-eval`` and plain ``lm_eval`` alike."""
        kind = self.kind
        self.quiet_expected_count_warnings()
        if not kind.per_reply:  # a parsed kind calls no model and runs no program: nothing to check
            self.check_settings()
        if kwargs.get("distinct_seeds"):  # a task with repeats (its YAML's metadata): each repeat of a sampled
            private.install_distinct_seeds()  # request asks lm-eval's API models with its own seed
        name, own = kwargs.pop(self.TASK_NAME_KEY, None), kwargs.pop(self.TASK_OPTIONS_KEY, None)
        if isinstance(own, dict):
            call = self.evaluate_call()
            given = self.user_metadata(kwargs, call)
            if given:  # nothing given: nothing to check
                self.check_metadata(name, given, call)
            kwargs = {**given, **own}  # the task's own options win (a key of another task of the run: not its to set)
        # only the options the protocol's loader takes go through (a key for another task of a mixed run stays out)
        protocol = self.protocol
        docs = protocol.load_docs(kind.data_dimension, **{k: kwargs[k] for k in protocol.options if k in kwargs})
        # rows decoded once, not on every pass; a field mixing types: one line naming file and field
        return {"eval": self.Docs.from_list(docs)}

    @staticmethod
    def check_metadata(name: str, given: dict, call: TaskFunctions.EvaluateCall | None) -> None:
        """Every key of ``given`` (the user's --metadata) is taken by a critic task of the run: this task (``name``)
        or another the ``simple_evaluate`` call building it asks for (``registry.check_metadata``)."""
        if name in registry.TASKS:
            registry.check_metadata([registry.TASKS[name], *TaskFunctions.run_tasks(call)], given)

    @staticmethod
    def evaluate_call() -> TaskFunctions.EvaluateCall | None:
        """The ``lm_eval.simple_evaluate`` call on the stack (the CLI's ``run`` calls it too), as its arguments stand;
        None outside one (tasks built by a TaskManager of the caller's, then ``evaluate``). lm-eval's private API
        (its frame's locals; ``private.py`` holds every other use): lm-eval hands every task's loader the run's
        ``--metadata`` merged with ``--model_args`` and its own keys, so the loader reads the model arguments and
        task names from there, to check only the user's --metadata keys, against every critic task of the run."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "simple_evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
                args, tasks = frame.f_locals.get("model_args"), frame.f_locals.get("tasks")
                if isinstance(args, str):
                    from lm_eval.utils import simple_parse_args_string

                    try:
                        args = simple_parse_args_string(args)
                    except ValueError:
                        args = {}
                names = [n for t in (tasks if isinstance(tasks, (list, tuple)) else [tasks] if tasks else [])
                         if isinstance(t, str) for n in t.split(",")]
                return TaskFunctions.EvaluateCall(frozenset(args) if isinstance(args, dict) else frozenset(),
                                                  tuple(n.strip() for n in names if n.strip()))
            frame = frame.f_back
        return None

    @staticmethod
    def user_metadata(metadata: dict, call: TaskFunctions.EvaluateCall | None) -> dict:
        """The keys of a task's metadata that the user gave (``--metadata``, or a TaskManager's ``metadata``): less
        what lm-eval and our YAML add, and less the model arguments of the ``simple_evaluate`` call building the
        task (``call``), which lm-eval's CLI merges in."""
        skip = (TaskFunctions.LM_EVAL_METADATA_KEYS | TaskFunctions.OWN_METADATA_KEYS
                | (call.model_arg_names if call else frozenset()))
        return {k: v for k, v in metadata.items() if k not in skip}

    @staticmethod
    def run_tasks(call: TaskFunctions.EvaluateCall | None) -> list[registry.Task]:
        """The critic tasks the run asks for (groups and tags expanded), as the ``simple_evaluate`` call building
        them (``call``) names them; none outside one."""
        if call is None:
            return []
        from critic_tasks.preflight import expand, known_names

        ours = known_names()
        return expand(n for n in call.tasks if n in ours)

    @staticmethod
    def quiet_expected_count_warnings() -> None:
        """Install the filter on lm-eval's logger once a critic task is built (not when this module is imported)."""
        logger = logging.getLogger("lm_eval.evaluator_utils")
        if not any(isinstance(f, TaskFunctions.ExpectedCountWarning) for f in logger.filters):
            logger.addFilter(TaskFunctions.ExpectedCountWarning())

    def check_settings(self) -> None:
        """The settings a batch-scored kind's scorer needs (judge, revisers, sandbox), checked while lm-eval builds
        the task: before any generation. The executor built for the check is the one the task's ScoreFilter runs."""
        executor = self.scorer.check_settings()
        if executor is not None:  # with the setting it was built for: a later run in this process may name another
            self.checked_executors.append((read_setting("CRITIC_EXECUTOR"), executor))

    def task_executor(self, name: str | None):
        """The executor a task of this kind scores with: the one checked while lm-eval built the task (the first
        such task without its own yet), else one built now; ``name`` (the filter's ``executor`` option) asks for
        another. One checked for another CRITIC_EXECUTOR (a task built, never filtered, in an earlier run of this
        process) is dropped, never used."""
        current = read_setting("CRITIC_EXECUTOR")
        while self.checked_executors and self.checked_executors[0][0] != current:
            self.checked_executors.pop(0)
        executor = self.checked_executors.pop(0)[1] if self.checked_executors else None
        return executor if executor is not None and name is None else get_executor(name)

    def doc_to_text(self, doc: dict) -> str:
        return self.protocol.prompt(doc)

    def doc_to_target(self, doc: dict) -> str:
        return self.protocol.target(doc)

    def process_results(self, doc: dict, results: list) -> dict:
        """The document's record (from its reply, its samples where KeepSamples kept them all, or what its
        ScoreFilter kept) under every metric key that accepts it, as a plain row (JSON in --log_samples files, where
        ``reports.results`` reads it back for the intervals)."""
        output = results[0] if results else None
        # the protocol's parser (e.g. protocols.criticbench.scoring.record), or the record the task's ScoreFilter made
        rec = self.protocol.record(doc, output) if self.kind.per_reply else self.kept_record(output)
        group = self.process_group()
        if group is None:  # each key's value: the row, carrying the key's (family, base) and the record to ``aggregate``
            return keyed_rows(self.keys, rec)
        row = rec.as_dict()
        # several ranks: every key on every document, each value tagged with its rank (ranks.every_key)
        slots = ranks.every_key({m.key: row for m in self.keys if m.accepts(rec)}, [m.key for m in self.keys], group)
        return {m.key: m.row(slots[m.key]) for m in self.keys}

    @staticmethod
    def kept_record(output: list) -> Record:
        """The record a batch-scored kind's ScoreFilter made, as lm-eval hands it on (a one-row list)."""
        return Record.from_dict(output[0])

    @staticmethod
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

    @staticmethod
    def keep_samples(**kwargs) -> KeepSamples:
        """The filter of the tasks that read every sample (``utils.keep_samples``): see ``KeepSamples``."""
        return KeepSamples(**kwargs)

    def score_filter(self, **kwargs) -> TaskFunctions.ScoreFilter:
        """The filter of a batch-scored kind (``utils.correction_filter``): see ``ScoreFilter``."""
        return self.ScoreFilter(self, **kwargs)

    @staticmethod
    def aggregate(rows: list) -> object:
        """Every metric key's aggregation (``utils.aggregate``, named by every key of every YAML): the value of the
        (family, base) its rows carry (``process_results``' ``KeyedRow``: lm-eval hands an aggregation the values
        alone) over the records they hold: ``registry.METRICS``' function, what ``registry.metric_value``
        computes."""
        if not rows:
            return None
        family, base = rows[0].metric
        if TaskFunctions.process_group() is not None:  # gathered from several ranks: back in document order
            rows = ranks.in_doc_order(rows)
        # each row's record, as process_results made it (made again where a row lost it: gathered from other ranks)
        records = [r.record if getattr(r, "record", None) is not None else Record.from_dict(r) for r in rows]
        value = registry.METRICS[(family, base)](records)  # None (null), never NaN
        if value is None:  # lm-eval aggregates every task before its groups: a group over this one averages the rest
            private.install_none_safe_group_mean()
        return value


    class ScoreFilter:
        """lm-eval filter for every task kind scored a whole batch at once (its kind's scorer, ``registry.SCORERS``; the
        YAML names the kind's filter, ``utils.correction_filter``): programs run in parallel in the sandbox
        (``sandbox``), judge calls run concurrently (``judge``: CriticBench's 1-10 grades; ``aiu_judge``: MetaCritique's
        AIU extraction, precision and recall), and the revision protocols' revisers, checks and judge (``revision``), all
        cached per step.

        Replaces each document's generations with its record (the scorer's ``batch`` step), kept in ``--log_samples``
        output: a correction record keeps each sample's check outcome in ``checks`` (items whose gold answer or unit
        test is unusable are marked ``invalid``, logged, excluded from pass rates and counted in ``invalid_items``); a
        judged record comes with the judge's identity.
        Settings come from CRITIC_JUDGE_*, CRITIC_REVISER_* / CRITIC_REVISERS and CRITIC_EXECUTOR (or the ``executor``
        argument). Without a judge or reviser configured, scoring is deferred: the run keeps its generations (use
        ``--log_samples``) and the scorer's command (``critic-eval judge / revise <output dir>``) scores them later,
        with the same numbers. Failed calls and unreadable replies are counted per item and make ``critic-eval`` exit 1.
        """

        def __init__(self, functions: TaskFunctions, **kwargs):
            kind = functions.kind
            self.kind, self.scorer = kind, functions.scorer
            self.repeats = int(kwargs.get("repeats", 1))  # the task's repeats (samples per item)
            # lm-eval builds the filter when it filters, after generation: its executor is the one built and checked while
            # lm-eval built the task (a bad CRITIC_EXECUTOR stopped the run before any generation), one per task. The
            # filter's ``executor`` argument (a plugin's name, given in the YAML's filter options) asks for another
            self.executor = functions.task_executor(kwargs.get("executor")) if self.scorer.uses_executor else None

        def apply(self, resps, docs):
            if TaskFunctions.process_group() is not None:  # no item checked or judged twice under data parallel
                resps = ranks.own_replies(resps, self.repeats)
            scorer, kind = self.scorer, self.kind
            context = scorer.context_from_env(progress=True, executor=self.executor)
            why = scorer.defers(kind, docs, context)
            if why:
                log.warning(why)
                return [[scorer.deferred_record(doc).as_dict()] for doc in docs]
            records = self.scored_or_rescued(resps, docs, lambda: scorer.batch(kind, docs, resps, context))
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

        def scored_or_rescued(self, resps, docs, score):
            """Run ``score()``; if it raises, first save every generation in lm-eval's samples format, then say how to
            re-score them (``rescue``), so a late failure never throws away a finished generation run."""
            try:
                return score()
            except Exception as err:
                raise self.rescue(resps, docs, err) from err

        def rescue(self, resps, docs, err: Exception) -> ScoringFailed:
            """The generations saved under ``CRITIC_RESCUE_DIR``, and the error saying where and how to re-score them."""
            scorer, kind = self.scorer, self.kind
            folder = Path(read_setting(RESCUE_DIR_ENV)).resolve()
            folder.mkdir(parents=True, exist_ok=True)
            # the kind's first task names the file (``critic-eval judge / revise / rescore`` read the kind from it)
            task = next(t.name for t in registry.TASKS.values() if t.kind == kind.name)
            path = folder / f"samples_{task}_{time.strftime('%Y-%m-%dT%H-%M-%S')}.{os.getpid()}-{next(_RESCUES)}.jsonl"
            with open(path, "w", encoding="utf-8") as fh:
                for i, (doc, resp) in enumerate(zip(docs, resps)):
                    fh.write(json.dumps({"doc_id": i, "doc": doc, "resps": [list(resp)]}, default=str) + "\n")
            how = scorer.rescore_hint.replace("<output_path>", str(path)) + " (once the cause is fixed)"
            return ScoringFailed(f"{scorer.label} scoring failed ({type(err).__name__}: {err}); the {len(docs)} "
                                 f"generations are saved in {path}; re-score them with: {how}")


# ----------------------------------------------------------------------------- filters


# Installed on import, i.e. when lm-eval loads our tasks' utils.py: the warning is logged before any of our code runs
# for a task (lm-eval's download() warns, then calls our loader), so no later point would catch the first one.
logging.getLogger("lm_eval.api.task").addFilter(TaskFunctions.CustomKwargsWarning())
Docs, ScoreFilter = TaskFunctions.Docs, TaskFunctions.ScoreFilter


RESCUE_DIR_ENV = "CRITIC_RESCUE_DIR"
_RESCUES = itertools.count()


class ScoringFailed(RuntimeError):
    """Scoring a task's generations failed after they were made; they were saved first (see the message)."""


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


class KeepSamples:
    """lm-eval filter: keep every sample of an item (lm-eval's default keeps the first), for tasks that read all
    k of them (CritiqueLLM's self-consistency: the mean of k sampled ratings), less data-parallel padding."""

    def __init__(self, **kwargs):
        self.repeats = int(kwargs.get("repeats", 1))  # the task's repeats (k)

    def apply(self, resps, docs):
        return resps if TaskFunctions.process_group() is None else ranks.own_replies(resps, self.repeats)
