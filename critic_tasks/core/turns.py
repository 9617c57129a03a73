"""A reply made of several turns of one conversation (a protocol that asks again when a reply lacks its answer).

``Turns`` is the text the protocol reads (its turns joined the way the protocol's authors join them) and, beside it,
each turn as the model wrote it. It is a ``str``, so every harness step that handles a reply (filters, logging,
JSON) handles it unchanged; the record maker reads ``turns`` where it is there (a run that asked again) and sees a
plain ``str`` where it is not (plain ``lm_eval``, a re-scoring of logged samples).
"""

from __future__ import annotations

from typing import Sequence


class Turns(str):
    turns: tuple[str, ...]

    def __new__(cls, text: str, turns: Sequence[str]) -> "Turns":
        joined = super().__new__(cls, text)
        joined.turns = tuple(turns)
        return joined

    def __reduce__(self):  # pickled (a cache, a worker) as what it is
        return (Turns, (str(self), self.turns))


def turns_of(reply) -> tuple[str, ...]:
    """The turns of a reply: its ``turns`` where it is a ``Turns``, else the reply alone (one turn)."""
    if isinstance(reply, Turns):
        return reply.turns
    return (reply,) if isinstance(reply, str) else ()
