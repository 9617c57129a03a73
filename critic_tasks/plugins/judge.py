"""Judge backends for the subjective evaluation, exposed through the ``critic_judge_backend`` hook.

Built-ins: ``openai`` (any OpenAI-compatible chat endpoint: the OpenAI API, ``vllm serve``, llama.cpp's server),
``vllm`` (in-process engine, one batched call) and ``hf`` (transformers, batched greedy generation). A third
party adds a backend by shipping a module with an ``@hookimpl def critic_judge_backend(name, settings)`` under the
``critic_tasks`` entry-point group; it returns an object with the ``generate`` method below, or None.

Backend contract: ``generate(prompts, progress=True, on_result=None) -> list[JudgeReply]``, one reply per prompt,
in order. A per-item failure is a ``JudgeReply(text=None, error=...)``, never an exception; ``on_result(index,
reply)`` is called as each reply arrives so the caller can persist it at once (a killed run then loses nothing).
Configuration errors (no model, missing library) do raise, before any call is made.

Settings come from the environment (``JudgeSettings.from_env``): CRITIC_JUDGE_BACKEND, CRITIC_JUDGE_MODEL,
CRITIC_JUDGE_BASE_URL, CRITIC_JUDGE_API_KEY (else OPENAI_API_KEY), CRITIC_JUDGE_CONCURRENCY, CRITIC_JUDGE_CACHE
(a path; ``off`` disables the cache).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib.util
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from critic_tasks.judge_prompts import PROMPT_VERSION
from critic_tasks.plugins.hookspecs import hookimpl

OPENAI_BASE_URL = "https://api.openai.com/v1"
_CACHE_OFF = {"off", "none", "0", "false", "no", "disabled"}
# Transient by nature (as the OpenAI client also treats them): timeout, conflict, rate limit; and any 5xx.
RETRY_STATUS = {408, 409, 425, 429}

OnResult = Callable[[int, "JudgeReply"], None]


def default_cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "critic_tasks", "judge.sqlite")


@dataclass(frozen=True)
class JudgeReply:
    text: str | None
    error: str | None = None


@dataclass(frozen=True)
class JudgeSettings:
    backend: str = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never logged, never part of the identity
    concurrency: int = 16
    cache: str | None = field(default_factory=default_cache_path)  # None: no cache
    temperature: float = 0.0  # greedy: judgments must be reproducible
    max_tokens: int = 1024
    # Seconds per HTTP request, queueing at the server included: a server with fewer slots than ``concurrency``
    # holds the surplus requests before it starts them, so keep this generous (the OpenAI client's default).
    timeout: float = 600.0
    max_tries: int = 6  # per item, first try included; then the item is a recorded failure
    backoff_base: float = 1.0  # seconds before the 2nd try; doubles each time, with jitter
    backoff_max: float = 60.0
    batch_size: int = 8  # hf backend
    device: str | None = None  # hf backend; None: cuda if available, else cpu
    prompt_version: str = PROMPT_VERSION

    def __post_init__(self):
        base_url = self.base_url or (OPENAI_BASE_URL if self.backend == "openai" else None)
        object.__setattr__(self, "base_url", base_url.rstrip("/") if base_url else None)
        if self.concurrency < 1 or self.max_tries < 1 or self.batch_size < 1:
            raise ValueError("concurrency, max_tries and batch_size must be >= 1")
        if self.temperature < 0 or self.max_tokens < 1:
            raise ValueError("temperature must be >= 0 and max_tokens >= 1")

    @classmethod
    def from_env(cls, **overrides) -> "JudgeSettings":
        """Settings from CRITIC_JUDGE_* variables; keyword overrides win over the environment."""
        env = os.environ
        cache = env.get("CRITIC_JUDGE_CACHE", "").strip()
        values = {
            "backend": env.get("CRITIC_JUDGE_BACKEND") or "openai",
            "model": env.get("CRITIC_JUDGE_MODEL") or None,
            "base_url": env.get("CRITIC_JUDGE_BASE_URL") or None,
            "api_key": env.get("CRITIC_JUDGE_API_KEY") or env.get("OPENAI_API_KEY") or None,
            "cache": None if cache.lower() in _CACHE_OFF else os.path.expanduser(cache or default_cache_path()),
        }
        if env.get("CRITIC_JUDGE_MAX_TOKENS"):  # an extension of the contract: a judge's reply budget
            try:
                values["max_tokens"] = int(env["CRITIC_JUDGE_MAX_TOKENS"])
            except ValueError:
                raise ValueError(f"CRITIC_JUDGE_MAX_TOKENS must be an integer, got {env['CRITIC_JUDGE_MAX_TOKENS']!r}")
        if env.get("CRITIC_JUDGE_CONCURRENCY"):
            try:
                values["concurrency"] = int(env["CRITIC_JUDGE_CONCURRENCY"])
            except ValueError:
                raise ValueError(
                    f"CRITIC_JUDGE_CONCURRENCY must be an integer, got {env['CRITIC_JUDGE_CONCURRENCY']!r}"
                ) from None
        values.update(overrides)
        return cls(**values)

    def identity(self) -> dict:
        """What determines a judgment; recorded in results and hashed into cache keys. Never includes the key."""
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_version": self.prompt_version,
        }


def _require_model(settings: JudgeSettings) -> str:
    if not settings.model:
        raise ValueError(
            f"the {settings.backend!r} judge backend needs a model: set CRITIC_JUDGE_MODEL "
            "(the paper's judge was gpt-4-1106-preview)"
        )
    return settings.model


def _run_coroutine(coro):
    """asyncio.run, also from code that already runs an event loop (notebooks, async harnesses)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def backoff_delay(attempt: int, base: float, cap: float, retry_after: float | None = None) -> float:
    """Exponential backoff with "equal jitter" (half fixed, half random), so clients that failed together
    don't retry together; a server's Retry-After is honoured (up to ``cap``)."""
    delay = min(cap, base * 2**attempt)
    delay = delay / 2 + random.uniform(0, delay / 2)
    if retry_after is not None:
        delay = max(delay, min(cap, retry_after))
    return delay


class OpenAIBackend:
    """Chat completions over HTTP: up to ``concurrency`` requests in flight on one pooled aiohttp session."""

    def __init__(self, settings: JudgeSettings):
        self.settings = settings
        self.model = _require_model(settings)
        self.url = f"{settings.base_url}/chat/completions"

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[JudgeReply]:
        return _run_coroutine(self._generate(list(prompts), progress, on_result))

    async def _generate(self, prompts, progress, on_result):
        import aiohttp
        from tqdm.auto import tqdm

        s = self.settings
        replies: list[JudgeReply | None] = [None] * len(prompts)
        pending = iter(range(len(prompts)))
        headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        connector = aiohttp.TCPConnector(limit=s.concurrency)
        timeout = aiohttp.ClientTimeout(total=s.timeout)
        with tqdm(total=len(prompts), desc=f"judge ({self.model})", disable=not progress) as bar:
            # Honour HTTP(S)_PROXY for remote APIs, never for a server on this machine.
            local = urlsplit(self.url).hostname in ("127.0.0.1", "localhost", "::1")
            async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers,
                                             trust_env=not local) as session:

                async def worker():
                    # A fixed pool of workers pulling from one iterator bounds concurrency (and memory) exactly.
                    for i in pending:
                        replies[i] = await self._request(session, prompts[i])
                        if on_result is not None:
                            on_result(i, replies[i])
                        bar.update(1)

                await asyncio.gather(*(worker() for _ in range(min(s.concurrency, len(prompts)))))
        return replies

    def _payload(self, prompt: str) -> dict:
        s = self.settings
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
        }

    async def _request(self, session, prompt: str) -> JudgeReply:
        """One item: retry transient failures with backoff; after ``max_tries`` return the last error."""
        import aiohttp

        s = self.settings
        error = "no attempt made"
        for attempt in range(s.max_tries):
            retry_after, body = None, ""
            try:
                async with session.post(self.url, json=self._payload(prompt)) as resp:
                    body = await resp.text()
                    if resp.status == 200:
                        return JudgeReply(json.loads(body)["choices"][0]["message"]["content"] or "")
                    error = f"HTTP {resp.status}: {body[:500]}"
                    if resp.status not in RETRY_STATUS and resp.status < 500:
                        return JudgeReply(None, error)  # 400/401/404...: retrying won't help
                    retry_after = _retry_after(resp.headers.get("Retry-After"))
            except (asyncio.TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                # A 200 with a body we can't read (truncated, or a proxy's error page): transient more often than not.
                error = f"malformed reply ({type(exc).__name__}: {exc}): {body[:200]!r}"
            except Exception as exc:  # anything else is a recorded failure for this item, never a crashed run
                return JudgeReply(None, f"{type(exc).__name__}: {exc}")
            if attempt + 1 < s.max_tries:
                await asyncio.sleep(backoff_delay(attempt, s.backoff_base, s.backoff_max, retry_after))
        return JudgeReply(None, f"gave up after {s.max_tries} tries; last error: {error}")


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date; rare for APIs, and our own backoff applies anyway


@functools.lru_cache(maxsize=1)
def _load_hf(name: str, device: str | None):
    """Loaded once per process: judge_prompts is called per domain and must not reload the model each time."""
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


@functools.lru_cache(maxsize=1)
def _load_vllm(name: str):
    from vllm import LLM

    return LLM(model=name)  # one engine per process: a second one would not fit next to the first


class HFBackend:
    """transformers on CPU/GPU: batched generation with the model's chat template (greedy unless temperature > 0).

    ``model`` is a Hub id, a local directory, or a ``.gguf`` file (loaded through transformers' GGUF support).
    The model is loaded on the first ``generate``, so a fully cached run never loads it."""

    def __init__(self, settings: JudgeSettings):
        self.settings = settings
        self.model_name = _require_model(settings)
        self._model = self._tokenizer = None

    def _load(self):
        self._tokenizer, self._model = _load_hf(self.model_name, self.settings.device)

    def _chat(self, prompt: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[JudgeReply]:
        import torch
        from tqdm.auto import tqdm

        if self._model is None:
            self._load()
        s, tok = self.settings, self._tokenizer
        templated = bool(getattr(tok, "chat_template", None))
        replies: list[JudgeReply | None] = [None] * len(prompts)
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
                batch_replies = [JudgeReply(t.strip()) for t in tok.batch_decode(new_tokens, skip_special_tokens=True)]
            except Exception as exc:  # e.g. out of memory: this batch fails, the run goes on
                batch_replies = [JudgeReply(None, f"{type(exc).__name__}: {exc}")] * len(batch)
            for i, reply in zip(batch, batch_replies):
                replies[i] = reply
                if on_result is not None:
                    on_result(i, reply)
        return replies


class VLLMBackend:
    """In-process vLLM: every prompt goes to the engine in one ``LLM.chat`` call, which batches them itself."""

    def __init__(self, settings: JudgeSettings):
        self.settings = settings
        self.model_name = _require_model(settings)
        if importlib.util.find_spec("vllm") is None:
            raise ImportError(
                "the 'vllm' judge backend needs vLLM (pip install vllm; Linux with a GPU). "
                "Alternatively run `vllm serve MODEL` and use CRITIC_JUDGE_BACKEND=openai with CRITIC_JUDGE_BASE_URL."
            )

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[JudgeReply]:
        from vllm import SamplingParams

        llm = _load_vllm(self.model_name)  # a model that won't load is a setup error: raise, don't record
        params = SamplingParams(temperature=self.settings.temperature, max_tokens=self.settings.max_tokens)
        conversations = [[{"role": "user", "content": p}] for p in prompts]
        try:
            outputs = llm.chat(conversations, params, use_tqdm=progress)
            replies = [JudgeReply(out.outputs[0].text) for out in outputs]
        except Exception as exc:  # one batched call: if it fails, every item is a recorded failure
            replies = [JudgeReply(None, f"{type(exc).__name__}: {exc}")] * len(prompts)
        for i, reply in enumerate(replies):
            if on_result is not None:
                on_result(i, reply)
        return replies


BUILTIN_BACKENDS = {"openai": OpenAIBackend, "vllm": VLLMBackend, "hf": HFBackend}


@hookimpl
def critic_judge_backend(name: str, settings: JudgeSettings):
    backend_cls = BUILTIN_BACKENDS.get(name)
    return backend_cls(settings) if backend_cls else None


def get_backend(settings: JudgeSettings | None = None):
    """The backend named by ``settings.backend``, from the first plugin that knows it."""
    from critic_tasks.plugins.manager import plugin_manager

    settings = settings or JudgeSettings.from_env()
    pm = plugin_manager()
    backend = pm.hook.critic_judge_backend(name=settings.backend, settings=settings)
    if backend is None:
        others = sorted(n for n, p in pm.list_name_plugin() if p is not None and not n.startswith("critic_tasks."))
        loaded = f"; other plugins loaded: {', '.join(others)}" if others else ""
        raise ValueError(
            f"unknown judge backend {settings.backend!r} (CRITIC_JUDGE_BACKEND); "
            f"built-in: {', '.join(sorted(BUILTIN_BACKENDS))}{loaded}"
        )
    return backend

