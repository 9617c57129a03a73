"""What a backend is: ``generate(prompts, progress=True, on_result=None) -> list[Reply]``, one reply per prompt.

A per-item failure is a ``Reply(text=None, error=...)``, never an exception; ``on_result(index, reply)`` is called
as each reply arrives so the caller can persist it at once (a killed run then loses nothing). Configuration errors
(no model, missing library) do raise, before any call is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol


@dataclass(frozen=True)
class Reply:
    text: str | None
    error: str | None = None
    # what the server said answered (an OpenAI-compatible reply's ``model`` and ``system_fingerprint``), when it
    # said: the judge's fingerprint beside its grade, so a server that swapped the model behind a name shows
    served: dict | None = field(default=None, compare=False)


OnResult = Callable[[int, Reply], None]


class Backend(Protocol):
    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]: ...
