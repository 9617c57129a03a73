"""The lm-evaluation-harness adapter: generated task YAMLs (``tasks/``), the hooks they name, and the runner.

Everything in critic-tasks that imports ``lm_eval`` lives in this folder.
"""

from __future__ import annotations

import functools
from pathlib import Path

TASKS_DIR = Path(__file__).parent / "tasks"


def tasks_dir() -> str:
    """Directory to pass to ``lm_eval --include_path``."""
    return str(TASKS_DIR)


def task_manager(**kwargs):
    """An lm-eval ``TaskManager`` that sees the critic tasks (for ``lm_eval.simple_evaluate``), and lm-eval's own
    tasks too: those are indexed only when a name is not ours (``ours_first_task_manager``)."""
    return ours_first_task_manager()(**kwargs)


@functools.cache
def ours_first_task_manager():
    """The class behind ``task_manager()``: lm-eval's ``TaskManager`` indexing our tasks (and any
    ``include_path``) first, and lm-eval's own ~14,700 only when a name, a glob or a listing needs them.

    Indexing lm-eval's own tree takes ~9 s on 2 cores, in every run and every in-process ``simple_evaluate``; a run
    of critic tasks never reads it. Lookups give what a full ``TaskManager`` gives: include paths override lm-eval's
    own tasks there too, so a name found among ours is the entry the full index holds, and any other name, glob or
    listing is answered from the full index. Made on first use: importing this package does not import lm-eval.
    """
    from lm_eval import utils
    from lm_eval.tasks import TaskManager

    class OursFirstTaskManager(TaskManager):
        def __init__(self, include_path=None, include_defaults: bool = True, **kwargs):
            extra = [str(p) for p in ([include_path] if isinstance(include_path, (str, Path)) else include_path or [])]
            full = list(dict.fromkeys(own_path() + extra))  # lm-eval's CLI passes our folder as include_path too
            self._full_args = dict(include_path=full or None, include_defaults=include_defaults, **kwargs)
            self._complete = not include_defaults
            super().__init__(include_path=list(dict.fromkeys([tasks_dir(), *extra])), include_defaults=False, **kwargs)

        def _index_everything(self) -> None:
            if not self._complete:
                self._complete = True
                TaskManager.__init__(self, **self._full_args)

        def _entry(self, name: str):
            entry = super()._entry(name)
            if entry is None and not self._complete:
                self._index_everything()
                entry = super()._entry(name)
            return entry

        def match_tasks(self, task_list: list[str]) -> list[str]:
            if not all(name in self._index and not GLOB_CHARS.intersection(name) for name in task_list):
                self._index_everything()
            return utils.pattern_match(task_list, self._all_tasks)

        def list_all_tasks(self, *args, **kwargs) -> str:
            self._index_everything()
            return super().list_all_tasks(*args, **kwargs)

        @property
        def all_tasks(self) -> list[str]:
            self._index_everything()
            return self._all_tasks

        @property
        def all_groups(self) -> list[str]:
            self._index_everything()
            return self._all_groups

        @property
        def all_subtasks(self) -> list[str]:
            self._index_everything()
            return self._all_subtasks

        @property
        def all_tags(self) -> list[str]:
            self._index_everything()
            return self._all_tags

    return OursFirstTaskManager


GLOB_CHARS = set("*?[")


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
