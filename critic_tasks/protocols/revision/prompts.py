"""The revision protocols' prompts (our wording), one version per family: a changed template is never answered from
the old cache, and the results name the versions in use.

* critic (the model under test): the question and the initial response -> feedback;
* reviser: the question, the initial response and the feedback -> a revised response, in the form the item's check
  reads (a final answer line, a ``class Solution``, a whole program in a code block);
* judge: a pairwise preference between two responses with ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie), and a 1-10
  quality rating of one response with ``Rating: [[x]]``; the marker comes first, so a short budget still scores
  (the last marker in a reply counts).
"""

from __future__ import annotations

CRITIC_VERSION = "revision-critic-v1"
REVISER_VERSION = "revision-reviser-v1"
JUDGE_VERSION = "revision-judge-v1"


def versions() -> dict[str, str]:
    return {"critic": CRITIC_VERSION, "reviser": REVISER_VERSION, "judge": JUDGE_VERSION}


def _task(doc: dict) -> str:
    article = f"[Article]\n{doc['article']}\n\n" if doc.get("article") else ""
    return f"{article}[Question]\n{doc['question']}\n\n[Initial response]\n{doc['generation']}\n\n"


_CRITIC = """Review the response below to the question. Write feedback that would help its author improve it: point \
out every error (facts, reasoning, calculations, code), anything missing or irrelevant, and give concrete suggestions \
for a better response. Do not rewrite the response yourself.

{task}[Your feedback]
"""


def critic_prompt(doc: dict) -> str:
    return _CRITIC.format(task=_task(doc))


_FORMS = {
    "final_answer": "Show your reasoning, then end with a line 'The answer is X' giving the final answer.",
    "program_value": "Reply with the complete revised program in one ```python code block: a class Solution whose "
                     "solution() method returns the answer.",
    "unit_test": "Reply with the complete revised code in one ```python code block, keeping the function names and "
                 "signatures of the initial response.",
}
_REVISER = """Revise the initial response to the question using the feedback below. Fix what the feedback rightly \
points out, keep what is good, and ignore suggestions that are wrong. {form}

{task}[Feedback]
{feedback}

[Your revised response]
"""


def reviser_prompt(doc: dict, feedback: str | None) -> str:
    form = _FORMS.get(doc.get("check", ""), "Reply with the revised response only.")
    return _REVISER.format(form=form, task=_task(doc), feedback=(feedback or "").strip() or "(no feedback)")


_PAIRWISE = """Compare two responses to the question below and decide which one is better: more correct, more \
helpful, more complete and clearer. Start your reply with your verdict: [[A]] if response A is better, [[B]] if \
response B is better, or [[C]] for a tie; then explain briefly.

{article}[Question]
{question}

[Response A]
{a}

[Response B]
{b}

[Your verdict]
"""


def pairwise_prompt(doc: dict, a: str, b: str) -> str:
    article = f"[Article]\n{doc['article']}\n\n" if doc.get("article") else ""
    return _PAIRWISE.format(article=article, question=doc["question"], a=a, b=b)


_RATING = """Rate the quality of the response to the question below on a scale of 1 to 10 (1: useless or wrong, \
10: fully correct, helpful and clear). Start your reply with your rating as "Rating: [[x]]", then explain briefly.

{article}[Question]
{question}

[Response]
{response}

[Your rating]
"""


def rating_prompt(doc: dict, response: str) -> str:
    article = f"[Article]\n{doc['article']}\n\n" if doc.get("article") else ""
    return _RATING.format(article=article, question=doc["question"], response=response)


def gold_text(doc: dict) -> str:
    """What a correct revision must give (the gold answer or the test), for logs; empty for judged items."""
    return doc.get("ground_truth_answer") or doc.get("unit_test") or ""
