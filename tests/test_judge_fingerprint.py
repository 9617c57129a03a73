"""Judge fingerprints (issue 36, point 3): every judged result names what answered it, the cache key holds the
prompt templates' hash and the sampling settings, and `critic-eval judge --canary N` re-asks cached prompts.

Against the fault-injection stub server (tests/stub_server.py), whose answers and reported ``model`` /
``system_fingerprint`` the tests change between calls. Expected values come from the stub's script and, for the
cache key, from sha256 computed here by hand."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

import pytest
from stub_server import StubServer

from critic_tasks import cli
from critic_tasks.core.records import Record
from critic_tasks.llm import LLMSettings, complete
from critic_tasks.llm.cache import ReplyCache
from critic_tasks.protocols.criticbench import data
from critic_tasks.protocols.criticbench import judge as cb_judge
from critic_tasks.protocols.criticbench import judge_prompts as cb_prompts
from critic_tasks.protocols.metacritique import judge as mc_judge

TASK = "critic_feedback_sub"
CHANGED = {1, 4, 9}  # the items whose grade the drifted judge changes (5 -> 8)


class ScriptedJudge:
    """Grades every critique 5; after ``drift()``, the items of CHANGED 8. Reports ``served`` as its model."""

    def __init__(self):
        self.drifted = False

    def drift(self):
        self.drifted = True

    def __call__(self, n, prompt):
        i = int(re.search(r"critique-item-(\d+)\b", prompt).group(1))
        grade = 8 if self.drifted and i in CHANGED else 5
        return "ok", f"Compared with the reference.\nScore: {grade}"


def _docs():
    return data.load_docs("feedback", "dev", data_dir="sample", fmt="sub")


def _critiques(docs):
    return [f"critique-item-{i}: the response has flaws." for i in range(len(docs))]


def _write_run(folder, docs, critiques):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{TASK}_2026-01-01T00-00-00.jsonl"
    path.write_text("".join(json.dumps({"doc": d, "resps": [[c]]}) + "\n" for d, c in zip(docs, critiques)))
    return folder


@pytest.fixture
def judge_env(monkeypatch, tmp_path):
    def use(stub):
        monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "openai")
        monkeypatch.setenv("CRITIC_JUDGE_MODEL", "stub-judge")
        monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", stub.base_url)
        monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "sk-test")
        monkeypatch.setenv("CRITIC_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))
        return tmp_path / "judge.sqlite"
    return use


def _settings(stub, tmp_path, **kw):
    values = dict(backend="openai", model="stub-judge", base_url=stub.base_url, api_key="sk-test",
                  cache=str(tmp_path / "judge.sqlite"), max_tries=2, backoff_base=0.01, backoff_max=0.02, timeout=5.0)
    values.update(kw)
    return LLMSettings(**values)


def test_canary_counts_the_grades_a_drifted_judge_changes_and_keeps_the_cached_ones(judge_env, tmp_path, capsys):
    docs = _docs()[:20]
    run = _write_run(tmp_path / "run", docs, _critiques(docs))
    script = ScriptedJudge()
    with StubServer(script) as stub:
        judge_env(stub)
        stub.reply_fields = {"model": "stub-judge-0125", "system_fingerprint": "fp_one"}
        assert cli.main(["judge", str(run), "--no_progress", "--output", str(tmp_path / "first.json")]) == 0
        assert len(stub.log) == len(docs)
        first = json.loads((tmp_path / "first.json").read_text())
        assert first["results"][TASK]["judge_score"] == pytest.approx(5.0)
        # the run-level fingerprint: the identity, and what the server said answered every item
        fingerprint = first["fingerprint"][TASK]
        assert fingerprint["served"] == {"model": {"stub-judge-0125": len(docs)},
                                         "system_fingerprint": {"fp_one": len(docs)}, "unreported": 0}
        judge = fingerprint["judge"]
        assert (judge["model"], judge["temperature"], judge["max_tokens"]) == ("stub-judge", 0.0, 1024)
        assert re.fullmatch(r"[0-9a-f]{64}", judge["template_sha256"])
        capsys.readouterr()

        script.drift()
        stub.reply_fields = {"model": "stub-judge-0613", "system_fingerprint": "fp_two"}
        assert cli.main(["judge", str(run), "--canary", str(len(docs)), "--no_progress",
                         "--output", str(tmp_path / "canary.json")]) == 0
        assert len(stub.log) == 2 * len(docs)  # every cached prompt asked again, the cache bypassed
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith(f"canary: {len(CHANGED)} of {len(docs)} grades changed")
        labels = {f"{TASK} {docs[i]['source_file']}[{docs[i]['item_index']}]" for i in CHANGED}
        canary = json.loads((tmp_path / "canary.json").read_text())["canary"]
        assert canary["asked"] == len(docs) and canary["changed"] == len(CHANGED)
        assert {c["label"] for c in canary["changes"]} == labels
        assert all((c["before"], c["after"]) == (5.0, 8.0) for c in canary["changes"])
        assert all(c["served_before"]["system_fingerprint"] == "fp_one" and
                   c["served_after"]["system_fingerprint"] == "fp_two" for c in canary["changes"])
        assert canary["served"]["after"]["model"] == {"stub-judge-0613": len(docs)}

        # the canary wrote nothing over the cached grades: judging again asks nothing and gives the first numbers,
        # with the first run's served model read back from the cache
        assert cli.main(["judge", str(run), "--no_progress", "--output", str(tmp_path / "again.json")]) == 0
        assert len(stub.log) == 2 * len(docs)
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["results"] == first["results"]
    assert again["fingerprint"][TASK]["served"]["model"] == {"stub-judge-0125": len(docs)}


def test_canary_re_asks_the_first_n_by_cache_key(judge_env, tmp_path, capsys):
    docs = _docs()[:12]
    run = _write_run(tmp_path / "run", docs, _critiques(docs))
    with StubServer(ScriptedJudge()) as stub:
        cache = judge_env(stub)
        assert cli.main(["judge", str(run), "--no_progress"]) == 0
        capsys.readouterr()
        asked = stub.prompts()
        # the key, by hand: sha256 of the identity's sorted JSON, a NUL, the prompt
        with sqlite3.connect(cache) as db:
            rows = db.execute("SELECT key, identity FROM replies").fetchall()
        identity = json.loads(rows[0][1])
        key_of = {hashlib.sha256((json.dumps(identity, sort_keys=True, ensure_ascii=False) + "\x00" + p)
                                 .encode()).hexdigest(): p for p in asked}
        assert set(key_of) == {k for k, _ in rows}
        expected = [key_of[k] for k in sorted(key_of)[:5]]
        for _ in range(2):  # the same five each time
            before = len(stub.log)
            assert cli.main(["judge", str(run), "--canary", "5", "--no_progress"]) == 0
            assert sorted(stub.prompts()[before:]) == sorted(expected)
            assert capsys.readouterr().out.splitlines() == [
                "canary: 0 of 5 grades changed (judge 'stub-judge', 5 cached prompts re-asked without the cache)"]


def test_canary_with_nothing_cached_is_one_line(judge_env, tmp_path, capsys):
    docs = _docs()[:3]
    run = _write_run(tmp_path / "run", docs, _critiques(docs))
    with StubServer(ScriptedJudge()) as stub:
        judge_env(stub)
        assert cli.main(["judge", str(run), "--canary", "2", "--no_progress"]) == 2
        assert not stub.log  # nothing asked
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "none of the run's 3 judge prompts is in the cache" in err[0]
        assert cli.main(["judge", str(run), "--canary", "0", "--no_progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--canary 0" in err[0]


def test_each_judged_record_names_what_the_server_said_answered(tmp_path):
    docs = _docs()[:3]
    critiques = _critiques(docs)
    with StubServer(ScriptedJudge()) as stub:
        stub.reply_fields = {"model": "stub-judge-0125", "system_fingerprint": "fp_one", "usage": {"x": 1}}
        records = cb_judge.judge_docs(docs, critiques, _settings(stub, tmp_path), progress=False)
        assert all(r.judge_served == {"model": "stub-judge-0125", "system_fingerprint": "fp_one"} for r in records)
        row = json.loads(json.dumps(records[0].as_dict()))  # as a logged sample holds it
        assert Record.from_dict(row).judge_served == {"model": "stub-judge-0125", "system_fingerprint": "fp_one"}
        # from the cache: the same, without a call
        again = cb_judge.judge_docs(docs, critiques, _settings(stub, tmp_path), progress=False)
        assert len(stub.log) == 3 and all(r.cached for r in again)
        assert [r.judge_served for r in again] == [r.judge_served for r in records]
    with StubServer(ScriptedJudge()) as silent:  # a server that names nothing: None, not a guess
        records = cb_judge.judge_docs(docs, critiques, _settings(silent, tmp_path / "other"), progress=False)
    assert all(r.judge_served is None for r in records)


def test_the_template_hash_and_sampling_settings_key_the_cache(tmp_path):
    with StubServer() as stub:
        def asks(**kw):
            before = len(stub.log)
            template = kw.pop("template", "a" * 64)
            complete(["grade this"], _settings(stub, tmp_path, **kw), "v1", progress=False, template_hash=template)
            return len(stub.log) - before

        assert asks() == 1
        assert asks() == 0  # same template, same settings: the cached reply
        assert asks(template="b" * 64) == 1  # another template: never the old reply
        assert asks(max_tokens=7) == 1
        assert asks(temperature=0.5) == 1
        assert asks() == 0


def test_a_changed_judge_template_misses_the_cache_though_the_prompt_is_the_same(tmp_path, monkeypatch):
    """The retry reminder is part of the judge's templates but not of a first ask: changing it leaves every first
    prompt as it was, and still no grade made under the old template is reused."""
    docs = _docs()[:2]
    critiques = _critiques(docs)
    with StubServer(ScriptedJudge()) as stub:
        settings = _settings(stub, tmp_path)
        prompts = [cb_judge.judge_prompt(d, c) for d, c in zip(docs, critiques)]
        cb_judge.grade_prompts(prompts, settings, progress=False, retry=False)
        cb_judge.grade_prompts(prompts, settings, progress=False, retry=False)
        assert len(stub.log) == 2
        old_hash = cb_judge.judge_identity(settings)["template_sha256"]
        monkeypatch.setattr(cb_prompts, "RETRY_NOTE", cb_prompts.RETRY_NOTE + " Thank you.")
        monkeypatch.setattr(cb_judge, "RETRY_NOTE", cb_prompts.RETRY_NOTE)
        cb_judge.template_text.cache_clear()
        try:
            assert [cb_judge.judge_prompt(d, c) for d, c in zip(docs, critiques)] == prompts
            assert cb_judge.judge_identity(settings)["template_sha256"] != old_hash
            grades = cb_judge.grade_prompts(prompts, settings, progress=False, retry=False)
        finally:
            cb_judge.template_text.cache_clear()
    assert len(stub.log) == 4 and not any(g.cached for g in grades)


def test_the_template_hash_does_not_depend_on_the_documents():
    first = cb_judge.judge_identity(LLMSettings(model="m", cache=None))["template_sha256"]
    _docs()  # loading and judging documents changes nothing
    assert cb_judge.judge_identity(LLMSettings(model="m", cache=None))["template_sha256"] == first
    assert mc_judge.judge_identity(LLMSettings(model="m", cache=None))["template_sha256"] not in (first, None)


def test_metacritique_records_merge_what_each_call_reported(tmp_path):
    doc = {"id": "mc-0", "question": "Q?", "response": "A.", "reference_answer": "R.",
           "reference_aius": ["The answer misses alpha"]}

    def judge(n, prompt):
        if prompt.startswith("Break the critique"):
            return "ok", "1. The answer misses alpha"
        return "ok", "1. True"

    with StubServer(judge) as stub:
        stub.reply_fields = {"model": "judge-a", "system_fingerprint": "fp_one"}
        settings = _settings(stub, tmp_path, concurrency=1)
        # the first batch (extraction and recall) reports fp_one, the precision call fp_two
        original = stub.behave

        def behave(n, prompt):
            if n >= 2:
                stub.reply_fields = {"model": "judge-a", "system_fingerprint": "fp_two"}
            return original(n, prompt)

        stub.behave = behave
        (record,) = mc_judge.judge_critiques([doc], ["Alpha is missing."], settings, progress=False)
    assert len(stub.log) == 3
    assert record.judge_served == {"model": "judge-a", "system_fingerprint": ["fp_one", "fp_two"]}


def test_a_cache_written_before_served_was_kept_still_reads(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, identity TEXT NOT NULL, text TEXT NOT NULL, "
                   "created REAL NOT NULL)")
        db.execute("INSERT INTO replies VALUES ('k1', '{}', 'Score: 4', 0)")
    cache = ReplyCache(str(path))
    try:
        assert cache.get_entries(["k1"]) == {"k1": ("Score: 4", None)}
        cache.put("k2", {}, "Score: 6", {"model": "m"})
        assert cache.get_entries(["k1", "k2"]) == {"k1": ("Score: 4", None), "k2": ("Score: 6", {"model": "m"})}
    finally:
        cache.close()
