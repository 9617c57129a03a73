"""Our configuration errors end an OpenCompass run with one line, not a traceback from deep inside OpenCompass.

OpenCompass builds every dataset in its main process (its partitioner measures them) before any model is loaded,
and again in each task's process; a bad setting found there stops the run at once, naming the setting.
"""

from __future__ import annotations

import functools
import glob
import os
import re
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


# the last line of a Python traceback: the exception's (dotted) class name, then its message
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)(?::.*)?")


def failure_reason(work_dir: str, model: str, abbr: str) -> str:
    """Why an OpenCompass task of ``model`` on dataset ``abbr`` left no results, from its logs
    (``<work_dir>/logs/<stage>/<model>/<abbr>*.out``): the last ``critic-tasks:`` line our code printed; else the
    exception that ended the inference stage, then the evaluation stage (a failed inference leaves evaluation no
    predictions, so its own error says only that), with the log's path; else the logs to read."""
    logs = sorted(glob.glob(os.path.join(work_dir, "logs", "*", model, f"{abbr}*.out")),
                  key=lambda p: (os.path.basename(os.path.dirname(os.path.dirname(p))) != "infer", p))
    read = {}
    for log in logs:
        with open(log, encoding="utf-8", errors="replace") as fh:
            read[log] = [line.rstrip("\n") for line in fh]
        ours = [line.strip() for line in read[log] if line.startswith("critic-tasks: ")]
        if ours:
            return ours[-1][len("critic-tasks: "):]
    for log, lines in read.items():
        ended = [line.strip() for line in lines if _EXCEPTION_LINE.fullmatch(line.strip())]
        if ended:
            return f"{ended[-1][:300]} (see {log})"
    return f"its task failed; see {logs[0] if logs else os.path.join(work_dir, 'logs')}"
