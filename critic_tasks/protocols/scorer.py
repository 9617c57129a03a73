"""How a task kind's replies become records, one method per step: the base every protocol's scorer extends.

A ``registry.TaskKind`` names its scorer (a key of ``registry.SCORERS``); each scorer lives with the protocol whose
batch step it runs, so a protocol with a new way of scoring brings its scorer in its own package and the registry
lists it: ``Parse`` (below: each reply through the protocol's record maker), CriticBench's ``CorrectionCheck``
(``criticbench/scoring.py``) and ``Judge`` (``criticbench/judge.py``), MetaCritique's ``AIUJudge``
(``metacritique/judge.py``), both on ``Judged`` (below), and the revision protocols' ``Revision``
(``revision/pipeline.py``). The lm-eval filter
(one per batch-scored kind), the OpenCompass evaluator, preflight and ``critic-eval rescore / judge / revise`` all
dispatch through that table. The steps:

* ``check_settings()``: the preflight check (the models of its ``roles``, their endpoints; the sandbox);
* ``batch(...)``: a whole task's documents and replies -> one record per document (parsed one by one; programs run
  in the sandbox, the correction record keeping each sample's check outcome; judge or reviser calls);
* ``defers(...)``: the deferral rule (no judge or reviser configured: the generations are kept and scored later by
  ``command``, see ``rescore_hint``), with the records kept meanwhile (``deferred_record``);
* ``identity``: what names the judge in results and caches; ``failed``, ``summary``, ``warnings``: what a live run
  counts and logs about a scored batch.

A scorer reads of its task kind only ``protocol`` (its name) and ``protocol_spec`` (its Protocol): a protocol
never imports the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from critic_tasks.core.records import Record
from critic_tasks.llm import LLMSettings
from critic_tasks.llm.backends import check_backend_name, check_local_model
from critic_tasks.llm.backends.openai_compatible import check_endpoints
from critic_tasks.llm.settings import pool_from_env
from critic_tasks.sandbox import get_executor


@dataclass(frozen=True)
class Context:
    """What a scoring step may need besides documents and replies (None: from the CRITIC_* settings)."""

    executor: Any = None  # the sandbox's executor (``sandbox.get_executor``)
    judge: LLMSettings | None = None
    revisers: Sequence[LLMSettings] | None = None
    progress: bool = False


def first_replies(samples: Sequence[Sequence[str | None]]) -> list:
    """Each document's first reply (lm-eval keeps a list per document; an empty one is no reply)."""
    return [s[0] if s else None for s in samples]


def judge_settings(**overrides) -> LLMSettings:
    """The judge (CRITIC_JUDGE_*, any value overridden), validated as it is read: the one judge every protocol's
    scorer, CLI command and the chance lines ask."""
    return LLMSettings.from_env("judge", **overrides)


def role_settings(role: str) -> list[LLMSettings]:
    """The settings of a role's models (validated as they are read): the reviser pool, or the judge."""
    return pool_from_env("reviser") if role == "reviser" else [judge_settings()]


class Scorer:
    """One way of scoring a task kind's replies, one method per step; the subclasses override the steps that
    differ. ``batch`` turns a whole task's documents and replies into one record per document: the lm-eval filter
    of a batch scorer (a kind not ``per_reply``) runs it between generation and ``process_results``, and
    ``engine.score`` runs it everywhere else (OpenCompass, ``critic-eval rescore / judge / revise``)."""

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
        return Context(judge=judge_settings() if "judge" in self.roles else None,
                       revisers=pool_from_env("reviser") if "reviser" in self.roles else None, **given)

    @property
    def rescore_hint(self) -> str:
        """The command that scores a run's saved generations (``--log_samples``) later."""
        return f"critic-eval {self.command} <output_path>"

    def check_settings(self) -> Any:
        """The settings this scorer needs, checked before any generation: each role's models (every value, the
        backend's name, each endpoint asked once), the sandbox's executor, and its other settings. Returns the
        executor it built (None when it runs no program), for a caller that scores next to use."""
        for role in self.roles:
            for settings in role_settings(role):
                check_backend_name(settings)
                check_local_model(settings)  # a local model path that is not there, likewise
                check_endpoints(settings)  # a URL nothing listens on stops the run now
        return get_executor() if self.uses_executor else None  # the one CRITIC_EXECUTOR names

    def batch(self, kind, docs: Sequence[dict], samples: Sequence[Sequence[str | None]], ctx: Context) -> list[Record]:
        """One record per document from its replies (``samples[i]``: document i's)."""
        raise NotImplementedError

    def defers(self, kind, docs: Sequence[dict], ctx: Context) -> str:
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

    def summary(self, kind, records: Sequence[Record]) -> str:
        """One log line about a scored batch ('' for none)."""
        return ""

    def warnings(self, docs: Sequence[dict], records: Sequence[Record]) -> list[str]:
        """Lines to log about single items of a scored batch (an item excluded, and why)."""
        return []


class Parse(Scorer):
    """Each reply parsed on its own into a record by the protocol's record maker (``TaskKind.protocol_spec.record``)."""

    name, label, command = "parse", "parse", "rescore"
    about = "each reply parsed into a record (a Likert score, a verdict, a rating)"

    def batch(self, kind, docs, samples, ctx):
        return [kind.protocol_spec.record(doc, reply) for doc, reply in zip(docs, first_replies(samples))]


class Judged(Scorer):
    """A scorer whose grades come from the judge model: deferred while no judge is configured."""

    roles, judged, live_failures, command, label = ("judge",), True, True, "judge", "judge"
    what = "judging"  # what its deferral warning says is deferred

    def defers(self, kind, docs, ctx):
        if (ctx.judge or judge_settings()).model:
            return ""
        return (f"critic_tasks: no judge configured (CRITIC_JUDGE_MODEL unset): {self.what} deferred; keep "
                "generations with --log_samples and run `critic-eval judge <output_path>`")
