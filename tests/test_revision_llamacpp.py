"""The revision pipeline for real: SmolLM2-135M-Instruct as the critic (lm-eval's own local-chat-completions model)
and as the reviser, llama.cpp's OpenAI-compatible server as the judge, on a few items. A 135M model critiques and
revises badly; this checks plumbing facts only: real critiques reach real revisers, revisions are checked (answer,
sandbox) or judged, every metric key is reported, every model is recorded, and a rerun makes no reviser or judge
HTTP call."""

from __future__ import annotations

import json

import pytest

import critic_tasks

pytestmark = pytest.mark.slow  # starts a real server with a real model
lm_eval = pytest.importorskip("lm_eval")

ROWS = [
    {"id": "m1", "domain": "math_cot", "question": "What is 3 + 4?", "generation": "3 + 4 = 8. The answer is 8.",
     "ground_truth_answer": "7"},
    {"id": "c1", "question": "Write a Python function add(a, b) that returns the sum of a and b.",
     "generation": "def add(a, b):\n    return a - b", "unit_test": "assert add(2, 3) == 5"},
    {"id": "t1", "domain": "chat", "question": "Name the capital of France in one sentence.",
     "generation": "The capital of France is Lyon.",
     "correction": "The capital of France is Paris."},  # the reference revision MultiCritique's R_sub is graded against
]


@pytest.fixture
def environment(monkeypatch, tmp_path, llama_server):
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    for role, tokens in (("REVISER", 96), ("JUDGE", 48)):
        for name, value in {"BACKEND": "openai", "MODEL": "smollm2-135m", "BASE_URL": llama_server,
                            "API_KEY": "none", "MAX_TOKENS": str(tokens), "CONCURRENCY": "2",
                            "CACHE": str(tmp_path / f"{role.lower()}.sqlite")}.items():
            monkeypatch.setenv(f"CRITIC_{role}_{name}", value)
    monkeypatch.delenv("CRITIC_REVISERS", raising=False)
    return tmp_path


def _run(tmp_path, base_url, task):
    return lm_eval.simple_evaluate(
        model="local-chat-completions", model_args=f"model=smollm2-135m,base_url={base_url}/chat/completions,"
                                                   "tokenizer_backend=None,num_concurrent=1",
        tasks=[task], apply_chat_template=True, gen_kwargs="max_gen_toks=48", bootstrap_iters=0, log_samples=True,
        task_manager=critic_tasks.task_manager(metadata={"items_file": str(tmp_path / "items.jsonl")}))


@pytest.mark.parametrize("task, keys", [
    ("critic_utility", ("critique_utility", "rqs", "refine_accuracy", "judge_parse_rate", "judge_failed")),
    ("critic_revision_pool", ("r_obj", "r_sub", "judge_parse_rate", "reviser_failed")),
])
def test_real_critic_reviser_and_judge(environment, llama_server, http_calls, task, keys):
    out = _run(environment, llama_server, task)
    results = out["results"][task]
    for key in keys:
        assert f"{key},none" in results, key
    assert results["reviser_failed,none"] == 0  # the server answered every revision
    samples = out["samples"][task]
    assert len(samples) == len(ROWS)
    rows = [s["filtered_resps"][0][0] for s in samples]
    assert all(r["revisions"][0] and r["revisions"][0].strip() for r in rows)  # real revisions came back
    involved = json.loads(rows[0]["models"])
    assert involved["revisers"][0]["model"] == "smollm2-135m"
    assert involved["judge"]["base_url"] == llama_server
    checked = [r for r in rows if r["checked"]]
    assert len(checked) == 2 and all(r["passed"][0] in (True, False) for r in checked)
    if task == "critic_utility":
        assert results["refine_accuracy,none"] is not None
    # whatever a 135M judge makes of the markers, every unreadable judgment is a counted, explained failure
    judged = [r for r in rows if r["judge_asked"]]
    assert results["judge_failed,none"] == sum(r["judge_parsed"] < r["judge_asked"] for r in judged)
    assert all(r["error"] for r in judged if r["judge_parsed"] < r["judge_asked"])
    asked = len(http_calls)
    assert asked >= len(ROWS)
    again = _run(environment, llama_server, task)
    # greedy critic, same critiques: every revision and judgment comes from the caches
    same = [s["resps"] for s in again["samples"][task]] == [s["resps"] for s in samples]
    if same:
        assert len(http_calls) == asked


def test_critic_eval_command_then_revise_gives_the_same_numbers(environment, llama_server, monkeypatch, capsys):
    """The user's commands: `critic-eval --model ... --tasks critic_utility --log_samples`, then `critic-eval revise`
    on its output directory (the same caches: no new call, the same numbers)."""
    from critic_tasks import cli
    from critic_tasks.reports.results import read_results

    out = environment / "out"
    code = cli.main(["--model", "local-chat-completions", "--model_args",
                     f"model=smollm2-135m,base_url={llama_server}/chat/completions,tokenizer_backend=None",
                     "--apply_chat_template", "--gen_kwargs", "max_gen_toks=48", "--tasks", "critic_utility",
                     "--metadata", json.dumps({"items_file": str(environment / "items.jsonl")}),
                     "--output_path", str(out), "--log_samples"])
    results = read_results(out)["critic_utility"]
    # exit 1 exactly when some judgment was unreadable or failed (a 135M judge often writes no marker)
    assert code == (1 if results["judge_failed,none"] else 0)
    report = environment / "revised.json"
    assert cli.main(["revise", str(out), "--output", str(report), "--no_progress", "--allow_failures"]) == 0
    again = json.loads(report.read_text())["results"]["critic_utility"]
    for key, value in again.items():
        assert value == results[f"{key},none"], key
    # a value with nothing to average (a 135M judge's unreadable verdicts) is absent / null, never NaN
    assert all(v is None or v == v for v in results.values() if not isinstance(v, str))
