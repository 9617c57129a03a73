"""Send prompts to a model through the cache: cached replies first, the misses through the backend, at once.

Unlike the original toolkit (resume by counting JSONL lines, failures silently dropped), every prompt gets a
``Completion``: the reply's text, or ``text=None`` with the error kept. Replies with text are cached as they
arrive (sqlite, WAL), so a run killed half-way resumes with nothing lost and nothing asked twice, and a rerun
makes no calls at all. Transport failures (timeouts, HTTP errors after all retries) are not cached, so the next run
retries them. A reply that the caller cannot use (no score in it, say) is cached all the same: the model runs at
temperature 0, asking again would cost a call for the same text, and callers parse on read, so a parser fix
re-scores cached replies for free.

The layer knows no protocol: prompts, and how a reply is read, belong to the protocol calling it, which names its
prompts' version (``prompt_version``) so a changed template is never answered from the old cache.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass

from critic_tasks.llm.backends import Reply, get_backend
from critic_tasks.llm.cache import ReplyCache, cache_key
from critic_tasks.llm.chat import key_text
from critic_tasks.llm.settings import LLMSettings

log = logging.getLogger(__name__)

__all__ = ["Completion", "complete"]


@dataclass(frozen=True)
class Completion:
    text: str | None
    error: str | None
    cached: bool


def _completion(reply: Reply, cached: bool) -> Completion:
    if reply.text is None:
        return Completion(None, reply.error or "no reply", cached)
    return Completion(reply.text, None, cached)


def identity(settings: LLMSettings, prompt_version: str) -> dict:
    """The cache identity: the model's settings plus the caller's prompt version (recorded in results too)."""
    return {**settings.identity(), "prompt_version": prompt_version}


def complete(prompts: list[str], settings: LLMSettings, prompt_version: str,
             progress: bool = True) -> list[Completion]:
    """One ``Completion`` per prompt, in order; identical prompts are asked once."""
    ident = identity(settings, prompt_version)
    keys = [cache_key(ident, key_text(p)) for p in prompts]
    cache = ReplyCache(settings.cache) if settings.cache else None
    try:
        hits = cache.get_many(keys) if cache else {}
        results: list[Completion | None] = [Completion(hits[k], None, True) if k in hits else None for k in keys]
        misses: dict[str, list[int]] = {}  # key -> every index with that prompt
        for i, k in enumerate(keys):
            if k not in hits:
                misses.setdefault(k, []).append(i)
        log.info("%s %s: %d prompts, %d cached, %d to ask", settings.role, settings.model, len(prompts),
                 len(prompts) - sum(map(len, misses.values())), len(misses))
        if misses:
            miss_keys = list(misses)
            delivered: set[int] = set()

            def on_result(j: int, reply: Reply) -> None:
                delivered.add(j)
                if cache is not None and reply.text is not None:
                    cache.put(miss_keys[j], ident, reply.text)  # at once: a kill after this loses nothing
                for i in misses[miss_keys[j]]:
                    results[i] = _completion(reply, cached=False)

            backend = get_backend(settings)
            miss_prompts = [prompts[misses[k][0]] for k in miss_keys]
            # Third-party backends may not take the callback; then results are stored when the batch returns.
            if "on_result" in inspect.signature(backend.generate).parameters:
                replies = backend.generate(miss_prompts, progress=progress, on_result=on_result)
            else:
                replies = backend.generate(miss_prompts, progress=progress)
            if len(replies) != len(miss_prompts):
                raise RuntimeError(f"{settings.role} backend returned {len(replies)} replies for "
                                   f"{len(miss_prompts)} prompts")
            for j, reply in enumerate(replies):
                if j not in delivered:
                    on_result(j, reply)
        return results  # type: ignore[return-value]
    finally:
        if cache is not None:
            cache.close()
