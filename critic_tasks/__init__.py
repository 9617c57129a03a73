"""critic-tasks: CriticBench / CriticEval critique tasks for lm-evaluation-harness and OpenCompass."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

TASKS_DIR = Path(__file__).parent / "task_configs"


def tasks_dir() -> str:
    """Directory to pass to ``lm_eval --include_path``."""
    return str(TASKS_DIR)


def task_manager(**kwargs):
    """An lm-eval ``TaskManager`` that sees the critic tasks (for ``lm_eval.simple_evaluate``)."""
    from lm_eval.tasks import TaskManager

    include = kwargs.pop("include_path", None)
    paths = [tasks_dir()] + ([include] if isinstance(include, (str, Path)) else list(include or []))
    return TaskManager(include_path=paths, **kwargs)
