"""The judge's prompt for RewardBench: the authors' v1 pairwise judge (``generative.py``'s ``format_judge_answers``
for a single-turn prompt, read at run time: ``authors_prompts``): ``prompt_v2`` as the system message (the
document's ``system_message``) and ``MTBENCH_V2["prompt_template"]`` with the prompt and the two responses of the
order shown as the user message."""

from __future__ import annotations

from critic_tasks.protocols.rewardbench import authors_prompts


def critic_prompt(doc: dict) -> str:
    return authors_prompts.render_pairwise_v1(doc["question"], doc["response_a"], doc["response_b"])[1]
