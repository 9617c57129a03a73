"""The headline command for real: ``lm_eval --model vllm`` (vLLM's CPU build) on our sample, and the vllm backend.

vLLM runs in ``.venv-vllm`` (``bash scripts/setup.sh --vllm``; ``--test`` makes it too; skipped with a reason where
it is missing), as subprocesses running the commands users type; the checks run here, in the test environment:

- every prompt vLLM was given is the one lm-eval's ``hf`` path renders (the chat template applied by the
  transformers tokenizer here), and replaying vLLM's logged generations through a scripted lm-eval model gives the
  same value for every metric key (correction revisions run through the sandbox again here);
- the generations are SmolLM2's: transformers, greedy in float32, writes the same text for the shortest prompts;
- the vllm judge backend loads its engine on the CPU (no memory setting given), and a second call is all cache hits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from helpers import scripted_lm

import critic_tasks

pytestmark = pytest.mark.slow

VENV = Path(os.environ.get("CRITIC_VLLM_VENV", REPO / ".venv-vllm"))
GEN_TOKENS = 48
# float32 as transformers computes (vLLM's CPU default is bfloat16, whose greedy text drifts from float32's);
# a fixed KV cache (without one vLLM asks for 92 % of the machine's memory and refuses); no graph compilation.
MODEL_ARGS = "pretrained={model},dtype=float32,enforce_eager=True,kv_cache_memory_bytes=2147483648,max_model_len=4096"


@pytest.fixture(scope="session")
def vllm_bin():
    if not (VENV / "READY").exists():  # written by the set-up's last step
        pytest.skip(f"vLLM environment not found at {VENV}, or its set-up did not finish (bash scripts/setup.sh --vllm)")
    return VENV / "bin"


@pytest.fixture(scope="session")
def model_dir(vllm_bin, tmp_path_factory):
    """SmolLM2 as a Hugging Face folder (vLLM cannot load the GGUF on the CPU); setup --vllm writes it."""
    folder = VENV / "smollm2-hf"
    if not (folder / "config.json").exists():
        folder = tmp_path_factory.mktemp("models") / "smollm2-hf"
        subprocess.run([str(vllm_bin / "python"), str(REPO / "scripts" / "smollm2_hf.py"), str(folder)], check=True,
                       capture_output=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return folder


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRITIC_JUDGE_", "CRITICBENCH_", "VLLM_"))}
    return {**env, "HF_HUB_OFFLINE": "1", "CRITICBENCH_DATA_DIR": "sample", **extra}


def _run(cmd: list[str], cwd: Path, timeout: int = 600) -> dict:
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=cwd, timeout=timeout)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    (folder,) = [p for p in (cwd / "out").iterdir() if p.is_dir()]  # one model folder (its name starts with a dot)
    samples: dict[str, list[dict]] = {}
    for path in folder.glob("samples_*.jsonl"):
        task = path.name[len("samples_"):].rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    (results,) = folder.glob("results_*.json")
    print(f"{cmd[0]} {cmd[1:3]}: {time.monotonic() - start:.0f} s", file=sys.stderr)
    return {"results": json.loads(results.read_text())["results"], "samples": samples, "log": log}


@pytest.fixture(scope="module")
def lm_eval_run(vllm_bin, model_dir, tmp_path_factory):
    """The mission's command, literally: plain lm_eval with our tasks directory, --model vllm, batch size auto."""
    tmp = tmp_path_factory.mktemp("vllm_lm_eval")
    tasks_dir = subprocess.run([str(vllm_bin / "critic-eval"), "tasks-dir"], capture_output=True, text=True,
                               check=True, timeout=120).stdout.strip()
    return _run([str(vllm_bin / "lm_eval"), "--include_path", tasks_dir, "--tasks", "critic_feedback,critic_meta",
                 "--model", "vllm", "--model_args", MODEL_ARGS.format(model=model_dir), "--batch_size", "auto",
                 "--apply_chat_template", "--gen_kwargs", f"max_gen_toks={GEN_TOKENS}",
                 "--log_samples", "--output_path", str(tmp / "out")], tmp)


@pytest.fixture(scope="module")
def critic_eval_run(vllm_bin, model_dir, tmp_path_factory):
    """critic-eval (lm_eval's CLI with our tasks) on the whole objective group: correction runs the revisions."""
    tmp = tmp_path_factory.mktemp("vllm_critic_eval")
    return _run([str(vllm_bin / "critic-eval"), "--tasks", "critic", "--model", "vllm",
                 "--model_args", MODEL_ARGS.format(model=model_dir), "--batch_size", "auto", "--apply_chat_template",
                 "--gen_kwargs", "max_gen_toks=128", "--log_samples", "--output_path", str(tmp / "out")], tmp)


def _generations(run: dict) -> dict[str, str]:
    """prompt (as vLLM received it, chat template applied) -> vLLM's generation."""
    replies = {}
    for rows in run["samples"].values():
        for row in rows:
            replies[row["arguments"]["gen_args_0"]["arg_0"]] = row["resps"][0][0]
    return replies


def _replay(run: dict, model_dir: Path, tasks: list[str], monkeypatch) -> tuple[dict, list[str]]:
    """lm-eval here, on the hf path's chat rendering, answering every prompt with vLLM's logged generation."""
    import lm_eval
    from transformers import AutoTokenizer

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    replies, asked = _generations(run), []

    def reply(prompt):
        asked.append(prompt)
        return replies[prompt]

    lm = scripted_lm(reply, tokenizer=AutoTokenizer.from_pretrained(model_dir))
    live = lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=critic_tasks.task_manager(),
                                   apply_chat_template=True, bootstrap_iters=0)["results"]
    return live, asked


def _assert_same_metrics(ours: dict, live: dict, tasks: list[str]) -> None:
    """Every number the run reported equals the replay's, and the run reported every number the registry declares
    for a one-sample run (not the text-valued ``isolation``, nor pass@k / ``identical_samples``, which need k or 2
    samples per item): a key lost on one side fails here, not only a count."""
    from critic_tasks import registry

    for task in tasks:
        numbers = {k for k, v in ours[task].items() if "," in k and isinstance(v, (int, float))
                   and not isinstance(v, bool)}
        expected = {f"{m.key},none" for m in registry.TASKS[task].kind_spec.metrics
                    if not m.ci and m.scale != "text" and m.min_samples <= 1}
        assert numbers >= expected, (task, sorted(expected - numbers))
        for key in numbers:
            assert live[task][key] == pytest.approx(ours[task][key], abs=1e-9), (task, key)


def test_lm_eval_model_vllm_runs_on_cpu_and_metrics_equal_the_hf_path(lm_eval_run, model_dir, monkeypatch):
    assert "device_config=cpu" in lm_eval_run["log"]  # the engine ran on vLLM's CPU platform
    tasks = ["critic_feedback", "critic_meta"]
    assert sorted(lm_eval_run["samples"]) == tasks and all(lm_eval_run["samples"][t] for t in tasks)
    assert all(s["arguments"]["gen_args_0"]["arg_1"]["max_gen_toks"] == GEN_TOKENS
               for rows in lm_eval_run["samples"].values() for s in rows)
    replies = _generations(lm_eval_run)
    assert any(r.strip() for r in replies.values())

    live, asked = _replay(lm_eval_run, model_dir, tasks, monkeypatch)
    # vLLM got exactly the prompts the hf path renders, byte for byte, one per logged sample
    assert set(asked) == set(replies) and len(asked) == sum(len(lm_eval_run["samples"][t]) for t in tasks)
    _assert_same_metrics(lm_eval_run["results"], live, tasks)
    assert lm_eval_run["results"]["critic_feedback"]["parse_rate,none"] > 0


def test_vllm_generations_are_the_models_greedy_text(lm_eval_run, model_dir):
    """transformers, greedy in float32 on the same folder, writes vLLM's text for the three shortest prompts."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    shortest = sorted(_generations(lm_eval_run).items(), key=lambda kv: len(kv[0]))[:3]
    assert len(shortest) == 3, f"the run logged {len(shortest)} generations: nothing to compare"
    assert any(text.strip() for _, text in shortest), "vLLM wrote only empty texts: an empty text equals anything"
    for prompt, vllm_text in shortest:
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)  # the template wrote them
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=GEN_TOKENS, do_sample=False)
        assert tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True) == vllm_text


def test_critic_eval_model_vllm_whole_group_with_code_execution(critic_eval_run, model_dir, monkeypatch):
    from critic_tasks import registry

    tasks = list(registry.GROUPS["critic"].members)
    ours = critic_eval_run["results"]
    corrections = critic_eval_run["samples"]["critic_correction"]
    assert len(corrections) > 0 and any("```" in s["resps"][0][0] for s in corrections)
    live, asked = _replay(critic_eval_run, model_dir, ["critic"], monkeypatch)  # runs the revisions again, here
    assert set(asked) == set(_generations(critic_eval_run))
    assert len(asked) == sum(len(rows) for rows in critic_eval_run["samples"].values())
    _assert_same_metrics(ours, live, tasks)
    assert live["critic"]["score,none"] == pytest.approx(ours["critic"]["score,none"], abs=1e-9)


JUDGE_SCRIPT = """
import json, sys
from critic_tasks.llm import LLMSettings
from critic_tasks.llm.client import complete
from critic_tasks.llm.backends import vllm_engine

settings = LLMSettings.from_env("judge")
prompts, long_prompt = json.loads(sys.argv[1]), sys.argv[2]
first = complete(prompts, settings, prompt_version="t1", progress=False)
engine = vllm_engine._ENGINE["llm"]
loads = []
vllm_engine.load_engine = lambda s: loads.append(s) or engine
second = complete(prompts, settings, prompt_version="t1", progress=False)
loads_cached = len(loads)
third = complete([long_prompt, prompts[0]], settings, prompt_version="t1", progress=False)
rows = lambda cs: [[c.text, c.error, c.cached] for c in cs]
print("RESULT " + json.dumps({
    "first": rows(first), "second": rows(second), "third": rows(third), "loads_cached": loads_cached,
    "kv": engine.llm_engine.vllm_config.cache_config.kv_cache_memory_bytes,
    "eager": engine.llm_engine.vllm_config.model_config.enforce_eager}))
"""

PROMPTS = ["Is 7 a prime number? Answer, then write Score: x.", "Grade the answer 5 to 2+2. Write Score: x.",
           "Is 7 a prime number? Answer, then write Score: x."]


def test_vllm_judge_backend_for_real_on_cpu_cached(vllm_bin, model_dir, tmp_path):
    """CRITIC_JUDGE_BACKEND=vllm with no memory setting: the CPU defaults let the engine start; replies are cached
    as they finish, so the same prompts again are all hits (the engine is not asked); a prompt longer than the
    context fails alone and is not cached; the replies are the hf backend's (transformers here, float32, greedy)."""
    env = _env(CRITIC_JUDGE_BACKEND="vllm", CRITIC_JUDGE_MODEL=str(model_dir), CRITIC_JUDGE_MAX_TOKENS="16",
               CRITIC_JUDGE_CACHE=str(tmp_path / "judge.sqlite"),
               CRITIC_JUDGE_ENGINE_ARGS="dtype=float32,max_model_len=512")
    out = subprocess.run([str(vllm_bin / "python"), "-c", JUDGE_SCRIPT, json.dumps(PROMPTS), "word " * 600],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    result = json.loads(out.stdout.split("RESULT ", 1)[1].splitlines()[0])
    first, second, third = result["first"], result["second"], result["third"]
    assert [c[2] for c in first] == [False] * 3 and all(c[0] and c[1] is None for c in first)
    assert first[0][0] == first[2][0]  # the duplicate prompt asked once
    assert [c[2] for c in second] == [True] * 3 and [c[0] for c in second] == [c[0] for c in first]
    assert result["loads_cached"] == 0  # the all-cached call never reached the engine
    assert third[0][0] is None and "512" in third[0][1] and not third[0][2]  # fails alone, not cached
    assert third[1][0] == first[0][0] and third[1][2]
    assert result["kv"] == 2 * 1024**3 and result["eager"] is True

    from critic_tasks.llm import LLMSettings
    from critic_tasks.llm.backends import get_backend

    hf = get_backend(LLMSettings(backend="hf", model=str(model_dir), device="cpu", max_tokens=16, batch_size=1,
                                 cache=None))
    assert [r.text for r in hf.generate(PROMPTS[:2], progress=False)] == [c[0].strip() for c in first[:2]]
