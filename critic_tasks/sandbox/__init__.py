"""The sandbox, one room: run untrusted programs (model-written corrections, their unit tests) and say how each
ended. This file is its public entry; the rest is private.

For scoring, its contract is ``Executor.run_pairs(pairs)`` -> one ``PairResult`` per ``Pair``, whose
``trusted.status`` (the tester's side) decides a pass; ``run(programs)`` -> one ``ExecResult`` per ``Program``.
A program whose text starts with the caller's own code, the same in many programs (a library it runs first), may end
that part with the line ``SHARED_PREFIX_END``: pre-started sandboxes then compile it once, not per program.
``get_executor(name)`` builds the executor a run uses (a plugin's, else the built-in ``SandboxExecutor``; without a
name, the one ``CRITIC_EXECUTOR`` names).

Inside the room, and no caller's concern: ``_executor.py`` (the executor: processes, pipes, time and output
limits), ``_isolation.py`` (the layers: bwrap, unshare-net, rlimits; what a program sees), ``_limits.py``
(rlimits, cgroups, the uids programs run as, clean-up), ``_workers.py`` (pre-started sandboxes reused across
items), and ``inside/``: the programs that run inside a sandbox (boot, zygote, tree), read as text and pasted into
what it starts. See docs/sandbox.md.
"""

from critic_tasks.sandbox._executor import (
    ExecResult,
    Executor,
    Pair,
    PairResult,
    Program,
    SandboxExecutor,
    get_executor,
)
from critic_tasks.sandbox._workers import SHARED_PREFIX_END

__all__ = ["ExecResult", "Executor", "Pair", "PairResult", "Program", "SandboxExecutor", "SHARED_PREFIX_END",
           "get_executor"]
