"""Running untrusted programs: the sandbox executor and its isolation layers (see ``executor``)."""

from critic_tasks.sandbox.executor import ExecResult, Executor, Pair, PairResult, Program, SandboxExecutor, get_executor

__all__ = ["ExecResult", "Executor", "Pair", "PairResult", "Program", "SandboxExecutor", "get_executor"]
