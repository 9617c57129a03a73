"""Hook specifications for critic-tasks plugins (pluggy).

Third-party packages add an implementation by declaring an entry point in the
``critic_tasks`` group that points at a module with ``@hookimpl`` functions.
Each hook is ``firstresult``: the first plugin that recognises ``name`` wins,
so a user plugin registered later can shadow a built-in one.
"""

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
