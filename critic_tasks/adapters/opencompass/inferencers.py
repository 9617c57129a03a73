"""OpenCompass's generation with a protocol's second turn (JudgeBench's Arena-Hard judge asks a reply without a
verdict again), as ``critic-eval`` asks it through lm-eval (``adapters/lm_eval/turns.py``).

``CriticGenInferencer`` is OpenCompass's ``GenInferencer`` plus one more pass: after the first replies (written as
``pass1_<predictions>`` until the predictions file is written, so a run killed in the second pass resumes from
them; the first pass resumes as GenInferencer's does), each reply whose protocol names a follow-up for it
(``registry.Protocol.follow_up``, on the row's document) is asked again, in batches, with the conversation so far
(``templates.dialogue``: the system message, the prompt, the reply, the follow-up), and the prediction is both turns
joined as the protocol's authors join them. Every prediction keeps its turns (``turns``), which OpenCompass hands the
evaluator with the predictions (``CriticTurnsEvaluator.score(..., turns)``), so the records count the second turns as
an lm-eval run's do.
"""

from __future__ import annotations

import json
from pathlib import Path

from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.registry import ICL_INFERENCERS

from critic_tasks import registry
from critic_tasks.adapters.opencompass.spec import SYSTEM_COLUMN
from critic_tasks.adapters.opencompass.templates import dialogue

FIRST_PASS = "pass1_"


@ICL_INFERENCERS.register_module()
class CriticGenInferencer(GenInferencer):

    def __init__(self, *args, task: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.task = task

    def inference(self, retriever, ice_template=None, prompt_template=None, output_json_filepath=None,
                  output_json_filename=None):
        folder = Path(output_json_filepath or self.output_json_filepath)
        name = output_json_filename or self.output_json_filename
        first_file = folder / f"{FIRST_PASS}{name}"
        first_file = first_file if first_file.suffix else first_file.with_suffix(".json")
        if not first_file.is_file():  # else a killed run's first pass, kept whole
            super().inference(retriever, ice_template, prompt_template, str(folder), first_file.name)
        results = json.loads(first_file.read_text(encoding="utf-8"))
        steps = registry.PROTOCOLS[registry.task(self.task).kind_spec.protocol] if self.task else None
        rows = retriever.test_ds
        again = []
        for key, result in results.items():
            first = result["prediction"]
            result["turns"] = [first]
            row = rows[int(key)]
            doc = json.loads(row["doc"]) if isinstance(row.get("doc"), str) else row.get("doc") or {}
            follow_up = steps.follow_up(doc, first) if steps is not None and isinstance(first, str) else None
            if follow_up:
                again.append((key, dialogue(row.get(SYSTEM_COLUMN) or "", row["prompt"], ((first, follow_up),))))
        for start in range(0, len(again), self.batch_size or 1):
            batch = again[start:start + (self.batch_size or 1)]
            seconds = self.model.generate_from_template([prompt for _, prompt in batch], max_out_len=self.max_out_len)
            for (key, _), second in zip(batch, seconds):
                first = results[key]["prediction"]
                results[key]["turns"] = [first, second]
                results[key]["prediction"] = steps.join_turns((first, second))
        if self.is_main_process:
            target = folder / (name if Path(name).suffix else f"{name}.json")
            try:
                text = json.dumps(results, indent=4, ensure_ascii=False)
                text.encode("utf-8")
            except UnicodeEncodeError:  # a reply holding a lone surrogate: escaped (JSON reads it back the same)
                text = json.dumps(results, indent=4)
            target.write_text(text, encoding="utf-8")
            first_file.unlink(missing_ok=True)  # the predictions file is whole: nothing left to resume
        return [r["prediction"] for r in results.values()]
