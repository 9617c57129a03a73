"""MetaCritique in lm-eval: a scripted critic, a scripted judge (an in-process backend plugin), and P/R/F1 computed
here by hand loops from the scripted rules. Also: a rerun is served from the cache with no call, a run killed
midway resumes asking only what was not answered, and judging deferred to `critic-eval judge` gives the same
numbers."""

import json
import re

import pytest
from helpers import InProcessBackend, backend_plugin, scripted_lm

import critic_tasks
from critic_tasks import cli
from critic_tasks.llm.backends import Reply
from critic_tasks.protocols.metacritique import data

pytestmark = pytest.mark.slow

lm_eval = pytest.importorskip("lm_eval")
from lm_eval.loggers import EvaluationTracker  # noqa: E402

TASK = "critic_metacritique"
# Per item: the reference AIUs, and the critique our scripted critic writes. In a critique, each "Claim: ..." line is
# one AIU (as the scripted judge extracts them); a claim with "right" is factual, "wrong" is not, "fuzzy" gets no
# readable verdict. A reference point is entailed when its keyword (its last word) appears in the critique.
ITEMS = [
    (["The answer misses alpha", "The answer should cite beta", "It confuses gamma"],
     "Claim: the answer is right about alpha\nClaim: the answer is wrong about delta\nClaim: cite beta, right"),
    (["The answer ignores epsilon", "The tone is zeta"],
     "Claim: right, epsilon is ignored\nClaim: fuzzy remark\nClaim: wrong idea"),
    (["The answer is off-topic theta"], ""),  # empty critique: no AIU, entails nothing (no call)
    (["The answer forgets iota", "It lacks kappa"], "NOTHING to say really"),  # judge: "None" -> no AIU
    (["The answer repeats lambda"], "GARBLE lambda"),  # judge's extraction is unreadable -> counted failure
]


def _benchmark():
    return [{"shepherd_id": i, "dataset": "hand", "question": f"Question {i}?", "response": f"Answer {i}.", "index": i,
             "gpt4_answer": f"Reference answer {i}.", "gpt4_critique": {"critique": " ".join(ref), "aius": ref}}
            for i, (ref, _) in enumerate(ITEMS)]


def critic(prompt: str) -> str:
    i = int(re.search(r"Question (\d+)\?", prompt).group(1))
    return ITEMS[i][1]


def _section(prompt: str, name: str) -> str:
    """A section's text, without the BEGIN / END lines it is fenced between (core.quoting)."""
    body = prompt.split(f"[{name}]\n", 1)[1].split("\n\n", 1)[0]
    return "\n".join(line for line in body.splitlines() if not re.match(r"<<<(BEGIN|END) \S+ [0-9a-f]{12}>>>$", line))


def scripted_judge(prompt: str) -> str:
    if prompt.startswith("Break the critique"):
        critique = prompt.split("[Critique]\n", 1)[1]
        if "NOTHING" in critique:
            return "None"
        if "GARBLE" in critique:
            return "I cannot do this."
        claims = [line[len("Claim: "):] for line in critique.splitlines() if line.startswith("Claim: ")]
        return "\n".join(f"{k}. {c}" for k, c in enumerate(claims, 1))
    if "[Statements]" in prompt:
        lines = []
        for line in _section(prompt, "Statements").splitlines():
            k, text = line.split(". ", 1)
            if "fuzzy" not in text:
                lines.append(f"{k}. {'True' if 'right' in text else 'False'}")
        return "\n".join(lines)
    critique = _section(prompt, "Critique")
    points = _section(prompt, "Reference points").splitlines()
    return "\n".join(f"{k}. {p.split()[-1] in critique}" for k, p in enumerate(points, 1))


def index_judge(prompt: str) -> str:
    """For calibration: precision unit k is True unless k % 3 == 0; recall point k is True when k is odd, and
    point 2 gets no readable verdict."""
    if "[Statements]" in prompt:
        n = len(_section(prompt, "Statements").splitlines())
        return "\n".join(f"{k}. {k % 3 != 0}" for k in range(1, n + 1))
    n = len(prompt.split("[Reference points]\n", 1)[1].split("\n\nReply", 1)[0].splitlines())
    return "\n".join(f"{k}. {'maybe' if k == 2 else k % 2 == 1}" for k in range(1, n + 1))


class ScriptedJudge(InProcessBackend):
    calls = 0
    die_after: int | None = None
    script = staticmethod(scripted_judge)

    def reply(self, prompt):
        if ScriptedJudge.die_after is not None and ScriptedJudge.calls >= ScriptedJudge.die_after:
            raise KeyboardInterrupt("killed")
        ScriptedJudge.calls += 1
        return Reply(ScriptedJudge.script(prompt))


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    (tmp_path / "mc").mkdir()
    (tmp_path / "mc" / data.BENCHMARK_FILE).write_text(json.dumps(_benchmark()))
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "mc"))
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "scripted-aiu")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "scripted")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
    ScriptedJudge.calls, ScriptedJudge.die_after, ScriptedJudge.script = 0, None, scripted_judge
    with backend_plugin("scripted-aiu", ScriptedJudge):
        yield


def expected():
    """By hand from the scripted rules: per critique, precision and recall verdicts, then macro / micro P/R/F1."""
    p_lists, r_lists, failed, empty, asked, readable = [], [], 0, 0, 0, 0
    for ref, critique in ITEMS:
        r = [p_.split()[-1] in critique for p_ in ref] if critique else [False] * len(ref)
        if "GARBLE" in critique:  # extraction unreadable: a failure; its recall is still asked (and readable)
            failed += 1
            asked += 1 + len(ref)
            readable += len(ref)
            p_lists.append([])  # no units known: precision 0, the minimum (issue 34)
            r_lists.append(r)
            continue
        claims = [c[len("Claim: "):] for c in critique.splitlines() if c.startswith("Claim: ")]
        p = [("right" in c) for c in claims]  # a "fuzzy" claim's unreadable verdict counts False (issue 34)
        asked += len(claims) + len(ref)
        readable += len(p) - sum("fuzzy" in c for c in claims) + len(r)
        empty += not claims
        p_lists.append(p)
        r_lists.append(r)
    prec = [sum(p) / len(p) if p else 0.0 for p in p_lists]
    rec = [sum(r) / len(r) for r in r_lists]
    f1 = [2 * a * b / (a + b) if a and b else 0.0 for a, b in zip(prec, rec)]
    mp = sum(map(sum, p_lists)) / sum(map(len, p_lists))
    mr = sum(map(sum, r_lists)) / sum(map(len, r_lists))
    n = len(p_lists)
    return {"precision": 100 * sum(prec) / n, "recall": 100 * sum(rec) / n, "f1": 100 * sum(f1) / n,
            "precision_micro": 100 * mp, "recall_micro": 100 * mr, "f1_micro": 100 * 2 * mp * mr / (mp + mr),
            "judge_failed": failed, "empty_critiques": empty, "judge_parse_rate": 100 * readable / asked}


# extraction and recall for the 4 non-empty critiques (one batch), then precision for the 2 with units
N_CALLS = 4 + 4 + 2


def _run(log_samples=False):
    return lm_eval.simple_evaluate(model=scripted_lm(critic), tasks=[TASK], task_manager=critic_tasks.task_manager(),
                                   bootstrap_iters=0, log_samples=log_samples)


def test_metrics_match_hand_computation_and_rerun_costs_no_calls():
    out = _run()
    results = out["results"][TASK]
    exp = expected()
    assert exp["empty_critiques"] == 2 and exp["judge_failed"] == 1  # the rules are exercised
    for key, value in exp.items():
        assert results[f"{key},none"] == pytest.approx(value, abs=1e-9), key
    assert ScriptedJudge.calls == N_CALLS
    again = _run()["results"][TASK]
    assert ScriptedJudge.calls == N_CALLS  # all from the cache
    assert {k: v for k, v in again.items() if k != "alias"} == {k: v for k, v in results.items() if k != "alias"}


def test_a_live_run_collects_the_critiques_the_judge_could_not_score():
    """What makes `critic-eval` exit 1 (as `critic-eval judge` does on the same critiques, below): the item whose AIU
    extraction was unreadable; empty critiques and critiques without units are scored, not failed."""
    from critic_tasks.adapters.lm_eval import task_functions

    with task_functions.unscored_items([]) as unscored:
        results = _run()["results"][TASK]
    assert results["judge_failed,none"] == 1
    assert len(unscored) == 1 and unscored[0].endswith("[4]")


def test_a_killed_run_resumes_with_nothing_lost():
    ScriptedJudge.die_after = 6  # killed during the first batch (extraction + recall)
    with pytest.raises(KeyboardInterrupt):
        _run()
    assert ScriptedJudge.calls == 6
    ScriptedJudge.die_after = None
    results = _run()["results"][TASK]
    assert ScriptedJudge.calls == N_CALLS  # the 6 answered before the kill were not asked again
    assert results["f1,none"] == pytest.approx(expected()["f1"])


def test_deferred_then_judged_afterwards_gives_the_same_numbers(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("CRITIC_JUDGE_MODEL")
    out = _run(log_samples=True)
    assert out["results"][TASK]["judge_deferred,none"] == len(ITEMS)
    assert "f1,none" not in out["results"][TASK] and ScriptedJudge.calls == 0
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.general_config_tracker.model_name_sanitized = "scripted"
    tracker.date_id = "2026-11-22T10-00-00.000001"
    tracker.save_results_samples(TASK, out["samples"][TASK])
    report = tmp_path / "judged.json"
    # one critique could not be judged (unreadable extraction): exit 1 unless failures are allowed
    assert cli.main(["judge", str(tmp_path / "run"), "--model", "scripted", "--output", str(report),
                     "--no_progress"]) == 1
    assert cli.main(["judge", str(tmp_path / "run"), "--model", "scripted", "--output", str(report),
                     "--no_progress", "--allow_failures"]) == 0
    assert ScriptedJudge.calls == N_CALLS
    got = json.loads(report.read_text())
    for key, value in expected().items():
        assert got["results"][TASK][key] == pytest.approx(value), key
    assert [f["item"].endswith("[4]") for f in got["failed"][TASK]] == [True]
    assert f"{TASK}: precision {expected()['precision']:.2f}" in capsys.readouterr().out


def test_calibration_against_the_human_labels(capsys):
    from conftest import SHARED
    from scipy import stats

    path = SHARED / "data" / "metacritique" / "annotation_data.json"
    if not path.is_file():
        pytest.skip(f"shared data not found at {path}")
    ScriptedJudge.script = index_judge
    limit = 8
    assert cli.main(["metacritique-calibrate", str(path), "--sources", "human_critique,llm1_critique", "--limit",
                     str(limit), "--json", "--no_progress"]) == 0
    report = json.loads(capsys.readouterr().out)["results"]
    items = json.loads(path.read_text())[:limit]
    for source in ("human_critique", "llm1_critique"):
        p_hit = p_n = r_hit = r_n = r_all = 0
        jf, hf = [], []
        for item in items:
            c = item[source]
            jp = [k % 3 != 0 for k in range(1, len(c["aius"]) + 1)]
            jr = {k: k % 2 == 1 for k in range(1, len(c["recall_labels"]) + 1) if k != 2}
            p_hit += sum(j == h for j, h in zip(jp, c["precision_labels"]))
            p_n += len(jp)
            r_hit += sum(jr[k] == h for k, h in enumerate(c["recall_labels"], 1) if k in jr)
            r_n += len(jr)
            r_all += len(c["recall_labels"])
            p1 = sum(jp) / len(jp) if jp else 0.0
            r1 = sum(jr.values()) / len(jr) if jr else 0.0
            jf.append(2 * p1 * r1 / (p1 + r1) if p1 and r1 else 0.0)
            hp = sum(c["precision_labels"]) / len(c["precision_labels"])
            hr = sum(c["recall_labels"]) / len(c["recall_labels"])
            hf.append(2 * hp * hr / (hp + hr) if hp and hr else 0.0)
        got = report[source]
        assert got["critiques"] == limit
        assert got["precision_accuracy"] == pytest.approx(100 * p_hit / p_n)
        assert got["recall_accuracy"] == pytest.approx(100 * r_hit / r_n)
        assert got["recall_parse_rate"] == pytest.approx(100 * r_n / r_all) and got["precision_parse_rate"] == 100
        assert got["f1_correlation"]["pearson"] == pytest.approx(100 * stats.pearsonr(jf, hf)[0])
        assert got["f1_correlation"]["spearman"] == pytest.approx(100 * stats.spearmanr(jf, hf)[0])
    assert report["all"]["critiques"] == 2 * limit
