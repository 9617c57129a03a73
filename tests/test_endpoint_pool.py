"""Several endpoints for one model (judge or reviser): spread by least outstanding requests, one cache keyed by the
model (not the endpoint), a server dying mid-run hands its work to the others and nothing is lost; the preflight
asks every endpoint once and names the one that is down."""

import contextlib
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest
from stub_server import StubServer

from critic_tasks import cli
from critic_tasks.core.errors import ConfigError
from critic_tasks.llm import LLMSettings, complete
from critic_tasks.llm.settings import pool_from_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import latency_server  # noqa: E402


def rows(path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


# ---- settings ----------------------------------------------------------------------------------------------------


def test_endpoint_list_from_commas_or_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "j")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", "http://a:1/v1/, http://b:2/v1")
    assert LLMSettings.from_env("judge").endpoints == ("http://a:1/v1", "http://b:2/v1")
    listing = tmp_path / "judges.txt"
    listing.write_text("# one server per GPU\nhttp://a:1/v1\n\nhttp://b:2/v1  # the second\n")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", str(listing))
    assert LLMSettings.from_env("judge").endpoints == ("http://a:1/v1", "http://b:2/v1")
    # a reviser pool member takes a list too
    monkeypatch.setenv("CRITIC_REVISERS", "big")
    monkeypatch.setenv("CRITIC_REVISER_BIG_MODEL", "m")
    monkeypatch.setenv("CRITIC_REVISER_BIG_BASE_URL", "http://c:3/v1,http://d:4/v1")
    assert pool_from_env("reviser")[0].endpoints == ("http://c:3/v1", "http://d:4/v1")


@pytest.mark.parametrize("value, message", [
    ("http://a:1/v1,b:2", "CRITIC_JUDGE_BASE_URL=b:2: expected an http:// or https:// URL"),
    ("http://a:1/v1,http://a:1/v1/", "CRITIC_JUDGE_BASE_URL: http://a:1/v1 is listed twice"),
])
def test_bad_endpoint_list_is_one_error_naming_the_setting(monkeypatch, value, message):
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", value)
    with pytest.raises(ConfigError) as err:
        LLMSettings.from_env("judge")
    assert str(err.value).startswith(message)


def test_empty_endpoint_file_is_refused(tmp_path, monkeypatch):
    listing = tmp_path / "none.txt"
    listing.write_text("# nothing yet\n")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", str(listing))
    with pytest.raises(ConfigError, match="the endpoint file lists no URL"):
        LLMSettings.from_env("judge")


# ---- spreading and failover (stub servers in threads) ------------------------------------------------------------


@pytest.mark.slow
def test_requests_spread_by_least_outstanding_and_cache_shared(tmp_path):
    slow = lambda n, p: ("sleep", 0.05, f"reply to {p}")  # noqa: E731
    prompts = [f"prompt {i}" for i in range(40)]
    with StubServer(slow) as a, StubServer(slow) as b:
        settings = LLMSettings(model="j", base_url=f"{a.base_url},{b.base_url}", api_key="k", concurrency=3,
                               cache=str(tmp_path / "c.sqlite"))
        got = complete(prompts, settings, "v1", progress=False)
        assert [c.text for c in got] == [f"reply to {p}" for p in prompts]
        # every prompt asked exactly once, over both servers; never more than CONCURRENCY on one while both live
        asked = a.prompts() + b.prompts()
        assert sorted(asked) == sorted(prompts)
        assert a.prompts() and b.prompts()
        assert a.max_in_flight <= 3 and b.max_in_flight <= 3 and a.max_in_flight + b.max_in_flight > 3
    # the same model behind the first endpoint alone: the cache answers everything (keyed by the model, not by who
    # answered); a server listening nowhere is never asked
    alone = LLMSettings(model="j", base_url=a.base_url, api_key="k", cache=str(tmp_path / "c.sqlite"))
    again = complete(prompts, alone, "v1", progress=False)
    assert all(c.cached for c in again) and [c.text for c in again] == [f"reply to {p}" for p in prompts]


@pytest.mark.slow
def test_a_server_failing_hands_its_work_to_the_other(tmp_path):
    prompts = [f"prompt {i}" for i in range(12)]
    ok = lambda n, p: ("ok", f"reply to {p}")  # noqa: E731
    # one server refuses every request with 503, the other a connection it drops after 2 answers
    with StubServer(lambda n, p: ("status", 503, {})) as failing, StubServer(ok) as healthy:
        settings = LLMSettings(model="j", base_url=f"{failing.base_url},{healthy.base_url}", api_key="k",
                               concurrency=2, cache=None, max_tries=1)
        got = complete(prompts, settings, "v1", progress=False)
    assert [c.text for c in got] == [f"reply to {p}" for p in prompts]  # with one try each: failover is no retry
    assert sorted(healthy.prompts()) == sorted(prompts)
    # the failing server was left alone after its first failures (10 s), not asked for every item
    assert len(failing.log) <= 2 * 2


def test_all_endpoints_down_is_a_recorded_failure_not_a_crash():
    settings = LLMSettings(model="j", base_url="http://127.0.0.1:9/v1,http://127.0.0.1:8/v1", api_key="k",
                           cache=None, max_tries=2, backoff_base=0.01)
    (got,) = complete(["p"], settings, "v1", progress=False)
    assert got.text is None and "gave up after 2 tries" in got.error


# ---- real servers: kill one mid-run ------------------------------------------------------------------------------


@pytest.mark.slow
def test_killing_one_of_two_real_servers_mid_run_loses_nothing(tmp_path):
    (a, url_a), (b, url_b) = (latency_server.start_server(0.2, 4, reply="echo") for _ in range(2))
    prompts = [f"judge item {i}" for i in range(80)]
    settings = LLMSettings(model="j", base_url=f"{url_a},{url_b}", api_key="k", concurrency=4,
                           cache=str(tmp_path / "judge.sqlite"))
    result = {}
    try:
        run = threading.Thread(target=lambda: result.update(got=complete(prompts, settings, "v1", progress=False)))
        run.start()
        deadline = time.monotonic() + 60
        while latency_server.fetch_stats(url_a)["served"] < 8:  # a's first answers are in the cache by now
            assert time.monotonic() < deadline
            time.sleep(0.05)
        served_by_a = latency_server.fetch_stats(url_a)["served"]
        a.send_signal(signal.SIGKILL)  # mid-run: requests in flight on a are cut off
        a.wait()
        run.join(timeout=120)
        assert not run.is_alive()
        served_by_b = latency_server.fetch_stats(url_b)["served"]
    finally:
        for proc in (a, b):
            proc.kill()
            proc.wait()
    got = result["got"]
    assert [c.text for c in got] == prompts and all(c.error is None for c in got)  # echo: each reply its prompt
    assert served_by_a < len(prompts) and served_by_b >= len(prompts) - served_by_a - 4
    assert rows(tmp_path / "judge.sqlite") == len(prompts)
    # a rerun, with only the survivor listed: nothing asked
    before = None
    b2, url_b2 = latency_server.start_server(0.2, 4, reply="echo")
    try:
        again = complete(prompts, LLMSettings(model="j", base_url=f"{url_a},{url_b2}", api_key="k",
                                              cache=str(tmp_path / "judge.sqlite")), "v1", progress=False)
        before = latency_server.fetch_stats(url_b2)["served"]
    finally:
        b2.kill()
        b2.wait()
    assert all(c.cached for c in again) and before == 0


# ---- preflight ---------------------------------------------------------------------------------------------------


@pytest.fixture
def fresh_checks(monkeypatch):
    monkeypatch.delenv("CRITIC_ENDPOINT_TIMEOUT", raising=False)
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")


@pytest.mark.slow
def test_preflight_names_the_endpoint_that_is_down(monkeypatch, capsys, fresh_checks):
    with StubServer() as up:
        monkeypatch.setenv("CRITIC_JUDGE_MODEL", "j")
        monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", f"{up.base_url},http://127.0.0.1:9/v1")
        assert cli.main(["preflight", "--tasks", "critic_feedback_sub_chat"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(
            "critic-eval: judge 'j' (1 of 2 endpoints): http://127.0.0.1:9/v1 does not answer (ConnectError")
        assert up.base_url not in err[0] and "check CRITIC_JUDGE_BASE_URL" in err[0]
        monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", up.base_url)
        assert cli.main(["preflight", "--tasks", "critic_feedback_sub_chat"]) == 0
        assert "ok" in capsys.readouterr().out


@pytest.mark.slow
def test_run_stops_on_a_down_reviser_before_the_model_loads(monkeypatch, capsys, fresh_checks):
    monkeypatch.setenv("CRITIC_REVISER_MODEL", "r")
    monkeypatch.setenv("CRITIC_REVISER_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "j")
    monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "k")  # the judge's endpoint: the OpenAI API, not asked first
    loaded = []
    monkeypatch.setattr("lm_eval.models.dummy.DummyLM.__init__", lambda self, *a, **k: loaded.append(1))
    assert cli.main(["--model", "dummy", "--tasks", "critic_utility_chat", "--no_resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("critic-eval: reviser 'r': http://127.0.0.1:9/v1 does not answer") and not loaded


def test_openai_api_without_a_key_is_refused(monkeypatch, capsys, fresh_checks):
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "gpt-4o")
    monkeypatch.delenv("CRITIC_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("CRITIC_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert cli.main(["preflight", "--tasks", "critic_feedback_sub_chat"]) == 2
    assert capsys.readouterr().err.strip() == (
        "critic-eval: CRITIC_JUDGE_MODEL=gpt-4o with no CRITIC_JUDGE_BASE_URL goes to the OpenAI API, which needs a "
        "key: set CRITIC_JUDGE_API_KEY (or OPENAI_API_KEY), or CRITIC_JUDGE_BASE_URL for your own server")


@pytest.mark.slow
def test_refused_key_names_the_key_setting(monkeypatch, capsys, fresh_checks):
    from helpers import answering_server

    with answering_server(401, b'{"error": {"message": "bad key"}}') as base:
        url = f"{base}/v1"
        monkeypatch.setenv("CRITIC_JUDGE_MODEL", "j")
        monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", url)
        assert cli.main(["preflight", "--tasks", "critic_feedback_sub_chat"]) == 2
        assert capsys.readouterr().err.strip() == (
            f"critic-eval: judge 'j': {url} refused the API key (HTTP 401); check CRITIC_JUDGE_API_KEY, or set "
            "CRITIC_ENDPOINT_TIMEOUT=0 to skip this check")
