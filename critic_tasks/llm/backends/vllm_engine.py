"""In-process vLLM: every prompt goes to the engine in one batched call."""

from __future__ import annotations

import functools
import importlib.util

from critic_tasks.llm.backends.base import OnResult, Reply
from critic_tasks.llm.settings import LLMSettings


@functools.lru_cache(maxsize=1)
def _load_vllm(name: str):
    from vllm import LLM

    return LLM(model=name)  # one engine per process: a second one would not fit next to the first


class VLLMBackend:
    """In-process vLLM: every prompt goes to the engine in one ``LLM.chat`` call, which batches them itself."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.model_name = settings.require_model()
        if importlib.util.find_spec("vllm") is None:
            raise ImportError(
                "the 'vllm' judge backend needs vLLM (pip install vllm; Linux with a GPU). "
                "Alternatively run `vllm serve MODEL` and use CRITIC_JUDGE_BACKEND=openai with CRITIC_JUDGE_BASE_URL."
            )

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]:
        from vllm import SamplingParams

        llm = _load_vllm(self.model_name)  # a model that won't load is a setup error: raise, don't record
        params = SamplingParams(temperature=self.settings.temperature, max_tokens=self.settings.max_tokens)
        conversations = [[{"role": "user", "content": p}] for p in prompts]
        try:
            outputs = llm.chat(conversations, params, use_tqdm=progress)
            replies = [Reply(out.outputs[0].text) for out in outputs]
        except Exception as exc:  # one batched call: if it fails, every item is a recorded failure
            replies = [Reply(None, f"{type(exc).__name__}: {exc}")] * len(prompts)
        for i, reply in enumerate(replies):
            if on_result is not None:
                on_result(i, reply)
        return replies
