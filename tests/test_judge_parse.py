"""parse_judge_score, summarize and the judge prompt builders: pure functions, hand-made inputs."""


import pytest

from critic_tasks.judge_prompts import (PROMPT_VERSION, comparison_judge_prompt, correction_judge_prompt,
                                        feedback_judge_prompt)
from critic_tasks.judging import JudgeResult, parse_judge_score, summarize
from critic_tasks.plugins.judge import JudgeSettings


@pytest.mark.parametrize("text, expected", [
    ("The critique misses the bug.\nScore: 4", 4.0),
    ("Score: 7.5", 7.5),
    ("score:9", 9.0),
    ("**Score:** 6", 6.0),
    ("**Score**: 6", 6.0),
    ("Score: [[3]]", 3.0),
    ("Final Score: 9/10", 9.0),
    ("Score: 10.", 10.0),
    ("Score：5", 5.0),  # full-width colon
    ("The reference (Score: 8) is better.\nScore: 5", 5.0),  # the last marker wins
    ("Score: 5\nOn reflection... Score: 6", 6.0),
    ("Score: 7\nScore: 0", 7.0),  # out-of-range markers are skipped
    ("Score: 6 then Score: 80", 6.0),
    ("Score: 1", 1.0),
])
def test_parse_judge_score(text, expected):
    assert parse_judge_score(text) == expected


@pytest.mark.parametrize("text", [None, "", "Looks good, 8 out of 10.", "Score: 0", "Score: 11", "Score: N/A",
                                  "Subscore: 7", "Decision: 8"])
def test_parse_judge_score_failures(text):
    assert parse_judge_score(text) is None


def test_summarize_by_hand():
    results = [
        JudgeResult(8.0, "Score: 8", None, cached=True),
        JudgeResult(None, "no score here", "unparseable", cached=False),
        JudgeResult(5.5, "Score: 5.5", None, cached=False),
        JudgeResult(None, None, "HTTP 503", cached=False),
        JudgeResult(2.0, "Score: 2", None, cached=True),
    ]
    s = summarize(results)
    assert s["judge_score"] == pytest.approx((8 + 5.5 + 2) / 3)  # 5.1666...
    assert s["judge_parse_rate"] == pytest.approx(60.0)  # 3 of 5
    assert (s["n"], s["n_failed"], s["failed_indices"]) == (5, 2, [1, 3])
    assert (s["n_call_errors"], s["n_cached"]) == (1, 2)
    assert "judge" not in s
    settings = JudgeSettings(backend="hf", model="m", cache=None)
    assert summarize(results, settings)["judge"] == settings.identity()
    empty = summarize([])
    assert (empty["judge_score"], empty["judge_parse_rate"], empty["n"], empty["n_failed"]) == (None, None, 0, 0)


def test_identity_has_prompt_version_and_no_key():
    s = JudgeSettings(backend="openai", model="gpt-4-1106-preview", api_key="sk-x", cache=None)
    assert s.identity()["prompt_version"] == PROMPT_VERSION
    assert "sk-x" not in str(s.identity()) and "api_key" not in s.identity()


ITEM = {"question": "Translate: good morning", "generation": "Bonjour", "feedback": "Accurate; could add tone.",
        "feedback_score": "6", "metadata": {"quality": "high"}}


def _ends_with_score_instruction(prompt):
    lines = prompt.rstrip().splitlines()
    assert "Score: x" in lines and "8" in prompt


def test_feedback_prompt_structure():
    p = feedback_judge_prompt(ITEM, "The translation is wrong.")
    for piece in ("Translate: good morning", "Bonjour", "Accurate; could add tone.", "The translation is wrong."):
        assert piece in p
    # order: task, response, reference (worth 8), the critique to grade, then the scoring instruction
    order = [p.index(x) for x in ("### Task", "### Response under review", "### Reference critique (worth 8)",
                                  "### Critique to grade", "Score: x")]
    assert order == sorted(order)
    assert "### Article" not in p and "### Unit tests" not in p
    _ends_with_score_instruction(p)


def test_feedback_prompt_shows_article_tests_and_execution():
    item = dict(ITEM, article="None\nA long article.", unit_test="assert f(1) == 2",
                exec_rest={"status": "NOT PASSED", "detail": "AssertionError"})
    p = feedback_judge_prompt(item, "crit")
    assert p.index("### Article") < p.index("### Task") < p.index("### Unit tests")
    assert "status: NOT PASSED" in p and "detail: AssertionError" in p
    assert "(empty output)" in feedback_judge_prompt(ITEM, "  ")


def test_comparison_prompt_structure():
    item = {"question": "Which is right?", "unit_test": "assert g() == 1",
            "sub": {"generation_a": "answer A", "generation_b": "answer B", "feedback": "B is better.",
                    "exec_rest_a": "PASSED"}}
    p = comparison_judge_prompt(item, "A is better.")
    order = [p.index(x) for x in ("Which is right?", "answer A", "PASSED", "answer B", "B is better.", "A is better.")]
    assert order == sorted(order)
    assert "Reference comparison (worth 8)" in p and "exec_rest_b" not in p
    _ends_with_score_instruction(p)
    # fields lifted to the top level by a loader work too
    flat = {"question": "q", **item["sub"]}
    assert "answer B" in comparison_judge_prompt(flat, "x")


def test_correction_prompt_structure():
    item = dict(ITEM, correction="Bonjour (formal).")
    p = correction_judge_prompt(item, "Salut")
    order = [p.index(x) for x in ("### Task", "### Original response", "### Critique of the original response",
                                  "### Reference correction (worth 8)", "### Correction to grade", "Score: x")]
    assert order == sorted(order)
    assert "Accurate; could add tone." in p and "Bonjour (formal)." in p and "Salut" in p


def test_missing_reference_is_a_clear_error():
    with pytest.raises(ValueError, match="reference critique"):
        feedback_judge_prompt({"question": "q", "generation": "g"}, "x")
    with pytest.raises(ValueError, match="reference correction"):
        correction_judge_prompt(ITEM, "x")
    with pytest.raises(ValueError, match="reference comparison"):
        comparison_judge_prompt({"question": "q", "sub": {"generation_a": "a", "generation_b": "b"}}, "x")
