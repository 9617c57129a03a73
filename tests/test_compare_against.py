"""`critic-eval compare RUN --against ...` (issue 43, point 4): a run placed beside a published judge's per-item results
on the same items, with the paired difference, its interval and its p-value.

- JudgeBench: the user's run (hand-written samples of critic_judgebench on the shared GPT-4o pairs, its replies the
  released reward model's decisions) against the released o1-mini outputs; both sides' per-pair correctness is
  counted here by the authors' rule (utils/metrics.py, as tests/test_judgebench.py writes it out), the difference,
  McNemar's exact p (scipy) and the paired bootstrap over pairs (numpy) computed from those counts.
- CriticEval: the toolkit's released predictions are re-scored by ``critic-eval score``'s reader; on the bundled
  sample, predictions written in the toolkit's layout against a run of other replies, checked the same way.
"""

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import one_line, write_lm_eval_run
from scipy.stats import binomtest

from critic_tasks import cli, engine

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "judgebench"
needs_shared = pytest.mark.skipif(not (SHARED / "outputs").is_dir(), reason=f"{SHARED} (the shared data) is absent")
O1_MINI = "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=o1-mini-2024-09-12.jsonl"
SKYWORK = ("dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=reward_model,"
           "judge_model=Skywork_Skywork-Reward-Gemma-2-27B.jsonl")
B, SEED, LEVEL = 400, 3, 0.95
TIME = "2026-11-28T11-00-00.000000"
FLIP = {"A>B": "B>A", "B>A": "A>B"}


@pytest.fixture(autouse=True)
def _settings(monkeypatch):
    for name, value in (("CRITIC_CI_RESAMPLES", B), ("CRITIC_CI_SEED", SEED), ("CRITIC_CI_LEVEL", LEVEL)):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("CRITIC_CI", raising=False)
    monkeypatch.delenv("JUDGEBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/nonexistent-cache")  # nothing cached: a fetch would be refused offline


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_run(folder: Path, task: str, docs: list[dict], replies: list[str]) -> Path:
    return write_lm_eval_run(folder, task, docs, replies, TIME)


def _pair_correct(decisions: tuple, label: str) -> bool:
    """The authors' rule (utils/metrics.py): +1 per order agreeing with the label, -1 per order against it (the
    reverse order's decision flipped back first); a pair is right when the sum is above 0."""
    forward, reverse = decisions
    reverse = FLIP.get(reverse, reverse)
    score = sum(1 if d == label else -1 if d == FLIP[label] else 0 for d in (forward, reverse))
    return score > 0


def _decisions(rows: list[dict]) -> dict[str, tuple]:
    return {r["pair_id"]: tuple(j["decision"] if j is not None else None for j in r["judgments"]) for r in rows}


def _table_row(out: str, metric: str) -> list[str]:
    (row,) = [line for line in out.splitlines() if line.startswith(f"| critic_judgebench.{metric} |")]
    return [cell.strip() for cell in row.strip("|").split("|")]


@needs_shared
def test_a_run_against_a_released_judge_gives_the_paired_difference_interval_and_p(tmp_path, capsys):
    from critic_tasks.protocols.judgebench import data

    docs = data.load_task_docs(data_dir=SHARED, split="gpt")
    skywork = {r["pair_id"]: r for r in _rows(SHARED / "outputs" / SKYWORK)}
    # the user's judge: answers each order as the released reward model decided it, in our verdict format
    replies = [f"My final verdict is: [[{skywork[d['pair_id']]['judgments'][0 if d['order'] == 'forward' else 1]['decision']}]]"
               for d in docs]
    run = _write_run(tmp_path / "mine", "critic_judgebench", docs, replies)
    assert cli.main(["compare", str(run), "--against", "judgebench:o1-mini", "--against-dir", str(SHARED),
                     "--metric", "critic_judgebench.accuracy"]) == 0
    out = capsys.readouterr().out
    assert "A: o1-mini-2024-09-12 (arena_hard), JudgeBench's released outputs; B: my-judge" in out

    o1 = _decisions(_rows(SHARED / "outputs" / O1_MINI))
    mine = _decisions(list(skywork.values()))
    labels = {r["pair_id"]: r["label"] for r in skywork.values()}
    pairs = sorted(labels)  # the units as compare orders them: 'pair <id>' by text
    a = np.array([_pair_correct(o1[p], labels[p]) for p in pairs], dtype=float) * 100
    b = np.array([_pair_correct(mine[p], labels[p]) for p in pairs], dtype=float) * 100
    draws = np.random.default_rng(SEED).integers(0, len(pairs), size=(B, len(pairs)))
    replicates = [b[d].mean() - a[d].mean() for d in draws]
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(replicates, tail), np.percentile(replicates, 100 - tail)
    n01, n10 = int(((a == 0) & (b == 100)).sum()), int(((a == 100) & (b == 0)).sum())
    p = binomtest(n01, n01 + n10, 0.5).pvalue
    assert a.mean() != b.mean()  # the two judges differ here, so a swapped side or sign would show
    cells = _table_row(out, "accuracy")
    assert cells[1:6] == [f"{a.mean():.2f}", f"{b.mean():.2f}", f"{b.mean() - a.mean():+.2f}",
                          f"[{low:.2f}, {high:.2f}]", f"{p:.3g}"]
    assert cells[6] == f"McNemar ({n01} only B, {n10} only A)" and cells[7] == f"{len(pairs)} pairs"


@needs_shared
def test_released_judges_are_found_by_name_and_a_bad_name_is_one_line(tmp_path, capsys):
    from critic_tasks.protocols.judgebench import data

    docs = data.load_task_docs(data_dir=SHARED, split="gpt")
    run = _write_run(tmp_path / "mine", "critic_judgebench", docs, ["[[A>B]]"] * len(docs))
    outputs = tmp_path / "outputs"  # the outputs folder alone, copied elsewhere
    shutil.copytree(SHARED / "outputs", outputs)
    assert cli.main(["compare", str(run), "--against", "judgebench:skywork", "--against-dir", str(outputs),
                     "--metric", "critic_judgebench.accuracy"]) == 0
    assert "A: Skywork_Skywork-Reward-Gemma-2-27B (reward_model)" in capsys.readouterr().out
    assert cli.main(["compare", str(run), "--against", "judgebench:skywork", "--against-dir", str(outputs),
                     "--metric", "critic_judgebench.acuracy"]) == 2
    assert "--metric critic_judgebench.acuracy: not a metric with an interval" in one_line(capsys)
    assert cli.main(["compare", str(run), "--against", "judgebench:gpt-4", "--against-dir", str(outputs)]) == 2
    line = one_line(capsys)
    assert "no released judge of the gpt-4o-2024-05-13 pairs by that name" in line and "arena_hard/o1-mini" in line
    # the Claude-3-haiku outputs judged the other split's pairs
    assert cli.main(["compare", str(run), "--against", "judgebench:claude-3-haiku", "--against-dir", str(outputs)]) == 2
    assert "no released judge of the gpt-4o-2024-05-13 pairs" in one_line(capsys)
    # nowhere to read them from (no folder, nothing cached, offline): one line naming the ways to give them
    monkeypatch_fetch = pytest.MonkeyPatch()
    from critic_tasks.protocols import authors

    monkeypatch_fetch.setattr(authors, "_download", lambda url: (_ for _ in ()).throw(OSError("offline")))
    try:
        assert cli.main(["compare", str(run), "--against", "judgebench:o1-mini"]) == 2
    finally:
        monkeypatch_fetch.undo()
    line = one_line(capsys)
    assert "(a released judge's outputs) is not cached" in line and "--against-dir" in line


@needs_shared
def test_the_pinned_released_outputs_hash_as_declared():
    from critic_tasks.reports.against import RELEASED_JUDGES

    for judge in RELEASED_JUDGES:
        assert hashlib.sha256((SHARED / "outputs" / judge.file).read_bytes()).hexdigest() == judge.sha256


def test_against_needs_one_run_and_a_known_source(tmp_path, capsys):
    assert cli.main(["compare", str(tmp_path), "--against", "leaderboard:gpt-4"]) == 2
    assert "expected judgebench:<released judge>" in one_line(capsys)
    assert cli.main(["compare", str(tmp_path)]) == 2
    assert "give two runs (A and B), or one run and --against" in one_line(capsys)


# ----------------------------------------------------------------------------- CriticEval's released predictions


def _toolkit_predictions(folder: Path, reply) -> Path:
    """The bundled sample's comparison items, laid out as the toolkit writes its predictions
    (``dev_<domain>_comp_feedback_obj[_reverse].json``, "0".."N-1" -> origin_prompt, prediction)."""
    from critic_tasks.protocols.criticbench.data import load_task_docs

    files: dict[str, dict] = {}
    for doc in load_task_docs("comparison", "dev", None, "sample"):
        name = f"dev_{doc['domain']}_comp_feedback_obj{'_reverse' if doc['order'] == 'reverse' else ''}.json"
        rows = files.setdefault(name, {})
        rows[str(len(rows))] = {"origin_prompt": doc["question"], "prediction": reply(doc)}
    folder.mkdir(parents=True)
    for name, rows in files.items():
        (folder / name).write_text(json.dumps(rows))
    return folder


def _verdict_right(doc) -> bool:
    """A stateless rule of the test's own for which items a critic answers correctly."""
    return int(hashlib.md5(doc["question"].encode()).hexdigest(), 16) % 3 != 0


def test_a_run_against_released_criticeval_predictions(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    gold = {}

    def theirs(doc):  # the released model: right on two thirds of the items, else the other response
        want = doc["preference"] if doc["order"] == "forward" else {"A": "B", "B": "A"}.get(doc["preference"], "C")
        gold[(doc["domain"], doc["pair_id"], doc["order"])] = want
        return f"Decision: {want if _verdict_right(doc) else {'A': 'B', 'B': 'A'}.get(want, 'A')}"

    predictions = _toolkit_predictions(tmp_path / "released" / "some-model", theirs)
    docs = engine.task_docs("critic_comparison", data_dir="sample")
    for doc in docs:
        theirs(doc)  # the gold verdict of each order, noted
    # the run's critic: the label in both orders, but always A on the translation pairs
    mine = [f"Decision: {'A' if d['domain'] == 'translate' else gold[(d['domain'], d['pair_id'], d['order'])]}"
            for d in docs]
    run = _write_run(tmp_path / "mine", "critic_comparison", docs, mine)
    assert cli.main(["compare", str(run), "--against", "criticeval:some-model", "--against-dir",
                     str(tmp_path / "released"), "--metric", "critic_comparison.accuracy"]) == 0
    out = capsys.readouterr().out
    assert "A: some-model, CriticEval's released predictions; B: my-judge" in out
    (row,) = [line for line in out.splitlines() if line.startswith("| critic_comparison.accuracy |")]
    # per pair, right when both orders name the preferred response (the paper's rule), counted here
    by_pair: dict = {}
    for doc, my_reply in zip(docs, mine):
        key = (doc["domain"], doc["pair_id"])
        want = gold[(doc["domain"], doc["pair_id"], doc["order"])]
        their_reply = theirs(doc)
        by_pair.setdefault(key, []).append((their_reply.endswith(want) and want != "C",
                                            my_reply.endswith(want) and want != "C"))
    a = 100 * np.mean([all(t for t, _ in v) for v in by_pair.values()])
    b = 100 * np.mean([all(m for _, m in v) for v in by_pair.values()])
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == [f"{a:.2f}", f"{b:.2f}", f"{b - a:+.2f}"] and a != b, cells
    assert predictions.is_dir()
