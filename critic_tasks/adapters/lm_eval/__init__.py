"""The lm-evaluation-harness adapter: generated task YAMLs (``tasks/``), the task functions they name, and
``critic-eval run`` (runner.py; the runs it chains first, stages.py) and ``critic-eval demo`` (demo.py).

Everything in critic-tasks that imports ``lm_eval`` lives in this folder.
"""

from __future__ import annotations

from pathlib import Path

TASKS_DIR = Path(__file__).parent / "tasks"


def tasks_dir() -> str:
    """Directory to pass to ``lm_eval --include_path``."""
    return str(TASKS_DIR)


def task_manager(**kwargs):
    """An lm-eval ``TaskManager`` that sees the critic tasks (for ``lm_eval.simple_evaluate``), and lm-eval's own
    tasks too: those are indexed only when a name is not ours (``private.ours_first_task_manager``)."""
    from critic_tasks.adapters.lm_eval.private import ours_first_task_manager

    return ours_first_task_manager()(**kwargs)


def own_path() -> list[str]:
    """``[tasks_dir()]``, or ``[]`` where lm-eval finds these tasks by itself: ``critic-eval register-lm-eval`` has
    put exactly them in its own tree, or it reads our ``lm_eval.tasks`` entry point (both ways would index every task
    twice, with one warning per task)."""
    from critic_tasks.adapters.lm_eval import register
    from critic_tasks.core.errors import ConfigError

    try:
        found = register.up_to_date() or register.reads_entry_points(register.installed())
    except ConfigError:  # no lm-eval to inspect: lm-eval's own import says so
        found = False
    return [] if found else [tasks_dir()]
