"""The judge's prompt for RM-Bench: RewardBench's v1 pairwise judge, the authors' own text.

RM-Bench (Liu et al. 2025) scores reward models and releases no prompt for a generative judge, so a comparison is
asked as RewardBench's ``generative.py`` asks one (``protocols.rewardbench.authors_prompts``, read at run time from
allenai/reward-bench at the pinned commit): ``prompt_v2`` as the system message (the document's ``system_message``)
and ``MTBENCH_V2["prompt_template"]`` filled with the prompt and the two responses as the user message; the verdict is
``[[A]]`` or ``[[B]]``.
"""

from __future__ import annotations

from critic_tasks.protocols.rewardbench import authors_prompts


def system_message(doc: dict | None = None) -> str:
    """The authors' system message (the same for every document)."""
    return authors_prompts.pairwise_v1()[0]


def critic_prompt(doc: dict) -> str:
    """The user message: the authors' template with the prompt, response A and response B of this order."""
    return authors_prompts.render_pairwise_v1(doc["question"], doc["response_a"], doc["response_b"])[1]
