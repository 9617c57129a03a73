"""The user's cache folder for critic-tasks (``$XDG_CACHE_HOME/critic_tasks``, else ``~/.cache/critic_tasks``): the
reply caches, lm-eval's request caches, fetched protocol files and the OpenCompass config trees all live under it;
and the one spelling of "turned off" that every cache setting accepts."""

from __future__ import annotations

import os
from pathlib import Path

OFF = frozenset({"off", "none", "0", "false", "no", "disabled"})


def is_off(value: str | None) -> bool:
    """A cache setting that turns the cache off (``off``, ``none``, ``0``, ``false``, ``no``, ``disabled``)."""
    return value is not None and value.strip().lower() in OFF


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/critic_tasks/<parts>`` (``~/.cache`` when XDG_CACHE_HOME is unset or empty)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "critic_tasks", *parts)


def looks_local(value: str) -> bool:
    """A model named by a path, not a Hub name (``org/name``): absolute, ``./``, ``../``, ``~``, or more than one
    ``/``."""
    return value.startswith(("/", "./", "../", "~", ".\\")) or value in (".", "..") or value.count("/") >= 2
