"""What our OpenCompass dataset configs contain, without importing OpenCompass.

``dataset_spec(task)`` is the one definition of a dataset config. Classes appear as ``ClassRef``s, so the config
tree generator (``generate.py``) and ``critic-eval opencompass`` run in any environment; ``configuring`` resolves
them to OpenCompass's classes where OpenCompass is installed.
"""

from __future__ import annotations

from typing import NamedTuple

from critic_tasks import registry


class ClassRef(NamedTuple):
    """A class named in a config: ``from <module> import <name>``."""

    module: str
    name: str


GEN_INFERENCER = ClassRef("opencompass.openicl.icl_inferencer", "GenInferencer")
PROMPT_TEMPLATE = ClassRef("opencompass.openicl.icl_prompt_template", "PromptTemplate")
ZERO_RETRIEVER = ClassRef("opencompass.openicl.icl_retriever", "ZeroRetriever")
DATASET = ClassRef("critic_tasks.adapters.opencompass.datasets", "CriticTaskDataset")
EVALUATOR = ClassRef("critic_tasks.adapters.opencompass.evaluators", "CriticTaskEvaluator")
CLASSES = (GEN_INFERENCER, PROMPT_TEMPLATE, ZERO_RETRIEVER, DATASET, EVALUATOR)


def supported(task: registry.Task) -> bool:
    """Tasks OpenCompass runs. Not the sampled pass@k variant: OpenCompass scores each of its ``n`` runs on its
    own, so no evaluator call sees an item's samples together; not SAvg's two stages (lm-eval only: stage 2 reads
    stage 1's lm-eval samples)."""
    return (task.repeats == 1 and task.dimension_spec.scorer in ("parse", "sandbox", "judge", "aiu_judge")
            and not task.self_feedback and task.dimension_spec.data_dimension != "self_feedback")


def runnable_tasks() -> list[registry.Task]:
    return [t for t in registry.TASKS.values() if supported(t)]


def dataset_spec(task: str, judge_cfg: dict | None = None) -> dict:
    spec = registry.task(task)
    if not supported(spec):
        raise ValueError(f"{task}: not available under OpenCompass (samples per item > 1)")
    evaluator = {"type": EVALUATOR, "task": task}
    loader = {}
    if spec.judged:
        # {} when none is given, never None: OpenCompass's eval task reads judge_cfg.get('run_cfg', {})
        evaluator["judge_cfg"] = loader["judge_cfg"] = judge_cfg or {}
    return {
        "abbr": task,
        "type": DATASET,
        "task": task,
        **loader,
        "reader_cfg": {"input_columns": ["prompt"], "output_column": "doc"},
        "infer_cfg": {
            "prompt_template": {"type": PROMPT_TEMPLATE, "template": {"round": [{"role": "HUMAN", "prompt": "{prompt}"}]}},
            "retriever": {"type": ZERO_RETRIEVER},
            "inferencer": {"type": GEN_INFERENCER, "max_out_len": spec.dimension_spec.max_gen_toks},
        },
        "eval_cfg": {"evaluator": evaluator, "pred_role": "BOT"},
    }


def collections() -> dict[str, tuple[list[str], str]]:
    """Dataset collections (``configs/dataset_collections/<name>_gen.py``): name -> (tasks, what it is)."""
    out = {g.name: (list(g.members), g.about) for g in registry.GROUPS.values()}
    everything = [*registry.GROUPS["critic"].members, *registry.GROUPS["critic_sub"].members, "critic_correction_empty"]
    out["critic_all"] = (everything, "every dimension on all domains: objective, judge-scored and correction "
                                     "without feedback")
    out["critic_critiquellm"] = (registry.tags()["critic_critiquellm"], "CritiqueLLM's four AlignBench tasks "
                                 "(pointwise and pairwise, with and without the reference)")
    return out
