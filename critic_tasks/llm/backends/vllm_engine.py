"""In-process vLLM: all prompts go to one engine at once, and each reply is handed back the moment it finishes.

The engine is built once per process (a second one would not fit next to the first) from the role's settings:
``CRITIC_<ROLE>_MODEL`` and ``CRITIC_<ROLE>_ENGINE_ARGS``, vLLM engine arguments in lm-eval's ``--model_args``
syntax (``kv_cache_memory_bytes=4294967296,max_model_len=4096,enforce_eager=True``). On vLLM's CPU build, where
vLLM otherwise sizes the KV cache as a share of the whole machine's memory and refuses to start, a fixed 2 GiB
cache and ``enforce_eager=True`` (engine start in about a second instead of ~80 s of graph compilation) are the
defaults unless the arguments or vLLM's own ``VLLM_CPU_KVCACHE_SPACE`` say otherwise.

Requests are added to the engine one by one and the engine is stepped until all finish, so ``on_result`` (the
cache write) runs as each reply completes, as with the OpenAI-compatible backend: a run killed midway keeps every
reply that finished. A prompt vLLM refuses (longer than the model's context, say) is a recorded failure of that
item alone.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os

from critic_tasks.core.errors import ConfigError
from critic_tasks.llm.backends.base import OnResult, Reply
from critic_tasks.llm.chat import render
from critic_tasks.llm.settings import LLMSettings, env_prefix

log = logging.getLogger(__name__)

CPU_KV_CACHE_BYTES = 2 * 1024**3
# {"key": (model, engine args), "llm": vllm.LLM}: one engine per process, on purpose not per run (core/run_state.py):
# an engine holds its GPU memory and worker process until the process ends, so a second run must reuse it, not build
# another beside it
_ENGINE: dict = {}


def engine_kwargs(settings: LLMSettings) -> dict:
    """The engine's arguments: the role's ``ENGINE_ARGS``, plus the CPU defaults where vLLM runs on a CPU."""
    kwargs = dict(settings.engine_args)
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        if "kv_cache_memory_bytes" not in kwargs and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            kwargs["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
        kwargs.setdefault("enforce_eager", True)
    return kwargs


def load_engine(settings: LLMSettings):
    """The process's engine for ``settings``; asking for a different model or arguments later is an error."""
    kwargs = engine_kwargs(settings)
    key = (settings.model, tuple(sorted(kwargs.items())))
    if _ENGINE:
        if _ENGINE["key"] != key:
            raise ConfigError(f"the vllm {settings.role} backend keeps one engine per process, already loaded with "
                              f"{_ENGINE['key']}; asked for {key} (use the same model and "
                              f"{env_prefix(settings.role)}ENGINE_ARGS, or an OpenAI-compatible server)")
        return _ENGINE["llm"]
    from vllm import LLM

    log.info("vllm %s engine: %s %s", settings.role, settings.model, kwargs)
    try:
        llm = LLM(model=settings.model, **kwargs)
    except TypeError as err:  # an argument vLLM does not know
        raise ConfigError(f"{env_prefix(settings.role)}ENGINE_ARGS: {err}") from None
    _ENGINE.update(key=key, llm=llm)
    # The engine runs in a non-daemon child process; stop it before multiprocessing's exit handler joins it.
    core = getattr(llm.llm_engine, "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        atexit.register(core.shutdown)
    return llm


class VLLMBackend:
    """In-process vLLM: prompts rendered with the model's chat template, all queued at once, replies as they finish."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.model_name = settings.require_model()
        if importlib.util.find_spec("vllm") is None:
            raise ImportError(
                "the 'vllm' judge backend needs vLLM (pip install vllm; Linux with a GPU, or vLLM's CPU build: "
                "from a checkout of critic-tasks, bash scripts/setup.sh --vllm). Alternatively run `vllm serve MODEL` and use "
                "CRITIC_JUDGE_BACKEND=openai with CRITIC_JUDGE_BASE_URL."
            )

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]:
        from vllm import SamplingParams

        llm = load_engine(self.settings)  # a model that won't load is a setup error: raise, don't record
        engine, tokenizer = llm.llm_engine, llm.get_tokenizer()
        params = SamplingParams(temperature=self.settings.temperature, max_tokens=self.settings.max_tokens)
        replies: list[Reply | None] = [None] * len(prompts)

        def deliver(i: int, reply: Reply) -> None:
            replies[i] = reply
            if on_result is not None:
                on_result(i, reply)

        pending: set[str] = set()
        for i, prompt in enumerate(prompts):
            try:
                text = render(tokenizer, prompt)  # a ChatPrompt's system part as a system turn, where it takes one
                ids = tokenizer.encode(text, add_special_tokens=False)  # the template wrote the special tokens
                engine.add_request(str(i), {"prompt_token_ids": ids}, params)
                pending.add(str(i))
            except Exception as exc:  # this prompt only (too long for the context, say)
                deliver(i, Reply(None, f"{type(exc).__name__}: {exc}"))
        bar = _progress(len(pending), progress)
        try:
            while pending:
                for out in engine.step():
                    if out.finished and out.request_id in pending:
                        pending.discard(out.request_id)
                        deliver(int(out.request_id), Reply(out.outputs[0].text))
                        bar.update(1)
        except Exception as exc:  # the engine died: every unfinished item is a recorded failure
            try:
                engine.abort_request(sorted(pending))  # external ids, as given to add_request
            except Exception:  # noqa: BLE001  (an engine that died cannot abort; nothing more to free)
                pass
            for rid in sorted(pending, key=int):
                deliver(int(rid), Reply(None, f"{type(exc).__name__}: {exc}"))
        finally:
            bar.close()
        return replies  # type: ignore[return-value]


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, desc="vllm")
