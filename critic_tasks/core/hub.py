"""Is a Hugging Face Hub repository at hand before a run loads anything? One probe for the dataset (CriticBench) and
for a Hub model (``pretrained=org/name``); each caller words its own one-line error from the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class HubAnswer:
    """``state``: "ok" (cached, answered, or not asked: timeout 0), "offline" (HF_HUB_OFFLINE set and the probe file
    not in the local cache), "missing" (the Hub has no such repository or revision) or "unreachable" (any other
    failure); ``detail``: the error as ``Type: first line`` (200 characters at most)."""

    state: str
    detail: str = ""


def probe(repo: str, filename: str, timeout: float | Callable[[], float], repo_type: str = "model", revision: str | None = None,
          cache_first: bool = True) -> HubAnswer:
    """``filename`` of ``repo`` in the local Hub cache (``cache_first``: whether that suffices online too; offline it
    always must), else one call to the Hub within ``timeout`` seconds (0: none, "ok"; a function: read only when the
    call is due, so a bad timeout setting matters only then)."""
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    if cache_first or constants.HF_HUB_OFFLINE:
        cached = try_to_load_from_cache(repo, filename, cache_dir=constants.HF_HUB_CACHE, revision=revision,
                                        repo_type=repo_type)
        if isinstance(cached, str):
            return HubAnswer("ok")
    if constants.HF_HUB_OFFLINE:
        return HubAnswer("offline")
    timeout = timeout() if callable(timeout) else timeout
    if not timeout:
        return HubAnswer("ok")
    api = HfApi(endpoint=constants.ENDPOINT)
    try:
        if repo_type == "dataset":
            api.dataset_info(repo, revision=revision, timeout=timeout)
        else:
            api.model_info(repo, revision=revision, timeout=timeout)
    except Exception as err:  # network, proxy, DNS, an HTTP error: one line for all
        first = str(err).splitlines()[0] if str(err) else ""
        missing = isinstance(err, (RepositoryNotFoundError, RevisionNotFoundError))
        return HubAnswer("missing" if missing else "unreachable", f"{type(err).__name__}: {first[:200]}")
    return HubAnswer("ok")
