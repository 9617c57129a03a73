"""The one plugin manager: built-ins first, then anything installed under the ``critic_tasks`` entry point."""

from __future__ import annotations

import functools
import importlib

import pluggy

from critic_tasks import hookspecs

# Built-in plugin modules; each is imported lazily so a missing optional
# dependency of one backend never breaks the others.
BUILTIN_PLUGINS = (
    "critic_tasks.sandbox.executor",
    "critic_tasks.llm.backends",
)


@functools.lru_cache(maxsize=1)
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for module_name in BUILTIN_PLUGINS:
        try:
            pm.register(importlib.import_module(module_name), name=module_name)
        except ModuleNotFoundError as err:
            if err.name and err.name.startswith("critic_tasks"):
                continue  # plugin module not part of this build
            raise
    pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    return pm
