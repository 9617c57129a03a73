"""Which of our tasks an OpenCompass eval config runs, read the way OpenCompass reads it (before it starts).

``critic-eval opencompass eval_config.py`` checks those tasks' settings (data directory, judge, executor, the protocol
options a dataset config sets) first, so a bad setting ends the run in one line instead of in every task's log.
"""

from __future__ import annotations

from critic_tasks import registry
from critic_tasks.adapters.opencompass.spec import check_options, config_options
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
    ours = [d for d in cfg.get("datasets", []) if isinstance(d, dict) and d.get("task") in registry.TASKS]
    for d in ours:  # the options it sets are its protocol's (else one line now, not in OpenCompass's processes)
        check_options(registry.TASKS[d["task"]], config_options(d))
    return [(d["task"], bool(d.get("judge_cfg"))) for d in ours]
