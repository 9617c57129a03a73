"""OpenCompass dataset configs for the registry's tasks, and what eval configs use to adjust them.

``dataset_config(task)`` is the one definition; the files under ``configs/`` are generated from it
(``python -m critic_tasks.adapters.opencompass.generate``; a test keeps them in sync) so that OpenCompass's
``--datasets`` finds them by name and users can read them.
"""

from __future__ import annotations

import copy
from typing import Iterable

from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

from critic_tasks import registry
from critic_tasks.adapters.opencompass.datasets import CriticBenchDataset
from critic_tasks.adapters.opencompass.evaluators import CriticBenchEvaluator


def supported(task: registry.Task) -> bool:
    """Tasks OpenCompass runs. Not the sampled pass@k variant: OpenCompass scores each of its ``n`` runs on its
    own, so no evaluator call sees an item's samples together."""
    return task.repeats == 1


def dataset_config(task: str, judge_cfg: dict | None = None) -> dict:
    spec = registry.task(task)
    if not supported(spec):
        raise ValueError(f"{task}: not available under OpenCompass (samples per item > 1)")
    evaluator = {"type": CriticBenchEvaluator, "task": task}
    loader = {}
    if spec.judged:
        evaluator["judge_cfg"] = loader["judge_cfg"] = judge_cfg
    return {
        "abbr": task,
        "type": CriticBenchDataset,
        "task": task,
        **loader,
        "reader_cfg": {"input_columns": ["prompt"], "output_column": "doc"},
        "infer_cfg": {
            "prompt_template": {"type": PromptTemplate, "template": {"round": [{"role": "HUMAN", "prompt": "{prompt}"}]}},
            "retriever": {"type": ZeroRetriever},
            "inferencer": {"type": GenInferencer, "max_out_len": spec.spec.max_gen_toks},
        },
        "eval_cfg": {"evaluator": evaluator, "pred_role": "BOT"},
    }


def dataset_configs(tasks: Iterable[str]) -> list[dict]:
    return [dataset_config(t) for t in tasks]


def with_judge(datasets: list, judge_cfg: dict) -> list:
    """The judge-scored datasets among ``datasets`` graded by ``judge_cfg`` (an OpenCompass model config such as
    ``dict(type=OpenAISDK, path=..., key=..., openai_api_base=...)``), unless ``CRITIC_JUDGE_MODEL`` is set, which
    wins (see ``judging``). Returns new configs; other datasets are returned unchanged."""
    out = []
    for d in datasets:
        d = copy.deepcopy(d)
        if registry.TASKS.get(d.get("task")) is not None and registry.TASKS[d["task"]].judged:
            d["judge_cfg"] = judge_cfg
            d["eval_cfg"]["evaluator"]["judge_cfg"] = judge_cfg
        out.append(d)
    return out
