"""Test helpers shared by several test modules (one copy each)."""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from itertools import combinations


def summarize(grades) -> dict:
    """Hand-counted summary of a list of ``Grade``s: plain mean of the usable scores and the failures."""
    scores = [g.score for g in grades if g.score is not None]
    failed = [i for i, g in enumerate(grades) if g.score is None]
    return {"judge_score": sum(scores) / len(scores) if scores else None,
            "judge_parse_rate": 100.0 * len(scores) / len(grades) if grades else None,
            "n_failed": len(failed), "failed_indices": failed,
            "n_call_errors": sum(g.text is None for g in grades), "n_cached": sum(g.cached for g in grades)}


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k by enumeration: the share of k-subsets of n samples (the first c correct) holding a correct one."""
    subsets = list(combinations(range(n), k))
    return sum(any(i < c for i in subset) for subset in subsets) / len(subsets)


def scripted_lm(reply, tokenizer=None):
    """An lm-eval model whose answer to each prompt is ``reply(prompt)``; ``.prompts`` records what it was asked.

    With ``tokenizer`` (a transformers tokenizer), it renders chat prompts as lm-eval's ``hf`` model does
    (``--apply_chat_template``): the tokenizer's own chat template, with the generation prompt."""
    from lm_eval.api.model import LM

    class ScriptedLM(LM):
        def __init__(self):
            super().__init__()
            self.prompts: list[str] = []

        if tokenizer is not None:
            tokenizer_name = getattr(tokenizer, "name_or_path", "scripted")

            def apply_chat_template(self, chat_history, add_generation_prompt=True):
                return tokenizer.apply_chat_template(chat_history, tokenize=False,
                                                     add_generation_prompt=add_generation_prompt)

            def chat_template(self, chat_template=False):
                return tokenizer.chat_template

        def generate_until(self, requests, disable_tqdm=False):
            self.prompts += [r.args[0] for r in requests]
            return [reply(r.args[0]) for r in requests]

        def loglikelihood(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

    return ScriptedLM()


def hashed_critic(prompt: str, unreadable_every: int = 9) -> str:
    """A critic that reads nothing: a reply derived from the prompt's hash, one in ``unreadable_every`` unreadable
    ("I cannot decide."); else a verdict A/B/C for a comparison prompt, a 1-7 score (``Score:`` where the prompt asks
    for that marker, else ``Decision:``) for the others, then a line of reasoning."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    if h % unreadable_every == 0:
        return "I cannot decide."
    if "Decision: A`, `Decision: B`" in prompt:
        return f"Decision: {'ABC'[h % 3]}\nbecause"
    marker = "Score" if "`Score: x`" in prompt else "Decision"
    return f"{marker}: {h % 7 + 1}\nbecause"


def correction_reply(doc: dict) -> str:
    """Revisions whose outcome is known from how the sample was written (see sample_data/README.md)."""
    even = doc["item_index"] % 2 == 0
    if doc["domain"] == "math_cot":
        return f"Fixed.\n#### RESULT: {doc['ground_truth_answer']}" if even else "I am not sure."
    if doc["domain"] == "math_pot" and even:
        return f"```python\nclass Solution:\n    def solution(self):\n        return {doc['ground_truth_answer']}\n```"
    return f"Revised:\n```python\n{doc['generation']}\n```"  # unchanged: passes only if it already did


def expected_pass(doc: dict) -> tuple[bool, bool]:
    """(parsed, passed) for correction_reply, from the sample's design: high-quality math_pot and
    code_not_exec responses are correct, code_exec ones fail an edge case, low/med ones are wrong."""
    even = doc["item_index"] % 2 == 0
    if doc["domain"] == "math_cot":
        return even, even
    if doc["domain"] == "math_pot" and even:
        return True, True
    return True, doc["quality"] == "high" and doc["domain"] in ("math_pot", "code_not_exec")


class InProcessBackend:
    """An LLM backend living in the test process, as a third party would ship one under the plugin entry point:
    subclasses give ``reply(prompt) -> Reply``; ``generate`` reports each reply as it comes, as the real ones do."""

    def __init__(self, settings):
        self.settings = settings

    def reply(self, prompt: str):
        raise NotImplementedError

    def generate(self, prompts, progress=True, on_result=None):
        replies = []
        for i, prompt in enumerate(prompts):
            replies.append(self.reply(prompt))
            if on_result:
                on_result(i, replies[-1])
        return replies


@contextmanager
def backend_plugin(backend_name: str, backend):
    """``backend`` (a class taking the settings) answers for ``CRITIC_*_BACKEND=backend_name`` inside the block, through
    the same plugin hook a third party's package would implement."""
    from critic_tasks.hookspecs import hookimpl, plugin_manager

    class Plugin:
        @hookimpl
        def critic_llm_backend(self, name, settings):
            return backend(settings) if name == backend_name else None

    pm = plugin_manager()
    pm.register(Plugin(), name=f"test-backend-{backend_name}")
    try:
        yield
    finally:
        pm.unregister(name=f"test-backend-{backend_name}")


def cli_without_services(monkeypatch) -> None:
    """The environment of a critic-eval command checked before any model loads: the bundled sample, no request
    cache, no judge or reviser configured."""
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("CRITIC_REQUEST_CACHE", "off")
    for var in ("CRITIC_JUDGE_MODEL", "CRITIC_REVISER_MODEL", "CRITIC_REVISERS"):
        monkeypatch.delenv(var, raising=False)


def one_line(capsys) -> str:
    """The one non-blank line a refused command wrote to stderr (fails when there are more)."""
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def with_logged_intervals(out: dict) -> dict:
    """lm-eval's results of a ``simple_evaluate(..., log_samples=True)`` run with each task's intervals computed from
    its logged rows, as `critic-eval summary` computes them from the samples files (an interval is no lm-eval metric):
    the shape of our own results files (rescore, judge, score, OpenCompass), which carry the interval keys."""
    from critic_tasks.reports.results import logged_intervals

    results = {task: dict(metrics) for task, metrics in out["results"].items()}
    for task, samples in out["samples"].items():
        results[task].update(logged_intervals(task, ((task, s) for s in samples)))
    return results


_CLI_MODELS: dict = {}  # model name -> the scripted lm its next CLI run gets


def scripted_cli_model(name: str, reply, tokenizer=None):
    """``scripted_lm(reply, tokenizer)`` under a model name lm-eval's CLI can load (``critic-eval --model name``):
    registered once per name (with or without a tokenizer: one per name); each call hands the CLI a fresh scripted
    lm, returned so a test reads its ``.prompts``."""
    from lm_eval.api.registry import get_model, register_model

    try:
        get_model(name)
    except ValueError:
        class Scripted(type(scripted_lm(reply, tokenizer))):
            @classmethod
            def create_from_arg_string(cls, arg_string, additional_config=None):
                return _CLI_MODELS[name]

            @classmethod
            def create_from_arg_obj(cls, arg_dict, additional_config=None):
                return _CLI_MODELS[name]

        register_model(name)(Scripted)
    _CLI_MODELS[name] = scripted_lm(reply, tokenizer)
    return _CLI_MODELS[name]


def write_lm_eval_run(folder, task: str, docs: list[dict], replies: list[str], time: str):
    """An lm-eval output folder of ``task`` with one reply per document: the results file and its samples file,
    rows as lm-eval logs them (each document's record from the protocol, the fields its metrics take)."""
    import json

    from critic_tasks import registry

    kind = registry.TASKS[task].kind_spec
    folder.mkdir(parents=True)
    lines = []
    for doc_id, (doc, reply) in enumerate(zip(docs, replies)):
        record = kind.protocol_spec.record(doc, reply)
        fed = {m.key: record.as_dict() for m in kind.metrics if not m.ci and m.accepts(record)}
        doc_hash = hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")).hexdigest()
        lines.append({"doc_id": doc_id, "doc": doc, "target": kind.protocol_spec.target(doc), "arguments": {},
                      "resps": [[reply]], "filtered_resps": [reply], "filter": "none", "metrics": list(fed),
                      "doc_hash": doc_hash, **fed})
    keys = {k for line in lines for k in line["metrics"] if kind.metric(k).scale != "text"}  # a number each
    (folder / f"results_{time}.json").write_text(json.dumps({
        "results": {task: {f"{k},none": 0.0 for k in keys}}, "config": {"model_args": "pretrained=my-judge"},
        "configs": {task: {"metadata": {"version": 1.0}}}}))
    (folder / f"samples_{task}_{time}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


@contextmanager
def answering_server(status: int, body: bytes = b"", asked: list | None = None):
    """A local HTTP server that answers every GET with ``status`` and ``body`` (JSON), noting each path asked in
    ``asked``: a real endpoint that refuses, for the checks made before a run. Yields its base URL."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if asked is not None:
                asked.append(self.path)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
