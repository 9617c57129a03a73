"""OpenCompass evaluator: one class for every registered task, scoring through the same core as the lm-eval tasks.

``score(predictions, references)`` gets the model's replies and the documents (the dataset's ``doc`` column) and
returns the registry's metric keys for the task (``spearman``, ``score``, ``parse_rate``, ``spearman_low``, ...;
the values an lm-eval run reports for the same generations) and ``details``: one entry per item with what was
parsed, checked or graded, which OpenCompass writes into its result files.
"""

from __future__ import annotations

import json

from opencompass.openicl.icl_evaluator import BaseEvaluator
from opencompass.registry import ICL_EVALUATORS

from critic_tasks import registry
from critic_tasks.adapters.opencompass.errors import clear_errors
from critic_tasks.adapters.opencompass.judging import require_judge
from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import DataError
from critic_tasks.core.turns import Turns
from critic_tasks.engine import judge_identity, score_task
from critic_tasks.sandbox import get_executor


@ICL_EVALUATORS.register_module()
class CriticTaskEvaluator(BaseEvaluator):
    """Scores every registered task of every protocol, by its name."""

    def __init__(self, task: str, executor: str | None = None, judge_cfg: dict | None = None,
                 pred_postprocessor=None) -> None:
        super().__init__(pred_postprocessor=pred_postprocessor)
        self.task = registry.task(task).name
        self.executor_name = executor
        self.judge_cfg = judge_cfg

    # OpenCompass hands score() exactly the prediction fields its signature names, and refuses a run whose
    # predictions lack one (KeyError): so only the evaluator of the tasks whose inferencer records ``turns``
    # (CriticTurnsEvaluator) names it
    @clear_errors
    def score(self, predictions: list, references: list) -> dict:
        return self.scored(predictions, references, None)

    def scored(self, predictions: list, references: list, turns: list | None) -> dict:
        """``turns``: each prediction's turns where the inferencer asked again (CriticGenInferencer: JudgeBench's
        second turn), so its record counts it as an lm-eval run's does."""
        if len(predictions) != len(references):
            raise DataError(f"{self.task}: {len(predictions)} predictions for {len(references)} documents")
        docs = [json.loads(r) if isinstance(r, str) else r for r in references]
        scorer = registry.SCORERS[registry.task(self.task).scorer]
        judge = require_judge(self.task, self.judge_cfg) if scorer.judged else None
        executor = None
        if scorer.uses_executor:
            executor = get_executor(self.executor_name)  # None: CRITIC_EXECUTOR's
        texts = [p if isinstance(p, str) else None for p in predictions]
        if turns is not None and len(turns) == len(texts):
            texts = [Turns(t, asked) if isinstance(t, str) and isinstance(asked, list) and len(asked) > 1 else t
                     for t, asked in zip(texts, turns)]
        metrics, records = score_task(self.task, docs, texts, executor=executor, judge=judge)
        details = [{"item": item_label(d), "prediction": t, **r.as_dict()}
                   for d, t, r in zip(docs, texts, records)]
        out: dict = {**metrics, "details": details}
        if judge is not None:
            out["judge"] = judge_identity(self.task, judge)
        return out


@ICL_EVALUATORS.register_module()
class CriticTurnsEvaluator(CriticTaskEvaluator):
    """The evaluator of a task whose inferencer asks again (``CriticGenInferencer``): its predictions keep their
    ``turns``, which OpenCompass hands ``score`` because it names them."""

    @clear_errors
    def score(self, predictions: list, references: list, turns: list) -> dict:
        return self.scored(predictions, references, turns)
