"""critic-tasks: measure language models as critics, in lm-evaluation-harness and OpenCompass.

Layout: ``registry`` (every protocol, task and metric, once), ``core`` (parsing, metrics, records), ``llm`` (the
model-calling layer), ``sandbox`` (running untrusted code), ``protocols/`` (one package per paper), ``adapters/``
(one folder per harness), ``reports`` (tables), ``cli`` (``critic-eval``).
"""

from __future__ import annotations

__version__ = "0.1.0"


def tasks_dir() -> str:
    """Directory to pass to ``lm_eval --include_path``."""
    from critic_tasks.adapters.lm_eval import tasks_dir as lm_eval_tasks_dir

    return lm_eval_tasks_dir()


def task_manager(**kwargs):
    """An lm-eval ``TaskManager`` that sees the critic tasks (for ``lm_eval.simple_evaluate``)."""
    from critic_tasks.adapters.lm_eval import task_manager as lm_eval_task_manager

    return lm_eval_task_manager(**kwargs)
