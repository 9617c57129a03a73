"""Our generated dataset configs through OpenCompass's own inference and evaluation steps, replies played back and no
model loaded: each config file read as OpenCompass reads it (``configs/datasets/<task>_gen.py``), the protocol's
options set as a user's eval config sets them (``d['orders'] = 'both'``), the prompts rendered by
HuggingFacewithChatTemplate's template parser with a meta template declaring SYSTEM (tests/oc_second_turn.py), and
each conversation answered with the reply recorded for it; a conversation without one stops the run (OpenCompass
asked something lm-eval did not).

    .venv-opencompass/bin/python tests/oc_replayed_datasets.py OUT.json RUNS.json

RUNS.json: ``{"replies": {label: {json.dumps(messages): reply}}, "runs": [{"label": ..., "task": ..., "options":
{...}}]}``: each run answered only with its label's replies (those lm-eval recorded with the same options).
Writes ``{label: {task: {"metrics": {...}, "asked": n}}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mmengine.config import Config, ConfigDict
from oc_second_turn import SYSTEM_META, infer_and_score
from opencompass.models.huggingface_above_v4_33 import HuggingFacewithChatTemplate, _convert_chat_messages
from opencompass.models.huggingface_above_v4_33 import _get_meta_template as hf_meta_template

from critic_tasks.adapters.opencompass import CONFIG_DIR


class ReplayedChatModel(HuggingFacewithChatTemplate):
    """HuggingFacewithChatTemplate without weights: its template parser and message conversion, then the reply
    recorded for the exact conversation."""

    def __new__(cls, replies: dict):
        model = object.__new__(cls)
        model.template_parser = hf_meta_template(SYSTEM_META)
        model.replies, model.asked = replies, 0
        return model

    def __init__(self, *args, **kwargs):
        pass

    def generate(self, inputs, max_out_len: int, **kwargs) -> list[str]:
        out = []
        for messages in _convert_chat_messages(inputs):
            key = json.dumps(messages)
            if key not in self.replies:
                raise SystemExit(f"OpenCompass asked a conversation lm-eval did not: {key[:600]}")
            out.append(self.replies[key])
        self.asked += len(out)
        return out


def main(out: str, runs: str) -> None:
    given = json.loads(Path(runs).read_text(encoding="utf-8"))
    results = {}
    for run in given["runs"]:
        task = run["task"]
        [cfg] = Config.fromfile(str(CONFIG_DIR / "datasets" / f"{task}_gen.py"))[f"{task}_datasets"]
        cfg = ConfigDict({**cfg, **run.get("options", {})})
        model = ReplayedChatModel(given["replies"][run["label"]])
        metrics, _ = infer_and_score(cfg, model)
        results.setdefault(run["label"], {})[task] = {"metrics": metrics, "asked": model.asked}
    Path(out).write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
