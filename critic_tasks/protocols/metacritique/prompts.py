"""The critic's prompt for MetaCritique (our wording; the benchmark's fields: the question and the answer)."""

from __future__ import annotations

PROMPT_VERSION = "metacritique-critic-v1"

_CRITIC = """You are reviewing an AI model's answer to a user's question. Write a critique of the answer: point out \
every factual error, mistake in reasoning, missing piece of information and irrelevant content, say what is done \
well, and give specific, actionable suggestions for improving it. Be accurate: only state what is true.

[Question]
{question}

[Model-generated answer]
{response}

[Your critique]
"""


def critic_prompt(doc: dict) -> str:
    return _CRITIC.format(question=doc["question"], response=doc["response"])


def gold_text(doc: dict) -> str:
    """The reference critique, for logs."""
    return doc.get("reference_critique", "")
