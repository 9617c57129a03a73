"""The critic's prompts for CritiqueLLM's AlignBench tasks (our wording; the paper's fields and its ``[[x]]`` marker).

Pointwise: the user question, the reference answer (reference-based tasks only) and the AI assistant's answer;
the critic gives an overall rating from 1 to 10 as ``[[x]]`` and a critique. Pairwise: two assistants' answers; the
critic names the better one as ``[[A]]`` / ``[[B]]`` (``[[C]]`` for a tie). The marker is asked for on the first
line, so a short generation budget still scores; the data is Chinese and the critique may be in either language.
"""

from __future__ import annotations

PROMPT_VERSION = "critiquellm-v1"

_POINTWISE = """You are an expert evaluator of AI assistants. Judge how well the AI assistant's answer below serves \
the user's question: correctness, helpfulness, relevance, depth, and clarity{ref_note}.

Begin your reply with the overall rating on its own line, written exactly as "Rating: [[x]]" where x is an integer \
from 1 (very poor) to 10 (excellent). Then write a short critique: what the answer does well, what it gets wrong or \
misses, and how it could be improved.

[User question]
{question}
{reference_block}
[AI assistant's answer]
{response}
"""

_PAIRWISE = """You are an expert evaluator of AI assistants. Compare the two AI assistants' answers below to the \
user's question: correctness, helpfulness, relevance, depth, and clarity{ref_note}. The order in which the answers \
appear must not influence you.

Begin your reply with your verdict on its own line: "[[A]]" if assistant A's answer is better, "[[B]]" if assistant \
B's answer is better, "[[C]]" if they are equally good. Then explain your verdict briefly.

[User question]
{question}
{reference_block}
[Assistant A's answer]
{response_a}

[Assistant B's answer]
{response_b}
"""


def _reference(doc: dict) -> dict:
    if doc.get("with_reference") and doc.get("reference") is not None:
        return {"ref_note": ", using the reference answer as a guide to what a good answer contains",
                "reference_block": f"\n[Reference answer]\n{doc['reference']}\n"}
    return {"ref_note": "", "reference_block": ""}


def pointwise_prompt(doc: dict) -> str:
    return _POINTWISE.format(question=doc["question"], response=doc["response"], **_reference(doc))


def pairwise_prompt(doc: dict) -> str:
    return _PAIRWISE.format(question=doc["question"], response_a=doc["response_a"], response_b=doc["response_b"],
                            **_reference(doc))


def critic_prompt(doc: dict) -> str:
    return pairwise_prompt(doc) if doc["dimension"] == "alignbench_pairwise" else pointwise_prompt(doc)
