"""k different samples through lm-eval's API models (``local-chat-completions``, ``local-completions``,
``openai-*``).

lm-eval repeats a sampled request k times (``repeats``) as the very same request, and its API models send every
request with the model's one ``seed`` (1234 unless ``--model_args seed=...``): a server that honours per-request
seeds (vLLM's OpenAI server does) then returns one reply k times, and self-consistency or pass@k silently rests on
one sample. Here the j-th copy of a sampled request (``do_sample`` or a temperature above 0) carries seed + j (repeat
0 keeps the model's seed, so a greedy run and the first sample are asked as before): the API models put a
generation argument named ``seed`` over their own in the payload. A request that names its own seed is left alone.

The in-process models need nothing: lm-eval's HF model samples each copy in turn from torch's running generator, and
its vLLM model seeds the engine once, so copies in one batch draw different samples. Whatever the backend, the
results count the items whose k samples came back identical (``identical_samples``).
"""

from __future__ import annotations

import dataclasses


def _sampled(gen_kwargs: dict) -> bool:
    return bool(gen_kwargs.get("do_sample")) or float(gen_kwargs.get("temperature") or 0) > 0


def distinct_seeds(requests: list, base_seed: int) -> list:
    """``requests`` with the j-th repeat of each sampled request (the same Instance, or the same context and
    arguments) asking with seed ``base_seed + j``; everything else unchanged, in the same order."""
    seen: dict[str, int] = {}
    out = []
    for req in requests:
        context, gen_kwargs, *rest = req.args
        if not isinstance(gen_kwargs, dict) or not _sampled(gen_kwargs) or "seed" in gen_kwargs:
            out.append(req)
            continue
        key = repr((context, sorted(gen_kwargs.items(), key=str)))
        j = seen[key] = seen.get(key, -1) + 1
        if j == 0:
            out.append(req)
            continue
        out.append(dataclasses.replace(req, arguments=(context, {**gen_kwargs, "seed": base_seed + j}, *rest)))
    return out


def install() -> None:
    """Patch lm-eval's API model base class once (idempotent): repeats of a sampled request get distinct seeds."""
    try:
        from lm_eval.models.api_models import TemplateAPI
    except ImportError:  # an lm-eval without API models: nothing to patch
        return
    if getattr(TemplateAPI.generate_until, "_critic_distinct_seeds", False):
        return
    original = TemplateAPI.generate_until

    def generate_until(self, requests, disable_tqdm: bool = False):
        return original(self, distinct_seeds(list(requests), int(getattr(self, "_seed", 1234))), disable_tqdm)

    generate_until._critic_distinct_seeds = True
    TemplateAPI.generate_until = generate_until
