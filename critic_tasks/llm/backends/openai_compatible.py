"""Chat completions from any OpenAI-compatible endpoint (the OpenAI API, ``vllm serve``, llama.cpp's server).

Each request is one call of the openai SDK's documented ``client.post("/chat/completions", ...)`` on its async
client (the SDK's own retries off; its aiohttp transport where installed), so the request, its headers and the errors
raised are the SDK's own. ``tenacity`` decides what is retried: connection failures, timeouts, 408/409/425/429, any
5xx and a 200 whose body cannot be read, with exponential backoff and jitter, honouring a server's Retry-After. Every
other failure (400, 401, 404...) is recorded for its item at once. Up to ``concurrency`` requests are in flight per
endpoint, on pooled connections.

Several endpoints may serve one model (``BASE_URL=url1,url2,...``, or a file listing them): each try goes to the
endpoint with the fewest requests outstanding, and an endpoint that stops answering (connection refused or reset,
5xx) hands the try to the others at once, so a server dying mid-run loses nothing (see ``_Pool``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import importlib.util
import json
import random
import time
from urllib.parse import urlsplit

from critic_tasks.core.run_state import per_run
from critic_tasks.llm.backends.base import OnResult, Reply
from critic_tasks.llm.chat import messages
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

    def __init__(self, message: str, transient: bool, retry_after: float | None = None, endpoint_down: bool = False):
        super().__init__(message)
        self.message, self.transient, self.retry_after = message, transient, retry_after
        self.endpoint_down = endpoint_down  # the server itself is unreachable or failing: try the others first


def _failure(exc: Exception) -> _Failure:
    import openai

    if isinstance(exc, openai.APIStatusError):
        status, body = exc.status_code, exc.response.text[:500] if exc.response is not None else ""
        retry_after = _retry_after(exc.response.headers.get("retry-after") if exc.response is not None else None)
        return _Failure(f"HTTP {status}: {body}", status in RETRY_STATUS or status >= 500, retry_after,
                        endpoint_down=status >= 500)
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        cause = exc.__cause__ or exc
        return _Failure(f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__, True,
                        endpoint_down=not isinstance(exc, openai.APITimeoutError))
    if isinstance(exc, (ValueError, KeyError, IndexError, TypeError, AttributeError, openai.APIResponseValidationError)):
        # A 200 with a body we can't read (truncated, or a proxy's error page): transient more often than not.
        return _Failure(f"malformed reply ({type(exc).__name__}: {exc})", True)
    return _Failure(f"{type(exc).__name__}: {exc}", False)  # anything else: recorded, never a crashed run


def _async_http_client(trust_env: bool):
    """openai's aiohttp transport (``openai[aiohttp]``: its ``DefaultAioHttpClient``) where aiohttp is installed:
    about a third of the client CPU per request of the default httpx transport (measured: 1.2-1.4 ms against
    3.6-4.2 ms on our 2 busy cores), which is what bounds a judge run's throughput at hosted-API latencies; the same
    exceptions reach us (the transport maps aiohttp's onto httpx's, which openai wraps). Else the httpx default."""
    import openai

    verify = _ssl_context(trust_env)
    if hasattr(openai, "DefaultAioHttpClient") and importlib.util.find_spec("aiohttp") is not None:
        try:
            return openai.DefaultAioHttpClient(trust_env=trust_env, verify=verify)
        except RuntimeError:  # an openai without its vendored aiohttp transport
            pass
    return openai.DefaultAsyncHttpxClient(trust_env=trust_env, verify=verify)


@functools.lru_cache(maxsize=2)
def _ssl_context(trust_env: bool):
    """The TLS context the SDK's HTTP library would build for each client (its CA bundle, SSL_CERT_FILE /
    SSL_CERT_DIR when ``trust_env``), built once per process and handed to every client as ``verify``: building it
    is ~20-50 ms a client, paid before the first request of every call and every endpoint. The library's public
    ``create_ssl_context`` (httpx2 for openai >= 3, httpx before); ``True`` (the client's own default) where the
    installed library has none."""
    for name in ("httpx2", "httpx"):
        if importlib.util.find_spec(name) is not None:
            make = getattr(importlib.import_module(name), "create_ssl_context", None)
            if make is not None:
                return make(trust_env=trust_env)
    return True


class _Endpoint:
    """One server of a model: its client, the requests it has in flight, and until when it is left alone after a
    connection failure."""

    def __init__(self, url: str, client):
        self.url, self.client = url, client
        self.outstanding = 0
        self.down_until = 0.0
        self.served = 0

    async def chat(self, payload: dict) -> Reply:
        """One chat completion through the SDK's documented ``client.post`` (the same request machinery as
        ``chat.completions.create``: its headers, retries off, and its own errors for a timeout, a dropped
        connection or a 4xx/5xx status) with the body as bytes: the reply's text and what the server says answered
        are all we keep, so the body is parsed as JSON once. ``create`` costs ~0.5 ms more CPU a request (it
        transforms the parameters against its typed schema and wraps the raw response; benchmarks/README.md)."""
        content = await self.client.post("/chat/completions", body=payload, cast_to=bytes)
        body = json.loads(content)
        return Reply(body["choices"][0]["message"]["content"] or "", served=served_by(body))


class _Pool:
    """The endpoints of one model. Each try goes to the live endpoint with the fewest requests outstanding; an
    endpoint that cannot be reached (or answers 5xx) is left alone for ``DOWN_SECONDS`` and the try moves on to the
    next one at once, so a server dying mid-run hands its work to the others. Only when every endpoint has failed
    the same try does the item wait out a backoff (tenacity) and count a try."""

    DOWN_SECONDS = 10.0

    def __init__(self, endpoints: list[_Endpoint]):
        self.endpoints = endpoints
        self._turn = 0

    def pick(self, exclude: set) -> _Endpoint | None:
        candidates = [e for e in self.endpoints if e not in exclude]
        if not candidates:
            return None
        now = time.monotonic()
        live = [e for e in candidates if e.down_until <= now]
        if not live:  # all of them recently failed: the one back soonest
            return min(candidates, key=lambda e: e.down_until)
        self._turn += 1  # ties in turn, so an idle pool starts on every endpoint
        n = len(self.endpoints)
        return min(live, key=lambda e: (e.outstanding, (self.endpoints.index(e) - self._turn) % n))

    async def close(self):
        for e in self.endpoints:
            await e.client.close()


class OpenAIBackend:
    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.model = settings.require_model()

    def generate(self, prompts: list[str], progress: bool = True,
                 on_result: OnResult | None = None) -> list[Reply]:
        return _run_coroutine(self._generate(list(prompts), progress, on_result))

    def _client(self, base_url: str | None = None):
        import openai

        s = self.settings
        base_url = base_url or s.endpoints[0]
        # Honour HTTP(S)_PROXY for remote APIs, never for a server on this machine.
        local = urlsplit(base_url).hostname in ("127.0.0.1", "localhost", "::1")
        http_client = _async_http_client(trust_env=not local)
        return openai.AsyncOpenAI(base_url=base_url, api_key=s.api_key or "no-key", max_retries=0, timeout=s.timeout,
                                  http_client=http_client)

    def _pool(self) -> _Pool:
        return _Pool([_Endpoint(url, self._client(url)) for url in self.settings.endpoints])

    async def _generate(self, prompts, progress, on_result):
        from tqdm.auto import tqdm

        replies: list[Reply | None] = [None] * len(prompts)
        pending = iter(range(len(prompts)))
        pool = self._pool()
        # CONCURRENCY is per endpoint: n endpoints keep n times as many requests in flight
        workers = min(self.settings.concurrency * len(pool.endpoints), len(prompts))
        try:
            with tqdm(total=len(prompts), desc=f"{self.settings.role} ({self.model})", disable=not progress) as bar:

                async def worker():
                    # A fixed pool of workers pulling from one iterator bounds concurrency (and memory) exactly.
                    for i in pending:
                        replies[i] = await self._request(pool, prompts[i])
                        if on_result is not None:
                            on_result(i, replies[i])
                        bar.update(1)

                await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            await pool.close()
        self.served = {e.url: e.served for e in pool.endpoints}
        return replies

    def _payload(self, prompt: str) -> dict:
        s = self.settings
        return {"model": self.model, "messages": messages(prompt),  # a ChatPrompt's system part as a system message
                "temperature": s.temperature, "max_tokens": s.max_tokens}

    async def _request(self, pool: _Pool, prompt: str) -> Reply:
        """One item: transient failures retried by tenacity; after ``max_tries`` the last error is recorded."""
        from tenacity import AsyncRetrying, RetryError, retry_if_exception, stop_after_attempt

        s = self.settings

        def wait(state) -> float:
            failure = state.outcome.exception()
            return backoff_delay(state.attempt_number - 1, s.backoff_base, s.backoff_max,
                                 getattr(failure, "retry_after", None))

        async def once() -> Reply:
            tried: set = set()
            while True:  # one try: the next endpoint at once when one fails transiently, until all have
                endpoint = pool.pick(tried)
                endpoint.outstanding += 1
                try:
                    reply = await endpoint.chat(self._payload(prompt))
                    endpoint.served += 1
                    return reply
                except Exception as exc:  # classified; tenacity retries the transient ones
                    failure = _failure(exc)
                    if failure.endpoint_down:
                        endpoint.down_until = time.monotonic() + pool.DOWN_SECONDS
                    tried.add(endpoint)
                    if failure.transient and len(tried) < len(pool.endpoints):
                        continue
                    raise failure from None
                finally:
                    endpoint.outstanding -= 1

        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(s.max_tries), wait=wait, reraise=False,
                                               retry=retry_if_exception(lambda e: isinstance(e, _Failure) and e.transient)):
                with attempt:
                    return await once()
        except RetryError as err:
            last = err.last_attempt.exception()
            return Reply(None, f"gave up after {s.max_tries} tries; last error: {last.message}")
        except _Failure as failure:  # not transient: no point trying again
            return Reply(None, failure.message)
        return Reply(None, "no attempt made")  # unreachable: max_tries >= 1


SERVED_FIELDS = ("model", "system_fingerprint")  # what an OpenAI-compatible reply says about who answered


def served_by(body: dict) -> dict | None:
    """The reply's ``model`` and ``system_fingerprint`` where the server gives them (the OpenAI API gives both,
    vLLM and llama.cpp the model), as short strings; None when it gives neither."""
    served = {name: body[name][:200] for name in SERVED_FIELDS if isinstance(body.get(name), str) and body[name]}
    return served or None


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date; rare for APIs, and our own backoff applies anyway


# ---- preflight: is every endpoint there? ---------------------------------------------------------------------

CHECK_TIMEOUT_ENV = "CRITIC_ENDPOINT_TIMEOUT"  # seconds for the preflight's models call; 0 skips the call
_REACHED: set = per_run(set())  # (url, key) already answered in this run: each task build need not ask again


def _check_timeout() -> float:
    from critic_tasks.core.errors import ConfigError
    from critic_tasks.core.settings import read_number, read_setting

    raw = read_setting(CHECK_TIMEOUT_ENV)
    try:
        value = read_number(CHECK_TIMEOUT_ENV)
    except ConfigError:
        raise ConfigError(f"{CHECK_TIMEOUT_ENV}={raw}: expected seconds (0 skips the endpoint check)") from None
    if value < 0:
        raise ConfigError(f"{CHECK_TIMEOUT_ENV}={raw}: expected seconds >= 0 (0 skips the endpoint check)")
    return value


def _models_call(url: str, api_key: str | None, timeout: float) -> Exception | None:
    """What one models call at ``url`` raised (the SDK's error, or another for a reply it cannot read), or None."""
    import openai

    local = urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")
    client = openai.OpenAI(base_url=url, api_key=api_key or "no-key", max_retries=0, timeout=timeout,
                           http_client=openai.DefaultHttpxClient(trust_env=not local))
    try:
        client.models.list()
    except Exception as err:
        return err
    finally:
        client.close()
    return None


def _silence(err, timeout: float) -> str:
    """Why nothing answered (an ``openai.APIConnectionError``: refused, no such host, a timeout), in a few words."""
    import openai

    if isinstance(err, openai.APITimeoutError):
        return f"no answer within {timeout:g} s"
    cause = err.__cause__ or err
    while getattr(cause, "__cause__", None) is not None and not str(cause):
        cause = cause.__cause__
    return f"does not answer ({type(cause).__name__}: {cause})" if str(cause) else "does not answer"


def _ask_models(url: str, api_key: str | None, timeout: float) -> str | None:
    """None when ``url`` answers a models call (any answer but a refused key); else why not, in a few words."""
    import openai

    err = _models_call(url, api_key, timeout)
    if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return f"refused the API key (HTTP {err.status_code})"
    if err is None or isinstance(err, openai.APIStatusError):
        return None  # it answered: some servers have no models route, which is fine
    if isinstance(err, openai.APIConnectionError):  # a timeout is one too
        return _silence(err, timeout)
    # a 200 that is no API answer (a web page, a proxy's login form): the SDK cannot read it
    return (f"answers, but not as an OpenAI-compatible API ({type(err).__name__}: an HTML page or other non-JSON "
            "reply); the base URL must be the API's, usually ending in /v1")


def unanswered(url: str, timeout: float) -> str | None:
    """Why no server answers at ``url`` (as ``_ask_models`` says it), or None when one does. Any HTTP reply counts,
    an error status or a page too: for a URL that is no API base (lm-eval's base_url names the completions route
    itself), only whether a server is there can be asked."""
    import openai

    err = _models_call(url, None, timeout)
    return _silence(err, timeout) if isinstance(err, openai.APIConnectionError) else None


def check_endpoints(settings: LLMSettings) -> None:
    """Ask each endpoint of an OpenAI-compatible model once (a models call, a short timeout), all at once; a
    ConfigError in one line naming the setting and every endpoint that is down. The OpenAI API without a key is
    refused without asking."""
    from critic_tasks.core.errors import ConfigError
    from critic_tasks.llm.settings import OPENAI_BASE_URL

    if settings.backend != "openai" or not settings.model:
        return
    prefix = settings.prefix
    if not settings.api_key and any(u == OPENAI_BASE_URL for u in settings.endpoints):
        raise ConfigError(f"{prefix}MODEL={settings.model} with no {prefix}BASE_URL goes to the OpenAI API, which needs "
                          f"a key: set {prefix}API_KEY (or OPENAI_API_KEY), or {prefix}BASE_URL for your own server")
    timeout = _check_timeout()
    if timeout == 0:
        return
    todo = [u for u in settings.endpoints if (u, settings.api_key) not in _REACHED]
    if not todo:
        return
    with concurrent.futures.ThreadPoolExecutor(len(todo)) as pool:
        answers = list(pool.map(lambda u: _ask_models(u, settings.api_key, timeout), todo))
    down = [(u, why) for u, why in zip(todo, answers) if why]
    _REACHED.update((u, settings.api_key) for u, why in zip(todo, answers) if not why)
    if down:
        what = "; ".join(f"{u} {why}" for u, why in down)
        n = len(settings.endpoints)
        count = f" ({len(down)} of {n} endpoints)" if n > 1 else ""
        advice = (f"check {prefix}API_KEY" if all("API key" in why for _, why in down)
                  else f"check {prefix}BASE_URL (or start the server)")
        raise ConfigError(f"{settings.role} {settings.model!r}{count}: {what}; {advice}, or set {CHECK_TIMEOUT_ENV}=0 "
                          "to skip this check")
