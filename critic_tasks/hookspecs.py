"""The plugin hooks of critic-tasks (pluggy) and the one plugin manager that calls them.

Third-party packages add an implementation by declaring an entry point in the ``critic_tasks`` group that points at
a module with ``@hookimpl`` functions. Each hook is ``firstresult``: the first plugin that recognises ``name`` wins.
The built-ins are no plugins: ``sandbox.get_executor`` and ``llm.backends.get_backend`` ask the plugin manager first
(so a plugin may shadow a built-in name) and build their own when no plugin answers. This module imports nothing of
the package, so nothing here loops back into the modules that call it.
"""

from __future__ import annotations

import functools
import sys

import pluggy

PROJECT = "critic_tasks"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def critic_executor(name: str, options: dict):
    """Return a code executor called ``name`` (see ``critic_tasks.sandbox.Executor``), or None."""


@hookspec(firstresult=True)
def critic_llm_backend(name: str, settings):
    """Return a model backend called ``name`` built from ``settings`` (an ``LLMSettings``; any role: judge, reviser), or
    None. See ``critic_tasks.llm.backends.base.Backend`` for what it must do."""


@functools.lru_cache(maxsize=1)
def plugin_manager() -> pluggy.PluginManager:
    """The one plugin manager: the hooks above and every plugin installed under the entry point."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(sys.modules[__name__])
    pm.load_setuptools_entrypoints(PROJECT)
    return pm
