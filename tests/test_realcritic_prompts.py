"""RealCritic's prompts (issue 43): the authors' by default, byte for byte what their ``utils.construct_message``
renders (their code imported from ../shared/data/realcritic, ``realcritic_authors``) for cross-critique, direct CoT
and self-critique on every item of the eight tasks; their templates read from the pinned utils.py without running
it; ``prompt: ours`` on the bundled sample, recorded in the documents and the results."""

from __future__ import annotations

import hashlib
import json
import types

import pytest
import realcritic_authors

from critic_tasks import engine
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols import authors
from critic_tasks.protocols.realcritic import data, prompts, stages

SHARED = realcritic_authors.SHARED
needs_authors = pytest.mark.skipif(not realcritic_authors.AVAILABLE or not (SHARED / "data" / "mix_data").is_dir(),
                                   reason=f"{SHARED} (the authors' code and data) is absent")
STAMP = "2026-11-22T10-00-00.123456"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.delenv(authors.MIRROR_ENV, raising=False)
    authors._text.cache_clear()
    prompts.authors_templates.cache_clear()
    yield
    authors._text.cache_clear()
    prompts.authors_templates.cache_clear()


def _theirs(prompt_type: str, user_prompt_type: str, question: str, reasoning: str | None = None) -> tuple[str, str]:
    theirs = realcritic_authors.load()
    args = types.SimpleNamespace(prompt_type=prompt_type, user_prompt_type=user_prompt_type)
    example = {"question": question} if reasoning is None else {"question": question, "reasoning": [reasoning]}
    system, user = theirs.utils.construct_message(args, example, message=[])
    assert (system["role"], user["role"]) == ("system", "user")
    return system["content"], user["content"]


def _stage1_samples(folder, task: str, replies: list[str]):
    """Stage 1's samples file (lm-eval's --log_samples schema) with these replies to the task's items."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = data.load_task(task, SHARED)
    lines = [json.dumps({"doc_id": n, "doc": {**d, "dimension": stages.DIRECT, "round": 1}, "resps": [[r]],
                         "filtered_resps": [r]}) for n, (d, r) in enumerate(zip(docs, replies))]
    (folder / f"samples_{stages.task_name(stages.DIRECT, task)}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


# shapes of a stage-1 reply: surrounding whitespace (math_eval.py strips it before saving it as reasoning), braces
# and format fields that str.format must not touch, a reply that is only whitespace
REPLY_SHAPES = ("  \n{question} is {0} \\boxed{{7}}\n\n", "plain \\boxed{B}", "\t\n", "x = {a} }{ \\frac{1}{2}\n")


@needs_authors
@pytest.mark.parametrize("task", data.TASKS)
def test_every_prompt_is_the_authors_byte_for_byte_in_each_mode(task, tmp_path):
    cross = stages.load_task_docs(stages.CROSS, SHARED, subset=task)
    direct = stages.load_task_docs(stages.DIRECT, SHARED, subset=task)
    replies = [REPLY_SHAPES[n % len(REPLY_SHAPES)] + d["question"][:40] * (n % 2) for n, d in enumerate(cross)]
    own = stages.load_task_docs(stages.SELF, SHARED, subset=task,
                                self_solution=str(_stage1_samples(tmp_path / "stage1", task, replies)))
    rows = [json.loads(line) for line in (SHARED / data.task_file(task)).read_text().splitlines() if line.strip()]
    assert len(cross) == len(direct) == len(own) == len(rows)
    for row, c, d, s, reply in zip(rows, cross, direct, own, replies):
        assert c["prompt"] == d["prompt"] == s["prompt"] == "authors"
        # cross-critique: the released reasoning as it is
        assert (c["system_message"], prompts.critic_prompt(c)) == _theirs(
            "critic_and_correct", "critic_and_correct", row["question"], row["reasoning"])
        # direct CoT (the API and local scripts' direct-cot / default-cot)
        assert (d["system_message"], prompts.critic_prompt(d)) == _theirs("direct-cot", "default-cot", row["question"])
        # self-critique: the critic's stage-1 reply, stripped as math_eval.py saves it
        assert (s["system_message"], prompts.critic_prompt(s)) == _theirs(
            "critic_and_correct", "critic_and_correct", row["question"], reply.rstrip().strip())


@needs_authors
def test_the_templates_are_read_from_the_pinned_file_without_running_it():
    theirs = realcritic_authors.load().utils
    source = (SHARED / "utils.py").read_bytes()
    assert hashlib.sha256(source).hexdigest() == prompts.UTILS.sha256
    found = prompts.templates_from_source(source.decode())
    assert found["SYSTEM_PROMPT_TEMPLATES"] == theirs.SYSTEM_PROMPT_TEMPLATES
    assert found["USER_PROMPT_TEMPLATE"] == theirs.USER_PROMPT_TEMPLATE
    # reading executes nothing: a call that is not a literal's .strip() is refused
    with pytest.raises(DataError, match="not a string literal"):
        prompts.templates_from_source('SYSTEM_PROMPT_TEMPLATES = {"a": __import__("os").getcwd()}\n'
                                      'USER_PROMPT_TEMPLATE = {}\n')
    with pytest.raises(DataError, match="no USER_PROMPT_TEMPLATE"):
        prompts.templates_from_source('SYSTEM_PROMPT_TEMPLATES = {"a": "b"}\n')


def test_the_sample_defaults_to_ours_and_an_explicit_authors_prompt_there_fetches_the_file(tmp_path, monkeypatch):
    docs = stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k")
    assert {d["prompt"] for d in docs} == {"ours"} and {d["system_message"] for d in docs} == {""}
    assert "## Your critique" in prompts.critic_prompt(docs[0])
    # offline with nothing cached, the authors' prompt on the sample is one line naming the settings
    monkeypatch.setattr(authors, "_download", lambda url: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(DataError) as err:
        stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k", prompt="authors")
    assert "utils.py" in str(err.value) and "prompt: ours" in str(err.value) and "\n" not in str(err.value)
    if realcritic_authors.AVAILABLE:  # a mirror holding the pinned file serves it
        mirror = tmp_path / "mirror" / data.REPO / prompts.UTILS.commit
        mirror.mkdir(parents=True)
        (mirror / "utils.py").write_bytes((SHARED / "utils.py").read_bytes())
        monkeypatch.setenv(authors.MIRROR_ENV, str(tmp_path / "mirror"))
        docs = stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k", prompt="authors")
        assert docs[0]["system_message"].startswith("I will provide a math problem")
        assert prompts.critic_prompt(docs[0]).startswith("The following is the data for your task:")
    with pytest.raises(ConfigError, match=r"prompt=.paper.: expected one of authors, ours"):
        stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k", prompt="paper")


def test_the_prompt_is_recorded_in_the_results():
    docs = stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k")
    values, records = engine.score_task("critic_realcritic_gsm8k", docs, ["\\boxed{21}", "\\boxed{17}"])
    assert values["prompt"] == "ours" and {r.prompt for r in records} == {"ours"}
