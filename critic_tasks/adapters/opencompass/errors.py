"""Our configuration errors end an OpenCompass run with one line, not a traceback from deep inside OpenCompass.

OpenCompass builds every dataset in its main process (its partitioner measures them) before any model is loaded,
and again in each task's process; a bad setting found there stops the run at once, naming the setting.
"""

from __future__ import annotations

import functools
import sys

from critic_tasks.core.errors import ConfigError, DataError


def clear_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ConfigError, DataError) as err:
            print(f"critic-tasks: {err}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    return wrapper
