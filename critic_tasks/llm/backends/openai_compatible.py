"""Chat completions over HTTP from any OpenAI-compatible endpoint (the OpenAI API, ``vllm serve``, llama.cpp's
server): up to ``concurrency`` requests in flight on one pooled aiohttp session, transient failures retried with
backoff (a server's Retry-After honoured), every other failure recorded for its item."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import random
from urllib.parse import urlsplit

from critic_tasks.llm.backends.base import OnResult, Reply
from critic_tasks.llm.settings import LLMSettings

# Transient by nature (as the OpenAI client also treats them): timeout, conflict, rate limit; and any 5xx.
RETRY_STATUS = {408, 409, 425, 429}


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

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.model = settings.require_model()
        self.url = f"{settings.base_url}/chat/completions"

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]:
        return _run_coroutine(self._generate(list(prompts), progress, on_result))

    async def _generate(self, prompts, progress, on_result):
        import aiohttp
        from tqdm.auto import tqdm

        s = self.settings
        replies: list[Reply | None] = [None] * len(prompts)
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

    async def _request(self, session, prompt: str) -> Reply:
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
                        return Reply(json.loads(body)["choices"][0]["message"]["content"] or "")
                    error = f"HTTP {resp.status}: {body[:500]}"
                    if resp.status not in RETRY_STATUS and resp.status < 500:
                        return Reply(None, error)  # 400/401/404...: retrying won't help
                    retry_after = _retry_after(resp.headers.get("Retry-After"))
            except (asyncio.TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                # A 200 with a body we can't read (truncated, or a proxy's error page): transient more often than not.
                error = f"malformed reply ({type(exc).__name__}: {exc}): {body[:200]!r}"
            except Exception as exc:  # anything else is a recorded failure for this item, never a crashed run
                return Reply(None, f"{type(exc).__name__}: {exc}")
            if attempt + 1 < s.max_tries:
                await asyncio.sleep(backoff_delay(attempt, s.backoff_base, s.backoff_max, retry_after))
        return Reply(None, f"gave up after {s.max_tries} tries; last error: {error}")


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date; rare for APIs, and our own backoff applies anyway
