"""The plugin hooks of critic-tasks (pluggy) and the one plugin manager that calls them.

Third-party packages add an implementation by declaring an entry point in the ``critic_tasks`` group that points at
a module with ``@hookimpl`` functions. Each hook is ``firstresult``: the first plugin that recognises ``name`` wins,
so a user plugin registered later can shadow a built-in one. ``plugin_manager()`` registers the built-ins first, then
anything installed under the entry point.
"""

from __future__ import annotations

import functools
import importlib
import sys

import pluggy

PROJECT = "critic_tasks"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def critic_executor(name: str, options: dict):
    """Return a code executor called ``name`` (see ``critic_tasks.sandbox.executor.Executor``), or None."""


@hookspec(firstresult=True)
def critic_llm_backend(name: str, settings):
    """Return a model backend called ``name`` built from ``settings`` (an ``LLMSettings``; any role: judge, reviser), or
    None. See ``critic_tasks.llm.backends.base.Backend`` for what it must do."""


# Built-in plugin modules; each is imported lazily so a missing optional dependency of one backend never breaks the
# others.
BUILTIN_PLUGINS = (
    "critic_tasks.sandbox.executor",
    "critic_tasks.llm.backends",
)


@functools.lru_cache(maxsize=1)
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(sys.modules[__name__])
    for module_name in BUILTIN_PLUGINS:
        try:
            pm.register(importlib.import_module(module_name), name=module_name)
        except ModuleNotFoundError as err:
            if err.name and err.name.startswith("critic_tasks"):
                continue  # plugin module not part of this build
            raise
    pm.load_setuptools_entrypoints(PROJECT)
    return pm
