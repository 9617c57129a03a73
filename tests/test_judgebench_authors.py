"""JudgeBench as its authors run it (issue 43): their judge's messages, rendered from their own files, byte for byte
against their code (``tests/judgebench_authors.py`` imports it from ../shared) and against the prompts their released
outputs record; the ``prompt`` option (authors by default, ours on the bundled sample), recorded in the results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

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


# ----------------------------------------------------------------------------- the second turn

O1_MINI = ("dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,"
           "judge_model=o1-mini-2024-09-12.jsonl")
SECOND_SHAPES = ("My final verdict is [[B>>A]]", "Still weighing both.", "[[A>B]] or [[B>A]]", "[[A<B]]",
                 "Tie: [[A=B]]", "[[A>>B]]\n\n[[A>>B]]")


def _scripted_turns(split: str) -> dict:
    """(pair_id, order) -> (first reply, second reply): the released judge's own turns (Claude-3-Haiku's replies on
    the Claude pairs; o1-mini's on the GPT-4o pairs, whose 25 replies without a verdict were asked again: its file
    keeps the first turn in judgment["prompt"], see above), and on every seventh pair a first turn without a verdict
    followed by a second of one of SECOND_SHAPES."""
    rows = _rows(O1_MINI if split == "gpt" else CLAUDE_HAIKU)
    turns = {}
    for i, row in enumerate(rows):
        for order, j in zip(("forward", "reverse"), row["judgments"]):
            response = j["judgment"]["response"]
            if split == "gpt":
                first = j["judgment"]["prompt"]
                second = response[len(first) + 2:] if response != "\n" + first else "(not asked)"
            else:
                first, second = response.removeprefix("\n"), "(not asked)"
            if i % 7 == 3:
                first, second = f"Let me think about {order} once more.", SECOND_SHAPES[i % len(SECOND_SHAPES)]
            turns[(row["pair_id"], order)] = (first, second)
    return turns


def _authors_metrics(split: str, turns: dict, category: str | None = None) -> tuple[dict, int]:
    """Their ArenaHard.get_judgment on every pair in both orders (its API client answering with the scripted turns),
    then their compute_final_metrics per category prefix and overall; and how many second turns their judge sent.
    ``category``: that category's pairs only."""
    _, _, metrics, _ = authors()
    rows, asked_again = [], 0
    for pair in data.load_pairs(split, SHARED):
        if category is not None and pair["source_slug"] != category:
            continue
        judgments = []
        for order, (a, b) in (("forward", (pair["response_1"], pair["response_2"])),
                              ("reverse", (pair["response_2"], pair["response_1"]))):
            first, second = turns[(pair["pair_id"], order)]
            result, api = judgment("arena_hard", pair["question"], a, b,
                                   lambda messages, f=first, s=second: f if len(messages) == 2 else s)
            asked_again += len(api.calls) - 1
            judgments.append(result)
        rows.append({"label": pair["label"], "source": pair["source"], "judgments": judgments})
    prefixes = {"accuracy_knowledge": "mmlu-pro", "accuracy_reasoning": "livebench-reasoning",
                "accuracy_math": "livebench-math", "accuracy_coding": "livecodebench", "accuracy": ""}
    if category is not None:  # one category's pairs: their accuracy over them
        prefixes = {"accuracy": ""}
    return ({key: metrics.compute_final_metrics(rows, True, include_fn=lambda x, p=prefix: x["source"].startswith(p))
             for key, prefix in prefixes.items()}, asked_again)


class _JsonChat:
    """A chat template that writes the messages as JSON (what a scripted critic reads back)."""

    name_or_path = "json-chat"
    chat_template = "json"

    def apply_chat_template(self, chat_history, tokenize=False, add_generation_prompt=True):
        return json.dumps(chat_history)


def _critic(turns: dict, follow_up: str, by_user: dict):
    def reply(prompt: str) -> str:
        messages = json.loads(prompt)
        assert messages[0] == {"role": "system", "content": authors()[0].render_template("arena_hard_judge_system")}
        first, second = turns[by_user[messages[1]["content"]]]
        if len(messages) == 2:
            return first
        assert messages[2:] == [{"role": "assistant", "content": first}, {"role": "user", "content": follow_up}]
        return second

    return reply


@needs_shared
@pytest.mark.slow  # two critic-eval runs of 700 and 540 scripted replies
@pytest.mark.parametrize("split", ["gpt", "claude"])
def test_a_critic_eval_run_gives_the_authors_numbers_per_category_with_their_second_turn(split, tmp_path,
                                                                                        monkeypatch, capsys):
    """A real ``critic-eval`` run (--apply_chat_template: the system message, and the second turn as the chat so
    far) on the shared checkout, a scripted critic answering with the released judges' turns and made-up ones;
    their judge's get_judgment with the same replies, then their compute_final_metrics, give the same accuracy per
    category and overall, and the second turns are asked exactly where their judge asks them."""
    from helpers import cli_without_services, scripted_cli_model

    from critic_tasks import cli

    cli_without_services(monkeypatch)
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(SHARED))
    turns = _scripted_turns(split)
    docs = data.load_task_docs(data_dir=SHARED, split=split)
    by_user = {d["user_message"]: (d["pair_id"], d["order"]) for d in docs}
    follow_up = docs[0]["follow_up"]
    lm = scripted_cli_model("critic_scripted_judgebench", _critic(turns, follow_up, by_user), tokenizer=_JsonChat())
    out = tmp_path / "out"
    argv = ["--model", "critic_scripted_judgebench", "--tasks", "critic_judgebench", "--apply_chat_template",
            "--metadata", json.dumps({"split": split}), "--output_path", str(out)]
    assert cli.main(argv) == 0, capsys.readouterr().err[-3000:]
    (results,) = out.glob("*/results_*.json")
    ours = json.loads(results.read_text())["results"]["critic_judgebench"]
    expected, asked_again = _authors_metrics(split, turns)
    for key, value in expected.items():
        assert ours[f"{key},none"] == pytest.approx(value, abs=1e-9), key
    assert ours["second_turns,none"] == asked_again == len(lm.prompts) - len(docs) > 0
    assert ours["second_turns_missing,none"] == 0 and ours["prompt,none"] == "authors"
    (samples,) = out.glob("*/samples_critic_judgebench_*.jsonl")
    logged = [json.loads(line) for line in samples.read_text().splitlines()]
    joined = 0
    for row in logged:  # the reply scored: both turns joined as theirs ("\n" + each), where it was asked again
        first, second = turns[(row["doc"]["pair_id"], row["doc"]["order"])]
        reply = row["resps"][0][0]
        assert reply in (first, f"\n{first}\n{second}")
        joined += reply != first
    assert joined == asked_again


def _hashed_turns(prompt: str) -> str:
    """A critic that answers without a verdict on some first turns and in many shapes on the second."""
    if "continue your judgment" in prompt:
        return SECOND_SHAPES[len(prompt) % len(SECOND_SHAPES)]
    return "I am not sure yet." if len(prompt) % 3 == 0 else "My final verdict is [[A>B]]"


@needs_shared
def test_plain_lm_eval_counts_the_replies_it_did_not_ask_again_and_critic_eval_asks_them(tmp_path, monkeypatch):
    """Under plain lm_eval (no second pass) second_turns_missing is the number of replies without any verdict label
    (their get_score's try_again); through critic-eval's second pass (private.around_evaluate, here without a chat
    template: the conversation as text) those replies are asked again, once each, in one more call of the same
    model, and the joined reply is scored; a second run on the same request cache asks the model nothing."""
    lm_eval = pytest.importorskip("lm_eval")
    from helpers import scripted_lm

    import critic_tasks
    from critic_tasks.adapters.lm_eval import private, turns

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(SHARED))
    docs = data.load_task_docs(data_dir=SHARED, category="math")[:24]
    follow_up = docs[0]["follow_up"]
    plain = scripted_lm(_hashed_turns)
    out = lm_eval.simple_evaluate(model=plain, tasks=["critic_judgebench_math"], limit=24, bootstrap_iters=0,
                                  task_manager=critic_tasks.task_manager())
    unread = [p for p in plain.prompts if not judges_label(_hashed_turns(p))]
    assert len(plain.prompts) == 24 and 0 < len(unread) < 24
    assert out["results"]["critic_judgebench_math"]["second_turns_missing,none"] == len(unread)
    assert out["results"]["critic_judgebench_math"]["second_turns,none"] == 0
    from critic_tasks.reports.tables import format_table

    accuracy_row = next(line for line in format_table(out["results"]).splitlines()
                        if line.startswith("critic_judgebench_math") and " accuracy " in line)
    assert f"{len(unread)} replies without a verdict were not asked the authors' second turn" in accuracy_row

    cache = str(tmp_path / "requests")
    for run in range(2):
        lm = scripted_lm(_hashed_turns)
        with private.around_evaluate(turns.second_turns):
            out = lm_eval.simple_evaluate(model=lm, tasks=["critic_judgebench_math"], limit=24, bootstrap_iters=0,
                                          use_cache=cache, task_manager=critic_tasks.task_manager())
        results = out["results"]["critic_judgebench_math"]
        assert results["second_turns,none"] == len(unread) and results["second_turns_missing,none"] == 0
        if run == 0:
            firsts, seconds = lm.prompts[:24], lm.prompts[24:]
            assert firsts == plain.prompts
            assert seconds == [f"{p}{_hashed_turns(p)}\n\n{follow_up}\n\n" for p in unread]
        else:
            assert lm.prompts == []  # every turn came from the request cache: a killed run loses nothing


def judges_label(reply: str) -> bool:
    """Their get_score's test, by hand: a [[...]] of the labels' characters somewhere in the reply."""
    import re

    return re.search(r"\[\[[AB<>=]+\]\]", reply) is not None


def test_the_record_reads_joined_turns_and_counts_the_missing_second_turn():
    from critic_tasks.core.turns import Turns
    from critic_tasks.protocols.judgebench import scoring

    doc = {"pair_id": "p", "order": "forward", "source_slug": "math", "preference": "A", "response_a": "x",
           "response_b": "yy", "prompt": "authors", "follow_up": "continue"}
    plain = scoring.record(doc, "no verdict here")
    assert (plain.verdict, plain.turns, plain.needed_second_turn) == (None, 1, True)
    asked = scoring.record(doc, Turns(scoring.join_turns(["no verdict here", "[[B>A]]"]),
                                      ["no verdict here", "[[B>A]]"]))
    assert (asked.verdict, asked.turns, asked.needed_second_turn) == ("B", 2, True)
    assert scoring.follow_up(doc, "[[A<B]]") is None and scoring.follow_up(doc, "none") == "continue"
    assert scoring.follow_up({**doc, "follow_up": ""}, "none") is None  # our prompt, other judges: asked once
    records = [plain, asked, scoring.record(doc, "[[A>B]]")]
    assert scoring.METRICS[("judgebench", "second_turns")](records) == 1
    assert scoring.METRICS[("judgebench", "second_turns_missing")](records) == 1
    assert scoring.JudgeBenchRecord.from_dict(asked.as_dict()) == asked


# ----------------------------------------------------------------------------- the released judge formats

LABELS = {"A": "A>B", "B": "B>A", "C": "A=B", None: None}
FRAGMENTS = ("", " ", "  ", "\n", "\t", "\u00a0", "\u2003", "A", "B", "a", "b", "C", "[RESULT]", "[RESULT:", "[Result]",
             "[result]", "[Response", "[RESPONSE", "Response", "Result", "Result:", "RESULT:", "[Re\u017fult]",
             "Re\u017fpon\u017fe", "]", "Output (a)", "Output (b)", "output (a)", "1", "2", "tie", "Tie", ",", "8",
             "9.5", "nan", "inf", "-1", "1e999", "1_0", "So, the final decision is ", "final decision is ",
             "Response 1", "response 2", "TIE", "\u0130", "[[A>B]]", "x", ".", ":")
WRITTEN = ("Output (a)", " Output (b)\n", "Output (a) because", "[RESULT] A", "Feedback... [RESULT] b]",
           "[RESULT: B]", "[Response A]", "[Result] Response B", "x\nResult: A", "Result:A", "Result: C\nResult: B",
           "[RESULT]   \n\t A", "[RESULT] AB", "8 3\nbecause", "3,8", "3  8", "nan 2", "1e999 1", "2\nthe first",
           " tie\n", "Tie", "So, the final decision is Response 2.", "final decision is tie; final decision is "
           "response 1", "The final decision is Response 3", "[[A]]", "[[B]]", "no letter", "")


@needs_shared
@pytest.mark.parametrize("name", sorted(set(judges.JUDGES) - {"arena_hard"}))
def test_each_released_judge_format_reads_replies_as_their_code_does(name):
    """Their get_judgment (API scripted) on 4,000 replies made of fragments their readers look for, and on written
    ones: our reader's verdict is their decision, every time (Arena-Hard's: tests/test_judgebench.py)."""
    import random

    from judgebench_authors import decisions

    from critic_tasks.protocols.judgebench import readers

    rng = random.Random(name)
    replies = [*WRITTEN, *("".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 8))) for _ in range(4000))]
    theirs = decisions(name, replies)
    ours = [LABELS[readers.READERS[name](reply)[0]] for reply in replies]
    assert ours == theirs
    assert len(set(theirs)) >= 2  # the shapes reach more than one of their decisions


@needs_shared
@pytest.mark.parametrize("name", sorted(judges.JUDGES))
def test_each_released_judge_format_sends_their_messages(name):
    """For pairs of both splits in both orders: the system and user messages (chat judges) or the prompt (PandaLM,
    JudgeLM: a completion) our documents carry are what their judge sends (answers not truncated: see the docs)."""
    docs = data.load_task_docs(data_dir=SHARED, judge=name)[:6] + data.load_task_docs(
        data_dir=SHARED, split="claude", judge=name)[-6:]
    fmt = judges.JUDGES[name]
    for doc in docs:
        assert doc["judge"] == name and doc["prompt"] == "authors"
        assert doc["follow_up"] == ("" if fmt.turns == 1 else judges.second_turn_text(str(SHARED)))
        _, api = judgment(name, doc["question"], doc["response_a"], doc["response_b"], lambda sent: "[[A>B]]")
        sent, kwargs = api.calls[0]
        if fmt.chat:
            expected = ([{"role": "system", "content": doc["system_message"]}] if doc["system_message"] else []) + [
                {"role": "user", "content": doc["user_message"]}]
            assert sent == expected
        else:
            assert doc["system_message"] == "" and sent == doc["user_message"]
        assert kwargs["max_tokens"] == fmt.budget


@pytest.mark.parametrize("name", sorted(judges.JUDGES))
def test_every_reader_takes_linear_time_on_a_megabyte(name):
    import time

    from critic_tasks.protocols.judgebench import scoring

    size = 1_000_000
    shapes = ["[RESULT:" + " " * size, "[Result] " + " " * size + "Response", "\n" * size, "Result:" * (size // 7),
              "[Response " * (size // 10), "1" * size + " 2", "final decision is " * (size // 18),
              "[[" + "A" * size, "[[A>B]]" * (size // 7), "\u00a0" * size + "A", "[[A>B]" * (size // 6)]
    reader = scoring.READERS[name]
    for reply in shapes:
        started = time.perf_counter()
        reader(reply)
        assert time.perf_counter() - started < 1.0, (name, reply[:20])


@needs_shared
def test_lm_eval_asks_a_chosen_judge_format_and_records_it(monkeypatch):
    lm_eval = pytest.importorskip("lm_eval")
    import critic_tasks

    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(SHARED))
    lm = _ChatRecorder()
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_judgebench_math"], limit=2, bootstrap_iters=0,
                                  apply_chat_template=True,
                                  task_manager=critic_tasks.task_manager(metadata={"judge": "prometheus_2"}))
    docs = data.load_task_docs(data_dir=SHARED, category="math", judge="prometheus_2")[:2]
    assert [json.loads(p) for p in lm.prompts] == [
        [{"role": "system", "content": d["system_message"]}, {"role": "user", "content": d["user_message"]}]
        for d in docs]
    results = out["results"]["critic_judgebench_math"]
    assert results["judge,none"] == "prometheus_2" and results["parse_rate,none"] == 0.0  # [[A>B]] is no [RESULT]


@needs_shared
def test_the_offline_scorer_counts_the_second_turns_it_cannot_ask():
    """OpenCompass's evaluator (engine.score_task) on one reply per document: replies without a verdict stay unread
    and are counted in second_turns_missing, as under plain lm_eval."""
    from critic_tasks import engine

    docs = engine.task_docs("critic_judgebench_math", data_dir=str(SHARED))
    replies = ["Hmm." if i % 5 == 0 else "[[A>B]]" for i in range(len(docs))]
    values, records = engine.score_task("critic_judgebench_math", docs, replies)
    missing = sum(i % 5 == 0 for i in range(len(docs)))
    assert values["second_turns_missing"] == missing and values["second_turns"] == 0
    assert values["parse_rate"] == pytest.approx(100 * (len(docs) - missing) / len(docs))



@needs_shared
@pytest.mark.slow  # OpenCompass's environment: one process, no model
def test_opencompass_asks_the_second_turn_and_gives_the_authors_numbers(tmp_path):
    """OpenCompass's inference step with our inferencer (a scripted critic behind HuggingFacewithChatTemplate's own
    template parser, its meta template declaring SYSTEM) and its eval step's hand-over to our evaluator: every
    request is the conversation lm-eval sends (system, prompt; then the first reply and their follow-up where it has
    no verdict), and the accuracy and second turns equal their get_judgment + compute_final_metrics on the same
    replies (tests/oc_second_turn.py)."""
    import os
    import subprocess

    oc_python = Path(os.environ.get("CRITIC_OPENCOMPASS_VENV", Path(__file__).resolve().parents[1] /
                                    ".venv-opencompass")) / "bin" / "python"
    if not oc_python.exists():
        pytest.skip(f"OpenCompass environment not found at {oc_python.parent.parent}")
    turns = _scripted_turns("gpt")
    docs = data.load_task_docs(data_dir=SHARED, category="math")
    replies = {"turns": {d["user_message"]: list(turns[(d["pair_id"], d["order"])]) for d in docs},
               "follow_up": docs[0]["follow_up"]}
    (tmp_path / "replies.json").write_text(json.dumps(replies), encoding="utf-8")
    env = {**os.environ, "JUDGEBENCH_DATA_DIR": str(SHARED), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([str(oc_python), str(Path(__file__).resolve().parent / "oc_second_turn.py"),
                          str(tmp_path / "out.json"), "critic_judgebench_math", str(tmp_path / "replies.json")],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    expected, asked_again = _authors_metrics("gpt", turns, category="math")
    assert out["metrics"]["accuracy"] == pytest.approx(expected["accuracy"], abs=1e-9)
    assert out["metrics"]["second_turns"] == asked_again > 0 and out["metrics"]["second_turns_missing"] == 0
    system = authors()[0].render_template("arena_hard_judge_system")
    firsts = [m for m in out["sent"] if len(m) == 2]
    seconds = [m for m in out["sent"] if len(m) == 4]
    assert len(firsts) == len(docs) and len(seconds) == asked_again
    assert sorted(json.dumps(m) for m in firsts) == sorted(json.dumps(
        [{"role": "system", "content": system}, {"role": "user", "content": d["user_message"]}]) for d in docs)
    for messages in seconds:
        first, _ = replies["turns"][messages[1]["content"]]
        assert messages[0]["content"] == system
        assert messages[2:] == [{"role": "assistant", "content": first},
                                {"role": "user", "content": replies["follow_up"]}]
