"""MetaCritique and CritiqueLLM metrics: the paper's Table 6 from the released human labels, and hand-made data
checked against values computed here (hand loops for P/R/F1, scipy for correlations)."""

import json
import math

import pytest
from conftest import SHARED
from scipy import stats

from critic_tasks import cli
from critic_tasks.core.errors import DataError
from critic_tasks.core.metrics import agreement_metrics, correlations, precision_recall_f1, system_level, text_level
from critic_tasks.protocols.critiquellm import data as cq_data
from critic_tasks.protocols.metacritique import data as mc_data

ANNOTATIONS = SHARED / "data" / "metacritique" / "annotation_data.json"
CRITIQUELLM = SHARED / "data" / "critiquellm"

# MetaCritique (Sun et al. 2024), Table 6: (macro P, R, F1), (micro P, R, F1), x100.
TABLE_6 = {"human_critique": ((85.37, 50.97, 58.24), (87.61, 48.72, 62.62)),
           "llm": ((71.07, 54.37, 58.20), (71.85, 53.28, 61.19))}


@pytest.fixture
def annotations():
    if not ANNOTATIONS.is_file():
        pytest.skip(f"shared data not found at {ANNOTATIONS}")
    return ANNOTATIONS


def test_metacritique_score_reproduces_table_6(annotations, capsys):
    assert cli.main(["metacritique-score", str(annotations), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["llm"]["sources"] == ["llm1_critique", "llm2_critique"]
    for source, (macro, micro) in TABLE_6.items():
        got_macro = tuple(round(report[source]["macro"][k], 2) for k in ("precision", "recall", "f1"))
        got_micro = tuple(round(report[source]["micro"][k], 2) for k in ("precision", "recall", "f1"))
        assert (got_macro, got_micro) == (macro, micro), source
    assert report["human_critique"]["critiques"] == 100 and report["llm"]["critiques"] == 200


def test_metacritique_score_ignores_stored_scores(annotations, tmp_path, capsys):
    """Stored precision/recall/f1 fields are never read: corrupting them changes nothing."""
    items = json.loads(annotations.read_text())
    for item in items:
        for key in ("human_critique", "llm1_critique", "llm2_critique"):
            item[key].update(precision_score=-1, recall_score=-1, f1_score=-1)
    path = tmp_path / "a.json"
    path.write_text(json.dumps(items))
    assert cli.main(["metacritique-score", str(path), "--json"]) == 0
    assert round(json.loads(capsys.readouterr().out)["human_critique"]["macro"]["precision"], 2) == 85.37


def _item(p_labels, r_labels, n_ref=None):
    n_ref = len(r_labels) if n_ref is None else n_ref
    return {"question": "q", "response": "r", "gpt4_answer": "a", "index": 0,
            "gpt4_critique": {"critique": "ref", "aius": [f"ref {i}" for i in range(n_ref)]},
            "me_critique": {"critique": "c", "aius": [f"u {i}" for i in range(len(p_labels))],
                            "precision_labels": p_labels, "recall_labels": r_labels}}


def test_hand_made_annotations_with_an_empty_critique(tmp_path, capsys):
    items = [_item([True, False, True], [True, False]), _item([], [False, False]), _item([True], [True, True])]
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(items))
    assert cli.main(["metacritique-score", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["me_critique"]
    # by hand: precisions 2/3, 0 (no AIU: our rule), 1; recalls 1/2, 0, 1
    ps, rs = [2 / 3, 0.0, 1.0], [0.5, 0.0, 1.0]
    f1s = [2 * p * r / (p + r) if p and r else 0.0 for p, r in zip(ps, rs)]
    assert got["macro"]["precision"] == pytest.approx(100 * sum(ps) / 3)
    assert got["macro"]["recall"] == pytest.approx(100 * sum(rs) / 3)
    assert got["macro"]["f1"] == pytest.approx(100 * sum(f1s) / 3)
    mp, mr = 3 / 4, 3 / 6
    assert got["micro"]["precision"] == pytest.approx(100 * mp)
    assert got["micro"]["recall"] == pytest.approx(100 * mr)
    assert got["micro"]["f1"] == pytest.approx(100 * 2 * mp * mr / (mp + mr))
    assert got["empty_precision"] == 1 and got["critiques"] == 3


def test_prf_all_empty_is_zero_not_an_error():
    out = precision_recall_f1([[], []], [[], []])
    assert out["precision"] == out["precision_micro"] == out["f1_micro"] == 0.0
    assert out["empty_precision"] == 2 and out["empty_recall"] == 2


@pytest.mark.parametrize("mutate, message", [
    (lambda it: it["me_critique"].pop("precision_labels"), "missing field 'precision_labels'"),
    (lambda it: it["me_critique"].update(precision_labels=[True]), "has 1 labels for 3 aius"),
    (lambda it: it["me_critique"].update(recall_labels=[True, "yes"]), "'recall_labels'[1] should be true/false"),
    (lambda it: it["gpt4_critique"].update(aius=[]), "'aius' is empty"),
    (lambda it: it.pop("question"), "missing field 'question'"),
])
def test_bad_annotation_file_is_one_clear_error(tmp_path, capsys, mutate, message):
    item = _item([True, False, True], [True, False])
    mutate(item)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([item]))
    assert cli.main(["metacritique-score", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and "Traceback" not in err


def test_malformed_json_and_missing_file(tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text("[{")
    assert cli.main(["metacritique-score", str(path)]) == 2
    assert "malformed JSON" in capsys.readouterr().err
    assert cli.main(["metacritique-score", str(tmp_path / "nope.json")]) == 2
    assert "no such annotation file" in capsys.readouterr().err


# ----------------------------------------------------------------------------- CritiqueLLM correlations

PRED = [3.0, 7.0, 5.0, 9.0, 2.0, 2.0, 6.0, 8.0, 4.0, 1.0]
HUMAN = [1.0, 4.0, 3.0, 5.0, 2.0, 1.0, 3.0, 3.0, 2.0, 4.0]
QUESTION = ["q1", "q1", "q1", "q2", "q2", "q3", "q4", "q4", "q4", "q5"]  # q3, q5: one response; q2 fine
MODEL = ["m1", "m2", "m3", "m1", "m2", "m3", "m1", "m2", "m3", "m1"]


def test_text_level_against_scipy():
    out = text_level(PRED, HUMAN, QUESTION)
    expected = {"pearson": [], "spearman": [], "kendall": []}
    skipped = 0
    for q in dict.fromkeys(QUESTION):
        x = [p for p, g in zip(PRED, QUESTION) if g == q]
        y = [h for h, g in zip(HUMAN, QUESTION) if g == q]
        if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
            skipped += 1
            continue
        expected["pearson"].append(stats.pearsonr(x, y)[0])
        expected["spearman"].append(stats.spearmanr(x, y)[0])
        expected["kendall"].append(stats.kendalltau(x, y)[0])
    for k, vals in expected.items():
        assert out[k] == pytest.approx(100 * sum(vals) / len(vals)), k
    assert (out["questions"], out["skipped"]) == (3, skipped) == (3, 2)


def test_text_level_constant_critic_counts_zero_constant_humans_are_skipped():
    # a: the critic rates alike where humans differ -> 0 (counted); b: +100; c: humans alike -> undefined, skipped
    out = text_level([5, 5, 1, 2, 1, 2], [1, 3, 2, 4, 3, 3], ["a", "a", "b", "b", "c", "c"])
    assert (out["questions"], out["constant"], out["skipped"]) == (2, 1, 1)
    assert out["pearson"] == pytest.approx(50.0) and out["kendall"] == pytest.approx(50.0)
    alone = text_level([5, 5], [1, 3], ["a", "a"])
    assert alone["questions"] == 1 and alone["pearson"] == 0.0 and not math.isnan(alone["kendall"])
    none = text_level([5, 5], [3, 3], ["a", "a"])
    assert none["questions"] == 0 and none["pearson"] == 0.0


def test_abstaining_where_it_would_be_wrong_does_not_raise_the_text_correlation():
    """Issue 27.7: a critic right on q1 and anti-correlated on q2 averages (100 - 100) / 2 = 0; the same critic
    giving one rating on q2 (abstaining there) must not average q1 alone (100) -- q2 counts 0, mean 50 at most."""
    human = [1, 2, 3, 1, 2, 3]
    questions = ["q1"] * 3 + ["q2"] * 3
    honest = text_level([1, 2, 3, 3, 2, 1], human, questions)
    assert honest["pearson"] == pytest.approx(0.0)
    abstaining = text_level([1, 2, 3, 5, 5, 5], human, questions)
    assert abstaining["pearson"] == pytest.approx(50.0) and abstaining["constant"] == 1
    # a reply with no readable rating takes 5 throughout the question: the same 0
    assert abstaining["questions"] == 2 and abstaining["skipped"] == 0


def test_system_level_against_scipy():
    out = system_level(PRED, HUMAN, MODEL)
    models = list(dict.fromkeys(MODEL))
    mp = [sum(p for p, m in zip(PRED, MODEL) if m == k) / MODEL.count(k) for k in models]
    mh = [sum(h for h, m in zip(HUMAN, MODEL) if m == k) / MODEL.count(k) for k in models]
    assert out["pearson"] == pytest.approx(100 * stats.pearsonr(mp, mh)[0])
    assert out["spearman"] == pytest.approx(100 * stats.spearmanr(mp, mh)[0])
    assert out["kendall"] == pytest.approx(100 * stats.kendalltau(mp, mh)[0])
    assert out["models"] == 3 and out["defined"] == 1
    assert correlations([1, 2], [3, 3]) is None


def test_pairwise_agreement_by_hand():
    forward = ["A", "B", "A", None, "C", "A"]
    reverse = ["B", "A", "A", "B", "C", "B"]
    gold = ["A", "A", "A", "B", "C", "B"]
    cons = [f is not None and r == {"A": "B", "B": "A", "C": "C"}[f] for f, r in zip(forward, reverse)]
    agree = [c and f == g for c, f, g in zip(cons, forward, gold)]
    out = agreement_metrics(forward, reverse, gold)
    assert out == {"agreement": pytest.approx(100 * sum(agree) / 6), "consistency": pytest.approx(100 * sum(cons) / 6)}
    assert (sum(agree), sum(cons)) == (2, 4)


# ----------------------------------------------------------------------------- loaders


@pytest.fixture
def critiquellm_dir():
    if not CRITIQUELLM.is_dir():
        pytest.skip(f"shared data not found at {CRITIQUELLM}")
    return CRITIQUELLM


def test_critiquellm_loaders_read_the_shared_files(critiquellm_dir):
    point = cq_data.load_pointwise(True, critiquellm_dir)
    assert len(point) == 100 and all(d["reference"] for d in point)
    assert {d["category_slug"] for d in point} <= set(cq_data.CATEGORY_SLUGS) - {"other"}
    free = cq_data.load_pointwise(False, critiquellm_dir)
    assert "reference" not in free[0] and len({d["model"] for d in free}) == 8
    pairs = cq_data.load_pairwise(False, critiquellm_dir)
    assert len(pairs) == 200
    raw = [json.loads(line) for line in (critiquellm_dir / "pairwise/alignbench_reference_free_sample.jsonl").open()]
    fwd = [d for d in pairs if d["order"] == "forward"]
    assert [d["preference"] for d in fwd] == ["A" if r["label"] == 0 else "B" for r in raw]
    rev = [d for d in pairs if d["order"] == "reverse"]
    assert [d["response_a"] for d in rev] == [r["response_2"] for r in raw]


def test_critiquellm_bad_files(tmp_path):
    (tmp_path / "pointwise").mkdir()
    path = tmp_path / "pointwise" / "alignbench_reference_free_sample.jsonl"
    path.write_text(json.dumps({"id": 0, "category": "x", "question": "q", "response": "r", "model": "m"}) + "\n")
    with pytest.raises(DataError, match=r"\[0\]: missing field 'human_score'"):
        cq_data.load_pointwise(False, tmp_path)
    path.write_text("{not json\n")
    with pytest.raises(DataError, match=":1: malformed JSON line"):
        cq_data.load_pointwise(False, tmp_path)
    with pytest.raises(DataError, match="file not found"):
        cq_data.load_pointwise(True, tmp_path)
    with pytest.raises(DataError, match="CRITIQUELLM_DATA_DIR=/no/such: not a directory"):
        import os
        os.environ[cq_data.DATA_DIR_ENV] = "/no/such"
        try:
            cq_data.load_pointwise(True)
        finally:
            del os.environ[cq_data.DATA_DIR_ENV]


def test_metacritique_benchmark_loader(annotations):
    docs = mc_data.load_benchmark(annotations.parent)
    assert len(docs) == 100 and all(d["reference_aius"] for d in docs)
    assert docs[0]["question"] == "kitchen towel" and docs[0]["reference_answer"].startswith("A kitchen towel")


@pytest.mark.parametrize("env, task", [(cq_data.DATA_DIR_ENV, "critic_alignbench_ref"),
                                       (mc_data.DATA_DIR_ENV, "critic_metacritique")])
def test_a_missing_data_folder_stops_the_run_before_the_model_loads(monkeypatch, capsys, env, task):
    monkeypatch.setenv(env, "/no/such/folder")
    assert cli.main(["--model", "hf", "--model_args", "pretrained=none", "--tasks", task]) == 2
    err = capsys.readouterr().err
    assert f"{env}=/no/such/folder: not a directory" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- parsing rules (README)


@pytest.mark.parametrize("text, rating", [
    ("Rating: [[7]]\nGood.", 7.0), ("On a scale [[1]] to [[10]] ... Rating: [[6]]", 6.0), ("[[ 8.5 ]]", 8.5),
    ("Rating: [[11]]", None), ("Rating: 7", None), ("", None), (None, None),
])
def test_bracket_rating(text, rating):
    from critic_tasks.core.parsing import parse_bracket_rating

    assert parse_bracket_rating(text) == rating


# a line naming two different markers is an echo of the option list or a hedge, never the verdict (issue 34); a
# later line still gives one
@pytest.mark.parametrize("text, verdict", [("[[A]]\nbecause", "A"), ("not [[A]] but [[b]]", None),
                                           ("not [[A]] but [[b]]\n[[b]]", "B"), ("[[C]]", "C"),
                                           ("A is better", None), ("[[D]]", None)])
def test_bracket_verdict(text, verdict):
    from critic_tasks.core.parsing import parse_bracket_verdict

    assert parse_bracket_verdict(text) == verdict


def test_numbered_units_and_verdicts():
    from critic_tasks.core.parsing import parse_numbered_units, parse_numbered_verdicts

    assert parse_numbered_units("Here:\n1. The answer is wrong.\n2) It lacks a source.\n") == [
        "The answer is wrong.", "It lacks a source."]
    assert parse_numbered_units("None.") == [] and parse_numbered_units("no idea") is None
    assert parse_numbered_verdicts("1. True\n2. **False**, since\n3: maybe\n5. True\n1. True", 4) == [
        True, False, None, None]
    # issue 27.5: a unit given two different verdicts has none (the old rule took the first: an echoed forgery)
    assert parse_numbered_verdicts("1. True\n2. True\n1. False\n2. True", 2) == [None, True]
