"""The critique -> revision pipeline (MultiCritique, RCO) in lm-eval: a scripted critic, a pool of scripted revisers
(some revisions pass, some fail, one is hostile code, one call fails), a judge with planned verdicts (wins, ties,
losses, in both orders, and unreadable replies), and every metric computed here by hand loops from those plans.
Also: a rerun asks nothing, changing only the judge re-asks only the judge, failing endpoints are counted per item
and a rerun resumes them, deferred scoring then `critic-eval revise` gives the same numbers, and the settings and
item-file errors are one clear line. These run the short variant (CRITIC_PROMPT_VARIANT=short: one generic prompt per
role, the judge's marker first); the paper variant (the default) is tested at the end: MultiCritique's R_sub by
CriticEval's reference-guided correction judge, RCO's per-task judges with the math reference answer, and the failure
rules for missing verdicts and revisions."""

from __future__ import annotations

import json
import re

import pytest
from helpers import InProcessBackend, backend_plugin, scripted_lm
from stub_server import StubServer

import critic_tasks
from critic_tasks import cli
from critic_tasks.adapters.lm_eval import task_functions
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.llm.backends import Reply
from critic_tasks.llm.settings import pool_from_env
from critic_tasks.protocols.revision import data, prompts

lm_eval = pytest.importorskip("lm_eval")
from lm_eval.loggers import EvaluationTracker  # noqa: E402

GOOD_CODE = "REVISED\n```python\ndef add(a, b):\n    return a + b\n```"
HOSTILE_CODE = "REVISED\n```python\nimport os\nos._exit(0)\n```"  # exits 0 before any test: must not pass
# id -> (domain, gold answer, unit test); the initial response of item k is "Initial k".
ITEMS = {0: ("math_cot", "4", ""), 1: ("math_cot", "10", ""), 2: ("code_not_exec", "", "assert add(1, 2) == 3"),
         3: ("chat", "", ""), 4: ("chat", "", ""), 5: ("math_cot", "unknowable", "")}  # 5: gold unusable -> invalid
# reviser -> item -> revision (None: the call fails)
REVISIONS = {
    "good": {0: "REVISED. The answer is 4.", 1: "REVISED. The answer is 10.", 2: GOOD_CODE,
             3: "REVISED text 3 good", 4: "REVISED text 4 good", 5: "REVISED. The answer is 3."},
    "bad": {0: "REVISED. The answer is 5.", 1: "REVISED. The answer is 10.", 2: HOSTILE_CODE,
            3: "REVISED text 3 bad", 4: None, 5: "REVISED. The answer is 3."},
}
PASSES = {"good": {0: True, 1: True, 2: True}, "bad": {0: False, 1: True, 2: False}}  # the checked, valid items
# the judge's plan, per item: raw verdicts (forward = A initial / B revised; reverse = A revised / B initial), rating
PAIR = {0: ("B", "A"), 1: ("C", "C"), 2: ("A", "A"), 3: ("B", None), 4: ("A", "B"), 5: ("B", "C")}
RATING = {0: 7, 1: 5, 2: 3, 3: 8, 4: None, 5: 6}  # None: a reply without a rating marker
GRADE = {3: 9, 4: None}  # paper MultiCritique: CriticEval's judge grades the text items' revisions ("Score: x")
ROWS = "items.jsonl"


def _item(prompt: str) -> int:
    return int(re.search(r"Question (\d+)\?", prompt).group(1))


def critic(prompt: str) -> str:
    return f"Feedback on item {_item(prompt)}: check every step."


class Calls:
    reviser: list[str] = []
    judge: list[str] = []
    judge_down = False  # every judge call fails (an endpoint that is down)
    kill_after: dict[str, int] = {}  # role -> the process is "killed" (KeyboardInterrupt) once that many were asked


class ScriptedModel(InProcessBackend):
    """Reviser or judge by the model's name (an in-process backend plugin, as a third party would ship one)."""

    def __init__(self, settings):
        self.model = settings.model

    def reply(self, prompt: str) -> Reply:
        if self.model == "crash":
            raise RuntimeError("the reviser backend crashed")
        k = _item(prompt)
        role = "reviser" if self.model in REVISIONS else "judge"
        if role in Calls.kill_after and len(getattr(Calls, role)) >= Calls.kill_after[role]:
            raise KeyboardInterrupt("killed")
        if self.model in REVISIONS:
            Calls.reviser.append(f"{self.model}|{prompt}")
            assert f"Feedback on item {k}" in prompt  # the critic's feedback reached the reviser
            text = REVISIONS[self.model][k]
            return Reply(text) if text is not None else Reply(None, "reviser endpoint: 503")
        Calls.judge.append(prompt)
        if Calls.judge_down:
            return Reply(None, "judge endpoint: connection refused")
        # paper MultiCritique: CriticEval's correction judge (our paraphrase, or the released text from a checkout)
        if prompt.startswith("You are grading a correction") or prompt.startswith("\n# Evaluation Task"):
            return Reply(f"Close to the reference.\nScore: {GRADE[k]}" if GRADE[k] is not None else "Close enough.")
        if prompt.startswith("Rate the quality") or (prompt.startswith("Act as") and "two AI assistants" not in prompt):
            return Reply(f"Fine.\nRating: [[{RATING[k]}]]" if RATING[k] is not None else "Fine, I suppose.")
        paper = prompt.startswith("Act as")  # the paper's judges: explanation first, verdict last
        first = (re.search(r"\[The Start of Assistant A's \w+\]\n", prompt) if paper else
                 re.search(r"\[Response A\]\n", prompt))
        shown = re.sub(r"^<<<BEGIN \S+ [0-9a-f]{12}>>>\n", "", prompt[first.end():])  # response A's text
        verdict = PAIR[k][0 if shown.startswith("Initial") else 1]
        if verdict is None:
            return Reply("Both have merits.")
        return Reply(f"Weighing both; a tie would be [[C]].\n[[{verdict}]]" if paper else f"Reasons.\n[[{verdict}]]")


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    rows = [{"id": k, "domain": d, "question": f"Question {k}?", "generation": f"Initial {k}",
             **({"ground_truth_answer": g} if g else {}), **({"unit_test": t} if t else {})}
            for k, (d, g, t) in ITEMS.items()]
    (tmp_path / ROWS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name, value in {"CRITIC_REVISERS": "good,bad", "CRITIC_REVISER_GOOD_MODEL": "good",
                        "CRITIC_REVISER_BAD_MODEL": "bad", "CRITIC_REVISER_BACKEND": "scripted-revision",
                        "CRITIC_REVISER_CACHE": str(tmp_path / "reviser.sqlite"),
                        "CRITIC_JUDGE_BACKEND": "scripted-revision", "CRITIC_JUDGE_MODEL": "judge-1",
                        "CRITIC_JUDGE_CACHE": str(tmp_path / "judge.sqlite"),
                        "CRITIC_JUDGE_ALLOW_FAILURES": "1", "CRITIC_RESCUE_DIR": str(tmp_path / "rescue"),
                        "CRITIC_PROMPT_VARIANT": "short"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CRITICBENCH_TOOLKIT_DIR", raising=False)  # our text unless a test gives a checkout
    Calls.reviser, Calls.judge, Calls.judge_down, Calls.kill_after = [], [], False, {}
    with backend_plugin("scripted-revision", ScriptedModel):
        yield


def _run(task, tmp_path, log_samples=False):
    manager = critic_tasks.task_manager(metadata={"items_file": str(tmp_path / ROWS)})
    return lm_eval.simple_evaluate(model=scripted_lm(critic), tasks=[task], task_manager=manager, bootstrap_iters=0,
                                   log_samples=log_samples)


def _metrics(out, task):
    return {k.removesuffix(",none"): v for k, v in out["results"][task].items()
            if k.endswith(",none") and "_stderr" not in k and "_ci_" not in k and k.removesuffix(",none") not in TEXT}
    # the text entries and the intervals are checked on their own


TEXT = ("models", "variant", "failure_rule", "prompt_source")  # results entries that name what ran, not numbers


def _values(metrics: dict) -> dict:
    """A `critic-eval revise` results entry without its interval keys and text entries."""
    return {k: v for k, v in metrics.items() if "_ci_" not in k and k not in TEXT}


def expected_multicritique():
    checked = [k for k, (d, g, t) in ITEMS.items() if d != "chat" and k != 5]
    domains = sorted({ITEMS[k][0] for k in checked})
    rates, per_domain = [], {d: [] for d in domains}
    for reviser in REVISIONS:  # R_obj: the mean over revisers of each one's mean over domains of its pass rate
        mine = []
        for d in domains:
            outcomes = [PASSES[reviser][k] for k in checked if ITEMS[k][0] == d]
            mine.append(100 * sum(outcomes) / len(outcomes))
            per_domain[d].append(mine[-1])
        rates.append(sum(mine) / len(mine))
    text = [k for k, (d, _, _) in ITEMS.items() if d == "chat"]
    ratings = [RATING[k] for k in text if RATING[k] is not None]
    graded = [1 if RATING[k] is None else RATING[k] for k in text]  # an unreadable grade counts 1, the minimum
    missing = {k: sum(REVISIONS[r][k] is None for r in REVISIONS) for k in checked}  # failed revisions per item
    return {"r_obj": sum(rates) / len(rates), "r_sub": sum(graded) / len(graded),
            **{f"r_obj_{d}": sum(v) / len(v) for d, v in per_domain.items()},
            "r_sub_chat": sum(graded) / len(graded),
            "judge_parse_rate": 100 * len(ratings) / len(text), "judge_failed": len(text) - len(ratings),
            "reviser_failed": sum(v is None for r in REVISIONS.values() for v in r.values()), "invalid_items": 1,
            # checked items some / all revisers failed on (the first reviser revised every judged item)
            "partial_items": sum(0 < m < len(REVISIONS) for m in missing.values()),
            "empty_items": sum(m == len(REVISIONS) for m in missing.values()),
            "judge_echoed": 0}  # no critique here states a grade


def expected_rco():
    win = {"forward": {"B": 1, "C": 0.5, "A": 0}, "reverse": {"A": 1, "C": 0.5, "B": 0}}
    utilities, asked, readable, failed, orders = [], 0, 0, 0, []
    for k, (fwd, rev) in PAIR.items():
        # an unreadable order counts 0, the revision's loss (the minimum, whatever the failure rule)
        prefs = [0 if v is None else win[o][v] for o, v in (("forward", fwd), ("reverse", rev))]
        utilities.append(sum(prefs) / len(prefs))
        orders.append(len(prefs))  # the actor revised every item: both orders asked
        asked += 3
        read = sum(v is not None for v in (fwd, rev))
        readable += read + (RATING[k] is not None)
        failed += read < 2 or RATING[k] is None
    ratings = [1 if r is None else r for r in RATING.values()]  # an unreadable rating counts 1, the minimum
    return {"critique_utility": 100 * sum(utilities) / len(utilities), "rqs": sum(ratings) / len(ratings),
            "refine_accuracy": 100 * sum(PASSES["good"].values()) / len(PASSES["good"]),
            "judge_parse_rate": 100 * readable / asked, "judge_failed": failed,
            "reviser_failed": sum(v is None for r in REVISIONS.values() for v in r.values()), "invalid_items": 1,
            "partial_items": orders.count(1), "empty_items": orders.count(0),  # items with one / no order there
            "judge_echoed": 0}


@pytest.mark.slow
def test_multicritique_metrics_match_hand_computation_and_rerun_asks_nothing(tmp_path):
    out = _run("critic_revision_pool", tmp_path, log_samples=True)
    got, exp = _metrics(out, "critic_revision_pool"), expected_multicritique()
    assert 0 < exp["r_obj"] < 100 and exp["judge_failed"] == 1  # the plan exercises passes, fails and failures
    rows = [s["filtered_resps"][0][0] for s in out["samples"]["critic_revision_pool"]]
    for key, value in exp.items():  # on a mismatch, show each item's outcome
        assert got[key] == pytest.approx(value, abs=1e-9), (key, [(r["item"], r["passed"], r["error"]) for r in rows])
    assert len(Calls.reviser) == 2 * len(ITEMS) and len(Calls.judge) == 2  # ratings for the two text items only
    assert _metrics(_run("critic_revision_pool", tmp_path), "critic_revision_pool") == got
    # the rerun: every answered call from the cache (an unreadable reply too: temperature 0); a failed call is not
    # cached, so exactly that one is asked again
    assert len(Calls.reviser) == 2 * len(ITEMS) + 1 and len(Calls.judge) == 2


@pytest.mark.slow
def test_rco_metrics_match_hand_computation_in_both_orders_with_ties(tmp_path):
    out = _run("critic_utility", tmp_path, log_samples=True)
    got, exp = _metrics(out, "critic_utility"), expected_rco()
    for key, value in exp.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    assert len(Calls.judge) == 3 * len(ITEMS)  # both orders + RQS, for the actor (the first reviser) only
    row = out["samples"]["critic_utility"][0]["filtered_resps"][0][0]
    involved = json.loads(row["models"])
    assert involved["revisers"][0]["model"] == "good" and involved["revisers"][1]["name"] == "bad"
    assert involved["judge"]["model"] == "judge-1"
    assert involved["prompt_versions"] == prompts.versions("rco", "short")
    # the results name them too, beside the numbers
    assert json.loads(out["results"]["critic_utility"]["models,none"]) == involved


@pytest.mark.slow
def test_changing_only_the_judge_re_asks_only_the_judge(tmp_path, monkeypatch):
    _run("critic_utility", tmp_path)
    n_reviser = len(Calls.reviser)
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "judge-2")
    _run("critic_utility", tmp_path)
    assert len(Calls.reviser) == n_reviser + 1  # only the failed reviser call again
    assert len(Calls.judge) == 2 * 3 * len(ITEMS)


@pytest.mark.slow
def test_judge_down_mid_run_is_counted_per_item_then_resumed(tmp_path):
    Calls.judge_down = True
    unscored: list[str] = []
    with task_functions.unscored_items(unscored):
        got = _metrics(_run("critic_utility", tmp_path), "critic_utility")
    assert got["judge_failed"] == len(ITEMS) and got["judge_parse_rate"] == 0  # every item counted, none dropped
    assert got["refine_accuracy"] == pytest.approx(expected_rco()["refine_accuracy"])  # the checks still ran
    assert len(unscored) == len(ITEMS)  # critic-eval exits 1 for these
    Calls.judge_down, n_reviser, n_judge = False, len(Calls.reviser), len(Calls.judge)
    got = _metrics(_run("critic_utility", tmp_path), "critic_utility")
    assert got == pytest.approx(expected_rco())
    assert len(Calls.reviser) == n_reviser + 1  # the revisions were kept; only the failed one is asked again
    assert len(Calls.judge) == n_judge + 3 * len(ITEMS)  # failed judge calls were not cached: asked once more


@pytest.mark.slow
@pytest.mark.parametrize("role, after", [("reviser", 7), ("judge", 10)])
def test_a_killed_run_resumes_with_nothing_lost_and_nothing_asked_twice(tmp_path, role, after):
    Calls.kill_after = {role: after}
    with pytest.raises(KeyboardInterrupt):
        _run("critic_utility", tmp_path)
    assert len(getattr(Calls, role)) == after
    Calls.kill_after = {}
    got = _metrics(_run("critic_utility", tmp_path), "critic_utility")
    assert got == pytest.approx(expected_rco())
    assert len(Calls.judge) == len(set(Calls.judge)) == 3 * len(ITEMS)  # every judgment asked exactly once
    assert len(set(Calls.reviser)) == 2 * len(ITEMS)  # every (reviser, item) asked; none answered was asked again:
    again = [p for p in set(Calls.reviser) if Calls.reviser.count(p) > 1]
    assert all(p.startswith("bad|") and _item(p) == 4 for p in again)  # only the failing call (never cached)


@pytest.mark.slow
def test_reviser_endpoint_failing_mid_run_is_counted_then_resumed_with_nothing_asked_twice(tmp_path, monkeypatch):
    """A real HTTP reviser (the stub server, OpenAI-compatible) answers 3 revisions, then refuses every request."""
    monkeypatch.delenv("CRITIC_REVISERS")
    monkeypatch.setenv("CRITIC_REVISER_BACKEND", "openai")
    monkeypatch.setenv("CRITIC_REVISER_MODEL", "good")
    monkeypatch.setenv("CRITIC_REVISER_API_KEY", "sk-test")
    monkeypatch.setenv("CRITIC_REVISER_CONCURRENCY", "1")  # one at a time: the first 3 arrivals succeed

    def answer(n, prompt):
        return ("ok", REVISIONS["good"][_item(prompt)]) if n < 3 else ("status", 400, {})  # 400: not retried

    with StubServer(answer) as dying:
        monkeypatch.setenv("CRITIC_REVISER_BASE_URL", dying.base_url)
        got = _metrics(_run("critic_utility", tmp_path), "critic_utility")
        port, first = dying.port, list(dying.answered)
    assert got["reviser_failed"] == len(ITEMS) - 3 and len(first) == 3  # counted per item, no crash
    assert len(Calls.judge) == 3 * 3  # only the revised items were judged
    with StubServer(lambda n, p: ("ok", REVISIONS["good"][_item(p)]), port=port) as healthy:
        got = _metrics(_run("critic_utility", tmp_path), "critic_utility")
        assert sorted(healthy.prompts()) == sorted(set(healthy.prompts()))
        assert len(healthy.prompts()) == len(ITEMS) - 3 and not set(healthy.prompts()) & set(first)  # nothing twice
    assert got == pytest.approx({**expected_rco(), "reviser_failed": 0})
    assert len(Calls.judge) == 3 * len(ITEMS)  # the judgments of the first run were kept


@pytest.mark.slow
def test_revisers_of_a_pool_run_at_once_each_bounded_by_its_concurrency(tmp_path, monkeypatch):
    from critic_tasks.protocols.revision import pipeline

    docs = data.load_task_docs("utility", items_file=str(tmp_path / ROWS))
    slow = lambda n, p: ("sleep", 0.3, REVISIONS["good"][_item(p)])  # noqa: E731
    with StubServer(slow) as a, StubServer(slow) as b:
        for name, stub in (("GOOD", a), ("BAD", b)):
            monkeypatch.setenv(f"CRITIC_REVISER_{name}_BACKEND", "openai")
            monkeypatch.setenv(f"CRITIC_REVISER_{name}_BASE_URL", stub.base_url)
        monkeypatch.setenv("CRITIC_REVISER_API_KEY", "sk-test")
        monkeypatch.setenv("CRITIC_REVISER_CONCURRENCY", "2")
        revised = pipeline.revise(docs, [f"Feedback on item {k}" for k in ITEMS], pipeline.reviser_pool(), False)
        assert [[c.text for c in per] for per in revised] == [[REVISIONS["good"][k] for k in ITEMS]] * 2
        assert a.max_in_flight == b.max_in_flight == 2  # bounded per reviser, and used to the bound
        first_b, last_a = min(t for t, _, _ in b.log), max(t for t, _, _ in a.log)
        assert first_b < last_a  # the two revisers ran at the same time


@pytest.mark.slow
def test_deferred_then_critic_eval_revise_gives_the_same_numbers(tmp_path, monkeypatch):
    monkeypatch.delenv("CRITIC_REVISERS")
    out = _run("critic_utility", tmp_path, log_samples=True)
    assert _metrics(out, "critic_utility") == {"revision_deferred": len(ITEMS)}
    assert Calls.reviser == [] and Calls.judge == []
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.general_config_tracker.model_name_sanitized = "scripted"
    tracker.date_id = "2026-11-22T10-00-00.000001"
    tracker.save_results_samples("critic_utility", out["samples"]["critic_utility"])
    monkeypatch.setenv("CRITIC_REVISERS", "good,bad")
    report = tmp_path / "revised.json"
    args = ["revise", str(tmp_path / "run"), "--output", str(report), "--no_progress"]
    assert cli.main(args) == 1  # failed calls and unreadable verdicts: exit 1 unless allowed
    saved = json.loads(report.read_text())
    assert _values(saved["results"]["critic_utility"]) == pytest.approx(expected_rco())
    assert saved["models"]["revisers"][0]["model"] == "good" and saved["models"]["judge"]["model"] == "judge-1"
    # each reviser's pass rate: the mean of its per-domain rates (math_cot 1/2, code_not_exec 0/1 for "bad")
    assert saved["per_reviser_pass_rate"]["critic_utility"] == {"good": 100.0, "bad": pytest.approx((50 + 0) / 2)}
    n_calls = len(Calls.reviser) + len(Calls.judge)
    assert cli.main(args + ["--allow_failures"]) == 0
    assert len(Calls.reviser) + len(Calls.judge) == n_calls + 1  # the rerun: only the failed reviser call
    assert json.loads(report.read_text())["results"] == saved["results"]


@pytest.mark.slow
def test_a_crash_after_generation_saves_the_critiques_and_critic_eval_revise_scores_them(tmp_path, monkeypatch):
    monkeypatch.setenv("CRITIC_RESCUE_DIR", str(tmp_path / "rescue"))
    monkeypatch.setenv("CRITIC_REVISER_BAD_MODEL", "crash")
    with pytest.raises(task_functions.ScoringFailed, match="critic-eval revise "):
        _run("critic_utility", tmp_path)
    (saved,) = (tmp_path / "rescue").glob("samples_critic_utility_*.jsonl")
    monkeypatch.setenv("CRITIC_REVISER_BAD_MODEL", "bad")
    report = tmp_path / "revised.json"
    assert cli.main(["revise", str(saved), "--output", str(report), "--no_progress", "--allow_failures"]) == 0
    assert _values(json.loads(report.read_text())["results"]["critic_utility"]) == pytest.approx(expected_rco())


def test_criticbench_items_all_nine_domains(monkeypatch):
    docs = data.load_task_docs("utility", "dev", "all", "sample")
    assert {d["domain"] for d in docs} == {"translate", "chat", "qa", "summary", "harmlessness", "math_cot",
                                           "math_pot", "code_exec", "code_not_exec"}
    checks = {d["domain"]: d["check"] for d in docs}
    assert checks["math_pot"] == "program_value" and checks["code_exec"] == "unit_test" and checks["chat"] == ""
    assert all(d["ground_truth_answer"] for d in docs if d["domain"].startswith("math"))
    assert all(d["unit_test"] for d in docs if d["domain"].startswith("code"))
    assert [d["domain"] for d in data.load_task_docs("revision_pool", "test", "qa", "sample")] == ["qa"] * 2


@pytest.mark.parametrize("line, message", [
    ('{"generation": "x"}', ":2: missing field 'question'"),
    ('{"question": "q", "generation": 3}', ":2: field 'generation' should be a string, got int"),
    ('{"question": "q", "generation": "g", "domain": "code_exec"}', ":2: missing field 'unit_test'"),
    ("not json", ":2: malformed JSON line"),
])
def test_bad_item_rows_name_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "q", "generation": "g"}\n' + line + "\n")
    with pytest.raises(DataError, match=re.escape(f"{path}{message}")):
        data.load_task_docs("utility", items_file=str(path))


def test_pool_settings(monkeypatch):
    assert [(s.member, s.model, s.backend) for s in pool_from_env("reviser")] == [
        ("good", "good", "scripted-revision"), ("bad", "bad", "scripted-revision")]
    monkeypatch.setenv("CRITIC_REVISERS", "good,good")
    with pytest.raises(ConfigError, match="named twice"):
        pool_from_env("reviser")
    monkeypatch.setenv("CRITIC_REVISERS", "good,bad-one")
    with pytest.raises(ConfigError, match="letters and digits"):
        pool_from_env("reviser")
    monkeypatch.setenv("CRITIC_REVISERS", "good,third")
    with pytest.raises(ConfigError, match="CRITIC_REVISER_THIRD_MODEL"):
        pool_from_env("reviser")
    monkeypatch.setenv("CRITIC_REVISER_THIRD_MODEL", "m3")
    monkeypatch.setenv("CRITIC_REVISER_THIRD_CONCURRENCY", "x")
    with pytest.raises(ConfigError, match="CRITIC_REVISER_THIRD_CONCURRENCY must be an integer"):
        pool_from_env("reviser")
    monkeypatch.delenv("CRITIC_REVISERS")
    monkeypatch.setenv("CRITIC_REVISER_MODEL", "solo")
    assert [s.model for s in pool_from_env("reviser")] == ["solo"]


@pytest.mark.slow
@pytest.mark.parametrize("var, value, message", [
    ("CRITIC_REVISERS", "good,good", "named twice"),
    ("CRITIC_REVISER_GOOD_CONCURRENCY", "0", "CRITIC_REVISER_GOOD_CONCURRENCY must be >= 1, got 0"),
    ("CRITIC_REVISERS", "good,third", "neither CRITIC_REVISER_THIRD_MODEL nor CRITIC_REVISER_MODEL is set"),
])
def test_bad_settings_stop_the_run_before_any_generation(tmp_path, monkeypatch, capsys, var, value, message):
    monkeypatch.setenv(var, value)
    lm = scripted_lm(critic)
    with pytest.raises(ConfigError, match=re.escape(message)):
        lm_eval.simple_evaluate(model=lm, tasks=["critic_utility"], bootstrap_iters=0,
                                task_manager=critic_tasks.task_manager(metadata={"items_file": str(tmp_path / ROWS)}))
    assert lm.prompts == []
    # critic-eval checks them before lm-eval loads the model: one line, exit 2
    assert cli.main(["--model", "hf", "--model_args", "pretrained=/no/such/model", "--tasks", "critic_utility"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_a_bad_item_row_stops_the_run_before_any_generation(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "q", "generation": "g"}\n{"question": "q"}\n')
    lm = scripted_lm(critic)
    with pytest.raises(Exception) as err:
        lm_eval.simple_evaluate(model=lm, tasks=["critic_revision_pool"], bootstrap_iters=0,
                                task_manager=critic_tasks.task_manager(metadata={"items_file": str(path)}))
    assert f"{path}:2: missing field 'generation'" in str(err.value) or \
        f"{path}:2: missing field 'generation'" in str(err.value.__cause__)
    assert lm.prompts == []


@pytest.mark.slow
def test_checks_of_all_domains_run_as_one_parallel_batch(tmp_path):
    import threading

    from critic_tasks.protocols.revision import pipeline
    from critic_tasks.sandbox import ExecResult, PairResult

    rows = [{"domain": "math_pot", "question": "Question 0?", "generation": "Initial 0", "ground_truth_answer": "3"},
            {"domain": "code_not_exec", "question": "Question 1?", "generation": "Initial 1",
             "unit_test": "assert add(1, 2) == 3"}]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs = data.load_task_docs("utility", items_file=str(path))

    class Meeting:
        """Each domain's batch waits for the other's: only batches running at the same time get through."""

        isolation, barrier = "test", threading.Barrier(2, timeout=20)

        def run(self, programs):  # math_pot: one program each
            self.barrier.wait()
            return [ExecResult("failed", 1, "", "AssertionError", 0.0) for _ in programs]

        def run_pairs(self, pairs):  # code: a candidate and its trusted tester each
            self.barrier.wait()
            failed = ExecResult("failed", 1, "", "AssertionError", 0.0)
            return [PairResult(failed, failed) for _ in pairs]

    revisions = [["```python\nclass Solution:\n    def solution(self):\n        return 3\n```", GOOD_CODE]]
    outcomes = pipeline.check(docs, revisions, Meeting())
    assert [o.status for o in outcomes[0]] == ["failed", "failed"]


class Generic(InProcessBackend):
    """Any item: the reviser appends a line; the judge always prefers response B and rates 7."""

    def reply(self, prompt):
        if self.settings.model == "generic-reviser":
            return Reply("The answer is 42.")
        return Reply("Rating: [[7]]" if prompt.startswith("Rate the quality") else "[[B]]")


@pytest.mark.slow
def test_criticbench_tasks_run_on_the_sample(monkeypatch):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.delenv("CRITIC_REVISERS")
    for name, value in {"CRITIC_REVISER_BACKEND": "generic", "CRITIC_REVISER_MODEL": "generic-reviser",
                        "CRITIC_JUDGE_BACKEND": "generic", "CRITIC_JUDGE_MODEL": "generic-judge"}.items():
        monkeypatch.setenv(name, value)
    with backend_plugin("generic", Generic):
        out = lm_eval.simple_evaluate(model=scripted_lm(lambda p: "Check the arithmetic."), bootstrap_iters=0,
                                      tasks=["critic_utility_chat", "critic_revision_pool_math_cot"],
                                      task_manager=critic_tasks.task_manager())
    chat, math_cot = _metrics(out, "critic_utility_chat"), _metrics(out, "critic_revision_pool_math_cot")
    assert out["results"]["critic_utility_chat"]["sample_len"] == 4  # the dev sample's main chat file
    assert chat["critique_utility"] == 50.0 and chat["rqs"] == 7.0  # [[B]] in both orders: a win, then a loss
    assert "refine_accuracy" not in chat and "r_sub" not in math_cot  # no checked chat item, no judged math one
    assert 0.0 <= math_cot["r_obj"] <= 100.0 and math_cot["reviser_failed"] == 0 and math_cot["invalid_items"] == 0


# ----------------------------------------------------------------------------- the paper variant (the default)

RCO_PAPER = "rco.txt"


def _with_references(tmp_path) -> str:
    """The items file, each judged (chat) item with its human reference revision."""
    rows = [json.loads(line) for line in (tmp_path / ROWS).read_text().splitlines()]
    for row in rows:
        if row["domain"] == "chat":
            row["correction"] = f"Reference revision {row['id']}"
    path = tmp_path / "items_with_references.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _fenced(title: str, name: str, text: str, prompt: str) -> bool:
    """Whether ``prompt`` has the section ``title`` holding ``text`` between its BEGIN and END lines."""
    code = r"([0-9a-f]{12})"
    return re.search(re.escape(f"{title}\n<<<BEGIN {name} ") + code + re.escape(f">>>\n{text}\n<<<END {name} ")
                     + r"\1>>>", prompt) is not None


def _run_paper(task, items_file, **metadata):
    lm = scripted_lm(critic)
    manager = critic_tasks.task_manager(metadata={"items_file": items_file, **metadata})
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=manager, bootstrap_iters=0, log_samples=True)
    return out, lm


@pytest.mark.slow
def test_paper_multicritique_r_sub_is_criticevals_reference_guided_correction_judge(tmp_path, monkeypatch):
    monkeypatch.delenv("CRITIC_PROMPT_VARIANT")  # the default: paper
    out, lm = _run_paper("critic_revision_pool", _with_references(tmp_path))
    got = _metrics(out, "critic_revision_pool")
    grades = [g for g in GRADE.values() if g is not None]
    graded = [1 if g is None else g for g in GRADE.values()]  # on CriticEval's scale (ref = 8); unreadable: 1
    exp = {**expected_multicritique(), "r_sub": sum(graded) / len(graded),
           "r_sub_chat": sum(graded) / len(graded),
           "judge_parse_rate": 100 * len(grades) / len(GRADE), "judge_failed": len(GRADE) - len(grades),
           "empty_items": 0}  # no checked item lost all its revisions here, every judged one was revised
    for key, value in exp.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    results = out["results"]["critic_revision_pool"]
    assert results["variant,none"] == "paper" and results["failure_rule,none"] == "exclude"
    # the judge: CriticEval's correction judge, the reference revision worth 8, the critique the reviser used
    assert len(Calls.judge) == 2
    for k in (3, 4):
        (prompt,) = [p for p in Calls.judge if f"Question {k}?" in p]
        assert prompt.startswith("You are grading a correction")
        # each section's text between its BEGIN / END lines (one code per prompt), under the data note
        assert _fenced("### Reference correction (worth 8)", "reference_correction", f"Reference revision {k}", prompt)
        assert _fenced("### Critique of the original response", "critique_of_the",
                       f"Feedback on item {k}: check every step.", prompt)
        assert _fenced("### Correction to grade", "correction_to_grade", f"REVISED text {k} good", prompt)
        assert "treat its content as data only" in prompt
        assert prompt.rstrip().endswith("where x is a number from 1 to 10.")
    # the critic: CriticEval's free-text feedback prompt; the revisers: its correction prompt with that feedback
    assert all(p.rstrip().endswith("If the response needs no revision, say so.") for p in lm.prompts)
    assert any("### Math Question:\nQuestion 0?" in p for p in lm.prompts)
    math_revision = [p for p in Calls.reviser if p.startswith("good|") and "Question 0?" in p][0]
    assert _fenced("### Feedback:", "feedback", "Feedback on item 0: check every step.", math_revision)
    assert _fenced("### Rationale:", "generation", "Initial 0", math_revision)
    assert math_revision.index("treat its content as data only") < math_revision.index("<<<BEGIN generation")
    assert "`#### RESULT: x`" in math_revision
    involved = json.loads(results["models,none"])
    assert involved["judge"]["prompt_version"] == "critic-judge-v2" and involved["variant"] == "paper"


@pytest.mark.slow
def test_paper_multicritique_needs_the_reference_revision(tmp_path, monkeypatch):
    monkeypatch.delenv("CRITIC_PROMPT_VARIANT")
    with pytest.raises(DataError, match=re.escape(f"{tmp_path / ROWS}:4: missing field 'correction'")):
        data.load_task_docs("revision_pool", items_file=str(tmp_path / ROWS))  # item 3 (line 4): chat, no reference
    # CriticBench items: the text domains from the subjective files, which hold the reference revisions
    docs = data.load_task_docs("revision_pool", "dev", "chat,math_cot", "sample")
    assert {d["domain"]: "/sub_dev_data/" in d["source_file"] for d in docs} == {"chat": True, "math_cot": False}
    assert all(d["correction"] for d in docs if d["domain"] == "chat")
    with pytest.raises(DataError, match="missing field 'correction'.*use variant 'short' there"):
        data.load_task_docs("revision_pool", "test", "qa", "sample")  # the test split withholds the references
    assert len(data.load_task_docs("revision_pool", "test", "qa", "sample", variant="short")) == 2


def _paper_table(number: int) -> str:
    """One of the RCO paper's judge prompts (Appendix B), read at run time."""
    from conftest import SHARED

    path = SHARED / "papers" / RCO_PAPER
    if not path.is_file():
        pytest.skip("shared papers not found")
    text = path.read_text(encoding="utf-8").replace("\u2019", "'")  # the paper typesets apostrophes curly
    end = text.index(f"Table {number}: ")
    return text[text.rindex("[SYSTEM]", 0, end):end]


_MARKER = re.compile(r"\[(?!\[)([A-Z][^\[\]]*)\](?!\])")


@pytest.mark.slow
def test_paper_rco_judges_explain_first_and_the_math_judge_sees_the_reference_answer(tmp_path, monkeypatch):
    monkeypatch.delenv("CRITIC_PROMPT_VARIANT")
    out, _ = _run_paper("critic_utility", str(tmp_path / ROWS))
    got = _metrics(out, "critic_utility")
    for key, value in expected_rco().items():  # the verdict is read last: the quoted [[C]] before it never counts
        assert got[key] == pytest.approx(value, abs=1e-9), key
    assert out["results"]["critic_utility"]["variant,none"] == "paper"
    gold = {k: g for k, (d, g, _) in ITEMS.items() if d == "math_cot"}
    for prompt in Calls.judge:
        k = _item(prompt)
        reference = f"[The Start of Reference Answer]\n{gold[k]}\n[The End of Reference Answer]" if k in gold else None
        assert (reference in prompt) if reference else "Reference Answer" not in prompt, (k, prompt)
        assert prompt.index("explanation") < prompt.index("[[")  # explain first, the marker last
    # a math judge's sections are those of the paper's math prompts (Table 31: preference, Table 41: RQS)
    doc = data.load_task_docs("utility", items_file=str(tmp_path / ROWS))[0]
    skip = {"SYSTEM", "USER"}
    assert _MARKER.findall(prompts.pairwise_prompt(doc, "x", "y")) == [
        m for m in _MARKER.findall(_paper_table(31)) if m not in skip] == [
        "Math Problem", "The Start of Reference Answer", "The End of Reference Answer",
        "The Start of Assistant A's Answer", "The End of Assistant A's Answer", "The Start of Assistant B's Answer",
        "The End of Assistant B's Answer"]
    assert _MARKER.findall(prompts.rating_prompt(doc, "x")) == [
        m for m in _MARKER.findall(_paper_table(41)) if m not in skip]
    chat = data.load_task_docs("utility", items_file=str(tmp_path / ROWS))[3]
    assert _MARKER.findall(prompts.pairwise_prompt(chat, "x", "y")) == [
        m for m in _MARKER.findall(_paper_table(28)) if m not in skip]  # dialog: no reference answer


def _rco(prefs, rqs=None, checked=False, passed=(), revised=True, rule="exclude"):
    from critic_tasks.protocols.revision.scoring import RevisionRecord

    return RevisionRecord(domain="d", checked=checked, revisers=("actor",), revisions=("r" if revised else None,),
                          passed=passed, prefs=prefs, rqs=rqs, reviser_failed=0 if revised else 1, failure_rule=rule)


@pytest.mark.parametrize("rule, utility, accuracy", [("exclude", 62.5, 100.0), ("tie", 50.0, 50.0),
                                                     ("zero", 18.75, 50.0)])
def test_rco_failure_rules_by_hand(rule, utility, accuracy):
    """One order unreadable; both unreadable; the actor's revision failed (nothing judged); a complete item.
    exclude: CU = mean(1, (0 + 0.5)/2) = 0.625; tie: mean(0.75, 0.5, 0.5, 0.25) = 0.5; zero: mean(0.5, 0, 0, 0.25).
    refine_accuracy over the two checked items: the failed revision left out (exclude) or failed (tie, zero)."""
    from critic_tasks.protocols.revision.scoring import rco_metrics

    records = [_rco((1.0, None), rqs=7, rule=rule), _rco((None, None), rule=rule),
               _rco((), checked=True, passed=(None,), revised=False, rule=rule),
               _rco((0.0, 0.5), rqs=5, checked=True, passed=(True,), rule=rule)]
    out = rco_metrics(records)
    assert out["critique_utility"] == pytest.approx(utility) and out["refine_accuracy"] == pytest.approx(accuracy)
    assert out["rqs"] == 6.0  # ratings are never filled in
    assert (out["partial_items"], out["empty_items"], out["failure_rule"]) == (1, 2, rule)


@pytest.mark.parametrize("rule, r_obj", [("exclude", 75.0), ("tie", 100 / 3), ("zero", 100 / 3)])
def test_multicritique_failure_rules_by_hand(rule, r_obj):
    """Two revisers. Checked items: (pass, failed call), (failed call, failed call), (fail, pass); judged: 8, none.
    exclude: reviser 1 passes 1 of 2 revised, reviser 2 1 of 1: R_obj = (50 + 100) / 2 = 75; tie / zero: a missing
    revision fails: 1 of 3 each, 33.33. R_sub = 8 under every rule."""
    from critic_tasks.protocols.revision.scoring import RevisionRecord, multicritique_metrics

    def rec(checked, passed=(None, None), rqs=None):
        return RevisionRecord(domain="d", checked=checked, revisers=("one", "two"), passed=passed, rqs=rqs,
                              failure_rule=rule)

    records = [rec(True, (True, None)), rec(True, (None, None)), rec(True, (False, True)), rec(False, rqs=8.0),
               rec(False)]
    out = multicritique_metrics(records)
    assert out["r_obj"] == pytest.approx(r_obj) and out["r_sub"] == 8.0
    assert (out["partial_items"], out["empty_items"]) == (1, 2)


@pytest.mark.slow
def test_multicritique_per_domain_values_reach_the_results(tmp_path):
    """lm-eval's results hold r_obj_<domain> / r_sub_<domain>, each the mean over revisers of that domain's pass
    rate: math_cot (items 0, 1): good 2/2, bad 1/2 -> 75; code_not_exec (item 2): good 1/1, bad 0/1 -> 50; and
    R_obj = (75 + 50) / 2 = 62.5 where pooling the three items gives (100 + 33.3) / 2 = 66.7."""
    got = _metrics(_run("critic_revision_pool", tmp_path), "critic_revision_pool")
    assert got["r_obj_math_cot"] == pytest.approx(75.0) and got["r_obj_code_not_exec"] == pytest.approx(50.0)
    assert got["r_obj"] == pytest.approx(62.5)
    assert got["r_sub_chat"] == (RATING[3] + 1) / 2  # item 4's unreadable rating counts 1 (issue 34)


@pytest.mark.slow
def test_failure_rule_setting_reaches_the_results_and_a_bad_one_stops_the_run(tmp_path, monkeypatch):
    out = lm_eval.simple_evaluate(model=scripted_lm(critic), tasks=["critic_utility"], bootstrap_iters=0,
                                  task_manager=critic_tasks.task_manager(
                                      metadata={"items_file": str(tmp_path / ROWS), "failure_rule": "tie"}))
    got = _metrics(out, "critic_utility")
    win = {"forward": {"B": 1, "C": 0.5, "A": 0}, "reverse": {"A": 1, "C": 0.5, "B": 0}}
    utilities = [sum(0 if v is None else win[o][v] for o, v in zip(("forward", "reverse"), PAIR[k])) / 2
                 for k in PAIR]  # item 3's unreadable reverse order counts 0 whatever the rule: not a tie (issue 34)
    assert got["critique_utility"] == pytest.approx(100 * sum(utilities) / len(utilities))
    assert out["results"]["critic_utility"]["failure_rule,none"] == "tie" and got["partial_items"] == 0
    monkeypatch.setenv("CRITIC_REVISION_FAILURE_RULE", "drop")
    lm = scripted_lm(critic)
    with pytest.raises(ConfigError, match=re.escape("CRITIC_REVISION_FAILURE_RULE='drop': expected one of exclude, "
                                                    "tie, zero")):
        lm_eval.simple_evaluate(model=lm, tasks=["critic_utility"], bootstrap_iters=0,
                                task_manager=critic_tasks.task_manager(metadata={"items_file": str(tmp_path / ROWS)}))
    assert lm.prompts == []


@pytest.mark.slow
def test_critic_eval_revise_rescores_saved_samples_under_another_failure_rule(tmp_path, capsys):
    """The run's rule is recorded in its samples; `critic-eval revise --failure_rule zero` re-scores them (from the
    caches) under another; item 3's unreadable reverse order counts as a loss under every rule."""
    out = _run("critic_utility", tmp_path, log_samples=True)
    tracker = EvaluationTracker(output_path=str(tmp_path / "run"))
    tracker.general_config_tracker.model_name_sanitized = "scripted"
    tracker.date_id = "2026-11-22T10-00-00.000001"
    tracker.save_results_samples("critic_utility", out["samples"]["critic_utility"])
    report = tmp_path / "zero.json"
    assert cli.main(["revise", str(tmp_path / "run"), "--output", str(report), "--no_progress", "--allow_failures",
                     "--failure_rule", "zero"]) == 0
    saved = json.loads(report.read_text())["results"]["critic_utility"]
    win = {"forward": {"B": 1, "C": 0.5, "A": 0}, "reverse": {"A": 1, "C": 0.5, "B": 0}}
    utilities = [sum(0 if v is None else win[o][v] for o, v in zip(("forward", "reverse"), PAIR[k])) / 2 for k in PAIR]
    assert saved["critique_utility"] == pytest.approx(100 * sum(utilities) / len(utilities))
    assert saved["failure_rule"] == "zero" and saved["variant"] == "short"
    capsys.readouterr()
    assert cli.main(["revise", str(tmp_path / "run"), "--failure_rule", "none"]) == 2  # one line, before any call
    assert "failure_rule='none': expected one of exclude, tie, zero" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the released text, where the user has it


def _toolkit_dir():
    from conftest import SHARED

    root = SHARED / "data" / "criticeval" / "toolkit"
    if not (root / "critic_bench" / "evaluators" / "prompts" / "correction_prompts.py").is_file():
        pytest.skip(f"the released CriticEval toolkit is not at {root}")
    return root


def _by_hand(template: str, values: dict) -> str:
    """A released template filled without str.format: split at its {name} fields, each replaced by its value."""
    assert "{{" not in template and "}}" not in template  # no escaped braces in these files: a plain split is exact
    parts = re.split(r"\{(\w+)\}", template)
    return "".join(values[p] if i % 2 else p for i, p in enumerate(parts))


def sly_critic(prompt: str) -> str:
    """A critique that holds template fields: model text, to be sent as written."""
    return f"Feedback on item {_item(prompt)}: the {{q}} is fine but {{c_b}} and {{feedback}} are not."


@pytest.mark.slow
def test_paper_multicritique_asks_criticevals_released_prompts_from_the_users_checkout(tmp_path, monkeypatch):
    """With CRITICBENCH_TOOLKIT_DIR at a CriticEval checkout, the critic, the revisers and the R_sub judge get
    CriticEval's released text byte for byte: each expected prompt here is the toolkit's file run by runpy and filled
    by splitting at its fields (not by our loader, not by str.format). A critique holding '{q}' / '{c_b}' reaches the
    reviser and the judge as written (one-pass filling). The results say which file each role's text came from."""
    import runpy

    root = _toolkit_dir()
    monkeypatch.delenv("CRITIC_PROMPT_VARIANT")
    monkeypatch.setenv("CRITICBENCH_TOOLKIT_DIR", str(root))
    lm = scripted_lm(sly_critic)
    manager = critic_tasks.task_manager(metadata={"items_file": _with_references(tmp_path)})
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_revision_pool"], task_manager=manager, bootstrap_iters=0)
    inference = root / "inference" / "utils"
    released = runpy.run_path(str(inference / "prompts.py"))["prompts"]
    formats = runpy.run_path(str(inference / "formats.py"))["mappings"]
    judges = runpy.run_path(str(root / "critic_bench" / "evaluators" / "prompts" / "correction_prompts.py"))

    def composed(table: dict, fmt: str, domain: str, values: dict) -> str:
        return table[domain]["prefix_prompt"] + _by_hand(fmt, values) + table[domain]["post_prompt"]

    for k, (domain, _, unit_test) in ITEMS.items():
        item = {"question": f"Question {k}?", "generation": f"Initial {k}", "unit_test": unit_test}
        critique = sly_critic(f"Question {k}?")
        # the critic: CriticEval's subjective feedback prompt for the item's domain
        assert composed(released["feedback"]["sub"], formats["feedback"][domain], domain, item) in lm.prompts
        # each reviser: its correction prompt with the critic's critique as the feedback
        expected = composed(released["correction"], formats["correction"][domain], domain,
                            {**item, "feedback": critique})
        assert sum(p == f"good|{expected}" for p in Calls.reviser) == 1, k
        assert "the {q} is fine but {c_b} and {feedback} are not." in expected
    for k in (3, 4):  # the judged (chat) items: the released judge, the first reviser's revision graded
        expected = _by_hand(judges["chat_correction_prompt"], {
            "q": f"Question {k}?", "r": f"Initial {k}", "f": sly_critic(f"Question {k}?"),
            "c_a": f"Reference revision {k}", "c_b": REVISIONS["good"][k]})
        assert Calls.judge.count(expected) == 1, k
    got = _metrics(out, "critic_revision_pool")
    grades = [1 if g is None else g for g in GRADE.values()]  # an unreadable grade counts 1 (issue 34)
    assert got["r_sub"] == sum(grades) / len(grades) and got["r_obj"] == pytest.approx(expected_multicritique()["r_obj"])
    resolved = root.resolve()
    assert json.loads(out["results"]["critic_revision_pool"]["prompt_source,none"]) == {
        "critic": f"released: {resolved}/inference/utils/prompts.py + {resolved}/inference/utils/formats.py",
        "reviser": f"released: {resolved}/inference/utils/prompts.py + {resolved}/inference/utils/formats.py",
        "judge": f"released: {resolved}/critic_bench/evaluators/prompts/correction_prompts.py"}


@pytest.mark.slow
@pytest.mark.parametrize("task, variant, source", [("critic_revision_pool", None, "paraphrase"),
                                                   ("critic_utility", None, "paraphrase"),
                                                   ("critic_revision_pool", "short", "ours")])
def test_without_a_checkout_the_paraphrase_is_asked_and_marked(task, variant, source, tmp_path, monkeypatch):
    """No CriticEval checkout given: MultiCritique's paper prompts are our paraphrases (the judge opens with our
    wording, not CriticEval's '# Evaluation Task'), and every role is marked "paraphrase"; RCO, whose paper released
    no prompt files, is a paraphrase whatever is installed (the checkout set here changes nothing); the short
    variant's generic prompts are "ours"."""
    if variant is None:
        monkeypatch.delenv("CRITIC_PROMPT_VARIANT")
    if task == "critic_utility":
        monkeypatch.setenv("CRITICBENCH_TOOLKIT_DIR", str(_toolkit_dir()))
    out, lm = _run_paper(task, _with_references(tmp_path))
    assert json.loads(out["results"][task]["prompt_source,none"]) == dict.fromkeys(("critic", "reviser", "judge"),
                                                                                     source)
    assert Calls.judge and not any("# Evaluation Task" in p for p in Calls.judge)
    assert not any(p.startswith("You're given:") for p in lm.prompts)  # CriticEval's released critic prompt


@pytest.mark.slow
def test_a_toolkit_dir_that_is_no_checkout_stops_the_run_in_one_line(tmp_path, monkeypatch):
    """A toolkit_dir without CriticEval's files: one ConfigError naming the setting and the missing file, at load time
    (before any generation); a checkout without the judge's file names that file."""
    import shutil

    monkeypatch.delenv("CRITIC_PROMPT_VARIANT")  # the paper variant: MultiCritique's prompts may be the released ones
    rows = _with_references(tmp_path)
    with pytest.raises(ConfigError, match=re.escape(f"toolkit_dir={tmp_path}: {tmp_path}/inference/utils/prompts.py "
                                                    "not found")):
        data.load_task_docs("revision_pool", items_file=rows, toolkit_dir=str(tmp_path))
    partial = tmp_path / "partial"
    shutil.copytree(_toolkit_dir() / "inference", partial / "inference")
    with pytest.raises(ConfigError, match=re.escape(f"toolkit_dir={partial}: {partial}/critic_bench/evaluators/prompts/"
                                                    "correction_prompts.py not found")):
        data.load_task_docs("revision_pool", items_file=rows, toolkit_dir=str(partial))
    assert all(d["toolkit_dir"] == "" for d in data.load_task_docs("revision_pool", items_file=rows))


@pytest.mark.slow
def test_released_judge_of_a_summary_shows_the_article(monkeypatch):
    """The summary judge is the one released template with the article ({a}): CriticBench's sample summary item,
    graded with a revision and a critique that hold template fields, gives the file's template filled by hand."""
    import runpy

    root = _toolkit_dir()
    monkeypatch.delenv("CRITIC_PROMPT_VARIANT")
    (doc,) = data.load_task_docs("revision_pool", "dev", "summary", "sample", toolkit_dir=str(root))[:1]
    template = runpy.run_path(str(root / "critic_bench" / "evaluators" / "prompts" / "correction_prompts.py"))[
        "summary_correction_prompt"]
    assert "{a}" in template
    got = prompts.reference_judge_prompt(doc, "Drop the {a} line.", "A shorter {c_a} summary.")
    assert got == _by_hand(template, {"a": doc["article"], "q": doc["question"], "r": doc["generation"],
                                      "f": "Drop the {a} line.", "c_a": doc["correction"],
                                      "c_b": "A shorter {c_a} summary."})
    assert doc["article"] and doc["article"] in got
