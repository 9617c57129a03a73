"""The two kinds of user-facing error: bad input data, and a bad setting. Both print as one line."""

from __future__ import annotations


class DataError(ValueError):
    """An input file is missing, malformed, or lacks a field; the message names file, item and field."""


class ConfigError(ValueError):
    """A setting (environment variable, flag, task option) is unusable; the message names the setting."""
