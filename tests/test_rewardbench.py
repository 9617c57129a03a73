"""RewardBench for generative judges (issue 47.1): real lm-eval runs on replies of many shapes equal the authors'
numbers (their generative.py's format_judge_answers and process_judgement, run_generative.py's result per pair,
utils.py's calculate_scores_per_section with constants.py's weights), in the default one seeded random order per
pair and with both orders (the pair rule); chance and bias lines against blind critics played through the run."""

from __future__ import annotations

import hashlib
import json

import pytest
from rewardbench_authors import REWARDBENCH, authors_mirror, generative, needs_rewardbench, rewardbench_constants, rewardbench_utils

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.protocols.rewardbench import authors_prompts, data, scoring

pytestmark = [needs_rewardbench]
SECTIONS = {"Chat": "chat", "Chat Hard": "chat_hard", "Safety": "safety", "Reasoning": "reasoning"}


@pytest.fixture(autouse=True)
def _sample_with_the_authors_files(monkeypatch, tmp_path_factory):
    """The bundled sample's pairs; the authors' files from a mirror of the shared checkout (no network in tests)."""
    root = tmp_path_factory.mktemp("rewardbench")
    monkeypatch.setenv("CRITIC_AUTHORS_MIRROR", str(authors_mirror(root / "mirror")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    monkeypatch.setenv("REWARDBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _rows() -> list[dict]:
    return [json.loads(line) for line in (data.SAMPLE_DIR / "filtered.jsonl").read_text().splitlines() if line]


SHAPES = ("[[A]]", "[[B]]", "After comparing, I pick [[A]].", "**[[B]]**", "[[B]] ... on reflection [[A]]", "[[a]]",
          "[[C]]", "", "Verdict: A", "B" * 3000 + " [[B]]",
          '"[[A]]" if assistant A is better, "[[B]]" if assistant B is better.')


def _shape(system: str, user: str) -> str:
    h = int(hashlib.sha256((system + "\x00" + user).encode()).hexdigest(), 16)
    return SHAPES[h % len(SHAPES)]


def _run(task: str, reply, metadata: dict | None = None):
    import lm_eval
    from test_rmbench import _chat_lm

    import critic_tasks

    lm = _chat_lm(reply)
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], bootstrap_iters=0, apply_chat_template=True,
                                  task_manager=critic_tasks.task_manager(metadata=metadata), log_samples=True)
    return out["results"][task], lm, out


def _messages(row: dict, shuffled: bool) -> tuple[str, str]:
    a, b = (row["rejected"], row["chosen"]) if shuffled else (row["chosen"], row["rejected"])
    return generative().format_judge_answers(row["prompt"], [{}, {"content": a}], [{}, {"content": b}])


def _authors_sections(results_grouped: dict) -> dict:
    constants = rewardbench_constants()
    return rewardbench_utils().calculate_scores_per_section(constants.EXAMPLE_COUNTS, constants.SUBSET_MAPPING,
                                                            results_grouped)


def _check(results, results_grouped):
    for subset, value in results_grouped.items():
        assert results[f"accuracy_{data.subset_slug(subset)},none"] == pytest.approx(100 * value)
    authors = _authors_sections(results_grouped)
    for name, slug in SECTIONS.items():
        assert results[f"{slug},none"] == pytest.approx(100 * authors[name])
    assert results["score,none"] == pytest.approx(100 * sum(authors.values()) / 4)


def test_one_random_order_per_pair_equals_the_authors_numbers():
    pytest.importorskip("lm_eval")
    results, lm, out = _run("critic_rewardbench", _shape)
    rows = _rows()
    samples = out["samples"]["critic_rewardbench"]
    orders = {str(s["doc"]["pair_id"]): s["doc"]["order"] for s in samples}
    assert len(samples) == len(rows) and set(orders.values()) == {"forward", "reverse"}
    # the order is seeded by the pair: the same run asks the same orders again, another seed others
    assert orders == {str(r["id"]): data.shown_order(0, str(r["id"])) for r in rows}
    assert {data.shown_order(1, str(r["id"])) for r in rows} and [data.shown_order(1, str(r["id"])) for r in rows] != [
        orders[str(r["id"])] for r in rows]
    want = [_messages(r, orders[str(r["id"])] == "reverse") for r in rows]
    assert [(c[0]["content"], c[1]["content"]) for c in lm.chats] == want
    # run_generative.py: process_judgement, then process_shuffled (1 / 0 / 0.5), the mean per subset
    grouped: dict[str, list[float]] = {}
    for row, (system, user) in zip(rows, want):
        winner = generative().process_judgement(_shape(system, user), None)
        shuffled = orders[str(row["id"])] == "reverse"
        won, lost = ("B", "A") if shuffled else ("A", "B")
        grouped.setdefault(row["subset"], []).append(1 if winner == won else 0 if winner == lost else 0.5)
    _check(results, {s: sum(v) / len(v) for s, v in grouped.items()})
    assert results["orders,none"] == "random"
    assert results.get("first_position,none") in (None, "N/A")  # no pair asked both ways: no position line


def test_both_orders_are_scored_by_the_pair_rule():
    pytest.importorskip("lm_eval")
    results, lm, _ = _run("critic_rewardbench", _shape, {"orders": "both"})
    rows = _rows()
    assert len(lm.chats) == 2 * len(rows) and results["orders,none"] == "both"
    grouped: dict[str, list[float]] = {}
    for row in rows:
        forward = generative().process_judgement(_shape(*_messages(row, False)), None)
        reverse = generative().process_judgement(_shape(*_messages(row, True)), None)
        counter = (forward == "A") - (forward == "B") + (reverse == "B") - (reverse == "A")
        grouped.setdefault(row["subset"], []).append(float(counter > 0))
    _check(results, {s: sum(v) / len(v) for s, v in grouped.items()})
    assert results["inconsistency,none"] is not None and results["first_position,none"] is not None


def test_blind_critics_through_the_run_and_the_chance_line():
    pytest.importorskip("lm_eval")
    from critic_tasks import chance

    first, _, _ = _run("critic_rewardbench", lambda s, u: "[[A]]", {"orders": "both"})
    assert first["score,none"] == 0.0 and first["first_position,none"] == 100.0
    assert first["inconsistency,none"] == 100.0
    silent, _, _ = _run("critic_rewardbench", lambda s, u: "no verdict")
    assert silent["score,none"] == 50.0 and silent["parse_rate,none"] == 0.0  # the authors' 0.5 per error
    line = chance.chance_line("critic_rewardbench")
    assert line.floors["coin"]["score"] == 50.0 and line.floors["always_tie"]["score"] == 50.0
    # always position A, one random order: right exactly where the chosen response was shown first
    first_random, _, _ = _run("critic_rewardbench", lambda s, u: "[[A]]")
    assert line.floors["always_first"]["score"] == pytest.approx(first_random["score,none"])
    assert line.chance["score"] == max(f["score"] for f in line.floors.values())


def test_the_subsets_and_sections_are_the_authors():
    constants = rewardbench_constants()
    counts, mapping = authors_prompts.sections()
    assert counts == constants.EXAMPLE_COUNTS
    assert mapping == {k: tuple(v) for k, v in constants.SUBSET_MAPPING.items()}
    assert set(data.SECTION_SLUGS) == set(mapping)
    assert tuple(data.subset_slug(s) for s in constants.EXAMPLE_COUNTS) == data.SUBSET_SLUGS
    system, template = authors_prompts.pairwise_v1()
    assert (system, template.format(question="q", answer_a="a", answer_b="b")) == generative().format_judge_answers(
        "q", [{}, {"content": "a"}], [{}, {"content": "b"}])


def test_bad_data_and_options(tmp_path):
    rows = _rows()
    rows[2]["subset"] = "arena"
    (tmp_path / "filtered.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=r"filtered\.jsonl\[2\]: field 'subset' 'arena' is none of the authors' 23"):
        data.load_task_docs(data_dir=tmp_path)
    rows[2]["subset"], rows[3]["id"] = "mt-bench-med", rows[0]["id"]
    (tmp_path / "filtered.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=r"\[3\]: field 'id' .* repeats row 0"):
        data.load_task_docs(data_dir=tmp_path)
    with pytest.raises(DataError, match="file not found"):
        data.load_task_docs(data_dir=REWARDBENCH)  # the authors' checkout holds the prompts, not the data
    with pytest.raises(ConfigError, match="orders 'three'"):
        data.load_task_docs(data_dir="sample", orders="three")
    with pytest.raises(ConfigError, match="seed 'x'"):
        data.load_task_docs(data_dir="sample", seed="x")


def test_records_intervals_and_round_trip():
    docs = data.load_task_docs(data_dir="sample", orders="both")
    records = [scoring.record(d, "[[A]]" if d["order"] == "forward" else "[[B]]") for d in docs]
    values = scoring.rewardbench_metrics(records)
    assert values["score"] == 100.0 and values["inconsistency"] == 0.0 and values["first_position"] == 50.0
    settings = BootstrapSettings(resamples=200, seed=1)
    for base in ("score", "chat", "reasoning", "accuracy", "inconsistency"):
        low, high = scoring.rewardbench_interval(records, base, settings)
        assert low <= (values[base] if base != "accuracy" else 100.0) <= high
    from critic_tasks.core.records import Record

    assert Record.from_dict(json.loads(json.dumps(records[0].as_dict()))) == records[0]


@pytest.mark.parametrize("seed", [True, False, 1.5, None, [3], "3.0", "three"])
def test_a_seed_that_is_no_whole_number_is_refused_in_one_line(seed):
    """issue 46 (newcomer): --metadata {"seed": true} ran as seed 1 (Python's int(True)); a fraction was cut."""
    from critic_tasks import engine

    shown = json.dumps(seed) if isinstance(seed, (bool, type(None))) else repr(seed)
    with pytest.raises(ConfigError) as refused:
        engine.task_docs("critic_rewardbench", seed=seed)
    assert str(refused.value).startswith(f"rewardbench seed {shown}: expected a whole number")
    assert "\n" not in str(refused.value)
    by_text, by_number = engine.task_docs("critic_rewardbench", seed=" 7"), engine.task_docs("critic_rewardbench", seed=7)
    assert by_text == by_number and {d["seed"] for d in by_number} == {7}


def test_offline_on_the_bundled_sample_the_authors_files_come_from_a_checkout_named_apart(monkeypatch, tmp_path):
    """issue 46 (newcomer): REWARDBENCH_DATA_DIR named both the data and the authors' checkout, so offline on the
    bundled sample only a CRITIC_AUTHORS_MIRROR tree gave the prompts. REWARDBENCH_AUTHORS_DIR names a plain clone of
    allenai/reward-bench for RewardBench, RewardBench 2 and RM-Bench, whatever their data folders say."""
    from critic_tasks import engine
    from critic_tasks.protocols import authors
    from critic_tasks.protocols.rewardbench2 import authors_prompts as rb2_prompts

    def cleared():
        for cached in (authors._text, authors_prompts.pairwise_v1, authors_prompts.sections, rb2_prompts.prompts):
            cached.cache_clear()

    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    monkeypatch.setenv("CRITIC_AUTHORS_MIRROR", str(empty))  # offline: nothing from the mirror, the cache or GitHub
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-cache"))
    monkeypatch.setenv("REWARDBENCH2_DATA_DIR", "sample")
    monkeypatch.setenv("RMBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("REWARDBENCH_AUTHORS_DIR", str(REWARDBENCH))
    cleared()
    try:
        system, template = authors_prompts.pairwise_v1()
        names = generative()
        assert (system, template) == (names.prompt_v2, names.MTBENCH_V2["prompt_template"])  # the clone's own text
        assert authors_prompts.sections()[0] == rewardbench_constants().EXAMPLE_COUNTS
        for task in ("critic_rewardbench", "critic_rewardbench2", "critic_rmbench"):
            docs = engine.task_docs(task)
            assert docs and engine.prompt(docs[0], task), task
        # a folder without the files is one line naming the setting, not a silent fetch of something else
        monkeypatch.setenv("REWARDBENCH_AUTHORS_DIR", str(tmp_path))
        cleared()
        with pytest.raises(DataError) as refused:
            authors_prompts.pairwise_v1()
        assert str(refused.value).startswith(f"REWARDBENCH_AUTHORS_DIR={tmp_path}: no rewardbench/generative.py there")
        # unset and offline: the line names the setting that gives the files
        monkeypatch.delenv("REWARDBENCH_AUTHORS_DIR")
        cleared()
        with pytest.raises(DataError, match="set REWARDBENCH_AUTHORS_DIR to a checkout of "
                                            "https://github.com/allenai/reward-bench"):
            authors_prompts.pairwise_v1()
    finally:
        cleared()
