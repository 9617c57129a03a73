"""Chat completions from any OpenAI-compatible endpoint (the OpenAI API, ``vllm serve``, llama.cpp's server).

The requests go through ``openai``'s async client (its own retries off) and ``tenacity`` decides what is retried:
connection failures, timeouts, 408/409/425/429, any 5xx and a 200 whose body cannot be read, with exponential
backoff and jitter, honouring a server's Retry-After. Every other failure (400, 401, 404...) is recorded for its item
at once. Up to ``concurrency`` requests are in flight on one pooled connection set.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
from urllib.parse import urlsplit

from critic_tasks.llm.backends.base import OnResult, Reply
from critic_tasks.llm.settings import LLMSettings

# Transient by nature (as the OpenAI client also treats them): timeout, conflict, too early, rate limit; and any 5xx.
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


class _Failure(Exception):
    """One failed try: ``message`` is what the item records; ``transient`` says whether to try again."""

    def __init__(self, message: str, transient: bool, retry_after: float | None = None):
        super().__init__(message)
        self.message, self.transient, self.retry_after = message, transient, retry_after


def _failure(exc: Exception) -> _Failure:
    import openai

    if isinstance(exc, openai.APIStatusError):
        status, body = exc.status_code, exc.response.text[:500] if exc.response is not None else ""
        retry_after = _retry_after(exc.response.headers.get("retry-after") if exc.response is not None else None)
        return _Failure(f"HTTP {status}: {body}", status in RETRY_STATUS or status >= 500, retry_after)
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        cause = exc.__cause__ or exc
        return _Failure(f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__, True)
    if isinstance(exc, (ValueError, KeyError, IndexError, TypeError, AttributeError, openai.APIResponseValidationError)):
        # A 200 with a body we can't read (truncated, or a proxy's error page): transient more often than not.
        return _Failure(f"malformed reply ({type(exc).__name__}: {exc})", True)
    return _Failure(f"{type(exc).__name__}: {exc}", False)  # anything else: recorded, never a crashed run


class OpenAIBackend:
    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.model = settings.require_model()

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]:
        return _run_coroutine(self._generate(list(prompts), progress, on_result))

    def _client(self):
        import openai

        s = self.settings
        # Honour HTTP(S)_PROXY for remote APIs, never for a server on this machine.
        local = urlsplit(s.base_url).hostname in ("127.0.0.1", "localhost", "::1")
        http_client = openai.DefaultAsyncHttpxClient(trust_env=not local)
        return openai.AsyncOpenAI(base_url=s.base_url, api_key=s.api_key or "no-key", max_retries=0, timeout=s.timeout,
                                  http_client=http_client)

    async def _generate(self, prompts, progress, on_result):
        from tqdm.auto import tqdm

        replies: list[Reply | None] = [None] * len(prompts)
        pending = iter(range(len(prompts)))
        client = self._client()
        try:
            with tqdm(total=len(prompts), desc=f"{self.settings.role} ({self.model})", disable=not progress) as bar:

                async def worker():
                    # A fixed pool of workers pulling from one iterator bounds concurrency (and memory) exactly.
                    for i in pending:
                        replies[i] = await self._request(client, prompts[i])
                        if on_result is not None:
                            on_result(i, replies[i])
                        bar.update(1)

                await asyncio.gather(*(worker() for _ in range(min(self.settings.concurrency, len(prompts)))))
        finally:
            await client.close()
        return replies

    def _payload(self, prompt: str) -> dict:
        s = self.settings
        return {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": s.temperature, "max_tokens": s.max_tokens}

    async def _request(self, client, prompt: str) -> Reply:
        """One item: transient failures retried by tenacity; after ``max_tries`` the last error is recorded."""
        from tenacity import AsyncRetrying, RetryError, retry_if_exception, stop_after_attempt

        s = self.settings

        def wait(state) -> float:
            failure = state.outcome.exception()
            return backoff_delay(state.attempt_number - 1, s.backoff_base, s.backoff_max,
                                 getattr(failure, "retry_after", None))

        async def once() -> str:
            try:
                response = await client.chat.completions.create(**self._payload(prompt))
                return response.choices[0].message.content or ""
            except Exception as exc:  # classified; tenacity retries the transient ones
                raise _failure(exc) from None

        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(s.max_tries), wait=wait, reraise=False,
                                               retry=retry_if_exception(lambda e: isinstance(e, _Failure) and e.transient)):
                with attempt:
                    return Reply(await once())
        except RetryError as err:
            last = err.last_attempt.exception()
            return Reply(None, f"gave up after {s.max_tries} tries; last error: {last.message}")
        except _Failure as failure:  # not transient: no point trying again
            return Reply(None, failure.message)
        return Reply(None, "no attempt made")  # unreachable: max_tries >= 1


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date; rare for APIs, and our own backoff applies anyway
