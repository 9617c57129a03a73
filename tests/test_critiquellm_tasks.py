"""CritiqueLLM's AlignBench tasks in lm-eval: hand-made labelled data, a scripted critic, and every metric value
computed here independently (scipy for correlations, loops for agreement). The paper variant (the default) is
checked against the paper's own prompt structure, read at run time from ../shared/papers/critiquellm.txt; the short
variant (marker first) is run through --metadata."""

import hashlib
import json
import re

import pytest
from conftest import SHARED
from helpers import scripted_lm
from scipy import stats

import critic_tasks
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols.critiquellm import data, prompts, scoring

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
    """The paper's order: the explanation (quoting the scale's ends on the way), then the rating last."""
    h = _h(prompt)
    if h % 9 == 0:
        return "I would rather not rate this."  # unparseable: 5, counted
    return f"The answer is fine; on a scale from [[1]] to [[10]] it is average.\nRating: [[{h % 10 + 1}]]"


def verdict_critic(prompt: str) -> str:
    h = _h(prompt)
    return "No verdict." if h % 7 == 0 else f"Unlike [[C]] cases, one is better.\n[[{'AB'[h % 2]}]]"


def _rating(reply: str, first: bool = False) -> float | None:
    found = [float(x) for x in re.findall(r"\[\[(\d+(?:\.\d+)?)\]\]", reply) if 1 <= float(x) <= 10]
    return (found[0] if first else found[-1]) if found else None


def _expected_pointwise(samples, system=True):
    rows = [s["doc"] for s in samples]
    replies = [s["resps"][0][0] for s in samples]
    parsed = [_rating(r) for r in replies]
    pred = [5.0 if p is None else p for p in parsed]
    human = [d["human_score"] for d in rows]
    out = {"parse_rate": 100 * sum(p is not None for p in parsed) / len(parsed)}
    per_q, skipped, constant = {"pearson": [], "spearman": [], "kendall": []}, 0, 0
    for q in dict.fromkeys(d["question"] for d in rows):
        idx = [i for i, d in enumerate(rows) if d["question"] == q]
        x, y = [pred[i] for i in idx], [human[i] for i in idx]
        if len(idx) < 2 or len(set(y)) < 2:
            skipped += 1
            continue
        if len(set(x)) < 2:  # the critic rated alike where humans differ: 0, never skipped
            constant += 1
            for v in per_q.values():
                v.append(0.0)
            continue
        per_q["pearson"].append(stats.pearsonr(x, y)[0])
        per_q["spearman"].append(stats.spearmanr(x, y)[0])
        per_q["kendall"].append(stats.kendalltau(x, y)[0])
    for k, v in per_q.items():
        out[f"text_{k}"] = 100 * sum(v) / len(v) if v else 0.0  # no usable question: 0, flagged by the count
    out["text_questions"], out["text_skipped"], out["text_constant"] = len(per_q["pearson"]), skipped, constant
    if not system:
        return out
    mp = [sum(p for p, d in zip(pred, rows) if d["model"] == m) / sum(d["model"] == m for d in rows) for m in MODELS]
    mh = [sum(h for h, d in zip(human, rows) if d["model"] == m) / sum(d["model"] == m for d in rows) for m in MODELS]
    out["system_pearson"] = 100 * stats.pearsonr(mp, mh)[0]
    out["system_spearman"] = 100 * stats.spearmanr(mp, mh)[0]
    out["system_kendall"] = 100 * stats.kendalltau(mp, mh)[0]
    out["system_models"] = len(MODELS)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("task", ["critic_alignbench_ref", "critic_alignbench_free"])
def test_pointwise_metrics_match_independent_computation(task):
    lm = scripted_lm(rating_critic)
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=critic_tasks.task_manager(), bootstrap_iters=0,
                                  log_samples=True)
    samples, results = out["samples"][task], out["results"][task]
    assert len(samples) == sum(map(len, HUMAN.values()))
    assert all(("[The Start of Reference Answer]" in p) == task.endswith("_ref") for p in lm.prompts)
    assert results["variant,none"] == "paper"  # the default, recorded beside the numbers
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_critic_that_follows_the_humans_agrees_fully():
    """A critic that prefers the response the humans scored higher, in both orders: agreement 100."""
    by_text = {r["response_1"]: r["human_score_1"] for r in PAIR_ROWS} | {r["response_2"]: r["human_score_2"]
                                                                          for r in PAIR_ROWS}

    def oracle(prompt):
        a = re.search(r"\[The Start of Assistant A's Answer\]\n(.*)\n", prompt).group(1)
        b = re.search(r"\[The Start of Assistant B's Answer\]\n(.*)\n", prompt).group(1)
        return "Compared.\n" + ("[[A]]" if by_text[a] > by_text[b] else "[[B]]")

    out = lm_eval.simple_evaluate(model=scripted_lm(oracle), tasks=["critic_alignbench_pairwise_free"],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
    res = out["results"]["critic_alignbench_pairwise_free"]
    assert res["agreement,none"] == 100.0 and res["consistency,none"] == 100.0 and res["parse_rate,none"] == 100.0


@pytest.mark.slow
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


@pytest.mark.slow
def test_metadata_data_dir_overrides_the_environment(hand_made_data, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, "/no/such/dir")
    out = lm_eval.simple_evaluate(model=scripted_lm(rating_critic), tasks=["critic_alignbench_free"],
                                  task_manager=critic_tasks.task_manager(metadata={"data_dir": str(hand_made_data)}),
                                  bootstrap_iters=0)  # as --metadata '{"data_dir": ...}' does
    assert out["results"]["critic_alignbench_free"]["system_models,none"] == len(MODELS)


@pytest.mark.slow
def test_shared_samples_load_as_tasks(monkeypatch):
    if not (SHARED / "data" / "critiquellm").is_dir():
        pytest.skip("shared data not found")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(SHARED / "data" / "critiquellm"))
    loaded = critic_tasks.task_manager().load(["critic_alignbench_ref", "critic_alignbench_pairwise_free"])["tasks"]
    assert len(list(loaded["critic_alignbench_ref"].eval_docs)) == 100
    assert len(list(loaded["critic_alignbench_pairwise_free"].eval_docs)) == 200


# ----------------------------------------------------------------------------- the paper variant and the short one

PAPER = SHARED / "papers" / "critiquellm.txt"
_MARKER = re.compile(r"\[(?!\[)([A-Z][^\[\]]*)\](?!\])")  # [Question], [The Start of ...]; not [[x]]


def _paper_prompts() -> dict[str, str]:
    """The paper's evaluation prompts (Appendix C, Table 7), read at run time: referenced and reference-free."""
    if not PAPER.is_file():
        pytest.skip("shared papers not found")
    text = PAPER.read_text(encoding="utf-8")
    table7 = text[text.index("Table 6: Dialogue-based prompts"):]
    referenced = table7[table7.index("Referenced\t"):table7.index("Reference- Free\t")]
    free = table7[table7.index("Reference- Free\t"):]
    return {"ref": referenced, "free": free[:free.index("[The End of Assistant's Answer]") + 40]}


def _doc(reference: bool, **extra) -> dict:
    doc = {"dimension": "alignbench_pointwise", "question": "Q-TEXT", "response": "R-TEXT",
           "with_reference": reference, "variant": "paper", **extra}
    return {**doc, "reference": "REF-TEXT"} if reference else doc


@pytest.mark.parametrize("reference", [True, False])
def test_paper_prompt_follows_the_papers_structure(reference):
    """Our wording, the paper's fields: the same section markers in the same order as the paper's prompt, the five
    rubric bands in order, the explanation asked before the rating, and the rating's [[x]] form at the end."""
    paper = _paper_prompts()["ref" if reference else "free"]
    ours = prompts.critic_prompt(_doc(reference))
    assert _MARKER.findall(ours) == _MARKER.findall(paper)
    expected_markers = ["Instruction", "Question", *(["The Start of Reference Answer", "The End of Reference Answer"]
                                                     if reference else []),
                        "The Start of Assistant's Answer", "The End of Assistant's Answer"]
    assert _MARKER.findall(ours) == expected_markers  # and that is, by hand, what the paper's table shows
    # the paper's rubric bands (1~2 ... 9~10; its text as extracted lost one band here and there) are ours, in order
    bands = re.findall(r"^(\d+)-(\d+): ", ours, re.MULTILINE)
    assert bands == [("1", "2"), ("3", "4"), ("5", "6"), ("7", "8"), ("9", "10")]
    paper_bands = re.findall(r"score (\d+)[~-](\d+)", paper)
    assert len(paper_bands) >= 4 and paper_bands == [b for b in bands if b in paper_bands]
    # explanation first (in Chinese, as the paper asks), the rating last as [[x]]
    assert ours.index("First write your explanation, in Chinese") < ours.index("Then rate the answer")
    assert "Rating: [[x]]" in ours and "Rating: [[5]]" in ours
    # the fields in their sections
    assert "[Question]\nQ-TEXT\n" in ours
    assert "[The Start of Assistant's Answer]\nR-TEXT\n[The End of Assistant's Answer]" in ours
    assert ("[The Start of Reference Answer]\nREF-TEXT\n[The End of Reference Answer]" in ours) == reference
    assert ("about 7" in ours) == (not reference)  # the reference-free rubric's default for an unremarkable answer


def test_paper_pairwise_prompt_asks_the_verdict_last():
    doc = {"dimension": "alignbench_pairwise", "question": "Q", "response_a": "RA", "response_b": "RB",
           "with_reference": True, "reference": "REF", "variant": "paper"}
    ours = prompts.critic_prompt(doc)
    assert _MARKER.findall(ours) == ["Instruction", "Question", "The Start of Reference Answer",
                                     "The End of Reference Answer", "The Start of Assistant A's Answer",
                                     "The End of Assistant A's Answer", "The Start of Assistant B's Answer",
                                     "The End of Assistant B's Answer"]
    assert ours.index("First write your explanation") < ours.index("end your reply with your verdict")
    assert '"[[C]]" for a tie' in ours


def test_the_rating_is_read_where_the_variant_puts_it():
    """Paper: the rating ends the reply, so the last [[x]] counts; short: it opens the reply, so the first does
    (a critique after it may quote other ratings)."""
    paper_reply = "这个回答一般，评分区间为[[1]]到[[10]]。\nRating: [[6]]"
    short_reply = "Rating: [[7]]\nOn a scale from [[1]] to [[10]] this is good; an ideal answer gets [[10]]."
    doc = {"category_slug": "writing", "question": "q", "model": "m", "human_score": 5.0}
    assert scoring.rating_record({**doc, "variant": "paper"}, paper_reply).pred == 6.0
    assert scoring.rating_record({**doc, "variant": "short"}, short_reply).pred == 7.0
    assert scoring.rating_record({**doc, "variant": "paper"}, short_reply).pred == 10.0  # what reading last gives
    # every loader records the variant: a document without one is a data error naming it, not a guess
    with pytest.raises(DataError, match=r"^a\.json\[3\]: no prompt variant recorded \(expected one of paper, short\)"):
        scoring.rating_record({**doc, "source_file": "a.json", "item_index": 3}, short_reply)
    pair = {"category_slug": "writing", "pair_id": "0", "order": "forward", "preference": "A"}
    assert scoring.preference_record({**pair, "variant": "paper"}, "Not [[B]], because...\n[[A]]").verdict == "A"
    assert scoring.preference_record({**pair, "variant": "short"}, "[[B]]\nbetter than [[A]] here").verdict == "B"


@pytest.mark.slow
def test_short_variant_through_metadata_reads_the_first_marker():
    def marker_first(prompt: str) -> str:
        h = _h(prompt)
        return f"Rating: [[{h % 10 + 1}]]\nThe answer is fine; on a scale [[1]] to [[10]] it is average."

    lm = scripted_lm(marker_first)
    task = "critic_alignbench_free"
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], bootstrap_iters=0, log_samples=True,
                                  task_manager=critic_tasks.task_manager(metadata={"variant": "short"}))
    assert all(p.startswith("You are an expert evaluator") and "Begin your reply with the overall rating" in p
               for p in lm.prompts)
    samples, results = out["samples"][task], out["results"][task]
    assert results["variant,none"] == "short"
    ratings = [_rating(s["resps"][0][0], first=True) for s in samples]
    assert ratings == [_h(p) % 10 + 1 for p in lm.prompts]  # the first marker, never the scale's 10
    exp = _expected_pointwise([{**s, "resps": [[f"[[{r:g}]]"]]} for s, r in zip(samples, ratings)])
    assert results["system_pearson,none"] == pytest.approx(exp["system_pearson"], abs=1e-9)


@pytest.mark.slow
def test_a_bad_variant_stops_the_run_before_any_generation(monkeypatch):
    monkeypatch.setenv("CRITIC_PROMPT_VARIANT", "long")
    lm = scripted_lm(rating_critic)
    with pytest.raises(ConfigError, match=re.escape("CRITIC_PROMPT_VARIANT='long': expected one of paper, short")):
        lm_eval.simple_evaluate(model=lm, tasks=["critic_alignbench_ref"], bootstrap_iters=0,
                                task_manager=critic_tasks.task_manager())
    assert lm.prompts == []


@pytest.mark.slow
def test_self_consistency_samples_as_the_paper():
    """Sec. 4.3: nucleus sampling with temperature and p both 0.8; 5 candidate critiques for self-consistency."""
    task = critic_tasks.task_manager().load(["critic_alignbench_ref_sc"])["tasks"]["critic_alignbench_ref_sc"]
    kwargs = task.config.generation_kwargs
    assert task.config.repeats == 5
    assert kwargs["do_sample"] is True and kwargs["temperature"] == 0.8 and kwargs["top_p"] == 0.8
