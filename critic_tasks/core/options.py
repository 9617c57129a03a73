"""Reading a task option (a ``--metadata`` key, a dataset config's key) of a declared type, total on any JSON value."""

from __future__ import annotations

import json
import re

from critic_tasks.core.errors import ConfigError

_WHOLE = re.compile(r"[+-]?\d+")


def whole_number(value, name: str) -> int:
    """``value`` as an integer option: a JSON integer, or its digits as text (an optional sign). Anything else is one
    ConfigError line naming ``name`` (e.g. "rewardbench seed"): a JSON true/false above all, which Python's ``int``
    would read as 1 / 0, and a fraction, which it would cut."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return int(value.strip())
    shown = json.dumps(value) if isinstance(value, (bool, type(None))) else repr(value)
    why = " (true / false is a yes or no, not a number)" if isinstance(value, bool) else ""
    raise ConfigError(f"{name} {shown}: expected a whole number{why}")
