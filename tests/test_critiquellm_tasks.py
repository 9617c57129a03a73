"""CritiqueLLM's AlignBench tasks in lm-eval: hand-made labelled data, a scripted critic, and every metric value
computed here independently (scipy for correlations, loops for agreement)."""

import hashlib
import json
import re

import pytest
from conftest import SHARED
from helpers import scripted_lm
from scipy import stats

import critic_tasks
from critic_tasks.protocols.critiquellm import data

lm_eval = pytest.importorskip("lm_eval")

CATS = ["文本写作", "数学计算", "逻辑推理"]
MODELS = ["m_a", "m_b", "m_c", "m_d"]
HUMAN = {  # question -> human score of each model's response (q3: constant -> skipped; q4: one response)
    "q1": [1, 3, 4, 5], "q2": [2, 2, 5, 1], "q3": [3, 3, 3, 3], "q4": [4],
}


def _pointwise_rows(reference: bool):
    rows, n = [], 0
    for qi, (q, scores) in enumerate(HUMAN.items()):
        for model, score in zip(MODELS, scores):
            row = {"id": n, "category": CATS[qi % 3], "question": f"Question {q}?", "response": f"answer {q} by {model}",
                   "model": model, "human_score": score}
            if reference:
                row["reference"] = f"reference for {q}"
            rows.append(row)
            n += 1
    return rows


PAIR_ROWS = [{"id": i, "category": CATS[i % 3], "question": f"Pair question {i}", "response_1": f"first {i}",
              "response_2": f"second {i}", "human_score_1": s1, "human_score_2": s2, "label": int(s2 > s1)}
             for i, (s1, s2) in enumerate([(4, 1), (1, 3), (5, 2), (2, 4), (3, 1), (1, 5)])]


@pytest.fixture(autouse=True)
def hand_made_data(tmp_path, monkeypatch):
    for mode in ("pointwise", "pairwise"):
        (tmp_path / mode).mkdir()
    for ref in (True, False):
        name = f"alignbench_reference_{'based' if ref else 'free'}_sample.jsonl"
        (tmp_path / "pointwise" / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                           for r in _pointwise_rows(ref)))
        pairs = [{**r, "reference": f"reference {r['id']}"} if ref else r for r in PAIR_ROWS]
        (tmp_path / "pairwise" / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in pairs))
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    return tmp_path


def _h(prompt: str) -> int:
    return int(hashlib.sha256(prompt.encode()).hexdigest(), 16)


def rating_critic(prompt: str) -> str:
    h = _h(prompt)
    if h % 9 == 0:
        return "I would rather not rate this."  # unparseable: 5, counted
    return f"Rating: [[{h % 10 + 1}]]\nThe answer is fine; on a scale [[1]] to [[10]] it is average."


def verdict_critic(prompt: str) -> str:
    h = _h(prompt)
    return "No verdict." if h % 7 == 0 else f"[[{'AB'[h % 2]}]]\nbecause."


def _rating(reply: str) -> float | None:
    found = [float(x) for x in re.findall(r"\[\[(\d+(?:\.\d+)?)\]\]", reply) if 1 <= float(x) <= 10]
    return found[-1] if found else None


def _expected_pointwise(samples, system=True):
    rows = [s["doc"] for s in samples]
    replies = [s["resps"][0][0] for s in samples]
    parsed = [_rating(r) for r in replies]
    pred = [5.0 if p is None else p for p in parsed]
    human = [d["human_score"] for d in rows]
    out = {"parse_rate": 100 * sum(p is not None for p in parsed) / len(parsed)}
    per_q, skipped = {"pearson": [], "spearman": [], "kendall": []}, 0
    for q in dict.fromkeys(d["question"] for d in rows):
        idx = [i for i, d in enumerate(rows) if d["question"] == q]
        x, y = [pred[i] for i in idx], [human[i] for i in idx]
        if len(idx) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
            skipped += 1
            continue
        per_q["pearson"].append(stats.pearsonr(x, y)[0])
        per_q["spearman"].append(stats.spearmanr(x, y)[0])
        per_q["kendall"].append(stats.kendalltau(x, y)[0])
    for k, v in per_q.items():
        out[f"text_{k}"] = 100 * sum(v) / len(v) if v else 0.0  # no usable question: 0, flagged by the count
    out["text_questions"], out["text_skipped"] = len(per_q["pearson"]), skipped
    if not system:
        return out
    mp = [sum(p for p, d in zip(pred, rows) if d["model"] == m) / sum(d["model"] == m for d in rows) for m in MODELS]
    mh = [sum(h for h, d in zip(human, rows) if d["model"] == m) / sum(d["model"] == m for d in rows) for m in MODELS]
    out["system_pearson"] = 100 * stats.pearsonr(mp, mh)[0]
    out["system_spearman"] = 100 * stats.spearmanr(mp, mh)[0]
    out["system_kendall"] = 100 * stats.kendalltau(mp, mh)[0]
    out["system_models"] = len(MODELS)
    return out


@pytest.mark.parametrize("task", ["critic_alignbench_ref", "critic_alignbench_free"])
def test_pointwise_metrics_match_independent_computation(task):
    lm = scripted_lm(rating_critic)
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=critic_tasks.task_manager(), bootstrap_iters=0,
                                  log_samples=True)
    samples, results = out["samples"][task], out["results"][task]
    assert len(samples) == sum(map(len, HUMAN.values()))
    assert all(("[Reference answer]" in p) == task.endswith("_ref") for p in lm.prompts)
    expected = _expected_pointwise(samples)
    assert 0 < expected["parse_rate"] < 100 or expected["parse_rate"] == 100
    for key, value in expected.items():
        assert results[f"{key},none"] == pytest.approx(value, abs=1e-9), key
    assert expected["text_skipped"] >= 2  # q3 (constant human scores) and q4 (one response)
    # per category: text-level Pearson over that category's questions only
    for cat in CATS:
        exp = _expected_pointwise([s for s in samples if s["doc"]["category"] == cat], system=False)
        assert results[f"text_pearson_{data.CATEGORIES[cat]},none"] == pytest.approx(exp["text_pearson"]), cat
    assert "text_pearson_other,none" not in results  # no item of that category


def test_pairwise_agreement_and_consistency():
    task = "critic_alignbench_pairwise_ref"
    out = lm_eval.simple_evaluate(model=scripted_lm(verdict_critic), tasks=[task],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0, log_samples=True)
    samples, results = out["samples"][task], out["results"][task]
    assert len(samples) == 2 * len(PAIR_ROWS)
    verdicts = {}
    for s in samples:
        m = re.findall(r"\[\[([ABC])\]\]", s["resps"][0][0])
        verdicts[(s["doc"]["item_index"], s["doc"]["order"])] = m[-1] if m else None
    swap = {"A": "B", "B": "A", "C": "C"}
    agree = cons = 0
    for i, row in enumerate(PAIR_ROWS):
        f, r = verdicts[(i, "forward")], verdicts[(i, "reverse")]
        gold = "A" if row["label"] == 0 else "B"
        ok = f is not None and r == swap[f]
        cons += ok
        agree += ok and f == gold
    assert results["agreement,none"] == pytest.approx(100 * agree / len(PAIR_ROWS))
    assert results["consistency,none"] == pytest.approx(100 * cons / len(PAIR_ROWS))
    assert results["parse_rate,none"] == pytest.approx(100 * sum(v is not None for v in verdicts.values()) / len(verdicts))


def test_a_critic_that_follows_the_humans_agrees_fully():
    """A critic that prefers the response the humans scored higher, in both orders: agreement 100."""
    by_text = {r["response_1"]: r["human_score_1"] for r in PAIR_ROWS} | {r["response_2"]: r["human_score_2"]
                                                                          for r in PAIR_ROWS}

    def oracle(prompt):
        a = re.search(r"\[Assistant A's answer\]\n(.*)\n", prompt).group(1)
        b = re.search(r"\[Assistant B's answer\]\n(.*)\n", prompt).group(1)
        return "[[A]]" if by_text[a] > by_text[b] else "[[B]]"

    out = lm_eval.simple_evaluate(model=scripted_lm(oracle), tasks=["critic_alignbench_pairwise_free"],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
    res = out["results"]["critic_alignbench_pairwise_free"]
    assert res["agreement,none"] == 100.0 and res["consistency,none"] == 100.0 and res["parse_rate,none"] == 100.0


def test_self_consistency_averages_the_sampled_ratings():
    calls = {}

    def sampled(prompt):
        calls[prompt] = calls.get(prompt, 0) + 1
        return "garbled" if calls[prompt] == 2 else f"Rating: [[{(_h(prompt) + calls[prompt]) % 10 + 1}]]"

    task = "critic_alignbench_ref_sc"
    out = lm_eval.simple_evaluate(model=scripted_lm(sampled), tasks=[task], task_manager=critic_tasks.task_manager(),
                                  bootstrap_iters=0, log_samples=True)
    samples, results = out["samples"][task], out["results"][task]
    assert all(len(s["resps"][0]) == 5 for s in samples)
    means = []
    for s in samples:
        vals = [_rating(r) for r in s["resps"][0]]
        vals = [v for v in vals if v is not None]
        means.append(sum(vals) / len(vals))
    rows = [s["doc"] for s in samples]
    mp = [sum(p for p, d in zip(means, rows) if d["model"] == m) / sum(d["model"] == m for d in rows) for m in MODELS]
    mh = [sum(d["human_score"] for d in rows if d["model"] == m) / sum(d["model"] == m for d in rows) for m in MODELS]
    assert results["system_pearson,none"] == pytest.approx(100 * stats.pearsonr(mp, mh)[0])
    assert results["parse_rate,none"] == 100.0 and results["sample_parse_rate,none"] == pytest.approx(80.0)


def test_metadata_data_dir_overrides_the_environment(hand_made_data, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, "/no/such/dir")
    out = lm_eval.simple_evaluate(model=scripted_lm(rating_critic), tasks=["critic_alignbench_free"],
                                  task_manager=critic_tasks.task_manager(metadata={"data_dir": str(hand_made_data)}),
                                  bootstrap_iters=0)  # as --metadata '{"data_dir": ...}' does
    assert out["results"]["critic_alignbench_free"]["system_models,none"] == len(MODELS)


def test_shared_samples_load_as_tasks(monkeypatch):
    if not (SHARED / "data" / "critiquellm").is_dir():
        pytest.skip("shared data not found")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(SHARED / "data" / "critiquellm"))
    loaded = critic_tasks.task_manager().load(["critic_alignbench_ref", "critic_alignbench_pairwise_free"])["tasks"]
    assert len(list(loaded["critic_alignbench_ref"].eval_docs)) == 100
    assert len(list(loaded["critic_alignbench_pairwise_free"].eval_docs)) == 200
