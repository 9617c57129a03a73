"""lm-eval resolves ``!function utils.<name>`` in this folder: everything lives in the adapter's ``hooks`` module."""

from critic_tasks.adapters.lm_eval.hooks import *  # noqa: F401,F403
