"""Which of our tasks an OpenCompass eval config runs, read the way OpenCompass reads it (before it starts).

``critic-eval opencompass eval_config.py`` checks those tasks' settings (data directory, judge, executor) first, so a
bad setting ends the run in one line instead of in every task's log.
"""

from __future__ import annotations

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError


def read_config(path: str):
    """The eval config as OpenCompass reads it."""
    from mmengine.config import Config

    try:
        cfg = Config.fromfile(path, format_python_code=False)
    except Exception as err:  # OpenCompass will report it in full; we only could not look inside
        raise ConfigError(f"{path}: OpenCompass cannot read this config ({type(err).__name__}: {err})") from None
    return cfg


def tasks_in_config(cfg) -> list[tuple[str, bool]]:
    """(task, whether its dataset config names a judge) for each of our datasets in a config (or config file)."""
    cfg = read_config(cfg) if isinstance(cfg, str) else cfg
    return [(d["task"], bool(d.get("judge_cfg"))) for d in cfg.get("datasets", [])
            if isinstance(d, dict) and d.get("task") in registry.TASKS]
