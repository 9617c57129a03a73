"""A judged lm-eval run records its judge's fingerprint (issue 36, point 3): the results file critic-eval writes
holds one ``fingerprint`` entry per judge-scored task (the judge's identity, what its server said answered each
grade), and `critic-eval summary` / `report` print the judge line.

The run: lm-eval's ``dummy`` model on critic_feedback_sub_chat, judged by the fault-injection stub server
(tests/stub_server.py), which reports a served ``model`` / ``system_fingerprint`` the test chooses; expected counts
come from the stub's own log. The reading of logged rows is also checked on hand-made rows (deferred, unreadable,
another judge's)."""

from __future__ import annotations

import json
import re

import pytest
from stub_server import StubServer

from critic_tasks import cli
from critic_tasks.protocols.criticbench import data
from critic_tasks.reports.results import judge_fingerprint

TASK, LIMIT = "critic_feedback_sub_chat", 3


@pytest.fixture
def judged_run(monkeypatch, tmp_path):
    """critic-eval --model dummy on TASK (LIMIT items), judged by the stub: (output folder, stub)."""
    monkeypatch.setenv(data.DATA_DIR_ENV, "sample")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CRITIC_REQUEST_CACHE", "off")
    monkeypatch.delenv("CRITIC_JUDGE_ALLOW_FAILURES", raising=False)
    with StubServer() as stub:
        stub.reply_fields = {"model": "stub-served-7b", "system_fingerprint": "fp_0042"}
        monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "openai")
        monkeypatch.setenv("CRITIC_JUDGE_MODEL", "stub-judge")
        monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", stub.base_url)
        monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "sk-test")
        monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
        out = tmp_path / "out"
        assert cli.main(["--model", "dummy", "--tasks", TASK, "--limit", str(LIMIT), "--output_path", str(out),
                         "--log_samples"]) == 0
        yield out, stub


@pytest.mark.slow  # an lm-eval run (dummy model), as tests/test_subjective.py's
def test_a_judged_run_records_one_fingerprint_per_judged_task_and_summary_prints_it(judged_run, capsys):
    out, stub = judged_run
    (results,) = out.rglob("results_*.json")
    recorded = json.loads(results.read_text())["fingerprint"]
    assert set(recorded) == {TASK}
    judge = recorded[TASK]["judge"]
    assert (judge["backend"], judge["model"], judge["base_url"]) == ("openai", "stub-judge", stub.base_url)
    assert re.fullmatch(r"[0-9a-f]{64}", judge["template_sha256"]) and judge["prompt_version"]
    answered = len(stub.answered)  # every grade of the run was a reply of the stub's (no cache: CRITIC_REQUEST_CACHE
    assert answered == LIMIT       # is lm-eval's; the judge's cache was empty)
    assert recorded[TASK]["served"] == {"model": {"stub-served-7b": LIMIT}, "system_fingerprint": {"fp_0042": LIMIT},
                                        "unreported": 0}
    capsys.readouterr()
    assert cli.main(["summary", str(out)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("judge of ")]
    assert lines == [f"judge of {TASK}: stub-judge (openai, temperature {judge['temperature']}), prompt "
                     f"{judge['prompt_version']}, template {judge['template_sha256'][:12]}; served by: model "
                     f"stub-served-7b ({LIMIT}); system fingerprint fp_0042 ({LIMIT})"]


@pytest.mark.slow
def test_report_shows_the_judges_and_a_plain_lm_eval_file_gets_them_from_its_samples(judged_run, capsys):
    out, _ = judged_run
    (results,) = out.rglob("results_*.json")
    data_ = json.loads(results.read_text())
    recorded = data_.pop("fingerprint")
    results.write_text(json.dumps(data_))  # as plain lm_eval writes it: no fingerprint key
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    assert "## Judges" in report
    (row,) = [line for line in report.splitlines() if line.startswith("| ") and f"| {TASK} | stub-judge" in line]
    assert f"template {recorded[TASK]['judge']['template_sha256'][:12]}" in row
    assert f"model stub-served-7b ({LIMIT}); system fingerprint fp_0042 ({LIMIT})" in row


IDENTITY = {"backend": "openai", "model": "j", "temperature": 0.0, "prompt_version": "v2", "template_sha256": "ab" * 32}


def _row(record, filter_="none"):
    """A samples line as lm-eval writes it: the ScoreFilter's record as its Python repr under filtered_resps."""
    return {"doc_id": 0, "filter": filter_, "filtered_resps": [[repr(record) if isinstance(record, dict) else record]]}


def test_fingerprint_of_hand_made_rows_counts_what_each_record_names():
    rows = [_row({"kind": "judged", "judge": IDENTITY, "judge_served": {"model": "m1", "system_fingerprint": "f1"}}),
            _row({"kind": "judged", "judge": IDENTITY, "judge_served": {"model": "m1"}}),
            _row({"kind": "judged", "judge": IDENTITY, "judge_served": None}),
            _row({"kind": "judged", "judge": {**IDENTITY, "model": "other"}, "judge_served": {"model": "m9"}}),
            _row({"kind": "judged", "is_deferred": True}),  # deferred: no judge named
            _row("{'kind': 'judged', 'judge': __import__('os')}"),  # not a literal: unreadable, never run
            _row("{broken"),
            _row({"kind": "judged", "judge": IDENTITY, "judge_served": {"model": "m2"}}, filter_="other")]
    found = judge_fingerprint(("where", r) for r in rows)
    assert found == {"judge": IDENTITY, "served": {"model": {"m1": 2}, "system_fingerprint": {"f1": 1},
                                                   "unreported": 1}, "other_judges": 1}
    assert judge_fingerprint(("where", r) for r in rows[4:7]) is None  # no row names a judge: judging deferred
