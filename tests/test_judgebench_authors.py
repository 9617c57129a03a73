"""JudgeBench as its authors run it (issue 43): their judge's messages, rendered from their own files, byte for byte
against their code (``tests/judgebench_authors.py`` imports it from ../shared) and against the prompts their released
outputs record; the ``prompt`` option (authors by default, ours on the bundled sample), recorded in the results."""

from __future__ import annotations

import json
import shutil

import pytest
from judgebench_authors import SHARED, authors, judgment, needs_shared

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols import authors as authors_files
from critic_tasks.protocols.judgebench import data, judges, prompts

CLAUDE_HAIKU = ("dataset=judgebench,response_model=claude-3-5-sonnet-20240620,judge_name=arena_hard,"
                "judge_model=claude-3-haiku-20240307.jsonl")


@pytest.fixture(autouse=True)
def _no_cached_authors_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JUDGEBENCH_DATA_DIR", raising=False)
    monkeypatch.delenv(authors_files.MIRROR_ENV, raising=False)
    for cached in (authors_files._text, judges.template, judges.judges_strings):
        cached.cache_clear()
    yield
    for cached in (authors_files._text, judges.template, judges.judges_strings):
        cached.cache_clear()


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (SHARED / "outputs" / name).read_text(encoding="utf-8").splitlines() if line]


@needs_shared
def test_every_document_sends_the_messages_the_authors_arena_hard_judge_sends():
    """Both splits, both orders: our system and user messages are the ones their ArenaHard.get_judgment sends (its
    API client scripted), and their render_template's."""
    their_prompts = authors()[0]
    system = their_prompts.render_template("arena_hard_judge_system")
    docs = data.load_task_docs(data_dir=SHARED, split="gpt") + data.load_task_docs(data_dir=SHARED, split="claude")
    assert len(docs) == 2 * (350 + 270)
    for doc in docs:
        assert (doc["prompt"], doc["judge"]) == ("authors", "arena_hard")
        user = their_prompts.render_template("arena_hard_judge_prompt", prompt=doc["question"],
                                             answer_a=doc["response_a"], answer_b=doc["response_b"])
        assert doc["system_message"] == system and doc["user_message"] == user
        assert prompts.critic_prompt(doc) == user
    for doc in docs[:6]:  # their judge itself: the messages of its first call
        _, api = judgment("arena_hard", doc["question"], doc["response_a"], doc["response_b"], lambda m: "[[A>B]]")
        sent, kwargs = api.calls[0]
        assert sent == [{"role": "system", "content": doc["system_message"]},
                        {"role": "user", "content": doc["user_message"]}]
        assert kwargs == {"temperature": 0, "max_tokens": judges.JUDGES["arena_hard"].budget}


@needs_shared
def test_the_prompts_the_released_outputs_record_are_ours_byte_for_byte():
    """Claude-3-Haiku's file records the user message of each call (their judgment["prompt"]): all 540 equal ours.
    (o1-mini's records its first reply there instead: their OpenAI client pops the system message for o1 models, so
    messages[1] is the reply; read as such by the two-turn test.)"""
    rows = _rows(CLAUDE_HAIKU)
    recorded = {(r["pair_id"], order): j["judgment"]["prompt"] for r in rows
                for order, j in zip(("forward", "reverse"), r["judgments"])}
    docs = data.load_task_docs(data_dir=SHARED, split="claude")
    assert len(recorded) == len(docs) == 540
    assert all(recorded[(d["pair_id"], d["order"])] == d["user_message"] for d in docs)


@needs_shared
def test_the_pinned_files_are_the_ones_the_checkout_holds():
    """Every file we pin reads from the shared checkout under its sha256 (judges.py: the later version it holds);
    the strings read from judges.py are the ones their classes hold."""
    for spec in (*judges.TEMPLATES.values(), judges.JUDGES_PY):
        spec.text(SHARED)
    _, their_judges, _, _ = authors()
    assert judges.second_turn_text(str(SHARED)) == "continue your judgment and finish by outputting a final " \
                                                   "verdict label"  # their wording, as the issue quotes it
    judge, _ = judgment("prometheus_2", "q", "a", "b", lambda m: "[RESULT] A")
    assert judge["decision"] == "A>B"
    prometheus = their_judges.Prometheus2.__new__(their_judges.Prometheus2)
    their_judges.Prometheus2.__init__(prometheus, "scripted-model")
    strings = judges.judges_strings(str(SHARED))
    assert strings["Prometheus2.rubric"] == prometheus.rubric
    assert strings["Prometheus2.REL_SYSTEM_PROMPT"] == prometheus.REL_SYSTEM_PROMPT


def _mirror(tmp_path):
    """An air-gapped lab's copy of the pinned files (CRITIC_AUTHORS_MIRROR's layout)."""
    root = tmp_path / "mirror"
    for spec in (*judges.TEMPLATES.values(), judges.JUDGES_PY):
        target = root / spec.repo / spec.commit / spec.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED / spec.path, target)
    return root


@needs_shared
def test_the_sample_asks_our_prompt_unless_told_and_offline_without_files_is_one_line(tmp_path, monkeypatch):
    docs = data.load_task_docs(data_dir="sample")
    assert {d["prompt"] for d in docs} == {"ours"} and {d["system_message"] for d in docs} == {""}
    assert all(d["user_message"] == prompts.our_prompt(d) for d in docs)
    # prompt: authors on the sample: the files from a mirror (or the cache, or GitHub)
    monkeypatch.setenv(authors_files.MIRROR_ENV, str(_mirror(tmp_path)))
    asked = data.load_task_docs(data_dir="sample", prompt="authors")
    their_prompts = authors()[0]
    assert [d["user_message"] for d in asked] == [
        their_prompts.render_template("arena_hard_judge_prompt", prompt=d["question"], answer_a=d["response_a"],
                                      answer_b=d["response_b"]) for d in asked]
    # nothing reachable: one line naming the settings and prompt: ours
    monkeypatch.setenv(authors_files.MIRROR_ENV, str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-cache"))
    for cached in (authors_files._text, judges.template, judges.judges_strings):
        cached.cache_clear()
    with pytest.raises(DataError) as err:
        data.load_task_docs(data_dir="sample", prompt="authors")
    assert "JUDGEBENCH_DATA_DIR" in str(err.value) and "prompt: ours" in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_prompt_and_judge_options_are_one_line():
    with pytest.raises(ConfigError, match=r"^judgebench prompt='theirs': expected one of authors, ours$"):
        data.load_task_docs(data_dir="sample", prompt="theirs")
    with pytest.raises(ConfigError, match=r"^judgebench judge='gpt4': expected one of arena_hard, "):
        data.load_task_docs(data_dir="sample", judge="gpt4")
    with pytest.raises(ConfigError, match="our wording exists for the arena_hard judge only"):
        data.load_task_docs(data_dir="sample", judge="vanilla", prompt="ours")


class _ChatRecorder:
    """An lm-eval model rendering each chat as JSON (what it was sent, message by message) and answering A."""

    def __new__(cls):
        from lm_eval.api.model import LM

        class Recorder(LM):
            def __init__(self):
                super().__init__()
                self.prompts: list[str] = []

            def apply_chat_template(self, chat_history, add_generation_prompt=True):
                return json.dumps(chat_history)

            def chat_template(self, chat_template=False):
                return "json"

            @property
            def tokenizer_name(self):
                return "json-recorder"

            def generate_until(self, requests, disable_tqdm=False):
                self.prompts += [r.args[0] for r in requests]
                return ["My final verdict is: [[A>B]]" for _ in requests]

            def loglikelihood(self, requests, disable_tqdm=False):
                raise NotImplementedError

            def loglikelihood_rolling(self, requests, disable_tqdm=False):
                raise NotImplementedError

        return Recorder()


@needs_shared
def test_lm_eval_sends_the_authors_system_and_user_messages_and_records_the_prompt(monkeypatch):
    lm_eval = pytest.importorskip("lm_eval")
    import critic_tasks

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(SHARED))
    lm = _ChatRecorder()
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_judgebench_math"], limit=4, bootstrap_iters=0,
                                  apply_chat_template=True, task_manager=critic_tasks.task_manager())
    their_prompts = authors()[0]
    docs = [d for d in data.load_task_docs(data_dir=SHARED, category="math")][:4]
    assert [json.loads(p) for p in lm.prompts] == [
        [{"role": "system", "content": their_prompts.render_template("arena_hard_judge_system")},
         {"role": "user", "content": their_prompts.render_template("arena_hard_judge_prompt", prompt=d["question"],
                                                                   answer_a=d["response_a"],
                                                                   answer_b=d["response_b"])}] for d in docs]
    results = out["results"]["critic_judgebench_math"]
    assert results["prompt,none"] == "authors"
    assert out["configs"]["critic_judgebench_math"]["generation_kwargs"]["max_gen_toks"] == 4096  # the authors'


def test_our_prompt_on_the_sample_sends_no_system_message_and_reports_mark_it(monkeypatch):
    lm_eval = pytest.importorskip("lm_eval")
    import critic_tasks
    from critic_tasks.reports.tables import format_table

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", "sample")
    lm = _ChatRecorder()
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_judgebench"], limit=2, bootstrap_iters=0,
                                  apply_chat_template=True, task_manager=critic_tasks.task_manager())
    assert [[m["role"] for m in json.loads(p)] for p in lm.prompts] == [["user"], ["user"]]
    assert out["results"]["critic_judgebench"]["prompt,none"] == "ours"
    table = format_table({"critic_judgebench": out["results"]["critic_judgebench"]})
    marked = [line for line in table.split("\n\n")[0].splitlines() if line.startswith("critic_judgebench ")]
    assert marked and all("prompt ours: not the authors' prompt" in line for line in marked)
    authors_run = {**out["results"]["critic_judgebench"], "prompt,none": "authors"}
    assert "not the authors' prompt" not in format_table({"critic_judgebench": authors_run})
