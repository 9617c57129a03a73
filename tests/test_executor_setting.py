"""CRITIC_EXECUTOR is read in one place: ``get_executor()`` without a name builds the executor it names, so a check
that falls back to ``get_executor()`` (a correction check, the revision pipeline) runs what the preflight, the lm-eval
filter, OpenCompass's evaluator and the CLI run (issue 35: the setting was read in five places, and the fallback
always built the sandbox whatever the setting said)."""

import pytest

from critic_tasks.core.errors import ConfigError
from critic_tasks.protocols.criticbench.correction import check_corrections
from critic_tasks.sandbox import get_executor


def test_get_executor_without_a_name_builds_the_one_the_setting_names(monkeypatch):
    monkeypatch.setenv("CRITIC_EXECUTOR", "no-such-runner")
    with pytest.raises(ConfigError, match=r"no code executor named 'no-such-runner' \(CRITIC_EXECUTOR\)"):
        get_executor()


def test_a_name_given_wins_over_the_setting(monkeypatch):
    monkeypatch.setenv("CRITIC_EXECUTOR", "no-such-runner")
    with pytest.raises(ConfigError, match="'other-runner'"):
        get_executor("other-runner")


def test_a_correction_check_without_an_executor_runs_the_one_the_setting_names(monkeypatch):
    """A math_pot revision runs a program: with no executor handed, the check builds CRITIC_EXECUTOR's (here one
    that does not exist: the one-line error names it), never the sandbox behind the setting's back."""
    monkeypatch.setenv("CRITIC_EXECUTOR", "no-such-runner")
    item = {"domain": "math_pot", "ground_truth_answer": "4", "question": "2 + 2?"}
    with pytest.raises(ConfigError, match="no-such-runner"):
        check_corrections("math_pot", ["```python\nprint(2 + 2)\n```"], [item])
