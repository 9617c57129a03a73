"""One JudgeBench task through OpenCompass's own inference and evaluation steps with our inferencer, a scripted
critic and no model loaded: the prompts rendered by OpenCompass (HuggingFacewithChatTemplate's template parser, with a
meta template declaring the SYSTEM role), the replies looked up by the user message they answer, the second turn
asked by CriticGenInferencer, the predictions file read back and scored by the config's evaluator as OpenCompass's
eval task hands it the prediction entries' keys (``openicl_eval``: exactly the keys ``score`` names).

    .venv-opencompass/bin/python tests/oc_second_turn.py OUT.json TASK REPLIES.json

REPLIES.json: ``{"turns": {user message: [first reply, second reply]}, "follow_up": the second user turn}``. Writes
``{"metrics": {...}, "sent": [[messages], ...], "predictions": {...}}``.
"""

from __future__ import annotations

import inspect
import json
import sys
import tempfile
from pathlib import Path

from mmengine.config import ConfigDict
from opencompass.models.huggingface_above_v4_33 import HuggingFacewithChatTemplate, _convert_chat_messages
from opencompass.models.huggingface_above_v4_33 import _get_meta_template as hf_meta_template
from opencompass.registry import ICL_EVALUATORS, ICL_INFERENCERS, ICL_PROMPT_TEMPLATES, ICL_RETRIEVERS
from opencompass.utils.build import build_dataset_from_cfg

import critic_tasks.adapters.opencompass.evaluators  # noqa: F401 (registers our evaluators)
from critic_tasks.adapters.opencompass.configuring import dataset_config

SYSTEM_META = dict(round=[dict(role="HUMAN", api_role="HUMAN"), dict(role="BOT", api_role="BOT", generate=True)],
                   reserved_roles=[dict(role="SYSTEM", api_role="SYSTEM")])


class ScriptedChatModel(HuggingFacewithChatTemplate):
    """HuggingFacewithChatTemplate without weights: its template parser and message conversion, then a lookup."""

    def __new__(cls, turns: dict, follow_up: str):
        model = object.__new__(cls)
        model.template_parser = hf_meta_template(SYSTEM_META)
        model.turns, model.follow_up, model.sent = turns, follow_up, []
        return model

    def __init__(self, *args, **kwargs):
        pass

    def generate(self, inputs, max_out_len: int, **kwargs) -> list[str]:
        out = []
        for messages in _convert_chat_messages(inputs):
            self.sent.append(messages)
            user = next(m["content"] for m in messages if m["role"] == "user")
            first, second = self.turns[user]
            out.append(first if messages[-1]["content"] == user else second)
        return out


def main(out: str, task: str, replies: str) -> None:
    given = json.loads(Path(replies).read_text(encoding="utf-8"))
    model = ScriptedChatModel(given["turns"], given["follow_up"])
    metrics, predictions = infer_and_score(ConfigDict(dataset_config(task)), model)
    Path(out).write_text(json.dumps({"metrics": metrics, "sent": model.sent, "predictions": predictions}),
                         encoding="utf-8")


def infer_and_score(cfg: ConfigDict, model) -> tuple[dict, dict]:
    """One dataset config through OpenCompass's inference step (its retriever, prompt template and inferencer, with
    ``model``) and its eval step's hand-over to the config's evaluator: the metrics (without ``details``) and the
    predictions file."""
    dataset = build_dataset_from_cfg(cfg)
    infer = cfg["infer_cfg"]
    retriever = ICL_RETRIEVERS.build({**infer["retriever"], "dataset": dataset})
    template = ICL_PROMPT_TEMPLATES.build(infer["prompt_template"])
    with tempfile.TemporaryDirectory() as folder:
        inferencer = ICL_INFERENCERS.build({**infer["inferencer"], "model": model, "batch_size": 8,
                                            "output_json_filepath": folder})
        inferencer.inference(retriever, prompt_template=template, output_json_filepath=folder,
                             output_json_filename="predictions.json")
        predictions = json.loads((Path(folder) / "predictions.json").read_text(encoding="utf-8"))
    entries = [predictions[str(i)] for i in range(len(predictions))]
    # OpenCompass's eval task: every key of the entries as a list, the predictions and references, then only the
    # keys the evaluator's score takes (opencompass/tasks/openicl_eval.py)
    handed = {k: [e.get(k) for e in entries] for k in entries[0]}
    handed["predictions"] = handed.pop("prediction")
    handed["references"] = dataset.test[cfg["reader_cfg"]["output_column"]]
    # the config's own evaluator class, built as OpenCompass builds it, handed exactly what its score names (a name
    # the predictions lack is OpenCompass's KeyError: every task's run failed when the one evaluator named turns)
    evaluator = ICL_EVALUATORS.build(cfg["eval_cfg"]["evaluator"])
    metrics = evaluator.score(**{k: handed[k] for k in inspect.signature(evaluator.score).parameters})
    metrics.pop("details", None)
    return metrics, predictions


if __name__ == "__main__":
    main(*sys.argv[1:])
