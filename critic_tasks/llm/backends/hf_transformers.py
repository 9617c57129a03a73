"""transformers on CPU/GPU, in this process: batched generation with the model's chat template."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from critic_tasks.llm.backends.base import OnResult, Reply
from critic_tasks.llm.chat import render
from critic_tasks.llm.settings import LLMSettings


@functools.lru_cache(maxsize=1)
def _load_hf(name: str, device: str | None):
    """Loaded once per process: a judge or reviser is asked once per task (a run of nine domains: nine times), and
    must not reload the model each time. One entry: a process holds one local judge model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, kwargs = name, {}
    if source.endswith(".gguf") and os.path.isfile(source):
        source, kwargs["gguf_file"] = str(Path(source).parent), Path(source).name
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    tokenizer.padding_side = "left"  # decoder-only batching: pad on the left so outputs follow prompts
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kwargs).to(device).eval()
    return tokenizer, model


class HFBackend:
    """transformers on CPU/GPU: batched generation with the model's chat template (greedy unless temperature > 0).

    ``model`` is a Hub id, a local directory, or a ``.gguf`` file (loaded through transformers' GGUF support).
    The model is loaded on the first ``generate``, so a fully cached run never loads it."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.model_name = settings.require_model()
        self._model = self._tokenizer = None

    def _load(self):
        self._tokenizer, self._model = _load_hf(self.model_name, self.settings.device)

    def _chat(self, prompt: str) -> str:
        return render(self._tokenizer, prompt)  # a ChatPrompt's system part as a system turn, where the template takes one

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]:
        import torch
        from tqdm.auto import tqdm

        if self._model is None:
            self._load()
        s, tok = self.settings, self._tokenizer
        templated = bool(getattr(tok, "chat_template", None))
        replies: list[Reply | None] = [None] * len(prompts)
        # Longest first, so each batch holds similar lengths (less padding) and an OOM shows up at once.
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        sampling = {"do_sample": True, "temperature": s.temperature} if s.temperature > 0 else {"do_sample": False}
        for start in tqdm(range(0, len(order), s.batch_size), desc="judge (hf)", disable=not progress):
            batch = order[start : start + s.batch_size]
            try:
                texts = [self._chat(prompts[i]) if templated else prompts[i] for i in batch]
                # The chat template already holds the special tokens (BOS...); a raw prompt needs them added.
                enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=not templated)
                enc = enc.to(self._model.device)
                with torch.no_grad():
                    out = self._model.generate(**enc, max_new_tokens=s.max_tokens, pad_token_id=tok.pad_token_id,
                                               **sampling)
                new_tokens = out[:, enc["input_ids"].shape[1] :]  # left padding: every prompt ends at the same column
                batch_replies = [Reply(t.strip()) for t in tok.batch_decode(new_tokens, skip_special_tokens=True)]
            except Exception as exc:  # e.g. out of memory: this batch fails, the run goes on
                batch_replies = [Reply(None, f"{type(exc).__name__}: {exc}")] * len(batch)
            for i, reply in zip(batch, batch_replies):
                replies[i] = reply
                if on_result is not None:
                    on_result(i, reply)
        return replies
