"""Backends of the model-calling layer, found through the ``critic_llm_backend`` hook.

Built-ins: ``openai`` (any OpenAI-compatible chat endpoint), ``vllm`` (in-process engine, one batched call) and
``hf`` (transformers, batched greedy generation), each imported only when chosen, so a missing optional library
of one never breaks the others. A third party adds a backend by shipping a module with an
``@hookimpl def critic_llm_backend(name, settings)`` under the ``critic_tasks`` entry-point group; it returns an
object with the ``generate`` method of ``base.Backend``, or None. The plugins are asked first (one may shadow a
built-in name), then the built-ins.
"""

from __future__ import annotations

import importlib
import os

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.paths import looks_local
from critic_tasks.hookspecs import plugin_manager
from critic_tasks.llm.backends.base import Backend, OnResult, Reply
from critic_tasks.llm.settings import LLMSettings, env_prefix

__all__ = ["BUILTIN_BACKENDS", "Backend", "OnResult", "Reply", "check_local_model", "get_backend"]

BUILTIN_BACKENDS = {  # name -> (module, class)
    "openai": ("critic_tasks.llm.backends.openai_compatible", "OpenAIBackend"),
    "vllm": ("critic_tasks.llm.backends.vllm_engine", "VLLMBackend"),
    "hf": ("critic_tasks.llm.backends.hf_transformers", "HFBackend"),
}


def builtin_backend(name: str, settings: LLMSettings) -> Backend | None:
    """The built-in backend called ``name``, built from ``settings`` (None for any other name)."""
    if name not in BUILTIN_BACKENDS:
        return None
    module, cls = BUILTIN_BACKENDS[name]
    return getattr(importlib.import_module(module), cls)(settings)


def check_backend_name(settings: LLMSettings) -> None:
    """Fail on an unknown backend name before anything runs (``get_backend`` would only fail at the first call)."""
    if settings.backend in BUILTIN_BACKENDS:
        return
    pm = plugin_manager()
    others = [p for n, p in pm.list_name_plugin() if p is not None and not n.startswith("critic_tasks.")]
    if not others:
        raise ConfigError(f"unknown {settings.role} backend {settings.backend!r} ({env_prefix(settings.role)}BACKEND); "
                          f"built-in: {', '.join(sorted(BUILTIN_BACKENDS))}")


IN_PROCESS = ("hf", "vllm")  # the built-in backends that load the model themselves (a Hub name or a local path)


def check_local_model(settings: LLMSettings) -> None:
    """An in-process model (``hf``, ``vllm``) named by a local path (or a ``.gguf`` file) must be there: else
    transformers' forty-line traceback once the first prompt is judged."""
    model = settings.model or ""
    if settings.backend in IN_PROCESS and (looks_local(model) or model.endswith(".gguf")):
        if not os.path.exists(os.path.expanduser(model)):
            raise ConfigError(f"{settings.model_setting}={model}: no such file or folder (the {settings.backend} "
                              "backend loads a local folder or .gguf file, or a Hub model named org/name)")


def get_backend(settings: LLMSettings) -> Backend:
    """The backend named by ``settings.backend``: from the first plugin that knows it, else the built-in."""
    pm = plugin_manager()
    backend = pm.hook.critic_llm_backend(name=settings.backend, settings=settings)
    if backend is None:
        backend = builtin_backend(settings.backend, settings)
    if backend is None:
        others = sorted(n for n, p in pm.list_name_plugin() if p is not None and not n.startswith("critic_tasks."))
        loaded = f"; other plugins loaded: {', '.join(others)}" if others else ""
        raise ConfigError(
            f"unknown {settings.role} backend {settings.backend!r} ({env_prefix(settings.role)}BACKEND); "
            f"built-in: {', '.join(sorted(BUILTIN_BACKENDS))}{loaded}"
        )
    return backend
