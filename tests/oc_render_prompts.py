"""The chat messages OpenCompass would send for our datasets, rendered by OpenCompass's own code, no model loaded.

    .venv-opencompass/bin/python tests/oc_render_prompts.py OUT.json TASK [TASK ...]

For every task: its dataset config (as the generated config tree holds it) is built by OpenCompass, its prompts made
by OpenCompass's GenInferencer step (retriever + prompt template), parsed by each model class's template parser, and
turned into messages the way each class's ``generate`` does it: ``_convert_chat_messages`` for
HuggingFacewithChatTemplate and VLLMwithChatTemplate (what they hand to the tokenizer's chat template), and
``_preprocess_messages`` + ``_messages_to_chat_completions`` for OpenAISDK (what it posts). Writes
``{task: {"hf": [...], "vllm": [...], "openai": [...], "hf_system": [...]}}``, one message list per document;
``hf_system``: HuggingFacewithChatTemplate with a meta template that declares the SYSTEM role (``SYSTEM_META``,
docs/opencompass.md), which sends a dataset's system messages as such.
"""

from __future__ import annotations

import json
import sys

from mmengine.config import ConfigDict
from opencompass.models import OpenAISDK
from opencompass.models.base_api import APITemplateParser
from opencompass.models.huggingface_above_v4_33 import HuggingFacewithChatTemplate, _convert_chat_messages
from opencompass.models.huggingface_above_v4_33 import _get_meta_template as hf_meta_template
from opencompass.models.vllm_with_tf_above_v4_33 import VLLMwithChatTemplate
from opencompass.models.vllm_with_tf_above_v4_33 import _get_meta_template as vllm_meta_template
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.registry import ICL_PROMPT_TEMPLATES, ICL_RETRIEVERS
from opencompass.utils.build import build_dataset_from_cfg

from critic_tasks.adapters.opencompass.configuring import dataset_config


def prompts(task: str) -> list:
    cfg = ConfigDict(dataset_config(task, judge_cfg={"path": "judge", "openai_api_base": "http://127.0.0.1:9/v1"}))
    dataset = build_dataset_from_cfg(cfg)
    infer = cfg["infer_cfg"]
    retriever = ICL_RETRIEVERS.build({**infer["retriever"], "dataset": dataset})
    template = ICL_PROMPT_TEMPLATES.build(infer["prompt_template"])
    # GenInferencer's own step (its model is only used to measure prompts when max_seq_len is set)
    return GenInferencer.get_generation_prompt_list_from_retriever_indices(
        None, retriever.retrieve(), retriever, "", max_seq_len=None, prompt_template=template)


SYSTEM_META = dict(round=[dict(role="HUMAN", api_role="HUMAN"), dict(role="BOT", api_role="BOT", generate=True)],
                   reserved_roles=[dict(role="SYSTEM", api_role="SYSTEM")])


def local_model(cls, meta_template, meta=None):
    model = cls.__new__(cls)  # no weights: only the template parser that __init__ sets up
    model.template_parser = meta_template(meta)
    return model


def main(out: str, tasks: list[str]) -> None:
    hf = local_model(HuggingFacewithChatTemplate, hf_meta_template)
    vllm = local_model(VLLMwithChatTemplate, vllm_meta_template)
    api = local_model(OpenAISDK, APITemplateParser)  # as BaseAPIModel.__init__ sets it (tiktoken needs no download)
    hf_system = local_model(HuggingFacewithChatTemplate, hf_meta_template, SYSTEM_META)
    rendered = {}
    for task in tasks:
        batch = prompts(task)
        api_inputs = api.parse_template(batch, mode="gen")
        rendered[task] = {
            "hf": _convert_chat_messages(hf.parse_template(batch, mode="gen")),
            "vllm": _convert_chat_messages(vllm.parse_template(batch, mode="gen")),
            "hf_system": _convert_chat_messages(hf_system.parse_template(batch, mode="gen")),
            "openai": [api._messages_to_chat_completions(api._preprocess_messages(p, None, 10**9, "none", len)[0])
                       for p in api_inputs],
        }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(rendered, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
