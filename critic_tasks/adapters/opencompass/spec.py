"""What our OpenCompass dataset configs contain, without importing OpenCompass.

``dataset_spec(task)`` is the one definition of a dataset config. Classes appear as ``ClassRef``s, so the config
tree generator (``generate.py``) and ``critic-eval opencompass`` run in any environment; ``configuring`` resolves
them to OpenCompass's classes where OpenCompass is installed.
"""

from __future__ import annotations

from typing import NamedTuple

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError


class ClassRef(NamedTuple):
    """A class named in a config: ``from <module> import <name>``."""

    module: str
    name: str


GEN_INFERENCER = ClassRef("opencompass.openicl.icl_inferencer", "GenInferencer")
# GenInferencer plus a protocol's second turn (JudgeBench's Arena-Hard judge): inferencers.py
TURNS_INFERENCER = ClassRef("critic_tasks.adapters.opencompass.inferencers", "CriticGenInferencer")
ZERO_RETRIEVER = ClassRef("opencompass.openicl.icl_retriever", "ZeroRetriever")
PROMPT_TEMPLATE = ClassRef("critic_tasks.adapters.opencompass.templates", "CriticPromptTemplate")
DATASET = ClassRef("critic_tasks.adapters.opencompass.datasets", "CriticTaskDataset")
EVALUATOR = ClassRef("critic_tasks.adapters.opencompass.evaluators", "CriticTaskEvaluator")
# the evaluator of TURNS_INFERENCER's tasks: its score() names the predictions' turns (evaluators.py)
TURNS_EVALUATOR = ClassRef("critic_tasks.adapters.opencompass.evaluators", "CriticTurnsEvaluator")
SYSTEM_COLUMN = "system_message"  # a dataset row's system message ("" for none), where its protocol has one
CLASSES = (GEN_INFERENCER, TURNS_INFERENCER, ZERO_RETRIEVER, PROMPT_TEMPLATE, DATASET, EVALUATOR, TURNS_EVALUATOR)


def unsupported_reason(task: registry.Task) -> str | None:
    """Why OpenCompass cannot run a task (None: it can). Not the sampled variants: OpenCompass scores each of its
    ``n`` runs on its own, so no evaluator call sees an item's samples together; not the two-stage tasks (SAvg's and
    RealCritic's self-critique: stage 2 reads stage 1's lm-eval samples); not the revision protocols (their reviser
    and judge run in lm-eval's filter, between generation and scoring)."""
    if task.self_feedback or task.kind_spec.data_dimension == "self_feedback":
        return "SAvg: stage 2 reads stage 1's lm-eval samples"
    if task.prior_stage is not None:  # one inference pass: no second stage reading the first one's replies
        return f"two stages: it reads {task.prior_stage.about} from stage 1's lm-eval samples"
    scorer = registry.SCORERS.get(task.scorer)
    if scorer is not None and scorer.lm_eval_only:
        return scorer.lm_eval_only
    if task.repeats != 1:
        return f"{task.repeats} samples per item, scored together; OpenCompass scores each run on its own"
    if scorer is None:
        return f"scored by {task.scorer!r}, which has no OpenCompass evaluator"
    return None


def supported(task: registry.Task) -> bool:
    """Tasks OpenCompass runs (see ``unsupported_reason`` for the others)."""
    return unsupported_reason(task) is None


def refusal(task: registry.Task) -> str:
    """One line: why a task has no OpenCompass config, and the lm-eval command that runs it."""
    return (f"{task.name}: not available under OpenCompass ({unsupported_reason(task)}); run it with lm-eval: "
            f"critic-eval --model hf --model_args pretrained=MODEL --apply_chat_template --tasks {task.name}")


def runnable_tasks() -> list[registry.Task]:
    return [t for t in registry.TASKS.values() if supported(t)]


def dataset_spec(task: str, judge_cfg: dict | None = None, max_out_len: int | None = None) -> dict:
    """``max_out_len``: the reply budget for this dataset (default: lm-eval's for the task, its YAML's
    max_gen_toks), written as the inferencer's: a dataset's own budget wins over OpenCompass's model-wide
    ``--max-out-len`` (its infer task only fills in a missing one), so both harnesses reply within the same budget at
    their defaults; ``critic-eval opencompass --max-out-len N`` writes the tree with N."""
    spec = registry.task(task)
    if not supported(spec):
        raise ValueError(refusal(spec))
    # a protocol whose documents carry a system message (JudgeBench: the authors' judge): a column of its own, sent
    # in the SYSTEM role (templates.py)
    steps = registry.PROTOCOLS[spec.kind_spec.protocol]
    evaluator = {"type": TURNS_EVALUATOR if steps.follow_up is not None else EVALUATOR, "task": task}
    system = steps.system_message
    # a protocol that asks again (JudgeBench's Arena-Hard judge): the second turn in an inferencer of ours
    inferencer = ({"type": TURNS_INFERENCER, "task": task} if steps.follow_up is not None else {"type": GEN_INFERENCER})
    template = {"type": PROMPT_TEMPLATE, **({"system_column": SYSTEM_COLUMN} if system else {})}
    loader = {}
    if registry.SCORERS[spec.scorer].judged:
        # {} when none is given, never None: OpenCompass's eval task reads judge_cfg.get('run_cfg', {})
        evaluator["judge_cfg"] = loader["judge_cfg"] = judge_cfg or {}
    return {
        "abbr": task,
        "type": DATASET,
        "task": task,
        **loader,
        # lm-eval's reply budget for this task (its max_gen_toks), kept beside the inferencer's (which may differ)
        "critic_max_out_len": spec.kind_spec.max_gen_toks,
        "reader_cfg": {"input_columns": ["prompt", *([SYSTEM_COLUMN] if system else [])], "output_column": "doc"},
        "infer_cfg": {
            # the prompt column as the one user message, byte for byte what lm-eval sends (see templates.py)
            "prompt_template": template,
            "retriever": {"type": ZERO_RETRIEVER},
            "inferencer": {**inferencer, "max_out_len": max_out_len or spec.kind_spec.max_gen_toks},
        },
        "eval_cfg": {"evaluator": evaluator, "pred_role": "BOT"},
    }


def collections() -> dict[str, tuple[list[str], str]]:
    """Dataset collections (``configs/dataset_collections/<name>_gen.py``): name -> (tasks, what it is)."""
    out = {g.name: (list(g.members), g.about) for g in registry.GROUPS.values()
           if all(supported(registry.TASKS[m]) for m in g.members)}  # not RealCritic's self-critique (two stages)
    everything = [*registry.GROUPS["critic"].members, *registry.GROUPS["critic_sub"].members, "critic_correction_empty"]
    out["critic_all"] = (everything, "every dimension on all domains: objective, judge-scored and correction "
                                     "without feedback")
    out["critic_critiquellm"] = (registry.tags()["critic_critiquellm"], "CritiqueLLM's four AlignBench tasks "
                                 "(pointwise and pairwise, with and without the reference)")
    return out


def group_results(per_task: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """lm-eval-shaped results (``{task: {"metric,none": value}}``) with the registry's groups added: a group whose
    members all ran, the mean of the members' values, leaving out a member whose value is undefined (None), as the
    lm-eval adapter's group mean does (``private.none_safe_mean``)."""
    results = {task: {f"{k},none": v for k, v in metrics.items()} for task, metrics in per_task.items()}
    for group in registry.GROUPS.values():
        if not all(m in per_task for m in group.members):
            continue
        values = [v for m in group.members if isinstance(v := per_task[m].get(group.metric), (int, float))]
        if values:
            results[group.name] = {f"{group.metric},none": sum(values) / len(values)}
    return results


def model_summary(abbr: str, results: dict) -> str:
    """What the summarizer prints for one model: its dimension table (``reports.tables``) and the scale line under
    it, which names CriticEval's published leaderboard only where a CriticEval task is in the table
    (``tables.scale_note``), as `critic-eval summary` prints it."""
    from critic_tasks.reports.tables import format_table, scale_note

    return f"\ncritic-tasks: {abbr}\n{format_table(results)}\n{scale_note(results)}"


# a dataset config's keys that are no protocol option: OpenCompass's own (BaseDataset and the config builders take
# them) and the settings our loader takes by name (datasets.CriticTaskDataset.load); the rest are options
OPENCOMPASS_KEYS = ("abbr", "type", "reader_cfg", "infer_cfg", "eval_cfg", "k", "n")
LOADER_SETTINGS = ("task", "data_dir", "protocol", "toolkit_dir", "judge_cfg", "critic_max_out_len")


def config_options(dataset: dict) -> dict:
    """The protocol options a dataset config sets (``d['orders'] = 'both'``)."""
    return {k: v for k, v in dataset.items() if k not in OPENCOMPASS_KEYS + LOADER_SETTINGS}


def run_records(dataset_cfgs) -> dict:
    """What the summarizer records of a run's dataset configs, for ``critic-eval report`` (its chance line is drawn
    on the documents the run scored): each of our datasets' cut (``reader_cfg['test_range']``, OpenCompass's
    --limit) under ``test_range``, and each protocol option a config sets (``d['orders'] = 'both'``) where lm-eval's
    results keep ``--metadata``, ``configs[task]['metadata']``."""
    cuts, configs = {}, {}
    for d in dataset_cfgs:
        if d.get("task") not in registry.TASKS:
            continue
        if (cut := (d.get("reader_cfg") or {}).get("test_range")) not in (None, ""):
            cuts[d["abbr"]] = cut
        if options := config_options(d):
            configs[d["abbr"]] = {"metadata": dict(options)}
    return {**({"test_range": cuts} if cuts else {}), **({"configs": configs} if configs else {})}


def check_options(spec: registry.Task, options: dict) -> None:
    """A dataset config's option keys are the protocol's options, and none the task itself fixes (lm-eval's
    --metadata is run-wide, so there an option a protocol lacks is left out; a dataset config is the task's own)."""
    steps = registry.PROTOCOLS[spec.kind_spec.protocol]
    takes = sorted(set(steps.options) - {"data_dir", "protocol", "toolkit_dir"})
    fixed = steps.task_options(spec)
    for key in options:
        if key in fixed:
            raise ConfigError(f"{spec.name}: dataset config key {key!r} is fixed by the task ({key}={fixed[key]!r}); "
                              "choose the task with the value you want (critic-eval tasks)")
        if key not in steps.options:
            raise ConfigError(f"{spec.name}: unknown dataset config key {key!r}; the {steps.name} protocol takes "
                              + (", ".join(k for k in takes if k not in fixed) or "no options"))
