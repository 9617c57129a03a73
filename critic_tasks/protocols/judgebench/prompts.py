"""The critic's prompt for JudgeBench: the document's ``user_message`` (the loader renders it: the authors' judge
format by default, ``judges.py``), or our wording (``prompt: ours``, below).

Our wording keeps the fields, section markers and verdict labels of the Arena-Hard judge, which the paper uses as its
main prompted judge (Tan et al. 2024, Sections 4-5), in a prompt of our own with no system message.

The judge first works the question out itself, then compares both answers with its own, putting correctness first,
and ends with exactly one of the five Arena-Hard labels in double brackets: ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``,
``[[B>A]]``, ``[[B>>A]]`` (the tie is allowed, as in the authors' prompt). Sections: ``<|User Prompt|>``,
``<|The Start of Assistant A's Answer|>`` ... ``<|The End of Assistant A's Answer|>``, and the same for B.
"""

from __future__ import annotations

_INSTRUCTIONS = """You are an impartial judge. Two AI assistants have answered the user prompt below; decide which \
answer is better.

Correctness comes first: an answer that reaches a wrong result is worse than one that reaches the right result, \
however well it is written. Before reading the answers, work the prompt out yourself. Then compare each answer \
with your own: name its mistakes and inaccuracies, and what it leaves out. After correctness, weigh how helpful, \
relevant and concise each answer is. Neither the order in which the answers appear nor their length should sway you.

Finish with your verdict: one label in double square brackets, written once and nowhere else in your reply.
[[A>>B]] means A's answer is clearly better; [[A>B]] means A's is somewhat better; [[A=B]] means the two are about \
equal; [[B>A]] means B's is somewhat better; [[B>>A]] means B's is clearly better.
"""


def critic_prompt(doc: dict) -> str:
    """What the critic is asked (the system message, if any, is the document's ``system_message``)."""
    user = doc.get("user_message")
    return user if isinstance(user, str) and user else our_prompt(doc)


def our_prompt(doc: dict) -> str:
    """Our wording of the Arena-Hard judge's request (``prompt: ours``)."""
    return (_INSTRUCTIONS + f"\n<|User Prompt|>\n{doc['question']}\n\n"
            + f"<|The Start of Assistant A's Answer|>\n{doc['response_a']}\n<|The End of Assistant A's Answer|>\n\n"
            + f"<|The Start of Assistant B's Answer|>\n{doc['response_b']}\n<|The End of Assistant B's Answer|>\n")
