"""The openai judge backend and the cache, against a scriptable stub server (fault injection only).

The stub (stdlib http.server in a thread) decides per request what to do via ``behave(n, prompt)``, where n is the
arrival index: ``("ok", text)``, ``("status", code, headers)``, ``("sleep", seconds, text)`` (slow, then ok),
``("drop",)`` (close the connection without answering), ``("garbage",)`` (200 with a non-JSON body), ``("hang",)``
(block until released). Real-server behaviour is covered by test_judge_llamacpp.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from helpers import summarize
from stub_server import StubServer, default_text

from critic_tasks.llm import LLMSettings as JudgeSettings
from critic_tasks.llm.backends import Reply as JudgeReply  # noqa: F401
from critic_tasks.llm.backends import get_backend, vllm_engine
from critic_tasks.llm.backends.openai_compatible import backoff_delay
from critic_tasks.protocols.criticbench.judge import grade_prompts as judge_prompts
from critic_tasks.protocols.criticbench.judge import judge_identity
from critic_tasks.protocols.criticbench.judge_prompts import PROMPT_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPTS = [f"judge prompt number {i}" for i in range(12)]


@pytest.fixture
def settings(tmp_path):
    """Fast retries so fault tests take milliseconds; a fresh cache per test."""
    def make(stub, **kw):
        values = dict(backend="openai", model="stub-judge", base_url=stub.base_url, api_key="sk-test",
                      cache=str(tmp_path / "judge.sqlite"), max_tries=4, backoff_base=0.01, backoff_max=0.05,
                      timeout=5.0, concurrency=4)
        values.update(kw)
        return JudgeSettings(**values)
    return make


def run(prompts, s):
    return judge_prompts(prompts, s, progress=False)


def cache_rows(path):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT key, identity, text FROM replies").fetchall()


def test_happy_path_scores_headers_and_payload(settings):
    with StubServer() as stub:
        s = settings(stub)
        results = run(PROMPTS[:3], s)
    assert [r.score for r in results] == [len(p) % 9 + 1 for p in PROMPTS[:3]]
    assert all(r.error is None and not r.cached for r in results)
    assert all(h["authorization"] == "Bearer sk-test" for h in stub.headers)
    for body in stub.bodies:  # greedy by default; one user turn holding the prompt
        assert (body["model"], body["temperature"], body["max_tokens"]) == ("stub-judge", 0.0, 1024)
        assert body["messages"] in [[{"role": "user", "content": p}] for p in PROMPTS[:3]]


def test_requests_go_through_the_sdks_documented_post(settings, monkeypatch):
    """Every request is one ``client.post("/chat/completions", ...)`` of the openai SDK (documented; on 36a32e3 the
    backend POSTed on the SDK's private ``_client`` and never called it), with our payload: a ChatPrompt's system
    part as the system message, a plain prompt as one user message, greedy, our reply budget."""
    from openai import AsyncOpenAI

    from critic_tasks.llm.chat import ChatPrompt

    calls = []
    original = AsyncOpenAI.post

    async def recording(self, path, **kwargs):
        assert path == "/chat/completions"
        calls.append({k: kwargs["body"][k] for k in ("model", "messages", "temperature", "max_tokens")})
        return await original(self, path, **kwargs)

    monkeypatch.setattr(AsyncOpenAI, "post", recording)
    prompts = [ChatPrompt("Grade strictly.", "the answer: 4"), "judge this: 55"]
    with StubServer(lambda n, p: ("ok", f"Score: {len(p) % 9 + 1}")) as stub:
        replies = get_backend(settings(stub, cache=None, max_tokens=77)).generate(prompts, progress=False)
    assert [r.text for r in replies] == ["Score: 5", "Score: 6"]  # the user part's length (13, 14) % 9 + 1
    expected = [{"model": "stub-judge", "temperature": 0.0, "max_tokens": 77,
                 "messages": [{"role": "system", "content": "Grade strictly."},
                              {"role": "user", "content": "the answer: 4"}]},
                {"model": "stub-judge", "temperature": 0.0, "max_tokens": 77,
                 "messages": [{"role": "user", "content": "judge this: 55"}]}]
    canon = lambda items: sorted(json.dumps(i, sort_keys=True) for i in items)  # noqa: E731 - concurrent: any order
    assert canon(calls) == canon(expected)
    assert canon(stub.bodies) == canon(expected)  # what reached the server: the same, nothing added


def test_500_then_success_is_retried(settings):
    with StubServer(lambda n, p: ("status", 500, {}) if n < 2 else ("ok", "Score: 6")) as stub:
        [result] = run(PROMPTS[:1], settings(stub))
    assert result.score == 6 and result.error is None
    assert [kind for _, _, kind in stub.log] == ["status", "status", "ok"]


def test_429_honours_retry_after(settings):
    with StubServer(lambda n, p: ("status", 429, {"Retry-After": "1"}) if n == 0 else ("ok", "Score: 5")) as stub:
        [result] = run(PROMPTS[:1], settings(stub, backoff_max=2.0))
    assert result.score == 5
    (t0, _, _), (t1, _, _) = stub.log
    assert t1 - t0 >= 0.95  # waited for Retry-After, not the 10 ms backoff


def test_429_backoff_grows_exponentially(settings):
    with StubServer(lambda n, p: ("status", 429, {}) if n < 3 else ("ok", "Score: 5")) as stub:
        [result] = run(PROMPTS[:1], settings(stub, backoff_base=0.2, backoff_max=10))
    assert result.score == 5
    times = [t for t, _, _ in stub.log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # equal jitter: the k-th wait lies in [base*2^k/2, base*2^k]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2 and gaps[2] >= 0.4


def test_backoff_delay_bounds():
    for attempt in range(8):
        for _ in range(50):
            d = backoff_delay(attempt, base=1.0, cap=30.0)
            full = min(30.0, 2.0**attempt)
            assert full / 2 <= d <= full
    assert backoff_delay(0, 1.0, 30.0, retry_after=7) >= 7
    assert backoff_delay(0, 1.0, 30.0, retry_after=3600) == 30.0  # a huge Retry-After is capped


def test_timeout_is_retried(settings):
    with StubServer(lambda n, p: ("sleep", 3.0, "Score: 9") if n == 0 else ("ok", "Score: 4")) as stub:
        start = time.monotonic()
        [result] = run(PROMPTS[:1], settings(stub, timeout=0.5))
    assert result.score == 4 and len(stub.log) == 2
    assert time.monotonic() - start < 2.5  # gave up on the slow reply instead of waiting for it


def test_dropped_connection_is_retried(settings):
    with StubServer(lambda n, p: ("drop",) if n < 2 else ("ok", "Score: 3")) as stub:
        [result] = run(PROMPTS[:1], settings(stub))
    assert result.score == 3 and len(stub.log) == 3


def test_malformed_200_is_retried(settings):
    with StubServer(lambda n, p: ("garbage",) if n == 0 else ("ok", "Score: 2")) as stub:
        [result] = run(PROMPTS[:1], settings(stub))
    assert result.score == 2


def test_connection_refused_is_a_recorded_failure(settings):
    with StubServer() as stub:
        pass  # started and stopped: nothing listens on its port any more
    results = run(PROMPTS[:2], settings(stub, max_tries=2))
    assert all(r.score is None and r.text is None for r in results)
    assert all("gave up after 2 tries" in r.error for r in results)


def test_always_failing_is_bounded_recorded_and_retried_next_run(settings, tmp_path):
    with StubServer(lambda n, p: ("status", 503, {})) as stub:
        s = settings(stub, max_tries=3)
        results = run(PROMPTS[:2], s)
    assert len(stub.log) == 6  # exactly max_tries per item, then stop
    for r in results:
        assert r.score is None and r.text is None and "HTTP 503" in r.error and "after 3 tries" in r.error
    summary = summarize(results)
    assert summary["n_failed"] == 2 and summary["failed_indices"] == [0, 1] and summary["judge_score"] is None
    assert cache_rows(s.cache) == []  # failures are not cached ...
    with StubServer(port=stub.port) as healthy:
        results = run(PROMPTS[:2], s)
    assert sorted(healthy.prompts()) == sorted(PROMPTS[:2])  # ... so the next run asks again
    assert all(r.score is not None for r in results)


def test_client_error_is_not_retried(settings):
    with StubServer(lambda n, p: ("status", 400, {})) as stub:
        [result] = run(PROMPTS[:1], settings(stub))
    assert len(stub.log) == 1 and result.error.startswith("HTTP 400")


def test_unparseable_reply_is_a_counted_failure_with_text_kept(settings):
    with StubServer(lambda n, p: ("ok", "I like it. Score: 11") if p == PROMPTS[1] else ("ok", "ok. Score: 8")) as stub:
        results = run(PROMPTS[:3], settings(stub))
    assert results[1].score is None and results[1].text == "I like it. Score: 11" and "Score: x" in results[1].error
    summary = summarize(results)
    assert summary["judge_score"] == 8.0 and summary["n_failed"] == 1 and summary["failed_indices"] == [1]
    assert summary["judge_parse_rate"] == pytest.approx(200 / 3) and summary["n_call_errors"] == 0


def test_rerun_is_served_from_cache(settings):
    with StubServer() as stub:
        s = settings(stub)
        first = run(PROMPTS, s)
        n_calls = len(stub.log)
        second = run(PROMPTS, s)
        assert len(stub.log) == n_calls == len(PROMPTS)  # the rerun made no call at all
        assert all(r.cached for r in second) and [r.score for r in second] == [r.score for r in first]
        # Another identity (here max_tokens) is another judge: not served from the first one's cache.
        run(PROMPTS[:2], settings(stub, max_tokens=7))
        assert len(stub.log) == n_calls + 2


def test_identity_is_recorded_and_key_never_stored(settings):
    with StubServer() as stub:
        s = settings(stub, api_key="sk-secret-123")
        results = run(PROMPTS[:2], s)
    identity = judge_identity(s)
    assert re.fullmatch(r"[0-9a-f]{64}", identity["template_sha256"])  # the templates' hash: test_judge_fingerprint
    assert {k: v for k, v in identity.items() if k != "template_sha256"} == {
        "backend": "openai", "model": "stub-judge", "base_url": stub.base_url, "temperature": 0.0, "max_tokens": 1024,
        "prompt_version": PROMPT_VERSION}
    assert len(results) == 2
    rows = cache_rows(s.cache)
    assert len(rows) == 2 and all(json.loads(ident) == identity for _, ident, _ in rows)
    with open(s.cache, "rb") as f:
        assert b"sk-secret" not in f.read()
    assert "sk-secret" not in repr(s)


def test_duplicate_prompts_are_judged_once(settings):
    with StubServer() as stub:
        results = run([PROMPTS[0], PROMPTS[1], PROMPTS[0]], settings(stub))
    assert sorted(stub.prompts()) == sorted(PROMPTS[:2])
    assert results[0] == results[2]


def test_concurrency_limit_is_respected(settings):
    with StubServer(lambda n, p: ("sleep", 0.15, "Score: 5")) as stub:
        start = time.monotonic()
        run(PROMPTS, settings(stub, concurrency=3))
        elapsed = time.monotonic() - start
    assert stub.max_in_flight == 3
    assert elapsed < 0.15 * len(PROMPTS) * 2 / 3  # really concurrent: 4 rounds of 0.15 s, not 12


def test_server_killed_mid_run_then_resume(settings):
    """The server dies after k answers: those k are cached, the rest are recorded failures; a rerun against a
    healthy server asks only for the rest, and no prompt is ever answered twice."""
    k = 5
    with StubServer(lambda n, p: ("ok", default_text(p)) if n < k else ("drop",)) as dying:
        s = settings(dying, max_tries=2)
        first = run(PROMPTS, s)
    assert len(dying.answered) == k
    assert sum(r.score is not None for r in first) == k
    assert {p for p, r in zip(PROMPTS, first) if r.score is not None} == set(dying.answered)
    assert all(r.error for r in first if r.score is None)
    assert len(cache_rows(s.cache)) == k

    with StubServer(port=dying.port) as healthy:
        second = run(PROMPTS, s)
    assert sorted(healthy.prompts()) == sorted(set(PROMPTS) - set(dying.answered))  # the rest, each once
    assert sorted(dying.answered + healthy.answered) == sorted(PROMPTS)  # nothing judged twice
    assert all(r.score is not None for r in second)
    assert [r.cached for r in second] == [p in dying.answered for p in PROMPTS]


CLIENT = """
import sys
from critic_tasks.protocols.criticbench.judge import grade_prompts as judge_prompts
from critic_tasks.llm import LLMSettings as JudgeSettings
prompts = [f"judge prompt number {i}" for i in range(12)]
judge_prompts(prompts, JudgeSettings(backend="openai", model="stub-judge", base_url=sys.argv[1], cache=sys.argv[2],
                                     concurrency=1), progress=False)
"""


def test_client_killed_mid_run_loses_nothing(settings, tmp_path):
    """SIGKILL the judging process after k replies: each was cached as it arrived, so the rerun asks for the rest."""
    k = 4
    cache = str(tmp_path / "killed.sqlite")
    with StubServer(lambda n, p: ("ok", default_text(p)) if n < k else ("hang",)) as stub:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.Popen([sys.executable, "-c", CLIENT, stub.base_url, cache], env=env)
        try:
            # concurrency 1: request k+1 is sent only after reply k was handled, i.e. written to the cache
            assert stub.wait_for_requests(k + 1, timeout=60), "client never got going"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        stub.behave = lambda n, p: ("ok", default_text(p))
        stub.release()
        results = run(PROMPTS, settings(stub, cache=cache))
    assert stub.prompts()[: k + 1] == PROMPTS[: k + 1]
    assert sorted(stub.prompts()[k + 1 :]) == sorted(PROMPTS[k:])  # the hung one was never answered: asked again
    assert [r.cached for r in results] == [i < k for i in range(len(PROMPTS))]
    assert all(r.score is not None for r in results)


def test_works_inside_a_running_event_loop(settings):
    async def main(s):
        return run(PROMPTS[:2], s)

    with StubServer() as stub:
        results = asyncio.run(main(settings(stub)))
    assert all(r.score is not None for r in results)


# ---- settings, registry -------------------------------------------------------------------------------------


def test_settings_from_env(monkeypatch, tmp_path):
    for var in list(os.environ):
        if var.startswith("CRITIC_JUDGE_") or var in ("OPENAI_API_KEY", "XDG_CACHE_HOME"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    s = JudgeSettings.from_env()
    assert (s.backend, s.model, s.base_url, s.api_key, s.concurrency, s.temperature) == \
        ("openai", None, "https://api.openai.com/v1", None, 16, 0.0)
    assert s.cache == str(tmp_path / "xdg" / "critic_tasks" / "judge.sqlite")

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert JudgeSettings.from_env().api_key == "sk-openai"
    monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "sk-critic")
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "hf")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "some/model")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", "http://127.0.0.1:8000/v1/")
    monkeypatch.setenv("CRITIC_JUDGE_CONCURRENCY", "32")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "c.sqlite"))
    s = JudgeSettings.from_env(max_tokens=64)
    assert (s.backend, s.model, s.base_url, s.api_key, s.concurrency, s.cache, s.max_tokens) == \
        ("hf", "some/model", "http://127.0.0.1:8000/v1", "sk-critic", 32, str(tmp_path / "c.sqlite"), 64)
    assert JudgeSettings.from_env(model="override").model == "override"

    monkeypatch.setenv("CRITIC_JUDGE_CACHE", "off")
    assert JudgeSettings.from_env().cache is None
    monkeypatch.setenv("CRITIC_JUDGE_CONCURRENCY", "lots")
    with pytest.raises(ValueError, match="CRITIC_JUDGE_CONCURRENCY"):
        JudgeSettings.from_env()
    monkeypatch.setenv("CRITIC_JUDGE_CONCURRENCY", "0")
    with pytest.raises(ValueError):
        JudgeSettings.from_env()


def test_no_cache_means_every_run_calls(settings):
    with StubServer() as stub:
        s = settings(stub, cache=None)
        run(PROMPTS[:2], s)
        run(PROMPTS[:2], s)
    assert len(stub.log) == 4


def test_unknown_backend_and_missing_model_are_clear_errors():
    with pytest.raises(ValueError, match=r"unknown judge backend 'gpt5' \(CRITIC_JUDGE_BACKEND\).*hf, openai, vllm"):
        get_backend(JudgeSettings(backend="gpt5", cache=None))
    with pytest.raises(ValueError, match="CRITIC_JUDGE_MODEL"):
        get_backend(JudgeSettings(backend="openai", cache=None))


def test_vllm_backend_missing_library_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(vllm_engine.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="pip install vllm"):
        get_backend(JudgeSettings(backend="vllm", model="m", cache=None))


def test_third_party_backend_plugin(tmp_path):
    """A plugin (as an entry point would register it) adds a backend; one without on_result still works."""
    from critic_tasks.hookspecs import hookimpl, plugin_manager

    class EchoBackend:
        def generate(self, prompts, progress=True):
            return [JudgeReply(f"echo. Score: {len(p) % 10 + 1}") for p in prompts]

    class EchoPlugin:
        @hookimpl
        def critic_llm_backend(self, name, settings):
            return EchoBackend() if name == "echo" else None

    pm = plugin_manager()
    pm.register(EchoPlugin(), name="echo-plugin")
    try:
        s = JudgeSettings(backend="echo", model="e", cache=str(tmp_path / "c.sqlite"))
        results = run(["ab", "abc"], s)
        assert [r.score for r in results] == [3.0, 4.0]
        assert all(r.cached for r in run(["ab", "abc"], s))
        with pytest.raises(ValueError, match="echo-plugin"):
            get_backend(JudgeSettings(backend="nope", cache=None))
    finally:
        pm.unregister(name="echo-plugin")


def test_vllm_backend_queues_all_and_delivers_each_reply_as_it_finishes(monkeypatch):
    """The engine loop with a fake vllm module (the real engine: tests/test_vllm.py, in .venv-vllm): all prompts
    are queued, replies are handed on in the order they finish, a refused prompt fails alone, and the process keeps
    one engine (other engine arguments are an error, not a second engine)."""
    import importlib.machinery
    import types

    built, steps = [], []

    class FakeEngine:
        def __init__(self):
            self.queue = []

        def add_request(self, request_id, prompt, params):
            if len(prompt["prompt_token_ids"]) > 40:
                raise ValueError("prompt longer than the maximum model length of 40")
            self.queue.append((request_id, prompt["prompt_token_ids"], params))

        def step(self):  # finishes the last-queued request first: out of order
            request_id, ids, _ = self.queue.pop()
            steps.append(request_id)
            text = "Score: " + str(len(ids))
            return [types.SimpleNamespace(request_id=request_id, finished=True,
                                          outputs=[types.SimpleNamespace(text=text)])]

        def abort_request(self, ids):
            pass

    class FakeTokenizer:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            assert (tokenize, add_generation_prompt) == (False, True)
            return "<u>" + messages[0]["content"]

        def encode(self, text, add_special_tokens):
            assert add_special_tokens is False
            return list(range(len(text)))

    class FakeLLM:
        def __init__(self, model, **kwargs):
            built.append((model, kwargs))
            self.llm_engine = FakeEngine()

        def get_tokenizer(self):
            return FakeTokenizer()

    fake = types.ModuleType("vllm")
    fake.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    fake.LLM, fake.SamplingParams = FakeLLM, lambda **kw: kw
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: True)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    monkeypatch.setattr(vllm_engine, "_ENGINE", {})
    s = JudgeSettings(backend="vllm", model="some/model", cache=None, max_tokens=99, engine_args=(("dtype", "float32"),))
    seen = []
    replies = get_backend(s).generate(["abc", "x" * 50, "abcdefg"], progress=False,
                                      on_result=lambda i, r: seen.append(i))
    assert [r.text for r in replies] == ["Score: 6", None, "Score: 10"]  # "<u>" + prompt, one token a character
    assert "maximum model length" in replies[1].error
    assert seen == [1, 2, 0] and steps == ["2", "0"]  # the refusal at once, then in the order they finished
    assert built == [("some/model", {"dtype": "float32", "kv_cache_memory_bytes": 2 * 1024**3, "enforce_eager": True})]
    get_backend(s).generate(["ab"], progress=False)
    assert len(built) == 1  # one engine per process
    other = JudgeSettings(backend="vllm", model="other/model", cache=None)
    with pytest.raises(ValueError, match="one engine per process"):
        get_backend(other).generate(["ab"], progress=False)
    monkeypatch.setattr(vllm_engine, "_ENGINE", {})
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")  # vLLM's own setting wins over our default
    get_backend(other).generate(["ab"], progress=False)
    assert built[-1] == ("other/model", {"enforce_eager": True})


def test_engine_args_setting_parsed_and_only_reply_changing_ones_in_the_identity(monkeypatch):
    monkeypatch.setenv("CRITIC_JUDGE_ENGINE_ARGS", "kv_cache_memory_bytes=4294967296, enforce_eager=False,dtype=float32")
    s = JudgeSettings.from_env("judge", cache=None)
    assert s.engine_args == (("kv_cache_memory_bytes", 4294967296), ("enforce_eager", False), ("dtype", "float32"))
    assert s.identity()["engine_args"] == {"dtype": "float32"}
    assert "engine_args" not in JudgeSettings(backend="vllm", model="m", cache=None,
                                              engine_args=(("max_model_len", 4096),)).identity()
    monkeypatch.setenv("CRITIC_JUDGE_ENGINE_ARGS", "dtype")
    with pytest.raises(ValueError, match="CRITIC_JUDGE_ENGINE_ARGS: expected key=value"):
        JudgeSettings.from_env("judge", cache=None)


def test_threads_creating_one_new_cache_file_at_once_all_succeed(tmp_path):
    """A reviser pool opens the same new cache from several threads: sqlite's switch to WAL must not fail one."""
    import threading

    from critic_tasks.llm.cache import ReplyCache

    for run in range(20):
        path, errors = tmp_path / f"c{run}.sqlite", []

        def open_and_write(i, path=path, errors=errors):
            try:
                cache = ReplyCache(str(path))
                cache.put(f"k{i}", {}, "text")
                cache.close()
            except Exception as err:  # noqa: BLE001 - any failure fails the test below
                errors.append(err)

        threads = [threading.Thread(target=open_and_write, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(ReplyCache(str(path)).get_many([f"k{i}" for i in range(8)])) == 8


def test_a_lone_surrogate_in_a_prompt_or_a_reply_is_cached_and_read_back_as_it_was(tmp_path):
    """A critique holding a lone surrogate (a model can write one through an API's JSON escape) made the judge batch
    raise UnicodeEncodeError: the cache key encoded the prompt as strict UTF-8, and sqlite refuses to store one
    (red team). Keys differ by the surrogate; the reply comes back the same, and a plain reply is stored as text."""
    from critic_tasks.llm.cache import ReplyCache, cache_key

    key = cache_key({"model": "m"}, "Critique: wrong \ud800 here.")
    assert key != cache_key({"model": "m"}, "Critique: wrong \ud801 here.")
    cache = ReplyCache(str(tmp_path / "c.sqlite"))
    cache.put(key, {"model": "m"}, "Score: 7 \udc80")
    cache.put("plain", {"model": "m"}, "Score: 7 é")
    assert cache.get_many([key, "plain"]) == {key: "Score: 7 \udc80", "plain": "Score: 7 é"}
    rows = dict(sqlite3.connect(str(tmp_path / "c.sqlite")).execute("SELECT key, typeof(text) FROM replies"))
    assert rows["plain"] == "text"
