"""What a run remembers, and only that run: warnings said once, endpoints already found answering.

A module-level set that lives for the whole process makes a second run in the same process (a notebook, a script
calling ``critic-eval``'s ``main`` twice, the test suite) stay silent about what the first one already said, and
makes a test pass or fail by which test ran before it. Each such memory is made here (``per_run``), and
``new_run()`` clears them all: ``critic-eval`` calls it as a command starts, the tests before each test. What is
right for the whole process (a loaded model or vLLM engine, what the machine's sandbox can do) is not kept here.
"""

from __future__ import annotations

from typing import TypeVar

_MEMORIES: list = []
T = TypeVar("T", set, dict)


def per_run(memory: T) -> T:
    """``memory`` (an empty set or dict), cleared by every ``new_run()``."""
    _MEMORIES.append(memory)
    return memory


def new_run() -> None:
    """Forget what the previous run said and checked."""
    for memory in _MEMORIES:
        memory.clear()
