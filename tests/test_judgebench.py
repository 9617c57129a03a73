"""JudgeBench (issue 37.1): the authors' numbers re-computed by hand from their released judge outputs, and the
loader, the verdict reading and the pair score on hand-made data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.core.records import Record
from critic_tasks.protocols.judgebench import data, prompts, scoring
from critic_tasks.protocols.judgebench.scoring import JudgeBenchRecord

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "judgebench"
needs_shared = pytest.mark.skipif(not (SHARED / "outputs").is_dir(), reason=f"{SHARED} (the shared data) is absent")

GPT_FILE = "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl"
CLAUDE_FILE = "dataset=judgebench,response_model=claude-3-5-sonnet-20240620.jsonl"
OUTPUTS = {  # released judge outputs: (split, file)
    "o1-mini arena_hard (GPT-4o pairs)": ("gpt", "dataset=judgebench,response_model=gpt-4o-2024-05-13,"
                                          "judge_name=arena_hard,judge_model=o1-mini-2024-09-12.jsonl"),
    "claude-3-haiku arena_hard (Claude pairs)": ("claude", "dataset=judgebench,response_model=claude-3-5-sonnet-"
                                                 "20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307"
                                                 ".jsonl"),
}
# the authors' run_judge.py reports these source prefixes, then all pairs together
PREFIXES = {"knowledge": "mmlu-pro", "reasoning": "livebench-reasoning", "math": "livebench-math",
            "coding": "livecodebench"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _authors(rows: list[dict], prefix: str | None = None) -> tuple[float, float, float]:
    """utils/metrics.py's compute_final_metrics(reverse_order=True), re-done by hand on the recorded decisions:
    (100 * n_correct / n_pairs, 100 * n_inconsistent / n_pairs, and the inconsistency with a missing decision
    counted as inconsistent, ours)."""
    flip = {"A>B": "B>A", "B>A": "A>B"}
    chosen = [r for r in rows if prefix is None or r["source"].startswith(prefix)]
    n_correct = n_inconsistent = n_unsure = 0
    for row in chosen:
        first, second = row["judgments"]
        d1 = first["decision"] if first is not None else None
        d2 = second["decision"] if second is not None else None
        d2 = flip.get(d2, d2)
        if d1 != d2:
            n_inconsistent += 1
        n_unsure += d1 is None or d2 is None or d1 != d2
        counter = 0
        for d in (d1, d2):
            if d == row["label"]:
                counter += 1
            elif d == flip[row["label"]]:
                counter -= 1
        n_correct += counter > 0
    return 100 * n_correct / len(chosen), 100 * n_inconsistent / len(chosen), 100 * n_unsure / len(chosen)


def _records_from_raw(split: str, rows: list[dict]) -> list[JudgeBenchRecord]:
    """Our records from the judges' raw replies, on documents our loader reads from the shared data files."""
    docs = data.load_task_docs(data_dir=SHARED, split=split)
    replies = {r["pair_id"]: [j["judgment"]["response"] for j in r["judgments"]] for r in rows}
    assert {d["pair_id"] for d in docs} == set(replies)
    return [scoring.record(d, replies[d["pair_id"]][0 if d["order"] == "forward" else 1]) for d in docs]


@needs_shared
@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_released_judges_rescored_from_raw_replies_equal_the_authors_metrics(name):
    split, filename = OUTPUTS[name]
    rows = _rows(SHARED / "outputs" / filename)
    records = _records_from_raw(split, rows)
    for slug, prefix in PREFIXES.items():
        want_accuracy, _, want_inconsistency = _authors(rows, prefix)
        assert scoring.accuracy(records, slug) == want_accuracy, (name, slug)
        assert scoring.inconsistency(records, slug) == want_inconsistency, (name, slug)
    want_accuracy, authors_inconsistency, want_inconsistency = _authors(rows)
    assert scoring.accuracy(records) == want_accuracy
    assert scoring.METRICS[("judgebench", "inconsistency")](records) == want_inconsistency
    if scoring.parse_rate(records) == 100.0:  # every reply decided: the authors' own n_inconsistent
        assert want_inconsistency == authors_inconsistency
    # every raw reply reads as the decision the authors recorded for it (unread ones: None on both sides)
    recorded = {(r["pair_id"], order): j["decision"] for r in rows for order, j in zip(("forward", "reverse"), r["judgments"])}
    read = {(r.pair_id, r.order): scoring.VERDICT_LABELS.get(r.verdict) for r in records}
    assert read == recorded
    unread = sum(d is None for d in recorded.values())
    assert scoring.parse_rate(records) == 100 * (len(recorded) - unread) / len(recorded)


@needs_shared
def test_reward_model_outputs_scored_from_their_scores_equal_the_authors_metrics():
    """The reward model's raw judgment is two scores; its decision is A>B when the first is higher (judges.py)."""
    rows = _rows(SHARED / "outputs" / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,"
                                      "judge_model=Skywork_Skywork-Reward-Gemma-2-27B.jsonl")
    docs = data.load_task_docs(data_dir=SHARED, split="gpt")
    by_id = {r["pair_id"]: r for r in rows}
    records = []
    for doc in docs:
        judgment = by_id[doc["pair_id"]]["judgments"][0 if doc["order"] == "forward" else 1]
        first, second = judgment["judgment"]["scores"]
        assert judgment["decision"] == ("A>B" if first > second else "B>A")
        records.append(scoring.record(doc, f"Final verdict: [[{judgment['decision']}]]"))
    for slug, prefix in PREFIXES.items():
        assert scoring.accuracy(records, slug) == _authors(rows, prefix)[0]
    assert scoring.accuracy(records) == _authors(rows)[0]
    assert scoring.inconsistency(records) == _authors(rows)[1] == _authors(rows)[2]  # reward models always decide


@needs_shared
def test_shared_data_files_load_with_their_sizes_and_categories():
    gpt = data.load_pairs("gpt", SHARED)
    claude = data.load_pairs("claude", SHARED / "data")  # the folder itself, or the repository above it
    assert (len(gpt), len(claude)) == (350, 270)
    raw = _rows(SHARED / "data" / GPT_FILE)
    for slug, prefix in PREFIXES.items():
        want = sum(r["source"].startswith(prefix) for r in raw)
        assert len(data.load_task_docs(data_dir=SHARED, split="gpt", category=slug)) == 2 * want


# ----------------------------------------------------------------------------- verdicts and the pair score

@pytest.mark.parametrize("reply, verdict, reason", [
    ("Both are fine.\nMy final verdict is: [[A>>B]]", "A", ""),
    ("[[B>A]] ... as said, [[B>A]]", "B", ""),  # repeated, one label
    ("[[A=B]]", "C", ""),
    ("I first thought [[A>B]] but now [[B>A]]", None, "ambiguous"),
    ("[[A>>B]] then [[A>B]]", None, "ambiguous"),  # the authors compare the labels as written
    ("Verdict: A>B", None, "no_verdict"),
    ("[[A<B]]", None, "unknown_label"),
    ("[[]] [[C]]", None, "no_verdict"),
    ("", None, "no_verdict"),
    (None, None, "no_verdict"),
    (12, None, "no_verdict"),
    (prompts.critic_prompt({"question": "q", "response_a": "x", "response_b": "y"}), None, "ambiguous"),  # an echo
])
def test_verdicts_are_read_by_the_authors_rule(reply, verdict, reason):
    assert scoring.parse_verdict(reply) == (verdict, reason)


# forward verdict, reverse verdict (as the reverse prompt's critic said it), gold -> the authors' counter
SCORES = [("A", "B", "A", 2), ("A", "A", "A", 0), ("B", "A", "A", -2), ("A", "C", "A", 1), ("C", "C", "A", 0),
          ("C", "B", "A", 1), (None, "B", "A", 1), (None, None, "A", 0), ("B", None, "A", -1), ("B", "A", "B", 2)]


def _recs(triples, source="math"):
    out = []
    for i, (f, r, g) in enumerate(triples):
        for order, v in (("forward", f), ("reverse", r)):
            out.append(JudgeBenchRecord(domain=source, pair_id=f"p{i}", order=order, verdict=v, parsed=v is not None,
                                        gold=g, source=source))
    return out


def test_pair_score_counts_agreeing_and_contradicting_orders():
    for f, r, g, want in SCORES:
        assert scoring.pair_score(f, r, g) == want, (f, r, g)


def test_accuracy_inconsistency_and_parse_rate_on_hand_made_pairs():
    records = _recs([(f, r, g) for f, r, g, _ in SCORES])
    # correct: the counters 2, 1, 1, 1, 2 are positive -> 5 of 10
    assert scoring.accuracy(records) == 50.0
    flipped = {"A": "B", "B": "A", "C": "C", None: None}
    want_inconsistent = sum(f != flipped[r] for f, r, _, _ in SCORES)
    assert want_inconsistent == 5  # (A,A) (A,C) (C,B) (None,B) (B,None); and (None,None): no verdict at all
    assert scoring.inconsistency(records) == 60.0
    assert scoring.parse_rate(records) == 100 * 16 / 20
    assert scoring.tie_rate(records) == 100 * 4 / 20
    assert scoring.pair_count(records) == 10.0
    assert scoring.accuracy(records, "coding") is None


def test_single_order_accuracy_is_the_verdict_matching_the_label():
    records = [r for r in _recs([("A", None, "A"), ("C", None, "A"), ("B", None, "A"), (None, None, "B")])
               if r.order == "forward"]
    assert scoring.accuracy(records) == 25.0
    assert scoring.inconsistency(records) is None
    assert "inconsistency" not in scoring.judgebench_metrics(records)


def test_a_pair_missing_its_reverse_record_counts_it_as_no_verdict():
    records = [r for r in _recs([("A", "A", "A"), ("B", "B", "A")]) if not (r.pair_id == "p0" and r.order == "reverse")]
    assert scoring.accuracy(records) == 50.0  # p0: +1 and nothing; p1: -1 + 1
    assert scoring.inconsistency(records) == 100.0  # only p1 was asked both ways


def test_metrics_by_source_and_intervals():
    records = _recs([("A", "B", "A"), ("B", "A", "A")], "math") + [
        JudgeBenchRecord(domain="coding", pair_id="q", order=o, verdict="A", parsed=True, gold="A", source="coding")
        for o in ("forward", "reverse")]
    assert scoring.accuracy(records, "math") == 50.0 and scoring.accuracy(records, "coding") == 0.0
    assert scoring.judgebench_metrics(records)["accuracy"] == 100 / 3
    assert scoring.accuracy(records, "knowledge") is None
    settings = BootstrapSettings(resamples=200, seed=1)
    assert scoring.judgebench_interval(records, "accuracy_coding", settings) == (0.0, 0.0)
    low, high = scoring.judgebench_interval(records, "accuracy", settings)
    assert 0.0 <= low <= 100 / 3 <= high <= 100.0
    assert scoring.judgebench_interval(records, "parse_rate", settings) is None


def test_records_round_trip_through_their_dict():
    record = _recs([("A", None, "B")])[1]
    assert Record.from_dict(json.loads(json.dumps(record.as_dict()))) == record


# ----------------------------------------------------------------------------- loader, prompt, gold

def test_sample_pairs_load_in_both_orders_with_responses_swapped():
    docs = data.load_task_docs(data_dir="sample", split="gpt")
    rows = _rows(data.SAMPLE_DIR / GPT_FILE)
    assert len(docs) == 2 * len(rows)
    forward, reverse = docs[0], docs[1]
    assert (forward["order"], reverse["order"]) == ("forward", "reverse")
    assert (forward["response_a"], forward["response_b"]) == (rows[0]["response_A"], rows[0]["response_B"])
    assert (reverse["response_a"], reverse["response_b"]) == (rows[0]["response_B"], rows[0]["response_A"])
    assert forward["preference"] == {"A>B": "A", "B>A": "B"}[rows[0]["label"]]
    assert scoring.gold_text(forward) == rows[0]["label"]
    assert scoring.gold_text(reverse) == {"A>B": "B>A", "B>A": "A>B"}[rows[0]["label"]]
    prompt = prompts.critic_prompt(reverse)
    assert prompt.index(rows[0]["response_B"]) < prompt.index(rows[0]["response_A"])
    assert rows[0]["question"] in prompt
    for label in ("[[A>>B]]", "[[A>B]]", "[[A=B]]", "[[B>A]]", "[[B>>A]]"):
        assert label in prompt
    single = data.load_task_docs(data_dir="sample", split="claude", orders="single", category="coding")
    assert [d["order"] for d in single] == ["forward"] and single[0]["source_slug"] == "coding"


def test_the_sample_covers_every_category_in_both_splits():
    for split in data.SPLITS:
        assert {p["source_slug"] for p in data.load_pairs(split, "sample")} == set(data.SOURCES)


def test_the_data_dir_setting_is_read(monkeypatch):
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    assert len(data.load_pairs("claude")) == len(_rows(data.SAMPLE_DIR / CLAUDE_FILE))
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "")
    with pytest.raises(DataError, match="JUDGEBENCH_DATA_DIR is set but empty"):
        data.load_pairs("gpt")


def _bad_copy(tmp_path, change) -> Path:
    rows = _rows(data.SAMPLE_DIR / GPT_FILE)
    change(rows)
    (tmp_path / GPT_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows[1].update(label="A=B"), r"\[1\]: field 'label' should be 'A>B' or 'B>A', got 'A=B'"),
    (lambda rows: rows[2].pop("response_B"), r"\[2\]: missing field 'response_B'"),
    (lambda rows: rows[0].update(question=7), r"\[0\]: field 'question' should be str, got int"),
    (lambda rows: rows[3].update(source="arena-hard"), r"\[3\]: field 'source' 'arena-hard' is none of"),
    (lambda rows: rows[4].update(pair_id=rows[0]["pair_id"]), r"\[4\]: field 'pair_id' .* repeats row 0"),
    (lambda rows: rows.clear(), "no pairs"),
])
def test_bad_data_is_one_error_naming_the_file_and_field(tmp_path, change, message):
    root = _bad_copy(tmp_path, change)
    with pytest.raises(DataError, match=message) as err:
        data.load_pairs("gpt", root)
    assert GPT_FILE in str(err.value)


def test_bad_options_and_missing_files(tmp_path):
    with pytest.raises(ConfigError, match="split 'mistral'"):
        data.load_pairs("mistral", "sample")
    with pytest.raises(ConfigError, match="category 'law'"):
        data.load_task_docs(data_dir="sample", category="law")
    with pytest.raises(ConfigError, match="dimension 'comparison'"):
        data.load_task_docs("comparison", data_dir="sample")
    with pytest.raises(ConfigError, match="orders 'three'"):
        data.load_task_docs(data_dir="sample", orders="three")
    with pytest.raises(DataError, match="file not found"):
        data.load_pairs("gpt", tmp_path)


def test_unparseable_replies_are_counted_not_dropped():
    docs = data.load_task_docs(data_dir="sample", split="claude")
    replies = ["[[A>B]]", "I cannot decide.", "[[A>B]] [[B>A]]", None] * (len(docs) // 4)
    records = [scoring.record(d, r) for d, r in zip(docs, replies)]
    assert len(records) == len(docs)
    assert scoring.parse_rate(records) == 25.0
    assert [r.unparsed_reason for r in records[:4]] == ["", "no_verdict", "ambiguous", "no_verdict"]


# ----------------------------------------------------------------------------- registered tasks, chance line, lm-eval

def _sample_rows(split_file: str = GPT_FILE) -> list[dict]:
    return _rows(data.SAMPLE_DIR / split_file)


def test_chance_line_of_the_consistent_coin_and_position_critics(monkeypatch):
    from critic_tasks import chance

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    rows = _sample_rows()
    line = chance.chance_line("critic_judgebench")
    # a coin per pair naming the same answer in both orders: right on half of the pairs, whatever the labels
    assert line.floors["coin"]["accuracy"] == 50.0
    # always the first position: +1 in one order, -1 in the other, never positive
    assert line.floors["always_first"]["accuracy"] == 0.0 and line.floors["always_tie"]["accuracy"] == 0.0
    # by length: the longer (shorter) answer named in both orders; equal lengths are a tie, right on no pair
    gold_longer = sum(len(r["response_A"]) != len(r["response_B"])
                      and (len(r["response_A"]) > len(r["response_B"])) == (r["label"] == "A>B") for r in rows)
    gold_shorter = sum(len(r["response_A"]) != len(r["response_B"]) for r in rows) - gold_longer
    assert line.floors["longer"]["accuracy"] == 100 * gold_longer / len(rows)
    assert line.floors["shorter"]["accuracy"] == 100 * gold_shorter / len(rows)
    # the family of verdict tables (issue 44.3): the shorter answer, and on equal lengths the pair's hashed-first
    # text (a consistent coin: right on half of them); the old line (the best named critic, 60) was below it
    equal = sum(len(r["response_A"]) == len(r["response_B"]) for r in rows)
    assert equal and line.chance["accuracy"] == pytest.approx(
        max(50.0, 100 * (gold_longer + equal / 2) / len(rows), 100 * (gold_shorter + equal / 2) / len(rows)))
    assert line.chance["accuracy"] > max(50.0, 100 * gold_longer / len(rows), 100 * gold_shorter / len(rows))
    # the canned always-first critic, run through the scorer: every pair inconsistent, none right
    assert line.values["always_first"]["inconsistency"] == 100.0 and line.values["always_first"]["accuracy"] == 0.0


def _oracle(rows):
    """Names the labelled answer, except: pair 0's reverse order says a tie, pair 1 answers nothing in the forward
    order, pair 2 always names position A."""
    right = {r["response_A"] if r["label"] == "A>B" else r["response_B"] for r in rows}
    index = {r["response_A"]: i for i, r in enumerate(rows)} | {r["response_B"]: i for i, r in enumerate(rows)}

    def reply(prompt: str) -> str:
        a = prompt.split("<|The Start of Assistant A's Answer|>\n")[1].split("\n<|The End of Assistant A's Answer|>")[0]
        b = prompt.split("<|The Start of Assistant B's Answer|>\n")[1].split("\n<|The End of Assistant B's Answer|>")[0]
        i = index[a]
        forward = a == rows[i]["response_A"]
        if i == 0 and not forward:
            return "They look the same to me. [[A=B]]"
        if i == 1 and forward:
            return "I cannot tell."
        if i == 2:
            return "My final verdict is: [[A>>B]]"
        return "My final verdict is: " + ("[[A>B]]" if a in right else "[[B>>A]]" if b in right else "[[A=B]]")

    return reply


def test_lm_eval_runs_the_task_on_the_sample_with_the_authors_numbers(monkeypatch):
    lm_eval = pytest.importorskip("lm_eval")
    from helpers import scripted_lm

    import critic_tasks

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    rows = _sample_rows()
    out = lm_eval.simple_evaluate(model=scripted_lm(_oracle(rows)), tasks=["critic_judgebench"],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0, log_samples=True)
    results = out["results"]["critic_judgebench"]
    assert len(out["samples"]["critic_judgebench"]) == 2 * len(rows)
    # by hand: pair 0 (+1, tie 0) right; pair 1 (no verdict, +1) right; pair 2 (A twice: +1 -1 = 0) wrong; rest +2
    correct = [True, True, False] + [True] * (len(rows) - 3)
    assert results["accuracy,none"] == pytest.approx(100 * sum(correct) / len(rows))
    assert results["inconsistency,none"] == pytest.approx(100 * 3 / len(rows))
    assert results["parse_rate,none"] == pytest.approx(100 * (2 * len(rows) - 1) / (2 * len(rows)))
    by_source = {}
    for row, ok in zip(rows, correct):
        by_source.setdefault(data.source_slug(row["source"]), []).append(ok)
    for slug, flags in by_source.items():
        assert results[f"accuracy_{slug},none"] == pytest.approx(100 * sum(flags) / len(flags))


def test_the_claude_split_and_one_category_through_metadata(monkeypatch):
    lm_eval = pytest.importorskip("lm_eval")
    from helpers import scripted_lm

    import critic_tasks

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    rows = _sample_rows(CLAUDE_FILE)
    lm = scripted_lm(lambda prompt: "[[B>A]]")
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_judgebench_math"], bootstrap_iters=0,
                                  task_manager=critic_tasks.task_manager(metadata={"split": "claude"}))
    math_rows = [r for r in rows if r["source"] == "livebench-math"]
    assert len(lm.prompts) == 2 * len(math_rows) and math_rows[0]["question"] in lm.prompts[0]
    assert out["results"]["critic_judgebench_math"]["accuracy,none"] == 0.0  # always position B: +1 - 1
    assert out["results"]["critic_judgebench_math"]["inconsistency,none"] == 100.0


def test_preflight_accepts_the_bundled_sample_and_refuses_a_missing_folder(monkeypatch, tmp_path):
    from critic_tasks import preflight, registry

    tasks = [registry.task("critic_judgebench")]
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    preflight.check_tasks(tasks)  # the word the setting's message offers is a folder, not a path
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(tmp_path / "nope"))
    with pytest.raises(DataError, match=r"^JUDGEBENCH_DATA_DIR=.*nope: not a directory$"):
        preflight.check_tasks(tasks)
