"""Judge drift: re-ask some cached prompts, bypassing the cache, and count the grades that changed.

A judge's name is not its weights: a hosted model behind a fixed name can change, and so can a server's build or
quantization. The cache would hide that forever (a cached grade is never asked again), so ``canary`` takes N of a
run's cached prompts, asks the judge again without reading or writing the cache (the cached reply stays), reads
both replies the way the protocol reads them and reports which grades differ, with what the server said answered
each time. The N are the first by cache key (a sha256, so a spread over the run's tasks and items that is the same
on every call); each protocol supplies its ``Probe``s: the prompt, its version and template hash, and how a reply
is read into the grade compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Sequence

from critic_tasks.core.errors import ConfigError
from critic_tasks.llm.cache import ReplyCache, cache_key
from critic_tasks.llm.chat import key_text
from critic_tasks.llm.client import complete, identity
from critic_tasks.llm.settings import LLMSettings


@dataclass(frozen=True)
class Probe:
    """One judge prompt of a run: ``label`` names it in the report (task and item), ``read`` turns a reply's text
    into the grade that is compared (a score, a tuple of verdicts; None for a reply without one)."""

    label: str
    prompt: str
    prompt_version: str
    template_hash: str | None
    read: Callable[[str], Hashable] = field(compare=False)


@dataclass(frozen=True)
class Change:
    label: str
    before: Hashable
    after: Hashable
    served_before: dict | None = None
    served_after: dict | None = None


@dataclass
class CanaryReport:
    asked: int = 0  # cached prompts re-asked
    changed: list[Change] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (label, error): no fresh reply to compare
    served: dict = field(default_factory=dict)  # what the server said answered: {"before": {...}, "after": {...}}

    @property
    def compared(self) -> int:
        return self.asked - len(self.failed)

    def as_dict(self) -> dict:
        return {"asked": self.asked, "compared": self.compared, "changed": len(self.changed),
                "changes": [vars(c) for c in self.changed],
                "failed": [{"label": label, "error": error} for label, error in self.failed], "served": self.served}


def _tally(served: Sequence[dict | None]) -> dict:
    """How often each reported model and system fingerprint occurred, and how many replies reported neither."""
    out: dict = {"model": {}, "system_fingerprint": {}, "unreported": 0}
    for s in served:
        if not s:
            out["unreported"] += 1
            continue
        for name in ("model", "system_fingerprint"):
            if s.get(name):
                out[name][s[name]] = out[name].get(s[name], 0) + 1
    return out


def fingerprint(judge_identity: dict, served: Sequence[dict | None]) -> dict:
    """A run's judge fingerprint: its identity (model, sampling settings, prompt version, template hash) and a tally
    of what the server said answered its replies (``served`` per reply, None where it said nothing)."""
    return {"judge": judge_identity, "served": _tally(served)}


def canary(probes: Sequence[Probe], settings: LLMSettings, n: int, progress: bool = True) -> CanaryReport:
    """Re-ask the first ``n`` cached ``probes`` (by cache key) without the cache; which grades changed."""
    if n < 1:
        raise ConfigError(f"--canary {n}: expected a number of cached judge prompts >= 1")
    if not settings.cache:
        raise ConfigError(f"the {settings.role} cache is off ({settings.prefix}CACHE): no cached grade to re-ask")
    keyed: dict[str, Probe] = {}
    for p in probes:  # a prompt asked twice in a run is one cached reply
        keyed.setdefault(cache_key(identity(settings, p.prompt_version, p.template_hash), key_text(p.prompt)), p)
    cache = ReplyCache(settings.cache)
    try:
        cached = cache.get_entries(list(keyed))
    finally:
        cache.close()
    if not cached:
        raise ValueError(f"canary: none of the run's {len(keyed)} judge prompts is in the cache {settings.cache} "
                         f"for judge {settings.model!r} with these settings; judge the run first")
    chosen = sorted(cached)[:n]
    report = CanaryReport(asked=len(chosen))
    groups: dict[tuple, list[str]] = {}  # one call per prompt version and template
    for key in chosen:
        groups.setdefault((keyed[key].prompt_version, keyed[key].template_hash), []).append(key)
    fresh = {}
    for (version, template), keys in groups.items():
        replies = complete([keyed[k].prompt for k in keys], settings, version, progress=progress,
                           template_hash=template, use_cache=False)
        fresh.update(zip(keys, replies))
    before_served, after_served = [], []
    for key in chosen:
        probe, (old_text, old_served), new = keyed[key], cached[key], fresh[key]
        before_served.append(old_served)
        if new.text is None:
            report.failed.append((probe.label, new.error or "no reply"))
            continue
        after_served.append(new.served)
        before, after = probe.read(old_text), probe.read(new.text)
        if before != after:
            report.changed.append(Change(probe.label, before, after, old_served, new.served))
    report.served = {"before": _tally(before_served), "after": _tally(after_served)}
    return report
