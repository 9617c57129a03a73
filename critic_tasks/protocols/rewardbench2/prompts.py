"""The judge's prompt for RewardBench 2 (``authors_prompts``, the authors' ``generative_v2.py`` read at run time):
a four-way document's user message is ``MTBENCH_V2["prompt_template"]`` with the prompt and the four answers in the
arrangement shown (``prompt_v2``, its ``system_message``, is the system turn); a rating document's is
``ratings_prompt`` (``ratings_prompt_ties`` in Ties) with the prompt and the one answer, and no system turn."""

from __future__ import annotations

from critic_tasks.protocols.rewardbench2 import authors_prompts
from critic_tasks.protocols.rewardbench2.data import FOUR_WAY


def critic_prompt(doc: dict) -> str:
    if doc["mode"] == FOUR_WAY:
        return authors_prompts.render_four_way(doc["question"], doc["answers_shown"])[1]
    return authors_prompts.render_rating(doc["question"], doc["response"], ties=bool(doc.get("ties_prompt")))
