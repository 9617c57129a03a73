"""OpenCompass datasets: one class for every registered task, reading the same data layer as the lm-eval tasks.

Each row is one document: ``prompt`` (the critic prompt, our protocol's or the toolkit's) and ``doc`` (the document
as JSON, the evaluator's reference). Comparison tasks hold both orders as rows; the evaluator pairs them again.

A protocol's options (what lm-eval takes as ``--metadata``: RewardBench's ``orders`` and ``seed``, RewardBench 2's
``ratings`` and ``seed``, JudgeBench's ``prompt``, ...) are keys of the dataset config (``d['orders'] = 'both'``),
which OpenCompass hands ``load``; a key the protocol does not take, or one the task fixes (RM-Bench's ``domain``),
is one error line rather than a setting silently dropped.
"""

from __future__ import annotations

import json

from datasets import Dataset
from opencompass.datasets.base import BaseDataset
from opencompass.registry import LOAD_DATASET

from critic_tasks import registry
from critic_tasks.adapters.opencompass.errors import clear_errors
from critic_tasks.adapters.opencompass.judging import require_judge
from critic_tasks.adapters.opencompass.spec import SYSTEM_COLUMN, check_options, config_options
from critic_tasks.engine import prompt, task_docs


@LOAD_DATASET.register_module()
class CriticTaskDataset(BaseDataset):
    """Every registered task of every protocol (CriticBench, CritiqueLLM, MetaCritique), by its name."""

    @staticmethod
    @clear_errors
    def load(task: str, **settings):
        """``task``: a registered task (``critic-eval tasks``). ``settings``: ``data_dir`` (else the protocol's data
        variable: ``CRITICBENCH_DATA_DIR``, ``CRITIQUELLM_DATA_DIR``, ``METACRITIQUE_DATA_DIR``, ...; else the
        published copy), ``protocol`` / ``toolkit_dir`` as for the lm-eval tasks, ``judge_cfg``,
        ``critic_max_out_len`` (lm-eval's budget, recorded in the config for the reader; spec.LOADER_SETTINGS), and the
        protocol's other options, as lm-eval's ``--metadata`` gives them (spec.config_options). Settings the task's
        scoring needs are checked here, before any generation."""
        spec = registry.task(task)
        options = config_options(settings)
        check_options(spec, options)
        scorer = registry.SCORERS[spec.scorer]
        scorer.check_settings()
        if scorer.judged:
            require_judge(task, settings.get("judge_cfg"))
        docs = task_docs(task, settings.get("data_dir"), settings.get("protocol"), settings.get("toolkit_dir"),
                         **options)
        # a protocol with system messages (JudgeBench's authors' judge) sends each document's in the SYSTEM role
        system = registry.PROTOCOLS[spec.kind_spec.protocol].system_message
        return Dataset.from_list([{"prompt": prompt(d, task), "doc": json.dumps(d, default=str),
                                   **({SYSTEM_COLUMN: d.get(SYSTEM_COLUMN) or ""} if system else {})} for d in docs])


