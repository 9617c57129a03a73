"""What a run remembers is that run's (core/run_state.py): a warning said once, an endpoint found answering. A second
run in the same process (critic-eval's main called again, a notebook, the next test) says and checks them again."""

import logging

from critic_tasks.core.run_state import new_run
from critic_tasks.llm.backends import openai_compatible
from critic_tasks.llm.settings import LLMSettings
from critic_tasks.protocols.criticbench import scoring
from critic_tasks.protocols.criticbench.scoring import LikertRecord
from critic_tasks.sandbox import _isolation as isolation


def _said(caplog, text):
    return sum(text in r.getMessage() for r in caplog.records)


def test_a_warning_said_once_is_said_again_by_the_next_run(caplog):
    with caplog.at_level(logging.WARNING, logger="critic_tasks"):
        isolation._say_once("test-key", "critic_tasks sandbox: a test's note")
        isolation._say_once("test-key", "critic_tasks sandbox: a test's note")
        isolation._announce("rlimits", True)
        isolation._announce("rlimits", True)
        assert (_said(caplog, "a test's note"), _said(caplog, "'rlimits'")) == (1, 1)
        new_run()
        isolation._say_once("test-key", "critic_tasks sandbox: a test's note")
        isolation._announce("rlimits", True)
        assert (_said(caplog, "a test's note"), _said(caplog, "'rlimits'")) == (2, 2)


def test_an_undefined_spearman_is_said_each_time_it_is_computed(caplog):
    # constant predictions: Spearman undefined, reported 0, with one warning line per computation (lm-eval computes
    # each key once), none when it is only counted (say=False): no per-run memory of what was said
    records = [LikertRecord(domain="qa", pred=4.0, gold=g) for g in (1.0, 2.0, 3.0)]
    with caplog.at_level(logging.WARNING, logger="critic_tasks"):
        assert scoring.likert_spearman(records) == (0.0, ["constant predictions over 3 items: Spearman undefined, "
                                                          "reported 0"])
        scoring.likert_spearman(records, say=False)
        assert _said(caplog, "constant predictions over 3 items") == 1
        scoring.likert_spearman(records)
        assert _said(caplog, "constant predictions over 3 items") == 2


def test_an_endpoint_found_answering_is_asked_again_by_the_next_run(monkeypatch):
    asked = []
    monkeypatch.setattr(openai_compatible, "_ask_models", lambda url, key, timeout: asked.append(url))  # answers
    monkeypatch.delenv("CRITIC_ENDPOINT_TIMEOUT", raising=False)
    settings = LLMSettings.from_env("judge", model="j", base_url="http://127.0.0.1:9/v1", api_key="k")
    openai_compatible.check_endpoints(settings)
    openai_compatible.check_endpoints(settings)  # the same run: each task build need not ask again
    assert asked == ["http://127.0.0.1:9/v1"]
    new_run()
    openai_compatible.check_endpoints(settings)
    assert asked == ["http://127.0.0.1:9/v1"] * 2
