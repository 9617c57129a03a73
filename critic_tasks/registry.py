"""The one registry: every protocol, task kind, task and group is declared here, once; each protocol's metric keys
are declared in its ``scoring.py`` beside the functions computing them, and collected here.

Everything else reads it: the lm-eval YAML generator (``adapters/lm_eval/generate.py``), the lm-eval task functions
that route records to metric keys, the OpenCompass config generator (``adapters/opencompass/generate.py``), the CLI's
tables and ``critic-eval tasks``, the judge CLI (which tasks are judged), the reports and the benchmarks. Adding a
task is one edit here plus the generator run (``python -m critic_tasks.generate``); a new metric is a ``Metric`` in
the protocol's ``scoring.py`` and, unless an existing family computes it, its function in that file's ``METRICS``.
Tests keep the generated files in sync.

* A ``Metric`` (``core.records``) is one key of a task's results: the ``family`` and ``base`` whose function computes
  it (``METRICS``), which records it takes (``when``: all records, only ``scored`` ones — with a human label, a
  usable gold answer, a judge grade —, or only ``deferred`` ones; and a breakdown ``subset`` such as quality = low),
  its direction, and its ``scale``: the values it can take (``SCALES``), against which the reports and the gate
  check every results file they read.
* A ``TaskKind`` is what a kind of task shares: the data dimension it reads (``data_dimension``: the paper's feedback,
  comparison, correction or meta; a document's ``dimension``), how its outputs are scored (its ``scorer``,
  a key of ``SCORERS``: the scorer its protocol brings), its metric keys and the headline keys of the summary table.
* A ``Task`` picks its TaskKind's split, domains and options; a ``Group`` averages its members' headline metric.
* A ``Protocol`` is a paper's way of measuring critics, with its steps: load documents, prompt the critic, show the
  gold label, turn a reply into a record. Each TaskKind names its protocol, and the adapters call these steps
  instead of branching on protocol names. CriticBench tasks pick a split and domains; the other protocols' tasks
  pass their loader's ``options`` (CritiqueLLM: ``reference``): ``Protocol.task_options``.
* ``METRICS`` maps each (family, base) to its one function (the protocols' ``scoring.METRICS``); ``metric_value``
  and ``metric_interval`` compute a key's value and interval. The registry reads the protocols; the engine
  (``critic_tasks.engine``) reads both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.records import JUDGE_SCALE, SCALES, WHEN, Metric, Record, warn_identical  # noqa: F401 (read here)
from critic_tasks.core.settings import SETTINGS
from critic_tasks.protocols.criticbench import chance as cb_chance
from critic_tasks.protocols.criticbench import data as cb_data
from critic_tasks.protocols.criticbench import prompts as cb_prompts
from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.criticbench.data import DIFFICULTIES, FEEDBACK_SOURCES, MAIN_QUALITIES, QUALITIES
from critic_tasks.protocols.criticbench.judge import Judge
from critic_tasks.protocols.criticbench.prompts import DOMAIN_NAMES, OBJECTIVE_CORRECTION_DOMAINS, TEXT_DOMAINS
from critic_tasks.protocols.criticbench.scoring import PASS_AT_K, CorrectionCheck
from critic_tasks.protocols.criticbench.self_feedback import SELF_FEEDBACK_ENV, STAGE1_TASK
from critic_tasks.protocols.critiquellm import chance as cq_chance
from critic_tasks.protocols.critiquellm import data as cq_data
from critic_tasks.protocols.critiquellm import prompts as cq_prompts
from critic_tasks.protocols.critiquellm import scoring as cq_scoring
from critic_tasks.protocols.judgebench import chance as jb_chance
from critic_tasks.protocols.judgebench import data as jb_data
from critic_tasks.protocols.judgebench import judges as jb_judges
from critic_tasks.protocols.judgebench import prompts as jb_prompts
from critic_tasks.protocols.judgebench import scoring as jb_scoring
from critic_tasks.protocols.metacritique import data as mc_data
from critic_tasks.protocols.metacritique import prompts as mc_prompts
from critic_tasks.protocols.metacritique import scoring as mc_scoring
from critic_tasks.protocols.metacritique.judge import AIUJudge
from critic_tasks.protocols.processbench import chance as pb_chance
from critic_tasks.protocols.processbench import data as pb_data
from critic_tasks.protocols.processbench import prompts as pb_prompts
from critic_tasks.protocols.processbench import scoring as pb_scoring
from critic_tasks.protocols.realcritic import chance as rc_chance
from critic_tasks.protocols.realcritic import data as rc_data
from critic_tasks.protocols.realcritic import prompts as rc_prompts
from critic_tasks.protocols.realcritic import scoring as rc_scoring
from critic_tasks.protocols.realcritic import stages as rc_stages
from critic_tasks.protocols.revision import data as rv_data
from critic_tasks.protocols.revision import prompts as rv_prompts
from critic_tasks.protocols.revision import scoring as rv_scoring
from critic_tasks.protocols.revision.pipeline import Revision
from critic_tasks.protocols.rewardbench import chance as rwb_chance
from critic_tasks.protocols.rewardbench import data as rwb_data
from critic_tasks.protocols.rewardbench import prompts as rwb_prompts
from critic_tasks.protocols.rewardbench import scoring as rwb_scoring
from critic_tasks.protocols.rewardbench2 import chance as rb2_chance
from critic_tasks.protocols.rewardbench2 import data as rb2_data
from critic_tasks.protocols.rewardbench2 import prompts as rb2_prompts
from critic_tasks.protocols.rewardbench2 import scoring as rb2_scoring
from critic_tasks.protocols.rmbench import chance as rm_chance
from critic_tasks.protocols.rmbench import data as rm_data
from critic_tasks.protocols.rmbench import prompts as rm_prompts
from critic_tasks.protocols.rmbench import scoring as rm_scoring
from critic_tasks.protocols.scorer import Parse, Scorer

# ----------------------------------------------------------------------------- metric values

SCORING_MODULES = (cb_scoring, cq_scoring, mc_scoring, rv_scoring, jb_scoring, pb_scoring, rc_scoring, rm_scoring,
            rwb_scoring, rb2_scoring)
# family -> its bootstrap interval function (records, value, settings) -> (low, high) or None
INTERVALS: dict[str, Callable] = {k: v for scoring in SCORING_MODULES for k, v in scoring.INTERVALS.items()}
# family -> (record, value) -> the stratum its interval resamples the record's unit within ('' for none), declared
# beside the interval; `critic-eval compare` draws its paired resamples within the same strata
STRATA: dict[str, Callable] = {k: v for scoring in SCORING_MODULES for k, v in scoring.STRATA.items()}
# family -> (record, value) -> the unit its interval resamples the record with ('' for its own document): pairs,
# prompts, questions; declared beside the strata, so `critic-eval compare` draws the units the interval draws
UNITS: dict[str, Callable] = {k: v for scoring in SCORING_MODULES for k, v in getattr(scoring, "UNITS", {}).items()}
_UNDECLARED = sorted(set(INTERVALS) - set(STRATA))
if _UNDECLARED:  # a family with an interval says how it is resampled, or compare would silently resample it plainly
    raise ValueError(f"families {', '.join(_UNDECLARED)}: an interval without its strata (scoring.STRATA)")


def _said(metric: Callable[[Sequence[Record]], Any]) -> Callable[[Sequence[Record]], Any]:
    """``identical_samples``, which also says, in one line, when a sampled task's backend did not sample (each key
    is computed once, so the line is said once)."""
    def value(records):
        warn_identical(records)
        return metric(records)

    value.__name__ = getattr(metric, "__name__", "identical_samples")
    return value


# (family, base) -> its value over the records one key accepts (None: absent, never NaN): each protocol's
# ``scoring.METRICS``, one function per value. lm-eval's aggregations (``task_functions.aggregation``, named in
# ``adapters/lm_eval/tasks/utils.py``) and ``engine.kind_metrics`` (through ``metric_value``) both take it.
METRICS: dict[tuple[str, str], Callable[[Sequence[Record]], Any]] = {
    key: _said(fn) if key[1] == "identical_samples" else fn
    for scoring in SCORING_MODULES for key, fn in scoring.METRICS.items()}


def metric_value(family: str, base: str, records: Sequence[Record]) -> Any:
    """``base`` of ``family`` over ``records`` (the records one metric key accepts): ``METRICS``' function."""
    return METRICS[(family, base)](records)


def metric_stratum(family: str, base: str, record: Record) -> str:
    """The stratum ``base`` of ``family``'s interval resamples ``record``'s unit within ('' for none): ``STRATA``."""
    return STRATA[family](record, base)


def metric_interval(family: str, base: str, records: Sequence[Record], settings) -> tuple[float, float] | None:
    """The bootstrap interval of ``base`` of ``family`` over the same records (None: none, e.g. no records)."""
    return INTERVALS[family](records, base, settings) if records else None


# ----------------------------------------------------------------------------- task kinds

# How a kind's replies become records: each scorer lives with the protocol whose batch step it runs (the Scorer base
# and Parse: ``protocols/scorer.py``); a TaskKind names one by its key here. Parse parses each reply on its own;
# every other scorer takes a whole batch in a filter.
SCORERS: dict[str, Scorer] = {s.name: s for s in (Parse(), CorrectionCheck(), Judge(), AIUJudge(), Revision())}
PARSED = Parse.name

# DeepSeek-67B's released revisions run to ~2,100 characters (~530 tokens): 512 tokens cut the longest off.
CORRECTION_BUDGET = 1024


@dataclass(frozen=True)
class Protocol:
    name: str
    title: str
    reference: str
    load_docs: Callable[..., list[dict]]  # (data dimension, **options) -> documents
    options: tuple[str, ...]  # the task options / --metadata keys its loader takes
    prompt: Callable[[dict], str]  # the critic's prompt for a document
    target: Callable[[dict], str]  # the gold label as text, for logs
    # one reply (or the list of an item's samples) -> its record; None where a filter makes the records (judged)
    record: Callable[[dict, Any], Record] | None
    data_env: str  # the environment variable naming a local copy of the data
    source: str  # where the loader reads the data from (the Hub dataset or paper repository; lm-eval's dataset_path)
    # what a task passes the loader besides the data dimension (default: the task's ``options``)
    task_options: Callable[["Task"], dict] = lambda task: dict(task.options)
    # the bundled fixtures its data setting selects by the word ``sample`` (None: it has none)
    sample_dir: Any = None
    # its canned critics and floors for ``critic_tasks.chance`` (a module of the protocol's package with
    # ``labelled(kind, docs)``, ``replies(kind, docs, rng)``, ``floor(kind, docs, values)``); None: its tasks have
    # no line of their own (judge-scored ones get the orchestration's canned critiques)
    chance: Any = None
    # its documents carry ``system_message`` ("" for none): the harnesses send it as the system turn (lm-eval: the
    # YAML's ``description``, a system message under --apply_chat_template; OpenCompass: a SYSTEM role)
    system_message: bool = False
    # a protocol that asks again when a reply lacks its answer (JudgeBench's Arena-Hard judge): (document, reply) ->
    # the next user message, or None; and the turns joined into the reply its record reads. critic-eval runs the
    # second turn (adapters/lm_eval/turns.py); under plain lm_eval the records count the replies it would ask again
    follow_up: Callable[[dict, str], str | None] | None = None
    join_turns: Callable[[Sequence[str]], str] | None = None

    def __post_init__(self):
        # preflight and the loaders read the data folder through the settings table: a protocol whose variable is
        # not declared there would fail later, in a KeyError far from its cause
        if self.data_env not in SETTINGS:
            raise ValueError(f"protocol {self.name}: its data setting {self.data_env} is not declared in "
                             "core/settings.py's SETTINGS (name, default, type, doc line)")


# Values reported with a 95 % bootstrap interval (``<key>_ci_low`` / ``<key>_ci_high``, computed on the same records
# by the family's interval function, ``INTERVALS``): correlations, accuracies, agreement, pass rates, judge
# scores, AIU precision / recall / F1, the judge-bias lines (``BIAS_LINES``).
INTERVAL_BASES = ("spearman", "score", "accuracy", "accuracy_loose", "consistency", "pass_rate", "judge_score",
                  "inconsistency", "first_position", "length_bias",
                  *(f"pass@{k}" for k in PASS_AT_K), "text_pearson", "text_spearman", "text_kendall", "agreement",
                  "precision", "recall", "f1", "precision_micro", "recall_micro", "f1_micro",
                  "critique_utility", "rqs", "refine_accuracy", "r_obj", "r_sub", "error_accuracy", "correct_accuracy",
                  "hard", "normal", "easy", "style_gap", "chat", "chat_hard", "safety", "reasoning",
                  *rb2_scoring.SUBSET_SLUGS)


def with_intervals(metrics: tuple[Metric, ...]) -> tuple[Metric, ...]:
    """``metrics`` followed by the two interval keys of each one whose value is in ``INTERVAL_BASES`` (for families
    with an interval function)."""
    keys = {m.key for m in metrics}  # idempotent: a TaskKind rebuilt with dataclasses.replace keeps one copy
    bounds = tuple(replace(m, key=f"{m.key}_ci_{b}", ci=b)
                   for m in metrics if not m.ci and m.base in INTERVAL_BASES and m.family in INTERVALS for b in ("low", "high")
                   if f"{m.key}_ci_{b}" not in keys)
    return metrics + bounds


@dataclass(frozen=True)
class TaskKind:
    name: str
    protocol: str
    data_dimension: str  # the data's dimension (its loaders' ``dimension``): feedback | comparison | meta | correction
    fmt: str  # "obj" (objective) | "sub" (judge-scored)
    scorer: str  # how its replies are scored: a key of ``SCORERS`` (parse, sandbox, judge, aiu_judge, revision)
    metrics: tuple[Metric, ...]
    headline: tuple[str, ...]  # what the summary table shows, in order
    about: str  # what the model is asked, in a few words
    max_gen_toks: int = 512  # the reply budget (greedy); revisions, whole programs included, get more
    pairwise: bool = False  # a verdict on a pair asked in both orders (its chance floor and bias lines are pairwise)
    scored: bool = True  # False: a stage whose replies feed another task (SAvg's stage 1), no score of its own
    # the prompt asks for the verdict or score on the reply's first line (CriticBench's objective feedback, comparison,
    # meta-feedback): a short budget still holds it, so an unparsed reply is the format not followed, not one cut off
    answer_first: bool = False
    # its Protocol (``PROTOCOLS[protocol]``: loader, prompt, gold text, parser), as ``Task.kind_spec`` is a task's
    # TaskKind: held by the kind so that a task function bound to the kind reaches its steps without a lookup
    protocol_spec: Protocol = field(init=False, repr=False, compare=False)
    # each reply parsed on its own by the protocol's parser (``protocol_spec.record``, in lm-eval's process_results):
    # no filter, no model called, no program run, so no setting to check before a run (a field, set here: a task
    # function reads it without going back into this file)
    per_reply: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "metrics", with_intervals(self.metrics))
        object.__setattr__(self, "protocol_spec", PROTOCOLS[self.protocol])
        object.__setattr__(self, "per_reply", self.scorer == PARSED)

    def metric(self, key: str) -> Metric:
        return next(m for m in self.metrics if m.key == key)



@dataclass(frozen=True)
class PriorStage:
    """A task whose documents are made from an earlier run's logged samples (stage 2 of a two-stage mode): the
    stage-1 tasks, the option (``--metadata`` key) that names their samples, and what ``critic-eval`` says when it
    runs them first (same model arguments, samples logged into ``<output_path>/<key>/<time>/``)."""
    prefix: str  # the stage-1 tasks are ``<prefix>_<domain>`` (``per="domain"``) or ``<prefix>_<subset>`` (``per="subset"``)
    key: str  # the task option / --metadata key naming the stage-1 samples (a samples file or a folder of them)
    about: str  # what stage 1 gives, e.g. "the critic's own feedback"
    env: str = ""  # a setting that may name them instead of ``key`` ("": none)
    per: str = "domain"

    def tasks(self, task: "Task") -> list[str]:
        """The stage-1 tasks covering ``task``'s items."""
        if self.per == "domain":
            return [f"{self.prefix}_{d}" for d in task.domains]
        return [f"{self.prefix}_{dict(task.options)['subset'].replace('-', '_')}"]


# Multi-round critique (``Task.rounds``): the --metadata keys critic-eval sets on each run of the chain.
ROUNDS_KEY, PREVIOUS_ROUND_KEY, ROUND_KEY = rc_stages.ROUNDS_KEY, rc_stages.PREVIOUS_KEY, rc_stages.ROUND_KEY
# SAvg: revise with the critic's own feedback (protocols.criticbench.self_feedback).
SAVG_STAGE = PriorStage(STAGE1_TASK, "self_feedback", "the critic's own feedback", env=SELF_FEEDBACK_ENV)
# RealCritic self-critique: critique the critic's own direct-CoT solutions (protocols.realcritic.stages).
REALCRITIC_SELF_STAGE = PriorStage(rc_stages.task_name(rc_stages.DIRECT, "").rstrip("_"), rc_stages.SELF_KEY,
                                   "the critic's own solutions (direct CoT)", per="subset")


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # a TaskKind's name
    split: str = "dev"
    domains: tuple[str, ...] = DOMAIN_NAMES
    tags: tuple[str, ...] = ()
    with_feedback: bool = True  # correction: revise with the annotated feedback (False: the paper's EAvg)
    feedback_source: str = "annotated"  # "self": the critic's own feedback from a stage-1 run (the paper's SAvg)
    repeats: int = 1
    generation_kwargs: dict | None = None  # overrides the template's greedy decoding
    section: str = ""  # the summary table's row block (default: the dimension's all-domain task)
    headline: tuple[str, ...] = ()  # overrides the dimension's headline keys
    options: tuple[tuple[str, Any], ...] = ()  # other protocols: their loader's options (dataset_kwargs)
    # its documents need an earlier run's samples (critic-eval runs it first when they are not given); SAvg's tasks
    # (feedback_source "self") get SAVG_STAGE
    prior_stage: PriorStage | None = None
    # multi-round: ``--metadata '{"rounds": N}'`` makes critic-eval chain N runs, round k reading round k-1's samples
    # through the loader option ``previous_round``
    rounds: bool = False

    def __post_init__(self):
        if self.feedback_source not in FEEDBACK_SOURCES:
            raise ValueError(f"task {self.name}: feedback_source={self.feedback_source!r}, expected one of {FEEDBACK_SOURCES}")
        if self.feedback_source == "self" and self.prior_stage is None:
            object.__setattr__(self, "prior_stage", SAVG_STAGE)

    @property
    def kind_spec(self) -> TaskKind:
        """The TaskKind this task's ``kind`` names: its data, scorer, metrics and headline keys."""
        return TASK_KINDS[self.kind]

    @property
    def self_feedback(self) -> bool:
        """Revises with the critic's own feedback: needs a stage-1 run (``critic-eval`` runs it when not given)."""
        return self.feedback_source == "self"

    @property
    def scorer(self) -> str:
        """How its replies are scored: a key of ``SCORERS`` (the dimension's ``scorer``)."""
        return self.kind_spec.scorer

    def headline_keys(self) -> tuple[str, ...]:
        return self.headline or self.kind_spec.headline

    def description(self) -> str:
        if self.kind_spec.protocol != "criticbench":
            extra = "".join(f"; {k}={v}" for k, v in self.options)
            extra += f"; {self.repeats} samples per item" if self.repeats > 1 else ""
            return f"{self.kind_spec.about} ({PROTOCOLS[self.kind_spec.protocol].title}{extra})"
        domains = "all 9 domains" if self.domains == DOMAIN_NAMES else ", ".join(self.domains)
        extra = "" if self.with_feedback else "; no feedback given"
        extra += f"; with the critic's own feedback (stage 1: {STAGE1_TASK})" if self.self_feedback else ""
        extra += f"; {self.repeats} samples per item" if self.repeats > 1 else ""
        return f"{self.kind_spec.about} ({self.split} split, {domains}{extra})"


@dataclass(frozen=True)
class Group:
    name: str
    members: tuple[str, ...]
    metric: str  # each member's headline value, averaged unweighted (the paper's overall)
    label: str  # how the summary table names the overall
    about: str


# ----------------------------------------------------------------------------- reply budgets

# The authors' Arena-Hard judge: greedy, max_tokens 4096 (utils/judges.py).
JUDGEBENCH_BUDGET = jb_judges.JUDGES[jb_judges.DEFAULT_JUDGE].budget
# RewardBench's API judges get 2048 new tokens (generative.py, run_judge_pair): the explanation, then the verdict.
RMBENCH_BUDGET = 2048
# run_eval.py's budget: 8192 new tokens, greedy (32768 for QwQ: --gen_kwargs max_gen_toks=32768).
PROCESSBENCH_BUDGET = 8192
# The authors' budget: math_eval.py's max_tokens_per_call 2048 (greedy: temperature 0, top_p 1, one sample), which
# their sh/*/run_*.sh scripts keep, for every mode.
REALCRITIC_BUDGET = 2048
# CritiqueLLM's paper prompt asks for an explanation (in Chinese) before the rating, so a budget that ends inside the
# explanation loses the rating: room for a long one (the paper states no budget); the short variant needs far less.
CRITIQUELLM_BUDGET = 1024
# The paper's sampling (sec. 4.3): nucleus sampling with temperature and p both 0.8; self-consistency averages 5.
CRITIQUELLM_SAMPLING = {"until": [], "do_sample": True, "temperature": 0.8, "top_p": 0.8,
                        "max_gen_toks": CRITIQUELLM_BUDGET}


# ----------------------------------------------------------------------------- the catalogue

# The revision protocols (MultiCritique, RCO) share CriticBench's initial responses and one critic prompt; the lm-eval
# filter makes their records.
_REVISION_STEPS = dict(load_docs=rv_data.load_task_docs,
                       options=("split", "domains", "data_dir", "items_file", "variant", "failure_rule",
                                "toolkit_dir"),
                       prompt=rv_prompts.critic_prompt, target=rv_prompts.gold_text, record=None,
                       data_env=rv_data.DATA_DIR_ENV, source=cb_data.HUB_REPO)



def _criticbench_options(task: Task) -> dict:
    """A CriticBench task picks a split, domains and its format (and may revise with no feedback given)."""
    return {"split": task.split, "domains": list(task.domains), "fmt": task.kind_spec.fmt,
            **({"with_feedback": False} if not task.with_feedback else {})}


PROTOCOLS = {p.name: p for p in (
    Protocol("criticbench", "CriticBench / CriticEval (Lan et al. 2024)", "arXiv:2402.13764",
             load_docs=cb_data.load_task_docs,
             options=("split", "domains", "data_dir", "fmt", "with_feedback", "protocol", "toolkit_dir",
                      "feedback_source", "self_feedback"),
             prompt=cb_prompts.critic_prompt, target=cb_scoring.gold_text, record=cb_scoring.record,
             data_env=cb_data.DATA_DIR_ENV, source=cb_data.HUB_REPO, task_options=_criticbench_options,
             chance=cb_chance),
    Protocol("critiquellm", "CritiqueLLM on AlignBench (Ke et al. 2023)", "arXiv:2311.18702",
             load_docs=cq_data.load_task_docs, options=("reference", "data_dir", "variant"),
             prompt=cq_prompts.critic_prompt, target=cq_scoring.gold_text, record=cq_scoring.record,
             data_env=cq_data.DATA_DIR_ENV, source=cq_data.REPO, chance=cq_chance),
    Protocol("metacritique", "MetaCritique (Sun et al. 2024)", "arXiv:2401.04518",
             load_docs=mc_data.load_task_docs, options=("data_dir",), prompt=mc_prompts.critic_prompt,
             target=mc_prompts.gold_text, record=None,  # the AIU judge filter makes the records
             data_env=mc_data.DATA_DIR_ENV, source=mc_data.REPO),
    Protocol("judgebench", "JudgeBench (Tan et al. 2024)", "arXiv:2410.12784",
             load_docs=jb_data.load_task_docs, options=("data_dir", "split", "orders", "category", "prompt",
                                                        "judge"),
             prompt=jb_prompts.critic_prompt, target=jb_scoring.gold_text, record=jb_scoring.record,
             data_env=jb_data.DATA_DIR_ENV, source=jb_data.HUB_REPO, sample_dir=jb_data.SAMPLE_DIR, chance=jb_chance,
             system_message=True, follow_up=jb_scoring.follow_up, join_turns=jb_scoring.join_turns),
    Protocol("processbench", "ProcessBench (Zheng et al. 2024)", "arXiv:2412.06559",
             load_docs=pb_data.load_task_docs, options=("data_dir", "subset", "prompt"), prompt=pb_prompts.critic_prompt,
             target=pb_scoring.gold_text, record=pb_scoring.record, data_env=pb_data.DATA_DIR_ENV,
             source=pb_data.HUB_REPO, sample_dir=pb_data.SAMPLE_DIR, chance=pb_chance),
    Protocol("realcritic", "RealCritic (Tang et al. 2025)", "arXiv:2501.14492",
             load_docs=rc_stages.load_task_docs,
             options=("data_dir", "subset", rc_prompts.PROMPT_KEY, rc_scoring.GRADING_KEY, rc_stages.SELF_KEY,
                      rc_stages.PREVIOUS_KEY, rc_stages.ROUND_KEY, rc_stages.ROUNDS_KEY),
             prompt=rc_prompts.critic_prompt,
             target=rc_scoring.gold_text, record=rc_scoring.record, data_env=rc_data.DATA_DIR_ENV,
             source=rc_data.REPO, sample_dir=rc_data.SAMPLE_DIR, chance=rc_chance, system_message=True),
    Protocol("rmbench", "RM-Bench (Liu et al. 2025)", "arXiv:2410.16184",
             load_docs=rm_data.load_task_docs, options=("data_dir", "domain"), prompt=rm_prompts.critic_prompt,
             target=rm_scoring.gold_text, record=rm_scoring.record, data_env=rm_data.DATA_DIR_ENV,
             source=rm_data.HUB_REPO, sample_dir=rm_data.SAMPLE_DIR, chance=rm_chance, system_message=True),
    Protocol("rewardbench", "RewardBench (Lambert et al. 2024)", "arXiv:2403.13787",
             load_docs=rwb_data.load_task_docs, options=("data_dir", "orders", "seed"),
             prompt=rwb_prompts.critic_prompt, target=rwb_scoring.gold_text, record=rwb_scoring.record,
             data_env=rwb_data.DATA_DIR_ENV, source=rwb_data.HUB_REPO, sample_dir=rwb_data.SAMPLE_DIR,
             chance=rwb_chance, system_message=True),
    Protocol("rewardbench2", "RewardBench 2 (Malik et al. 2025)", "arXiv:2506.01937",
             load_docs=rb2_data.load_task_docs, options=("data_dir", "ratings", "seed"),
             prompt=rb2_prompts.critic_prompt, target=rb2_scoring.gold_text, record=rb2_scoring.record,
             data_env=rb2_data.DATA_DIR_ENV, source=rb2_data.HUB_REPO, sample_dir=rb2_data.SAMPLE_DIR,
             chance=rb2_chance, system_message=True),
    Protocol("multicritique", "MultiCritique critique utility (Lan et al. 2024b)", "arXiv:2410.15287",
             **_REVISION_STEPS),
    Protocol("rco", "RCO critique utility (Yu et al. 2025)", "arXiv:2506.22157", **_REVISION_STEPS),
)}

_LIKERT_HEADLINE = ("spearman", "score", "parse_rate")
_JUDGE_HEADLINE = ("judge_score", "judge_parse_rate")

TASK_KINDS = {d.name: d for d in (
    TaskKind("feedback", "criticbench", "feedback", "obj", "parse", cb_scoring.likert_keys(QUALITIES), _LIKERT_HEADLINE,
             "feedback: rate one response 1-7; Spearman with human scores", answer_first=True),
    TaskKind("comparison", "criticbench", "comparison", "obj", "parse", cb_scoring.PAIRWISE_KEYS,
             ("accuracy", "accuracy_loose", "consistency", "score", "parse_rate"),
             "comparison: pick the better of two responses, asked in both orders", pairwise=True, answer_first=True),
    TaskKind("meta", "criticbench", "meta", "obj", "parse", cb_scoring.likert_keys(MAIN_QUALITIES), _LIKERT_HEADLINE,
             "meta-feedback: rate a critique 1-7 against a reference; Spearman with human scores", answer_first=True),
    TaskKind("correction", "criticbench", "correction", "obj", "sandbox", cb_scoring.CORRECTION_KEYS,
             ("pass_rate", "score", "parse_rate", "truncated"),
             "correction: revise a flawed answer; checked by answer or by running it in the sandbox",
             max_gen_toks=CORRECTION_BUDGET),
    TaskKind("feedback_sub", "criticbench", "feedback", "sub", "judge", cb_scoring.judged_keys(QUALITIES), _JUDGE_HEADLINE,
             "free-text critique of one response, graded 1-10 by a judge against the human one"),
    TaskKind("comparison_sub", "criticbench", "comparison", "sub", "judge", cb_scoring.judged_keys(DIFFICULTIES),
             _JUDGE_HEADLINE, "free-text comparison of two responses, graded 1-10 by a judge"),
    TaskKind("correction_sub", "criticbench", "correction", "sub", "judge", cb_scoring.judged_keys(MAIN_QUALITIES),
             _JUDGE_HEADLINE, "revision of a text response, graded 1-10 by a judge against the human one"),
    TaskKind("self_feedback", "criticbench", "self_feedback", "obj", "parse", cb_scoring.SELF_FEEDBACK_KEYS, ("parse_rate",),
             "SAvg stage 1: free-text feedback on each correction item, kept for critic_correction_self[_sub] "
             "(not scored; parse_rate = non-empty)", scored=False),
    TaskKind("alignbench_pointwise", "critiquellm", "alignbench_pointwise", "obj", "parse", cq_scoring.RATING_KEYS,
             ("text_pearson", "text_spearman", "text_kendall", "system_pearson", "parse_rate"),
             "rate one AlignBench response 1-10 ([[x]]); correlation with human scores",
             max_gen_toks=CRITIQUELLM_BUDGET),
    TaskKind("alignbench_pairwise", "critiquellm", "alignbench_pairwise", "obj", "parse", cq_scoring.PREFERENCE_KEYS,
             ("agreement", "consistency", "parse_rate"),
             "pick the better of two AlignBench responses ([[A]]/[[B]]), asked in both orders; agreement with humans",
             max_gen_toks=CRITIQUELLM_BUDGET, pairwise=True),
    TaskKind("metacritique", "metacritique", "metacritique", "sub", "aiu_judge", mc_scoring.KEYS,
             ("precision", "recall", "f1", "f1_micro", "judge_parse_rate"),
             "critique an answer; a judge checks the critique's atomic units (precision) and the reference's (recall)"),
    TaskKind("judgebench", "judgebench", jb_data.DIMENSION, "obj", "parse", jb_scoring.KEYS,
             ("accuracy", "inconsistency", "parse_rate"),
             "pick the objectively correct of two answers ([[A>B]]/[[B>A]]), asked in both orders",
             max_gen_toks=JUDGEBENCH_BUDGET, pairwise=True),
    TaskKind("rewardbench", "rewardbench", rwb_data.DIMENSION, "obj", "parse", rwb_scoring.KEYS,
             ("score", "chat", "chat_hard", "safety", "reasoning", "parse_rate"),
             "pick the better of a chosen and a rejected response ([[A]]/[[B]]), one seeded random order per pair "
             "(orders: both asks both)", max_gen_toks=RMBENCH_BUDGET),
    TaskKind("rewardbench2", "rewardbench2", rb2_data.DIMENSION, "obj", "parse", rb2_scoring.KEYS,
             ("score", *rb2_scoring.SUBSET_SLUGS, "parse_rate"),
             "pick the best of four answers ([[A]]-[[D]]), one seeded arrangement per prompt (ratings: true rates "
             "each answer 1-10); Ties always rated", max_gen_toks=RMBENCH_BUDGET),
    TaskKind("rmbench", "rmbench", rm_data.DIMENSION, "obj", "parse", rm_scoring.KEYS,
             ("accuracy", "hard", "normal", "easy", "parse_rate"),
             "pick the better of a chosen and a rejected response ([[A]]/[[B]]), 3 x 3 styles per prompt, both orders",
             max_gen_toks=RMBENCH_BUDGET, pairwise=True),
    TaskKind("processbench", "processbench", pb_data.DIMENSION, "obj", "parse", pb_scoring.KEYS,
             ("f1", "error_accuracy", "correct_accuracy", "parse_rate"),
             "find the earliest wrong step of a math solution (\\boxed{index}, -1 if none); F1 of the accuracies on "
             "erroneous and correct solutions", max_gen_toks=PROCESSBENCH_BUDGET),
    TaskKind("realcritic", "realcritic", rc_data.DIMENSION, "obj", "parse", rc_scoring.KEYS,
             ("accuracy", "correct_to_incorrect", "incorrect_to_correct", "parse_rate"),
             "critique a solution and give the corrected final answer (\\boxed{}); accuracy of the corrected answers",
             max_gen_toks=REALCRITIC_BUDGET),
    TaskKind("realcritic_direct", "realcritic", rc_stages.DIRECT, "obj", "parse", rc_scoring.DIRECT_KEYS,
             ("accuracy", "parse_rate"),
             "solve the question (\\boxed{} answer): the Direct CoT baseline, and stage 1 of self-critique",
             max_gen_toks=REALCRITIC_BUDGET),
    TaskKind("realcritic_self", "realcritic", rc_stages.SELF, "obj", "parse", rc_scoring.KEYS,
             ("accuracy", "solution_accuracy", "correct_to_incorrect", "incorrect_to_correct", "parse_rate"),
             "critique and correct its own direct-CoT solution (\\boxed{}); accuracy of the corrected answers "
             "(solution_accuracy: the direct-CoT baseline)", max_gen_toks=REALCRITIC_BUDGET),
    # MultiCritique and RCO judge a critique by what it does to a revision (``protocols.revision``): items are
    # CriticBench's initial responses (or a user's JSONL: --metadata '{"items_file": ...}'); scorer "revision" = the
    # lm-eval ScoreFilter drives the revisers (CRITIC_REVISER_* / CRITIC_REVISERS) and the judge (CRITIC_JUDGE_*).
    TaskKind("revision_pool", "multicritique", "revision_pool", "sub", "revision", rv_scoring.MULTICRITIQUE_KEYS,
             ("r_obj", "r_sub", "judge_parse_rate", "reviser_failed"),
             "critique a response; a pool of revisers revises with it; pass rates (math/code), judge 1-10 (text)"),
    TaskKind("utility", "rco", "utility", "sub", "revision", rv_scoring.RCO_KEYS,
             ("critique_utility", "rqs", "refine_accuracy", "judge_parse_rate"),
             "critique a response; an actor revises with it; a judge prefers revised vs initial in both orders"),
)}

# The judge-bias lines of each pairwise kind (``core.metrics.bias``), which ``summary`` and ``report`` show under
# their own heading: its position-consistency key (CriticEval's and CritiqueLLM's ``consistency``, JudgeBench's
# ``inconsistency`` = 100 minus it), the first-position rate and the length bias.
BIAS_LINES = {"comparison": ("consistency", "first_position", "length_bias"),
              "alignbench_pairwise": ("consistency", "first_position", "length_bias"),
              "judgebench": ("inconsistency", "first_position", "length_bias"),
              "rmbench": ("inconsistency", "first_position", "length_bias", "style_gap"),
              "rewardbench": ("inconsistency", "first_position", "length_bias"),
              "rewardbench2": ("first_position", "length_bias")}


def _variants(root: str, dimension: str, domains: tuple[str, ...], per_domain_tag: str, **options) -> list[Task]:
    """A task over every domain, plus one per domain tagged for the per-domain breakdown."""
    tasks = [Task(root, dimension, domains=domains, section=root, **options)]
    tasks += [Task(f"{root}_{d}", dimension, domains=(d,), tags=(per_domain_tag, f"{root}_per_domain"),
                   section=root, **options) for d in domains]
    return tasks


def _catalogue() -> list[Task]:
    tasks: list[Task] = []
    objective = {"feedback": DOMAIN_NAMES, "comparison": DOMAIN_NAMES, "meta": DOMAIN_NAMES,
                 "correction": OBJECTIVE_CORRECTION_DOMAINS}
    for dim, domains in objective.items():
        tasks += _variants(f"critic_{dim}", dim, domains, "critic_per_domain")
        if dim == "correction":
            # The paper's "empty feedback" column (EAvg): revise with no critique given.
            tasks += _variants("critic_correction_empty", dim, domains, "critic_per_domain", with_feedback=False,
                               headline=("pass_rate", "parse_rate", "truncated"))
            # Sampling variant for unbiased pass@k (k = 1, 5; raise repeats for pass@10).
            tasks.append(Task("critic_correction_sampled", dim, domains=domains, repeats=5,
                              section="critic_correction",
                              generation_kwargs={"until": [], "do_sample": True, "temperature": 0.8, "top_p": 0.95,
                                                 "max_gen_toks": CORRECTION_BUDGET}))
        tasks.append(Task(f"critic_{dim}_test", dim, split="test", domains=domains, tags=("critic_test",),
                          section=f"critic_{dim}"))
    subjective = {"feedback": DOMAIN_NAMES, "comparison": DOMAIN_NAMES, "correction": TEXT_DOMAINS}
    for dim, domains in subjective.items():
        tasks += _variants(f"critic_{dim}_sub", f"{dim}_sub", domains, "critic_sub_per_domain")
    # EAvg on the text domains: revise with no critique given, graded by the judge.
    tasks += _variants("critic_correction_empty_sub", "correction_sub", TEXT_DOMAINS, "critic_sub_per_domain",
                       with_feedback=False)
    # SAvg: revise with the critic's own feedback, written by the same model in a stage-1 task.
    tasks += _variants("critic_correction_self", "correction", OBJECTIVE_CORRECTION_DOMAINS, "critic_self_per_domain",
                       feedback_source="self")
    tasks += _variants("critic_correction_self_sub", "correction_sub", TEXT_DOMAINS, "critic_self_per_domain",
                       feedback_source="self")
    tasks.append(Task(STAGE1_TASK, "self_feedback", section=STAGE1_TASK))
    tasks += [Task(f"{STAGE1_TASK}_{d}", "self_feedback", domains=(d,), tags=(f"{STAGE1_TASK}_per_domain",),
                   section=STAGE1_TASK) for d in DOMAIN_NAMES]
    return (tasks + _other_protocols() + _revision_tasks() + _judgebench_tasks() + _processbench_tasks()
            + _realcritic_tasks() + _rmbench_tasks() + _rewardbench_tasks()
            + [Task("critic_rewardbench2", "rewardbench2", section="critic_rewardbench2")])


def _other_protocols() -> list[Task]:
    """CritiqueLLM's four AlignBench tasks (with and without the reference; pointwise and pairwise), its
    self-consistency variant (5 sampled critiques, mean rating), and MetaCritique's critique task."""
    tag = ("critic_critiquellm",)
    tasks = [Task(f"critic_alignbench{kind}_{ref}", dim, tags=tag, section=f"critic_alignbench{kind}_{ref}",
                  options=(("reference", ref == "ref"),))
             for kind, dim in (("", "alignbench_pointwise"), ("_pairwise", "alignbench_pairwise"))
             for ref in ("ref", "free")]
    tasks.append(Task("critic_alignbench_ref_sc", "alignbench_pointwise", repeats=5, section="critic_alignbench_ref",
                      options=(("reference", True),), generation_kwargs=CRITIQUELLM_SAMPLING))
    tasks.append(Task("critic_metacritique", "metacritique", section="critic_metacritique"))
    return tasks


def _revision_tasks() -> list[Task]:
    """MultiCritique's and RCO's tasks: dev (all domains), test, and one per domain."""
    tasks = []
    for root, dim in (("critic_revision_pool", "revision_pool"), ("critic_utility", "utility")):
        tag = ("critic_revision",)
        tasks.append(Task(root, dim, tags=tag, section=root, options=(("split", "dev"), ("domains", "all"))))
        tasks.append(Task(f"{root}_test", dim, split="test", tags=tag, section=root,
                          options=(("split", "test"), ("domains", "all"))))
        tasks += [Task(f"{root}_{d}", dim, domains=(d,), tags=(f"{root}_per_domain",), section=root,
                       options=(("split", "dev"), ("domains", d))) for d in DOMAIN_NAMES]
    return tasks


def _judgebench_tasks() -> list[Task]:
    """JudgeBench over all pairs and one task per category (the response set: ``--metadata '{"split": ...}'``)."""
    tasks = [Task("critic_judgebench", "judgebench", section="critic_judgebench", options=(("category", "all"),))]
    tasks += [Task(f"critic_judgebench_{c}", "judgebench", tags=("critic_judgebench_per_category",),
                   section="critic_judgebench", options=(("category", c),)) for c in jb_data.SOURCES]
    return tasks


def _processbench_tasks() -> list[Task]:
    """ProcessBench: one task per subset; the group ``critic_processbench`` averages their F1."""
    return [Task(f"critic_processbench_{s}", "processbench", tags=("critic_processbench_subsets",),
                 section="critic_processbench", options=(("subset", s),)) for s in pb_data.SUBSETS]


def _realcritic_tasks() -> list[Task]:
    """RealCritic: one task per benchmark and mode (critique the given solution, several rounds with ``rounds``;
    solve directly; critique the critic's own direct solution); a group per mode averages their accuracy."""
    return [Task(rc_stages.task_name(dimension, t), kind, tags=(f"{group}_tasks",), section=group,
                 options=(("subset", t),), rounds=dimension != rc_stages.DIRECT,
                 prior_stage=REALCRITIC_SELF_STAGE if dimension == rc_stages.SELF else None)
            for dimension, kind, group in REALCRITIC_MODES for t in rc_data.TASKS]


def _rmbench_tasks() -> list[Task]:
    """RM-Bench over every domain (its overall: the mean of the domains) and one task per domain."""
    tasks = [Task("critic_rmbench", "rmbench", section="critic_rmbench", options=(("domain", "all"),))]
    tasks += [Task(f"critic_rmbench_{d}", "rmbench", tags=("critic_rmbench_per_domain",), section="critic_rmbench",
                   options=(("domain", d),)) for d in rm_data.DOMAINS]
    return tasks


def _rewardbench_tasks() -> list[Task]:
    """RewardBench: every pair, its four sections and their mean (``orders`` / ``seed``: --metadata)."""
    return [Task("critic_rewardbench", "rewardbench", section="critic_rewardbench")]


# RealCritic's modes: (data dimension, task kind, group)
REALCRITIC_MODES = ((rc_stages.CROSS, "realcritic", "critic_realcritic"),
                    (rc_stages.DIRECT, "realcritic_direct", "critic_realcritic_direct"),
                    (rc_stages.SELF, "realcritic_self", "critic_realcritic_self"))


TASKS: dict[str, Task] = {t.name: t for t in _catalogue()}

GROUPS = {g.name: g for g in (
    Group("critic", ("critic_feedback", "critic_comparison", "critic_meta", "critic_correction"), "score",
          "overall", "the paper's objective overall: unweighted mean of the four dimensions' scores"),
    Group("critic_sub", ("critic_feedback_sub", "critic_comparison_sub", "critic_correction_sub"), "judge_score",
          "overall (judge, 1-10)", "the paper's subjective overall (Table 1): mean of the three judge scores"),
    Group("critic_processbench", tuple(f"critic_processbench_{s}" for s in pb_data.SUBSETS), "f1", "average F1",
          "ProcessBench's Avg. F1 (Table 3): the unweighted mean of the four subsets' F1"),
    Group("critic_realcritic", tuple(f"critic_realcritic_{t.replace('-', '_')}" for t in rc_data.TASKS), "accuracy",
          "average accuracy", "RealCritic's average: the unweighted mean of the eight tasks' corrected-answer accuracy"),
    Group("critic_realcritic_direct", tuple(rc_stages.task_name(rc_stages.DIRECT, t) for t in rc_data.TASKS),
          "accuracy", "average accuracy", "RealCritic's Direct CoT baseline: the mean of the eight tasks' accuracy"),
    Group("critic_realcritic_self", tuple(rc_stages.task_name(rc_stages.SELF, t) for t in rc_data.TASKS),
          "accuracy", "average accuracy",
          "RealCritic's self-critique: the mean of the eight tasks' accuracy after critiquing its own solutions"),
)}

# The summary table's row blocks, in the paper's dimension order.
SECTIONS = ("critic_feedback", "critic_correction", "critic_comparison", "critic_meta", "critic_correction_empty",
            "critic_feedback_sub", "critic_comparison_sub", "critic_correction_sub", "critic_correction_empty_sub",
            "critic_correction_self", "critic_correction_self_sub", STAGE1_TASK,
            "critic_alignbench_ref", "critic_alignbench_free", "critic_alignbench_pairwise_ref",
            "critic_alignbench_pairwise_free", "critic_metacritique", "critic_revision_pool", "critic_utility", "critic_judgebench",
            "critic_processbench", "critic_realcritic", "critic_realcritic_direct", "critic_realcritic_self", "critic_rmbench",
            "critic_rewardbench", "critic_rewardbench2")

def tags() -> dict[str, list[str]]:
    """Tag -> its tasks, in declaration order."""
    out: dict[str, list[str]] = {}
    for t in TASKS.values():
        for tag in t.tags:
            out.setdefault(tag, []).append(t.name)
    return out


def task(name: str) -> Task:
    if name not in TASKS:
        raise ConfigError(f"unknown critic task {name!r}; `critic-eval tasks` lists them")
    return TASKS[name]


# ----------------------------------------------------------------------------- loader options and --metadata keys


def loader_options(task: Task) -> dict:
    """What a task itself hands its protocol's loader (the lm-eval YAML's ``dataset_kwargs``): its data dimension,
    then a CriticBench task's split, domains, format and feedback choices, another protocol's format (where not
    objective) and ``options``. The run's ``--metadata`` adds only the keys ``metadata_keys`` names."""
    kind = task.kind_spec
    if kind.protocol != "criticbench":
        return {"dimension": kind.data_dimension, **({"fmt": kind.fmt} if kind.fmt != "obj" else {}),
                **dict(task.options)}
    options = {"dimension": kind.data_dimension, "split": task.split,
               "domains": "all" if task.domains == DOMAIN_NAMES else ",".join(task.domains)}
    if kind.fmt != "obj":
        options["fmt"] = kind.fmt
    if not task.with_feedback:
        options["with_feedback"] = False
    if task.self_feedback:  # the stage-1 samples come from --metadata self_feedback or CRITIC_SELF_FEEDBACK
        options["feedback_source"] = task.feedback_source
    return options


def _set_by_tasks(protocol: str) -> set[str]:
    """The loader options that a protocol's tasks set themselves (a split, a subset, a category): which task runs
    chooses them, so they are no --metadata keys."""
    return {k for t in TASKS.values() if t.kind_spec.protocol == protocol for k in loader_options(t)}


def metadata_keys(task: Task) -> tuple[str, ...]:
    """The ``--metadata`` keys a task takes: its protocol's declared ``options`` less those its tasks set
    themselves."""
    return protocol_metadata_keys(task.kind_spec.protocol)


def protocol_metadata_keys(protocol: str) -> tuple[str, ...]:
    fixed = _set_by_tasks(protocol)
    return tuple(k for k in PROTOCOLS[protocol].options if k not in fixed)


def check_metadata(tasks: Sequence[Task], given) -> None:
    """Every ``--metadata`` key in ``given`` is taken by at least one of ``tasks`` (the critic tasks of the run: lm-eval
    hands every task the same metadata, so a key for one task of a mixed run is no mistake for the others); else one
    ConfigError line naming the tasks and the keys they take, with the nearest key ("did you mean")."""
    tasks = list({t.name: t for t in tasks}.values())
    if not tasks or not given:
        return
    taken = {k for t in tasks for k in metadata_keys(t)}
    for key in given:
        if key not in taken:
            raise ConfigError(_unknown_metadata_line(tasks, str(key)))


def _unknown_metadata_line(tasks: list[Task], key: str) -> str:
    import difflib

    by_protocol: dict[str, list[Task]] = {}
    for t in tasks:
        by_protocol.setdefault(t.kind_spec.protocol, []).append(t)
    parts = []
    for members in by_protocol.values():
        names = ", ".join(t.name for t in members[:3]) + (f" and {len(members) - 3} more" if len(members) > 3 else "")
        keys = ", ".join(metadata_keys(members[0]))
        parts.append(f"{names} take{'s' if len(members) == 1 else ''} {keys}")
    taken = list(dict.fromkeys(k for t in tasks for k in metadata_keys(t)))
    line = f"--metadata {key}: no task of this run takes it ({'; '.join(parts)})"
    setting = [t for t in tasks if key in loader_options(t)]
    if setting:  # e.g. split on critic_feedback: the task's name chooses it
        t = setting[0]
        line += (f"; {t.name} sets {key}={loader_options(t)[key]} itself: pick the task with the {key} you want "
                 "(`critic-eval tasks`)")
    else:
        elsewhere = [p.title.split(" (")[0] for name, p in PROTOCOLS.items()
                     if name not in by_protocol and key in protocol_metadata_keys(name)]
        if elsewhere:
            line += f"; {key} is a key of {', '.join(dict.fromkeys(elsewhere))}'s tasks"
    near = difflib.get_close_matches(key, taken, n=1, cutoff=0.6)
    if near:
        line += f"; did you mean {near[0]}?"
    return line


def kind_for(dimension: str, fmt: str) -> TaskKind:
    """The TaskKind that scores documents of this data dimension and format."""
    for d in TASK_KINDS.values():
        if d.data_dimension == dimension and d.fmt == fmt:
            return d
    raise ConfigError(f"no registered dimension for {dimension!r} in format {fmt!r}")


def result_metric(name: str, key: str) -> Metric | None:
    """The Metric that a results entry ``name`` (a task, or a group: its overall, the members' metric) reports under
    ``key``; None where it declares none (lm-eval's ``alias``, another harness's task)."""
    if name in GROUPS:
        group = GROUPS[name]
        return TASKS[group.members[0]].kind_spec.metric(key) if key == group.metric else None
    if name in TASKS:
        return next((m for m in TASKS[name].kind_spec.metrics if m.key == key), None)
    return None


def interval_keys(key: str) -> tuple[str, str]:
    """The results keys holding the interval of ``key``."""
    return f"{key}_ci_low", f"{key}_ci_high"
