"""An OpenCompass eval config for the critic benchmark (CriticBench / CriticEval), with three kinds of model.

    critic-eval opencompass examples/eval_critic.py            # checks our settings first, then runs OpenCompass
    opencompass examples/eval_critic.py                        # the same, without the checks

Run it from the environment that has OpenCompass and critic-tasks (``bash scripts/setup.sh --opencompass``).
Keep the models you have and delete the others; the judge-scored datasets need a judge (see ``judge`` below).
"""

from mmengine.config import read_base
from opencompass.models import HuggingFacewithChatTemplate, OpenAISDK, VLLMwithChatTemplate

with read_base():
    # the four objective dimensions, all nine domains (the paper's Table 2); the summarizer prints the paper's table
    from critic_tasks.adapters.opencompass.configs.dataset_collections.critic_gen import critic_datasets

    # the judge-scored dimensions (the paper's Table 1)
    from critic_tasks.adapters.opencompass.configs.dataset_collections.critic_sub_gen import critic_sub_datasets
    from critic_tasks.adapters.opencompass.configs.summarizers.critic import summarizer  # noqa: F401 (read by OpenCompass)

# A judge for the judge-scored datasets, in OpenCompass's own form. CRITIC_JUDGE_MODEL (our setting, shared with
# lm-eval runs) wins over it when set; OC_JUDGE_MODEL / OC_JUDGE_API_BASE / OC_JUDGE_API_KEY are used when neither
# is given. Calls go through critic-tasks' judge layer either way (cached, resumable, retried).
judge = dict(type=OpenAISDK, path="gpt-4-1106-preview", key="ENV", openai_api_base="https://api.openai.com/v1",
             max_out_len=1024, temperature=0.0)

for d in critic_sub_datasets:  # (a config with read_base may not call functions: set the two fields directly)
    d["judge_cfg"] = judge  # checked when the dataset is built, before any generation
    d["eval_cfg"]["evaluator"]["judge_cfg"] = judge  # used when the critiques are graded

datasets = [*critic_datasets, *critic_sub_datasets]
# The reply budget is each dataset's own max_out_len, lm-eval's per task (512; correction 1024), and it wins over the
# models' max_out_len below (OpenCompass fills in a model's only where a dataset sets none). For one budget instead:
# for d in datasets:
#     d["infer_cfg"]["inferencer"]["max_out_len"] = 1024

models = [
    # a local GPU model through vLLM
    dict(type=VLLMwithChatTemplate, abbr="qwen2.5-7b-instruct-vllm", path="Qwen/Qwen2.5-7B-Instruct",
         model_kwargs=dict(tensor_parallel_size=1), max_out_len=1024, batch_size=32, run_cfg=dict(num_gpus=1)),
    # the same through Hugging Face transformers
    dict(type=HuggingFacewithChatTemplate, abbr="qwen2.5-7b-instruct-hf", path="Qwen/Qwen2.5-7B-Instruct",
         max_out_len=1024, batch_size=8, run_cfg=dict(num_gpus=1)),
    # any OpenAI-compatible endpoint (a hosted API, `vllm serve`, llama.cpp's server)
    dict(type=OpenAISDK, abbr="my-api-model", path="my-model", key="ENV", openai_api_base="http://127.0.0.1:8000/v1",
         tokenizer_path="Qwen/Qwen2.5-7B-Instruct", max_seq_len=16384, max_out_len=1024, batch_size=16,
         temperature=0.0, query_per_second=8),
]
