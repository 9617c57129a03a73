"""The scoring engine: the one table of scorers, and any registered task scored from its documents and replies.

Each TaskKind names how its replies are scored (``registry.TaskKind.scorer``); ``SCORERS[name]`` is that way of
scoring, a small class with one method per step (``Scorer``):

* ``check_settings()``: the preflight check (the models of its ``roles``, their endpoints; the sandbox);
* ``batch(...)``: a whole task's documents and replies -> one record per document (parsed one by one; programs run
  in the sandbox, the correction record keeping each sample's check outcome; judge or reviser calls);
* ``defers(...)``: the deferral rule (no judge or reviser configured: the generations are kept and scored later by
  ``command``, see ``rescore_hint``), with the records kept meanwhile (``deferred_record``);
* ``identity``: what names the judge in results and caches; ``failed``, ``summary``, ``warnings``: what a live run
  counts and logs about a scored batch.

The lm-eval hooks (one filter per batch-scored kind), the OpenCompass evaluator, preflight and ``critic-eval rescore /
judge / revise`` all dispatch through this table. The engine sits above the protocols and the registry (it reads
both; neither reads it) and below the adapters and the CLI: ``score`` (documents + replies -> records),
``kind_metrics`` (records -> the registry's keys), ``task_docs`` / ``score_task`` for a whole registered task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from critic_tasks import registry
from critic_tasks.core.columns import check_one_type_per_field
from critic_tasks.core.metrics.bootstrap import settings_from_env
from critic_tasks.core.records import Record
from critic_tasks.llm import LLMSettings
from critic_tasks.llm.backends import check_backend_name
from critic_tasks.llm.backends.openai_compatible import check_endpoints
from critic_tasks.protocols.criticbench import judge as cb_judge
from critic_tasks.protocols.criticbench import offline
from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.criticbench.correction import check_samples
from critic_tasks.protocols.metacritique import judge as mc_judge
from critic_tasks.protocols.revision import pipeline as revision_pipeline
from critic_tasks.protocols.revision.data import resolve_failure_rule
from critic_tasks.sandbox import get_executor


@dataclass(frozen=True)
class Context:
    """What a scoring step may need besides documents and replies (None: from the CRITIC_* settings)."""

    executor: Any = None  # the sandbox's executor (``sandbox.get_executor``)
    judge: LLMSettings | None = None
    revisers: Sequence[LLMSettings] | None = None
    progress: bool = False


# ----------------------------------------------------------------------------- metrics


# One step from a key's records to its value (and its interval), shared with lm-eval's aggregations.
metric_value, metric_interval = registry.metric_value, registry.metric_interval


def kind_metrics(kind: registry.TaskKind, records, intervals=None) -> dict[str, float]:
    """The registry's metric keys for ``kind``, each over the records its metric accepts (``Metric.accepts``):
    the one route from records to metrics and intervals. lm-eval's aggregations (``hooks.aggregation``: the same
    ``registry.METRICS`` function ``metric_value`` calls, over the rows ``process_results`` routed to a key; an lm-eval
    run's intervals: ``metric_interval``
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
            ci = metric_interval(m.family, m.base, rows, settings)
            if ci is not None:
                out[m.key], out[m.key.removesuffix("_low") + "_high"] = ci
        elif not m.ci:
            value = metric_value(m.family, m.base, rows)
            if value is not None:
                out[m.key] = value
    return out


# ----------------------------------------------------------------------------- the scorers


def _first(samples) -> list:
    return [s[0] if s else None for s in samples]


def _role_settings(role: str) -> list[LLMSettings]:
    """The settings of a role's models (validated as they are read): the reviser pool, or the judge."""
    return revision_pipeline.reviser_pool() if role == "reviser" else [cb_judge.judge_settings()]


class Scorer:
    """One way of scoring a task kind's replies, one method per step; the subclasses below override the steps that
    differ. ``batch`` turns a whole task's documents and replies into one record per document: the lm-eval filter
    of a batch scorer (a kind not ``per_reply``) runs it between generation and ``process_results``, and ``score``
    runs it everywhere else (OpenCompass, ``critic-eval rescore / judge / revise``)."""

    name: ClassVar[str]
    about: ClassVar[str]  # how replies become records, in words (the YAML's opening comment)
    command: ClassVar[str]  # the critic-eval subcommand that scores saved generations: rescore | judge | revise
    label: ClassVar[str]  # what a scoring failure's message calls it
    roles: ClassVar[tuple[str, ...]] = ()  # the models it calls (llm roles): checked before a run, needed to score
    judged: ClassVar[bool] = False  # its grades come from a judge model (CriticBench's 1-10, MetaCritique's AIUs)
    uses_executor: ClassVar[bool] = False  # runs programs in the sandbox
    live_failures: ClassVar[bool] = False  # a live run collects its failed items (``unscored_items``: exit 1)
    lm_eval_only: ClassVar[str] = ""  # why it runs only inside lm-eval, between generation and scoring ('' = anywhere)

    def context_from_env(self, **given) -> Context:
        """A live run's Context: the models of this scorer's roles from the CRITIC_* settings."""
        return Context(judge=cb_judge.judge_settings() if "judge" in self.roles else None,
                       revisers=revision_pipeline.reviser_pool() if "reviser" in self.roles else None, **given)

    @property
    def rescore_hint(self) -> str:
        """The command that scores a run's saved generations (``--log_samples``) later."""
        return f"critic-eval {self.command} <output_path>"

    def check_settings(self) -> None:
        """The settings this scorer needs, checked before any generation: each role's models (every value, the
        backend's name, each endpoint asked once), the sandbox's executor, and its other settings."""
        for role in self.roles:
            for settings in _role_settings(role):
                check_backend_name(settings)
                check_endpoints(settings)  # a URL nothing listens on stops the run now
        if self.uses_executor:
            get_executor()  # the one CRITIC_EXECUTOR names

    def batch(self, kind: registry.TaskKind, docs: Sequence[dict], samples: Sequence[Sequence[str | None]],
              ctx: Context) -> list[Record]:
        """One record per document from its replies (``samples[i]``: document i's)."""
        raise NotImplementedError

    def defers(self, kind: registry.TaskKind, docs: Sequence[dict], ctx: Context) -> str:
        """The warning when it cannot score now (no judge or reviser configured), '' when it can."""
        return ""

    def deferred_record(self, doc: dict) -> Record:
        """What an item holds until ``command`` scores it later (only scorers that defer)."""
        raise NotImplementedError(f"the {self.name} scorer never defers")

    def identity(self, judge: LLMSettings | None) -> dict | None:
        """What names the judge beside its grades (None: no judge)."""
        return None

    def failed(self, record: Record) -> bool:
        """An item left unscored by a failed call or an unreadable reply."""
        return False

    def summary(self, kind: registry.TaskKind, records: Sequence[Record]) -> str:
        """One log line about a scored batch ('' for none)."""
        return ""

    def warnings(self, docs: Sequence[dict], records: Sequence[Record]) -> list[str]:
        """Lines to log about single items of a scored batch (an item excluded, and why)."""
        return []


class Parse(Scorer):
    name, label, command = registry.PARSED, "parse", "rescore"
    about = "each reply parsed into a record (a Likert score, a verdict, a rating)"

    def batch(self, kind, docs, samples, ctx):
        record = registry.PROTOCOLS[kind.protocol].record
        return [record(doc, reply) for doc, reply in zip(docs, _first(samples))]


class Sandbox(Scorer):
    name, label, command = "sandbox", "sandbox", "rescore"
    about = "revisions checked: final answers compared, programs run in the sandbox"
    uses_executor = True

    def batch(self, kind, docs, samples, ctx):
        # every sample of every item, a domain's programs at once; an item whose gold answer or unit test is
        # unusable is marked invalid (excluded from pass rates, counted in invalid_items), never raised
        outcomes = check_samples(samples, docs, executor=ctx.executor, invalid="mark")
        return [cb_scoring.correction_record(doc, item) for doc, item in zip(docs, outcomes)]

    def warnings(self, docs, records):
        return [f"critic_tasks: {doc['source_file']}[{doc['item_index']}] excluded: {check['detail']}"
                for doc, record in zip(docs, records) for check in record.checks if check["status"] == "invalid"]


class _Judged(Scorer):
    roles, judged, live_failures, command, label = ("judge",), True, True, "judge", "judge"
    what = "judging"  # what its deferral warning says is deferred

    def defers(self, kind, docs, ctx):
        if (ctx.judge or cb_judge.judge_settings()).model:
            return ""
        return (f"critic_tasks: no judge configured (CRITIC_JUDGE_MODEL unset): {self.what} deferred; keep "
                "generations with --log_samples and run `critic-eval judge <output_path>`")


class Judge(_Judged):
    name = "judge"
    about = "graded 1-10 by a judge against the human critique"

    def batch(self, kind, docs, samples, ctx):
        return cb_judge.judge_docs(docs, _first(samples), ctx.judge or cb_judge.judge_settings(),
                                   progress=ctx.progress)

    def deferred_record(self, doc):
        return cb_judge.deferred_record(doc)

    def identity(self, judge):
        return cb_judge.judge_identity(judge)

    def failed(self, record):
        return record.score is None


class AIUJudge(_Judged):
    name = "aiu_judge"
    about = "a judge extracts the critique's atomic units and checks precision and recall"
    what = "MetaCritique judging"

    def batch(self, kind, docs, samples, ctx):
        return mc_judge.judge_critiques(docs, _first(samples), ctx.judge, progress=ctx.progress)

    def deferred_record(self, doc):
        return mc_judge.deferred_record(doc)

    def identity(self, judge):
        return mc_judge.judge_identity(judge)

    def failed(self, record):
        return not record.scored


class Revision(Scorer):
    name, label, command = "revision", "revision", "revise"
    about = "revisers revise with the critique; checks and a judge score the revisions"
    roles, uses_executor, live_failures = ("reviser", "judge"), True, True
    lm_eval_only = "its reviser and judge run inside lm-eval, between generation and scoring"

    def check_settings(self):
        super().check_settings()
        resolve_failure_rule()

    @staticmethod
    def _models(ctx: Context) -> tuple[list[LLMSettings], LLMSettings]:
        """The reviser pool and the judge: the context's, else the CRITIC_* settings."""
        revisers = revision_pipeline.reviser_pool() if ctx.revisers is None else ctx.revisers
        return revisers, ctx.judge or revision_pipeline.judge_settings()

    def batch(self, kind, docs, samples, ctx):
        revisers, judge = self._models(ctx)
        return revision_pipeline.run(kind.protocol, docs, _first(samples), revisers, judge, ctx.executor,
                                     progress=ctx.progress)

    def defers(self, kind, docs, ctx):
        why = revision_pipeline.missing(kind.protocol, docs, *self._models(ctx))
        if not why:
            return ""
        return (f"critic_tasks: {kind.protocol} scoring deferred (set {why}); keep generations with --log_samples "
                "and run `critic-eval revise <output_path>`")

    def deferred_record(self, doc):
        return revision_pipeline.deferred_record(doc)

    def failed(self, record):
        return record.failed

    def summary(self, kind, records):
        rates = revision_pipeline.per_reviser_pass_rates(records)
        if not rates:  # per reviser: not a registry key (the pool is set at run time); also in `critic-eval revise`
            return ""
        return (f"critic_tasks: {kind.protocol} pass rate per reviser: "
                + ", ".join(f"{name} {rate:.2f}" for name, rate in rates.items()))


SCORERS: dict[str, Scorer] = {s.name: s for s in (Parse(), Sandbox(), Judge(), AIUJudge(), Revision())}


def score(kind: registry.TaskKind, docs: Sequence[dict], samples: Sequence[Sequence[str | None]],
          context: Context = Context()) -> list[Record]:
    """One record per document from its replies (``samples[i]``: document i's, as lm-eval keeps them), through
    the kind's scorer's batch step (a parsed kind: each document's first reply)."""
    if len(docs) != len(samples):
        raise ValueError(f"{len(docs)} documents but {len(samples)} generations")
    return SCORERS[kind.scorer].batch(kind, docs, samples, context)


# ----------------------------------------------------------------------------- a whole registered task


def task_docs(task: str, data_dir=None, protocol: str | None = None, toolkit_dir: str | None = None) -> list[dict]:
    """The documents of a registered task, as its lm-eval YAML loads them (same split, domains and options);
    ``protocol`` / ``toolkit_dir`` reach the loaders that take them (CriticBench's)."""
    spec = registry.task(task)
    steps = registry.PROTOCOLS[spec.kind_spec.protocol]
    given = {"data_dir": data_dir, "protocol": protocol, "toolkit_dir": toolkit_dir}
    docs = steps.load_docs(spec.kind_spec.data_dimension, **steps.task_options(spec),
                           **{k: v for k, v in given.items() if k in steps.options})
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
    if SCORERS[kind.scorer].lm_eval_only:
        raise ValueError(f"{task}: scored by {kind.scorer!r}, not outside lm-eval")
    records = score(kind, docs, [[g] for g in generations], Context(executor=executor, judge=judge))
    return kind_metrics(kind, records), records


def judge_identity(task: str, judge: LLMSettings) -> dict | None:
    return SCORERS[registry.task(task).scorer].identity(judge)


def registered() -> offline.Registered:
    """What the prediction-file readers (``protocols.criticbench.offline`` / ``label_free``) need of the registered
    tasks, handed to them: a protocol does not read the registry."""
    return offline.Registered(
        tasks=registry.TASKS, groups=tuple(registry.GROUPS.values()),
        judged=lambda task: SCORERS[task.scorer].judged, task_docs=task_docs, score_task=score_task,
        kind_metrics=lambda name, records: kind_metrics(registry.TASK_KINDS[name], records))
