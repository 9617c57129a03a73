"""Send prompts to a model through the cache: cached replies first, the misses through the backend, at once.

Unlike the original toolkit (resume by counting JSONL lines, failures silently dropped), every prompt gets a
``Completion``: the reply's text, or ``text=None`` with the error kept. Replies with text are cached as they
arrive (sqlite, WAL), so a run killed half-way resumes with nothing lost and nothing asked twice, and a rerun
makes no calls at all. Transport failures (timeouts, HTTP errors after all retries) are not cached, so the next run
retries them. A reply that the caller cannot use (no score in it, say) is cached all the same: the model runs at
temperature 0, asking again would cost a call for the same text, and callers parse on read, so a parser fix
re-scores cached replies for free.

The layer knows no protocol: prompts, and how a reply is read, belong to the protocol calling it, which names its
prompts' version (``prompt_version``) and the sha256 of its templates' text (``template_sha256``), so a changed
template is never answered from the old cache even where nobody bumped the version. Both join the identity, with
the model and its sampling settings (``LLMSettings.identity``): the cache key and the fingerprint recorded beside
every grade. What the server said answered (``Completion.served``) is known only once it answers, so it cannot key
the cache; it is kept with each cached reply, and ``canary`` re-asks cached prompts to see whether grades drift.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from dataclasses import dataclass, field

from critic_tasks.llm.backends import Reply, get_backend
from critic_tasks.llm.cache import ReplyCache, cache_key
from critic_tasks.llm.chat import key_text
from critic_tasks.llm.settings import LLMSettings

log = logging.getLogger(__name__)

__all__ = ["Completion", "complete", "identity", "template_sha256"]


@dataclass(frozen=True)
class Completion:
    text: str | None
    error: str | None
    cached: bool
    # what the server said answered (its ``model``, ``system_fingerprint``), None where it said nothing
    served: dict | None = field(default=None, compare=False)


def _completion(reply: Reply, cached: bool) -> Completion:
    if reply.text is None:
        return Completion(None, reply.error or "no reply", cached)
    return Completion(reply.text, None, cached, getattr(reply, "served", None))  # a plugin's Reply may lack it


def template_sha256(*templates: str) -> str:
    """The sha256 of a protocol's prompt templates (their text before filling), in the order given."""
    return hashlib.sha256("\x00".join(templates).encode("utf-8")).hexdigest()


def identity(settings: LLMSettings, prompt_version: str, template_hash: str | None = None) -> dict:
    """The cache identity: the model's settings (its sampling settings among them) plus the caller's prompt version
    and template hash; recorded in results too."""
    ident = {**settings.identity(), "prompt_version": prompt_version}
    if template_hash is not None:  # callers that name no template (the revisers) keep their cache keys
        ident["template_sha256"] = template_hash
    return ident


def complete(prompts: list[str], settings: LLMSettings, prompt_version: str,
             progress: bool = True, template_hash: str | None = None, use_cache: bool = True) -> list[Completion]:
    """One ``Completion`` per prompt, in order; identical prompts are asked once. ``use_cache=False`` asks every
    prompt afresh and neither reads nor writes the cache (``canary``: the cached reply stays as it was)."""
    ident = identity(settings, prompt_version, template_hash)
    keys = [cache_key(ident, key_text(p)) for p in prompts]
    cache = ReplyCache(settings.cache) if settings.cache and use_cache else None
    try:
        entries = cache.get_entries(keys) if cache else {}
        hits = {k: text for k, (text, _) in entries.items()}
        results: list[Completion | None] = [Completion(entries[k][0], None, True, entries[k][1]) if k in entries
                                            else None for k in keys]
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
                if cache is not None and reply.text is not None:  # at once: a kill after this loses nothing
                    cache.put(miss_keys[j], ident, reply.text, getattr(reply, "served", None))
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
