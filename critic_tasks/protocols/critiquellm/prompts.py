"""The critic's prompts for CritiqueLLM's AlignBench tasks (our wording; the paper's fields, rubric and ``[[x]]`` marker).

Two variants (``protocols.variants``), chosen per run and recorded with the results:

* ``paper`` (default): the setting of the paper's evaluation prompts (Ke et al. 2023, Appendix B-C, Tables 6-7,
  the AlignBench setting): an impartial judge weighs helpfulness, relevance, accuracy, depth, creativity and level of
  detail, writes its explanation first (in Chinese, as the paper asks) and ends with the rating ``[[x]]``, 1-10,
  following a five-band rubric (1-2, 3-4, 5-6, 7-8, 9-10) that is anchored on the reference answer in the
  reference-based setting and absolute in the reference-free one (where an unremarkable answer gets about 7).
  Sections: ``[Question]``, ``[The Start of Reference Answer]`` ... ``[The End of Reference Answer]``,
  ``[The Start of Assistant's Answer]`` ... ``[The End of Assistant's Answer]``. The rating is read at the end.
  Pairwise (the paper prints no pairwise prompt): the same judge compares two answers, explanation first, verdict
  ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie) last.
* ``short``: the rating (or verdict) on the first line, then a short critique, no rubric; for short generation
  budgets. The marker is read at the start.
"""

from __future__ import annotations

from critic_tasks.protocols import variants

# ----------------------------------------------------------------------------- paper variant

_JUDGE = ("[Instruction]\nAct as an impartial judge of the {what} the user question below. Weigh how helpful, "
          "relevant, accurate and deep {them} {are}, how creative, and how much detail {they} {give}. {given} Stay as "
          "objective as possible.\n")

_RUBRIC_REFERENCED = """First write your explanation, in Chinese. Then rate the answer on a scale of 1 to 10, keeping \
strictly to these bands:
1-2: chaotic or missing; the answer does not address the instruction at all, or makes serious mathematical, logical \
or factual errors; it falls far short of the reference answer, with a gap that cannot be bridged.
3-4: fragmentary; the grammar, fluency or accuracy is poor; it is clearly worse than the reference answer.
5-6: an average answer with some shortcomings next to the reference answer: it does not fully follow the \
instruction, or it is somewhat lacking in helpfulness, relevance, depth, creativity or detail; its weaknesses \
outweigh its strengths.
7-8: a good answer, about as good as the reference answer: it follows the instruction and is helpful, relevant, \
accurate, deep, creative and detailed; it may have flaws next to the reference, but they do not outweigh these \
strengths.
9-10: better than the reference answer in most respects; it fully achieves what the instruction asks.
"""

_RUBRIC_FREE = """First write your explanation, in Chinese. Then rate the answer on a scale of 1 to 10, keeping \
strictly to these bands:
1-2: chaotic or missing; the answer does not address the instruction at all, or makes serious mathematical, logical \
or factual errors; it is far from satisfactory.
3-4: fragmentary; the grammar, fluency or accuracy is poor; it is not satisfactory.
5-6: mediocre but not without merit: it does not fully follow the instruction, or it is somewhat lacking in \
helpfulness, relevance, depth, creativity or detail; its weaknesses are noticeable.
7-8: a good answer: it follows the instruction and is helpful, relevant, accurate, deep, creative and detailed; it may \
have flaws, but they do not outweigh these strengths.
9-10: excellent in almost every respect; it fully achieves what the instruction asks, beyond expectation, and could \
serve as a model answer.
Give about 7 to an answer in which you find no clear strengths or weaknesses; think twice before giving the lowest \
or the highest scores.
"""

_RATING_LAST = 'End your reply with the rating in exactly this form: "Rating: [[x]]", for example "Rating: [[5]]".\n'


def _paper_reference(doc: dict) -> str:
    if not _with_reference(doc):
        return ""
    return f"[The Start of Reference Answer]\n{doc['reference']}\n[The End of Reference Answer]\n\n"


def _with_reference(doc: dict) -> bool:
    return bool(doc.get("with_reference")) and doc.get("reference") is not None


def _paper_pointwise(doc: dict) -> str:
    ref = _with_reference(doc)
    head = _JUDGE.format(what="AI assistant's answer to", them="it", are="is", they="it", give="gives",
                         given="You are given a high-quality reference answer and the assistant's answer."
                         if ref else "You are given the assistant's answer.")
    return (head + (_RUBRIC_REFERENCED if ref else _RUBRIC_FREE) + _RATING_LAST
            + f"\n[Question]\n{doc['question']}\n\n" + _paper_reference(doc)
            + f"[The Start of Assistant's Answer]\n{doc['response']}\n[The End of Assistant's Answer]\n")


def _paper_pairwise(doc: dict) -> str:
    ref = _with_reference(doc)
    head = _JUDGE.format(what="answers two AI assistants gave to", them="they", are="are", they="they", give="give",
                         given="You are given a high-quality reference answer and the two assistants' answers."
                         if ref else "You are given the two assistants' answers.")
    ask = ("First write your explanation, in Chinese: compare the two answers"
           + (" with each other and with the reference answer" if ref else "")
           + ". The order in which the answers appear, their length and the assistants' names must not influence "
             'you. Then end your reply with your verdict in exactly this form: "[[A]]" if assistant A\'s answer is '
             'better, "[[B]]" if assistant B\'s answer is better, "[[C]]" for a tie.\n')
    return (head + ask + f"\n[Question]\n{doc['question']}\n\n" + _paper_reference(doc)
            + f"[The Start of Assistant A's Answer]\n{doc['response_a']}\n[The End of Assistant A's Answer]\n\n"
            + f"[The Start of Assistant B's Answer]\n{doc['response_b']}\n[The End of Assistant B's Answer]\n")


# ----------------------------------------------------------------------------- short variant

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
    if _with_reference(doc):
        return {"ref_note": ", using the reference answer as a guide to what a good answer contains",
                "reference_block": f"\n[Reference answer]\n{doc['reference']}\n"}
    return {"ref_note": "", "reference_block": ""}


def pointwise_prompt(doc: dict) -> str:
    if variants.of(doc) == variants.PAPER:
        return _paper_pointwise(doc)
    return _POINTWISE.format(question=doc["question"], response=doc["response"], **_reference(doc))


def pairwise_prompt(doc: dict) -> str:
    if variants.of(doc) == variants.PAPER:
        return _paper_pairwise(doc)
    return _PAIRWISE.format(question=doc["question"], response_a=doc["response_a"], response_b=doc["response_b"],
                            **_reference(doc))


def critic_prompt(doc: dict) -> str:
    return pairwise_prompt(doc) if doc["dimension"] == "alignbench_pairwise" else pointwise_prompt(doc)
