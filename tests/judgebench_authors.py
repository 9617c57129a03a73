"""The JudgeBench authors' own code from ../shared/data/judgebench, imported for the tests to compare against:
``utils/prompts.py`` (render_template), ``utils/judges.py`` (each judge's get_judgment and readers) and
``utils/metrics.py`` (compute_final_metrics), with small shims for what they import and we do not run (their API
clients in ``utils/models.py``, transformers' tokenizers for PandaLM / JudgeLM). Nothing here is copied: the files
are executed as they are, under module names of their own, and ``sys.modules`` is left as it was found."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import types
from contextlib import contextmanager
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "judgebench"
needs_shared = pytest.mark.skipif(not (SHARED / "utils" / "judges.py").is_file(),
                                  reason=f"{SHARED} (the authors' checkout, shared data) is absent")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ScriptedAPI:
    """Their ``models.get_chat_api_from_model(...)`` stand-in: ``chat`` / ``complete`` answer from ``replies``
    (a callable of the messages, or of the prompt), and every call is kept (``calls``)."""

    def __init__(self, replies):
        self.replies, self.calls = replies, []

    async def chat(self, messages, **kwargs):
        self.calls.append(([dict(m) for m in messages], kwargs))
        return self.replies(messages)

    async def complete(self, prompt, **kwargs):
        self.calls.append((prompt, kwargs))
        return self.replies(prompt)


class _Tokenizer:
    """PandaLM / JudgeLM truncate the answers with the judge's tokenizer to a 2,048-token context; one token per
    text here, so nothing is cut (we do not truncate: docs/protocols/judgebench.md)."""

    def __call__(self, text, **kwargs):
        return types.SimpleNamespace(input_ids=[text])

    def decode(self, ids):
        return "".join(ids)


def _transformers_shim():
    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda **kwargs: _Tokenizer())
    return transformers


@contextmanager
def _their_package():
    saved = {k: sys.modules.get(k) for k in ("utils", "utils.prompts", "utils.models", "transformers")}
    package = types.ModuleType("utils")
    package.__path__ = [str(SHARED / "utils")]
    models = types.ModuleType("utils.models")
    models.current = None
    models.get_chat_api_from_model = lambda name: models.current
    sys.modules.update({"utils": package, "utils.models": models, "transformers": _transformers_shim()})
    try:
        sys.modules["utils.prompts"] = _load("utils.prompts", SHARED / "utils" / "prompts.py")
        package.prompts, package.models = sys.modules["utils.prompts"], models
        yield package, models
    finally:
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value


_CACHE: dict = {}


def authors():
    """(prompts, judges, metrics, models shim) of their code, loaded once."""
    if not _CACHE:
        with _their_package() as (package, models):
            judges = _load("judgebench_authors_judges", SHARED / "utils" / "judges.py")
            _CACHE.update(prompts=package.prompts, judges=judges, models=models,
                          metrics=_load("judgebench_authors_metrics", SHARED / "utils" / "metrics.py"))
    return _CACHE["prompts"], _CACHE["judges"], _CACHE["metrics"], _CACHE["models"]


def judgment(judge_name: str, question: str, answer_a: str, answer_b: str, replies) -> tuple[dict, ScriptedAPI]:
    """Their ``get_judge_from_judge_name_and_model(judge_name, ...).get_judgment(question, a, b)`` with the scripted
    API answering (``replies``); their exceptions become ``None``, as their run_judge.py records a failed pair."""
    _, judges, _, models = authors()
    api = ScriptedAPI(replies)
    models.current = api
    saved = sys.modules.get("transformers")
    sys.modules["transformers"] = _transformers_shim()
    # JudgeLM imports AutoTokenizer in its class body, where its __init__ cannot see it: given as a global here
    judges.AutoTokenizer = sys.modules["transformers"].AutoTokenizer
    try:
        judge = judges.get_judge_from_judge_name_and_model(judge_name, "scripted-model")
    finally:
        if saved is None:
            sys.modules.pop("transformers", None)
        else:
            sys.modules["transformers"] = saved
    try:
        return asyncio.run(judge.get_judgment(question, answer_a, answer_b)), api
    except Exception:
        return None, api


def decisions(judge_name: str, replies: list[str], question: str = "q", answer_a: str = "a",
              answer_b: str = "b") -> list[str | None]:
    """Their judge's decision for each reply (its get_judgment with the API answering that reply; None where it
    raises, as their run_judge.py records a failed judgment), in one event loop."""
    _, judges, _, models = authors()
    api = ScriptedAPI(lambda sent: current[0])
    current = [""]
    models.current = api
    saved = sys.modules.get("transformers")
    sys.modules["transformers"] = _transformers_shim()
    judges.AutoTokenizer = sys.modules["transformers"].AutoTokenizer
    try:
        judge = judges.get_judge_from_judge_name_and_model(judge_name, "scripted-model")
    finally:
        if saved is None:
            sys.modules.pop("transformers", None)
        else:
            sys.modules["transformers"] = saved

    async def every():
        out = []
        for reply in replies:
            current[0] = reply
            try:
                out.append((await judge.get_judgment(question, answer_a, answer_b))["decision"])
            except Exception:
                out.append(None)
        return out

    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # Vanilla prints every prompt and reply
        return asyncio.run(every())
