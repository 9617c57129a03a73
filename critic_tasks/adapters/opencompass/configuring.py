"""OpenCompass dataset configs for the registry's tasks, and what eval configs use to adjust them.

``spec.dataset_spec(task)`` is the one definition; the files under ``configs/`` are generated from it
(``python -m critic_tasks.adapters.opencompass.generate``; a test keeps them in sync) so that OpenCompass's
``--datasets`` finds them by name and users can read them; ``dataset_config`` is the same config built in Python.
"""

from __future__ import annotations

import copy
import importlib

from critic_tasks import registry
from critic_tasks.adapters.opencompass.spec import ClassRef, dataset_spec


def _resolve(value):
    """A spec with its ``ClassRef``s replaced by the classes they name."""
    if isinstance(value, ClassRef):
        return getattr(importlib.import_module(value.module), value.name)
    if isinstance(value, dict):
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def dataset_config(task: str, judge_cfg: dict | None = None) -> dict:
    """The OpenCompass dataset config of a registered task (what ``configs/datasets/<task>_gen.py`` holds)."""
    return _resolve(dataset_spec(task, judge_cfg))


def with_judge(datasets: list, judge_cfg: dict) -> list:
    """The judge-scored datasets among ``datasets`` graded by ``judge_cfg`` (an OpenCompass model config such as
    ``dict(type=OpenAISDK, path=..., key=..., openai_api_base=...)``), unless ``CRITIC_JUDGE_MODEL`` is set, which
    wins (see ``judging``). Returns new configs; other datasets are returned unchanged."""
    out = []
    for d in datasets:
        d = copy.deepcopy(d)
        if registry.TASKS.get(d.get("task")) is not None and registry.SCORERS[registry.TASKS[d["task"]].scorer].judged:
            d["judge_cfg"] = judge_cfg
            d["eval_cfg"]["evaluator"]["judge_cfg"] = judge_cfg
        out.append(d)
    return out
