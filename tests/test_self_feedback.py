"""SAvg and the text-domain EAvg (CriticBench correction columns): the critic revises with its own feedback (from
a stage-1 run's saved samples) or with none; objective checks on math / code, the judge on the text domains."""


import pytest
from helpers import scripted_lm

import critic_tasks
from critic_tasks.hookspecs import hookimpl
from critic_tasks.llm.backends import Reply as JudgeReply
from critic_tasks.plugins import plugin_manager
from critic_tasks.protocols.criticbench import data

lm_eval = pytest.importorskip("lm_eval")


class RecordingJudge:
    """An in-process judge backend: grades 7, remembers every prompt."""

    prompts: list[str] = []

    def __init__(self, settings):
        self.settings = settings

    def generate(self, prompts, progress=True, on_result=None):
        RecordingJudge.prompts += list(prompts)
        replies = [JudgeReply("Fine.\nScore: 7") for _ in prompts]
        for i, reply in enumerate(replies):
            if on_result:
                on_result(i, reply)
        return replies


class RecordingJudgePlugin:
    @hookimpl
    def critic_llm_backend(self, name, settings):
        return RecordingJudge(settings) if name == "recording" else None


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    monkeypatch.setenv(data.DATA_DIR_ENV, "sample")
    monkeypatch.setenv("CRITIC_JUDGE_BACKEND", "recording")
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "recording-judge")
    monkeypatch.setenv("CRITIC_JUDGE_CACHE", "off")
    monkeypatch.delenv("CRITIC_SELF_FEEDBACK", raising=False)
    pm = plugin_manager()
    pm.register(RecordingJudgePlugin(), name="recording-judge")
    RecordingJudge.prompts = []
    yield
    pm.unregister(name="recording-judge")


def _run(lm, tasks, **kwargs):
    return lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=critic_tasks.task_manager(), bootstrap_iters=0,
                                   **kwargs)


# ----------------------------------------------------------------------------- EAvg on the text domains


def test_empty_feedback_sub_prompts_carry_no_feedback_and_are_judged_without_one():
    docs = data.load_correction("dev", None, "sample", fmt="sub")
    lm = scripted_lm(lambda prompt: "A revised response.")
    out = _run(lm, ["critic_correction_empty_sub"])
    assert len(lm.prompts) == len(docs) > 0
    for prompt in lm.prompts:
        assert "### Feedback:" not in prompt and "feedback" not in prompt.lower()
    for doc in docs:  # not one annotated critique reached the critic or the judge
        assert not any(doc["feedback"] in p for p in lm.prompts + RecordingJudge.prompts)
    assert len(RecordingJudge.prompts) == len(docs)
    assert all("Critique of the original response" not in p and "without any critique" in p
               for p in RecordingJudge.prompts)
    metrics = out["results"]["critic_correction_empty_sub"]
    assert metrics["judge_score,none"] == 7 and metrics["judge_parse_rate,none"] == 100


def test_with_feedback_judge_prompt_keeps_the_critique():
    from critic_tasks.protocols.criticbench.judge_prompts import correction_judge_prompt

    doc = data.load_correction("dev", "chat", "sample", fmt="sub")[0]
    assert "Critique of the original response\n" + doc["feedback"].strip() in correction_judge_prompt(doc, "x")
    assert doc["feedback"].strip() not in correction_judge_prompt({**doc, "with_feedback": False}, "x")
