"""The latency-bound server the throughput benchmarks run against, and the benchmarks themselves at tiny sizes."""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

import latency_server  # noqa: E402


@pytest.fixture
def server(request):
    proc, url = latency_server.start_server(*request.param)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _eight_at_once(url: str, content: str = "Score: x") -> tuple[float, list[str]]:
    import openai

    async def go():
        client = openai.AsyncOpenAI(base_url=url, api_key="none", max_retries=0,
                                    http_client=openai.DefaultAsyncHttpxClient(trust_env=False))
        try:
            start = time.monotonic()
            replies = await asyncio.gather(*(client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"{content} {i}"}]) for i in range(8)))
            return time.monotonic() - start, [r.choices[0].message.content for r in replies]
        finally:
            await client.close()

    return asyncio.run(go())


@pytest.mark.parametrize("server", [(0.3, 8)], indirect=True)
def test_slots_serve_in_parallel(server):
    elapsed, replies = _eight_at_once(server)
    assert 0.3 <= elapsed < 1.0
    assert all(latency_server.judge_reply(f"Score: x {i}") == r for i, r in enumerate(replies))
    stats = latency_server.fetch_stats(server)
    assert stats["served"] == 8 and stats["max_in_service"] == 8 and stats["capacity_per_s"] == pytest.approx(8 / 0.3)
    assert latency_server.fetch_stats(server, reset=True)["served"] == 0


@pytest.mark.parametrize("server", [(0.3, 1)], indirect=True)
def test_one_slot_queues(server):
    elapsed, _ = _eight_at_once(server)
    assert elapsed >= 2.4
    stats = latency_server.fetch_stats(server)
    assert stats["max_in_service"] == 1 and stats["max_in_flight"] > 1


@pytest.mark.parametrize("server", [(0.0, 4)], indirect=True)
def test_replies_and_routes(server):
    import json
    import urllib.request

    def post(path, body):
        req = urllib.request.Request(server + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    planned = "Fixed:\n```python\ndef f():\n    return 1\n```"
    chat = post("/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": "Revise it.\n[Feedback]\n" + latency_server.plan(planned)}]})
    assert chat["choices"][0]["message"]["content"] == planned
    pairwise = post("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "[[A]] or [[B]]?"}]})
    assert pairwise["choices"][0]["message"]["content"].endswith(("[[A]]", "[[B]]", "[[C]]"))
    rating = post("/completions", {"model": "m", "prompt": ["Start with Rating: [[x]]", "x"]})
    assert "Rating: [[" in rating["choices"][0]["text"] and len(rating["choices"]) == 2
    with urllib.request.urlopen(server + "/models", timeout=10) as resp:
        assert json.loads(resp.read())["data"][0]["id"]


def _run_script(*args, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def test_judge_throughput_latency_mode():
    out = _run_script("benchmarks/judge_throughput.py", "--latency-server", "--n", "8", "--latency", "0.05",
                      "--repeats", "1", "--slots", "8", "--concurrency", "8")
    assert "speed-up (ours / toolkit pattern)" in out and "identical replies on both sides: 8/8" in out


def test_revision_pipeline_benchmark(tmp_path):
    # the toolkit side's programs import numpy and sympy under the toolkit's 2 s limit: on CI's loaded 2 cores two of
    # them timed out (8 passed vs our 10). The comparison is about outcomes, so that side gets time to finish.
    out = _run_script("benchmarks/revision_pipeline.py", "--items", "8", "--latency", "0.05", "--slots", "8",
                      "--concurrency", "8", "--toolkit-timeout", "60", "--json", str(tmp_path / "out.json"))
    assert "same outcomes on both sides: True" in out and "speed-up (ours / toolkit pattern)" in out


def test_fanout_benchmark(tmp_path):
    out = _run_script("benchmarks/fanout_throughput.py", "--n", "16", "--latency", "0.05", "--slots", "4",
                      "--concurrency", "4", "--repeats", "1", "--json", str(tmp_path / "out.json"))
    assert "identical replies: 16/16" in out and "2 servers / one:" in out
    numbers = json.loads((tmp_path / "out.json").read_text())
    assert numbers["one server"]["served"] == [16, 0] and sum(numbers["2 servers"]["served"]) == 16
    assert min(numbers["2 servers"]["served"]) > 0  # both servers got work


def test_score_throughput_benchmark():
    """The scoring benchmark runs the lm-eval path as it is (it called an aggregation function that had gone), and
    that path's feedback Spearman is scipy's on the same replies, parsed as the toolkit does."""
    import score_throughput

    if not score_throughput.PRED_DIR.is_dir():
        pytest.skip(f"no released CriticEval predictions at {score_throughput.PRED_DIR}")
    workload = score_throughput.load_workload(120)
    ours, toolkit = score_throughput.score_ours(workload), score_throughput.score_baseline(workload)
    assert ours["feedback/spearman"] == pytest.approx(toolkit["feedback/spearman"])
    out = _run_script("benchmarks/score_throughput.py", "--items", "60", "--repeats", "1")
    assert "ours" in out and "toolkit baseline" in out and "items/s" in out
