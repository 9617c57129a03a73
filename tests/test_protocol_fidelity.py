"""The protocols' defaults against the papers and their released code (issue 28), each value computed here by hand:
MultiCritique's per-domain averaging, self-consistency that samples, one default budget in both harnesses, the
released prompt text read at run time, RCO's system message, and one line for mixed-type ids in every loader."""

import ast
import json
import shutil
from pathlib import Path

import pytest

import critic_tasks
from critic_tasks import cli, registry
from critic_tasks.adapters.lm_eval import task_functions
from critic_tasks.core.errors import DataError
from critic_tasks.protocols.criticbench import data as cb_data
from critic_tasks.protocols.revision.scoring import RevisionRecord, multicritique_metrics, per_reviser_pass_rates

# ----------------------------------------------------------------------------- 1. MultiCritique: per domain


def test_multicritique_averages_per_domain_then_across_domains_as_criticevals_codebase():
    """The test split's checked domains hold 50 / 50 / 30 / 30 items (math_cot, math_pot, code_exec, code_not_exec).
    A reviser passing 30, 25, 6 and 6 of them: pooled, 67 / 160 = 41.875; CriticEval's codebase (a pass rate per
    domain file, then their mean): (60 + 50 + 20 + 20) / 4 = 37.5. A second reviser passing 40, 40, 15, 3:
    (80 + 80 + 50 + 10) / 4 = 55, so R_obj = (37.5 + 55) / 2 = 46.25. R_sub likewise: chat's grades 9, 9, 9, 1
    (mean 7) and qa's 3 (mean 3) give (7 + 3) / 2 = 5, not the pooled 31 / 5 = 6.2."""
    plan = {"math_cot": (50, 30, 40), "math_pot": (50, 25, 40), "code_exec": (30, 6, 15), "code_not_exec": (30, 6, 3)}
    records = [RevisionRecord(domain=d, item=f"{d}{i}", checked=True, revisers=("one", "two"),
                              passed=(i < one, i < two))
               for d, (n, one, two) in plan.items() for i in range(n)]
    records += [RevisionRecord(domain="chat", rqs=g) for g in (9.0, 9.0, 9.0, 1.0)]
    records += [RevisionRecord(domain="qa", rqs=3.0)]
    out = multicritique_metrics(records)
    assert out["r_obj"] == pytest.approx(46.25)
    assert out["r_sub"] == pytest.approx(5.0)
    assert per_reviser_pass_rates(records) == pytest.approx({"one": 37.5, "two": 55.0})
    # one reviser alone: the example, 37.5 where pooling gives 41.9
    alone = [RevisionRecord(domain=r.domain, checked=True, revisers=("one",), passed=r.passed[:1])
             for r in records if r.checked]
    assert multicritique_metrics(alone)["r_obj"] == pytest.approx(37.5)


# ----------------------------------------------------------------------------- 6. mixed-type ids, every loader


def _jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def _critiquellm_point(tmp_path):
    rows = [{"id": i, "category": "数学计算", "question": f"q{i}", "reference": "r", "response": "a", "model": "m",
             "human_score": 5} for i in (0, "item-1")]
    return _jsonl(tmp_path / "pointwise" / "alignbench_reference_based_sample.jsonl", rows), "id", "[1]"


def _critiquellm_pair(tmp_path):
    rows = [{"id": i, "category": "数学计算", "question": f"q{i}", "reference": "r", "response_1": "a",
             "response_2": "b", "human_score_1": 5, "human_score_2": 3, "label": 0} for i in (0, "item-1")]
    return _jsonl(tmp_path / "pairwise" / "alignbench_reference_based_sample.jsonl", rows), "id", "[1]"


def _metacritique(tmp_path):
    items = [{"index": i, "dataset": "d", "question": "q", "response": "a", "gpt4_answer": "ref",
              "gpt4_critique": {"critique": "c", "aius": ["unit"]}} for i in (0, "item-1")]
    path = tmp_path / "benchmark_data.json"
    path.write_text(json.dumps(items))
    return path, "index", "[1]"


# (loader's dataset kwargs as its YAML passes them, the data folder option, the file maker)
MIXED = {
    "critiquellm pointwise": ({"dimension": "alignbench_pointwise", "reference": True}, _critiquellm_point),
    "critiquellm pairwise": ({"dimension": "alignbench_pairwise", "reference": True}, _critiquellm_pair),
    "metacritique": ({"dimension": "metacritique", "fmt": "sub"}, _metacritique),
}


@pytest.mark.parametrize("name", MIXED)
def test_mixed_type_ids_stop_with_one_line_naming_file_and_field(name, tmp_path):
    """The lm-eval loader on a file whose ids are 0 on one row and "item-1" on the next: one DataError naming the
    file, the item and the field (on 36a32e3: pyarrow's ArrowInvalid / ArrowTypeError traceback)."""
    kwargs, make = MIXED[name]
    path, field, item = make(tmp_path)
    with pytest.raises(DataError) as caught:
        task_functions.TaskFunctions(registry.kind_for(kwargs["dimension"], kwargs.get("fmt", "obj"))).load_docs(**kwargs,
                        data_dir=str(tmp_path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}{item}: field '{field}' is str but number at {path}[0]")


def test_mixed_type_ids_load_where_the_loader_keeps_them_as_text(tmp_path):
    """CriticBench keeps no id (a raw item is JSON text) and the revision items' ids are text: both load."""
    sample = Path(cb_data.__file__).parent / "sample_data"
    copy = tmp_path / "criticbench"
    shutil.copytree(sample, copy)
    path = copy / "obj_dev_data" / "math_cot_feedback_correction.json"
    items = json.loads(path.read_text())
    for i, item in enumerate(items):
        item["id"] = i if i % 2 else f"item-{i}"
    path.write_text(json.dumps(items))
    docs = task_functions.TaskFunctions(registry.TASK_KINDS["feedback"]).load_docs(fmt="obj", split="dev", domains=["math_cot"],
                                    data_dir=str(copy))
    assert len(docs["eval"]) >= len(items) >= 2  # the main file and its correction_part
    rows = _jsonl(tmp_path / "items.jsonl", [{"id": 7, "question": "q", "generation": "g"},
                                            {"id": "item-8", "question": "q", "generation": "g"}])
    pool = task_functions.TaskFunctions(registry.TASK_KINDS["revision_pool"])
    docs = pool.load_docs(fmt="sub", items_file=str(rows), variant="short")
    assert [d["id"] for d in docs["eval"]] == ["7", "item-8"]


# ----------------------------------------------------------------------------- 5. RCO: the system part


def _rco_doc(**fields):
    row = {"dimension": "utility", "domain": "math_cot", "question": "What is 2 + 2?", "generation": "5",
           "ground_truth_answer": "4", "article": "", "check": "final_answer", "variant": "paper", **fields}
    return row


def test_rco_judges_send_the_system_part_as_a_system_message(tmp_path):
    """The paper prints RCO's judges as [SYSTEM] (instructions) and [USER] (the task and answers), Tables 28-32 and
    38-42: an OpenAI-compatible judge gets two messages, the instructions as the system message and every input in
    the user message (on 36a32e3: one user message holding both)."""
    from stub_server import StubServer

    from critic_tasks.llm import LLMSettings, complete
    from critic_tasks.protocols.revision import prompts

    doc = _rco_doc()
    asks = [prompts.pairwise_prompt(doc, "ANSWER-A", "ANSWER-B"), prompts.rating_prompt(doc, "ANSWER-R")]
    with StubServer(lambda n, p: ("ok", "Fine. [[A]] Rating: [[5]]")) as stub:
        settings = LLMSettings(role="judge", backend="openai", model="stub", base_url=stub.base_url, api_key="sk",
                               cache=str(tmp_path / "judge.sqlite"), max_tries=1, timeout=5.0)
        complete(asks, settings, "test", progress=False)
    bodies = sorted(stub.bodies, key=lambda b: "ANSWER-R" in json.dumps(b))
    for body in bodies:
        system, user = body["messages"]
        assert (system["role"], user["role"]) == ("system", "user")
        assert system["content"].startswith("Act as an impartial judge") and "[[" in system["content"]
        for shown in ("[Math Problem]\nWhat is 2 + 2?", "[The Start of Reference Answer]\n4\n"):
            assert shown in user["content"] and shown not in system["content"]
    assert "ANSWER-A" in bodies[0]["messages"][1]["content"] and "ANSWER-R" in bodies[1]["messages"][1]["content"]


class _Template:
    """A tokenizer's chat template, written out: it joins the turns as role: content lines, or refuses a system
    turn (as Gemma's template does)."""

    def __init__(self, takes_system: bool):
        self.takes_system, self.seen = takes_system, []

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        self.seen.append(messages)
        if not self.takes_system and messages[0]["role"] == "system":
            raise ValueError("System role not supported")
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def test_in_process_judges_use_a_system_turn_where_the_template_takes_one():
    from critic_tasks.llm.backends.hf_transformers import HFBackend
    from critic_tasks.llm.settings import LLMSettings
    from critic_tasks.protocols.revision import prompts

    prompt = prompts.rating_prompt(_rco_doc(), "ANSWER-R")
    backend = HFBackend(LLMSettings(role="judge", backend="hf", model="none"))
    backend._tokenizer = _Template(takes_system=True)
    text = backend._chat(prompt)
    assert text.startswith("<system>Act as an impartial judge") and "<user>[Math Problem]\nWhat is 2 + 2?" in text
    backend._tokenizer = refusing = _Template(takes_system=False)
    text = backend._chat(prompt)  # refused: the whole prompt as one user message
    assert text.startswith("<user>Act as an impartial judge") and "ANSWER-R" in text and "<system>" not in text
    assert [m[0]["role"] for m in refusing.seen] == ["system", "user"]


def test_rco_summary_judge_says_summaries():
    from critic_tasks.protocols.revision import prompts

    doc = _rco_doc(domain="summary", article="An article.", ground_truth_answer="", check="")
    text = prompts.pairwise_prompt(doc, "S1", "S2")
    assert "summarys" not in text and "the summaries two AI assistants gave" in text
    assert "Appendix C.2" in prompts.__doc__ and "Appendix E" not in prompts.__doc__  # MultiCritique's evaluation


# ----------------------------------------------------------------------------- 3. one default budget


def _yaml_budget(name: str) -> int:
    """A task's max_gen_toks as lm-eval reads its YAML: the file, then each ``include`` under it (the task's own
    keys win)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    folder = Path(critic_tasks.tasks_dir())
    merged, path = {}, folder / f"{name}.yaml"
    while True:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
        merged = {**data, **merged, "generation_kwargs": {**data.get("generation_kwargs", {}),
                                                          **merged.get("generation_kwargs", {})}}
        if "include" not in data:
            return merged["generation_kwargs"]["max_gen_toks"]
        path = folder / data["include"]
        merged.pop("include", None)


def _config_budgets(path: Path) -> list[int]:
    """The inferencer max_out_len of every dataset in a generated OpenCompass config (read with ast: no OpenCompass
    import); None where a dataset sets none."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    budgets = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "inferencer":
            given = {k.arg: k.value for k in node.value.keywords}
            budgets.append(ast.literal_eval(given["max_out_len"]) if "max_out_len" in given else None)
    return budgets


def test_opencompass_configs_give_every_dataset_lm_evals_budget():
    """Parity at default settings: every generated OpenCompass dataset config sets the reply budget lm-eval's YAML
    gives the same task (512; correction and CritiqueLLM 1,024; the newer benchmarks
    their authors' budgets), as its own max_out_len (which OpenCompass's
    --max-out-len does not override); on 36a32e3 they set none and OpenCompass's 256 decided."""
    from critic_tasks.adapters.opencompass import CONFIG_DIR
    from critic_tasks.adapters.opencompass.spec import collections, runnable_tasks

    tasks = runnable_tasks()
    assert len(tasks) > 50
    seen = set()
    for task in tasks:
        expected = _yaml_budget(task.name)
        assert _config_budgets(CONFIG_DIR / "datasets" / f"{task.name}_gen.py") == [expected], task.name
        seen.add(expected)
    assert seen >= {512, 1024, 2048, 4096, 8192}  # ours; RealCritic, JudgeBench, ProcessBench: the authors'
    for name, (members, _) in collections().items():
        got = _config_budgets(CONFIG_DIR / "dataset_collections" / f"{name}_gen.py")
        assert got == [_yaml_budget(m) for m in members], name
    text = (CONFIG_DIR / "datasets" / "critic_correction_gen.py").read_text(encoding="utf-8")
    assert "lm-eval's for this task" in text and "--max-out-len N" in text  # the config says which budget applies


def _opencompass_argv(monkeypatch, tmp_path, args):
    """What `critic-eval opencompass ARGS` would hand to the opencompass command (exec replaced by a recorder)."""
    from critic_tasks.cli import opencompass as oc_cli

    seen = []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.setattr(oc_cli.shutil, "which", lambda name: "/bin/true")
    monkeypatch.setattr(oc_cli.Path, "exists", lambda self: False if self.name == "opencompass" else
                        Path.is_file(self) or Path.is_dir(self))
    monkeypatch.setattr(oc_cli.os, "execv", lambda program, argv: seen.append(argv))
    assert cli.main(["opencompass", *args]) == 0
    return seen[0]


def test_critic_eval_opencompass_budget_default_and_explicit(monkeypatch, tmp_path, capsys):
    """No budget flag: our config tree as generated (lm-eval's budgets) and one line naming them; --max-out-len 40:
    a tree whose every dataset sets 40 (a dataset's own budget would win over the flag otherwise)."""
    from critic_tasks.adapters.opencompass import CONFIG_DIR

    datasets = ["--datasets", "critic_feedback_gen", "critic_correction_gen", "--hf-type", "chat", "--hf-path", "m",
                "--hf-num-gpus", "0"]
    argv = _opencompass_argv(monkeypatch, tmp_path, datasets)
    assert argv[argv.index("--config-dir") + 1] == str(CONFIG_DIR)
    assert "reply budgets (tokens) as lm-eval's: critic_feedback 512, critic_correction 1024" in capsys.readouterr().err
    argv = _opencompass_argv(monkeypatch, tmp_path, [*datasets, "--max-out-len", "40"])
    folder = Path(argv[argv.index("--config-dir") + 1])
    assert folder != CONFIG_DIR and argv.count("--config-dir") == 1
    for name in ("critic_feedback_gen", "critic_correction_gen"):
        assert _config_budgets(folder / "datasets" / f"{name}.py") == [40]
    assert set(_config_budgets(folder / "dataset_collections" / "critic_all_gen.py")) == {40}
    assert "--max-out-len 40: every critic dataset's reply budget" in capsys.readouterr().err
    assert cli.main(["opencompass", *datasets, "--max-out-len", "0"]) == 2
    assert "--max-out-len 0: expected one whole number of tokens, at least 1" in capsys.readouterr().err


# ----------------------------------------------------------------------------- 2. self-consistency that samples


def _alignbench_rows(tmp_path, n):
    rows = [{"id": i, "category": "数学计算", "question": f"q{i}", "reference": "r", "response": "a", "model": f"m{i}",
             "human_score": 1 + i} for i in range(n)]
    _jsonl(tmp_path / "pointwise" / "alignbench_reference_based_sample.jsonl", rows)


def _seeded(n, prompt, body):
    """A server that honours per-request seeds, as vLLM's OpenAI server does: the same request and seed give the
    same reply; another seed, another sample."""
    seed = body.get("seed")
    return ("ok", f"Sampled with seed {seed}. Rating: [[{seed % 10 + 1}]]")


@pytest.mark.parametrize("behave, distinct", [(_seeded, True), (lambda n, p, body: ("ok", "Rating: [[7]]"), False)])
def test_self_consistency_through_an_api_model_gets_k_samples(behave, distinct, tmp_path, monkeypatch, caplog):
    """critic_alignbench_ref_sc (k = 5) through lm-eval's local-chat-completions against a stub server: each item's
    five requests carry five seeds, so a seed-honouring server returns five samples (on 36a32e3: seed 1234 five
    times, one critique five times). The results count the items whose samples were all identical: 0 here, every
    item for a server that ignores the seed."""
    import logging

    import lm_eval
    from stub_server import StubServer

    caplog.set_level(logging.WARNING, logger="critic_tasks")
    _alignbench_rows(tmp_path, 3)
    monkeypatch.setenv("CRITIQUELLM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CRITIC_REQUEST_CACHE", "off")
    with StubServer(behave) as stub:
        out = lm_eval.simple_evaluate(
            model="local-chat-completions", apply_chat_template=True, bootstrap_iters=0,
            model_args=f"base_url={stub.base_url}/chat/completions,model=stub,num_concurrent=1,max_retries=1,"
                       "tokenizer_backend=None",
            tasks=["critic_alignbench_ref_sc"], task_manager=critic_tasks.task_manager())
    seeds: dict[str, list[int]] = {}
    for body in stub.bodies:
        seeds.setdefault(body["messages"][-1]["content"], []).append(body["seed"])
    assert len(seeds) == 3 and all(sorted(s) == [1234, 1235, 1236, 1237, 1238] for s in seeds.values())
    results = out["results"]["critic_alignbench_ref_sc"]
    assert results["identical_samples,none"] == (0 if distinct else 3)
    replies = [set(row["resps"][0]) for row in out["samples"]["critic_alignbench_ref_sc"]]  # one request, k replies
    assert [len(r) for r in replies] == ([5, 5, 5] if distinct else [1, 1, 1])
    lines = [r.getMessage() for r in caplog.records if "identical samples" in r.getMessage()]
    assert len(lines) == (0 if distinct else 1)  # one line, not one per metric key lm-eval aggregates
    assert distinct or lines[0].startswith("critic_tasks: 3 of 3 items got 5 identical samples")


def test_sampled_correction_counts_items_whose_k_samples_were_one_text(monkeypatch, caplog):
    """critic_correction_sampled (pass@k, k = 5) on the bundled sample: a scripted backend varies its five replies
    for every third item and returns one text five times for the others. The results count the latter (by hand:
    16 items, positions 0, 3, ..., 15 vary, so 16 - 6 = 10 identical), and the run warns once in one line, however
    many metric keys lm-eval aggregates (on 36a32e3: no count, no warning). No reply holds a code block: nothing
    is executed."""
    import logging

    import lm_eval
    from helpers import scripted_lm

    from critic_tasks.protocols.criticbench import prompts as cb_prompts

    monkeypatch.setenv(cb_data.DATA_DIR_ENV, "sample")
    docs = cb_data.load_docs("correction", "dev", data_dir="sample")
    position = {cb_prompts.critic_prompt({**d, "with_feedback": True}): i for i, d in enumerate(docs)}
    asked: dict[str, int] = {}

    def reply(prompt):
        j = asked[prompt] = asked.get(prompt, -1) + 1
        return f"I would keep it, take {j}." if position[prompt] % 3 == 0 else "I would keep it."

    varying = [i for i in range(len(docs)) if i % 3 == 0]
    caplog.set_level(logging.WARNING, logger="critic_tasks")
    out = lm_eval.simple_evaluate(model=scripted_lm(reply), tasks=["critic_correction_sampled"],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
    assert set(asked.values()) == {4}  # five samples of every item
    results = out["results"]["critic_correction_sampled"]
    assert results["identical_samples,none"] == len(docs) - len(varying) == 10
    lines = [r.getMessage() for r in caplog.records if "identical samples" in r.getMessage()]
    assert lines == ["critic_tasks: 10 of 16 items got 5 identical samples: the backend returned one reply k times "
                     "(it did not sample; check do_sample / temperature and a fixed seed); pass@k and "
                     "self-consistency rest on fewer samples than asked"]


def test_critic_eval_opencompass_names_the_budgets_an_eval_config_sets(capsys):
    """ocnew (newcomer): an eval config that set its datasets' max_out_len (as docs/opencompass.md says to) was told
    'reply budgets (tokens) as lm-eval's: critic_rewardbench 2048' while its run used the config's 32."""
    from critic_tasks.cli import opencompass as oc_cli

    generated = (Path(oc_cli.CONFIG_DIR) / "datasets" / "critic_rewardbench_gen.py").read_text()
    assert "max_out_len=2048," in generated  # the generated config's budget, lm-eval's (the values below)
    cut, kept = ({"abbr": abbr, "task": "critic_rewardbench", "infer_cfg": {"inferencer": {"max_out_len": n}}}
                 for abbr, n in (("critic_rewardbench", 32), ("critic_rewardbench_kept", 2048)))
    cfg = {"datasets": [cut, kept, {"abbr": "theirs", "infer_cfg": {"inferencer": {"max_out_len": 7}}}]}
    argv = ["cfg.py"]
    assert oc_cli._reply_budget(argv, [registry.TASKS["critic_rewardbench"]] * 2, cfg) == argv
    err = capsys.readouterr().err
    assert err == ("critic-eval: reply budgets (tokens), the config's: critic_rewardbench 32 (lm-eval's: 2048), "
                   "critic_rewardbench_kept 2048\n")
