"""The OpenCompass adapter: its generated config tree, and real OpenCompass runs in the OpenCompass environment.

OpenCompass 0.5.4 cannot share this environment (numpy<2, datasets<4, an rc of mmengine-lite): the runs use
``.venv-opencompass`` (``bash scripts/setup.sh --opencompass``; ``--test`` makes it too) and are skipped with a
reason where it is missing. The critic is SmolLM2-135M-Instruct behind llama.cpp's OpenAI-compatible server
(OpenCompass's ``OpenAISDK`` model), and the same server judges the judge-scored dataset through OpenCompass's own
judge variables. What OpenCompass reports must equal what the lm-eval path computes on the same generations.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SHARED
from helpers import scripted_lm, with_logged_intervals
from rewardbench_authors import authors_mirror

import critic_tasks
from critic_tasks import cli, registry
from critic_tasks.adapters.opencompass import CONFIG_DIR
from critic_tasks.adapters.opencompass import generate as _generate_configs
from critic_tasks.adapters.opencompass.spec import collections, runnable_tasks
from critic_tasks.protocols import authors
from critic_tasks.reports.results import read_results

OC_BIN = Path(os.environ.get("CRITIC_OPENCOMPASS_VENV", REPO / ".venv-opencompass")) / "bin"
MODEL = "smollm2-llamacpp"


def test_the_summarizers_group_mean_leaves_out_an_undefined_member_as_lm_eval_does():
    """OpenCompass's group rows equal lm-eval's (private.none_safe_mean): a member whose value is undefined (None)
    is left out of the mean; a group with a member that did not run gets no row."""
    from critic_tasks.adapters.opencompass.spec import group_results

    members = [f"critic_processbench_{s}" for s in ("gsm8k", "math", "olympiadbench", "omnimath")]
    per_task = dict(zip(members, [{"f1": 0.0}, {"f1": 100.0}, {"f1": None}, {"f1": 50.0}]))
    assert group_results(per_task)["critic_processbench"] == {"f1,none": 50.0}  # (0 + 100 + 50) / 3
    assert group_results(per_task)["critic_processbench_olympiadbench"] == {"f1,none": None}
    assert "critic_processbench" not in group_results({m: v for m, v in per_task.items() if m != members[0]})
    assert "critic_processbench" not in group_results({m: {"f1": None} for m in members})


def test_a_dataset_without_results_is_named_with_the_error_that_ended_its_inference(tmp_path):
    """ocnew (newcomer): with a wrong --hf-path the summarizer said only 'its task failed; see .../logs/eval/...',
    whose error is that no predictions exist; the reason is the exception that ended the inference stage."""
    from critic_tasks.adapters.opencompass.errors import failure_reason

    infer, evaluate = (tmp_path / "logs" / stage / "m_hf" / "critic_feedback_chat.out" for stage in ("infer", "eval"))
    for log in (infer, evaluate):
        log.parent.mkdir(parents=True)
    wrong = "OSError: Can't load the configuration of './smollm2-hff'. Otherwise, make sure './smollm2-hff' is ..."
    infer.write_text(f"11/28 14:08:50 - OpenCompass - INFO - Task [m_hf/critic_feedback_chat]\nTraceback (most "
                     f"recent call last):\n  File \"x.py\", line 1, in <module>\n    raise OSError(\n{wrong}\n")
    evaluate.write_text("Traceback (most recent call last):\nFileNotFoundError: Prediction files not found: ...\n")
    assert failure_reason(str(tmp_path), "m_hf", "critic_feedback_chat") == f"{wrong} (see {infer})"
    evaluate.write_text("critic-tasks: CRITICBENCH_DATA_DIR=/x: not a directory\n")  # ours wins, in any stage
    assert failure_reason(str(tmp_path), "m_hf", "critic_feedback_chat") == "CRITICBENCH_DATA_DIR=/x: not a directory"
    infer.write_text("killed\n")
    evaluate.write_text("")
    assert failure_reason(str(tmp_path), "m_hf", "critic_feedback_chat") == f"its task failed; see {infer}"


def test_the_summarizer_names_criticevals_leaderboard_only_under_a_table_with_criticeval_tasks():
    """issue 46 (newcomer): the summarizer printed CriticEval's published leaderboard under every model's table, a
    JudgeBench-only one included, whose numbers are on no scale of that leaderboard."""
    from critic_tasks.adapters.opencompass.spec import model_summary

    leaderboard = "published CriticEval leaderboard"
    judgebench = {"critic_judgebench": {"accuracy,none": 55.0, "parse_rate,none": 100.0}}
    feedback = {"critic_feedback": {"spearman,none": 37.5, "score,none": 68.75, "parse_rate,none": 100.0}}
    alone = model_summary("m", judgebench)
    assert alone.splitlines()[1] == "critic-tasks: m" and "55.00" in alone
    assert leaderboard not in alone and alone.rstrip().endswith("bootstrap interval.")
    assert model_summary("m", {**judgebench, **feedback}).count(leaderboard) == 1


def test_generated_config_tree_in_sync_with_generator():
    files = _generate_configs.render()
    on_disk = {p.relative_to(CONFIG_DIR).as_posix(): p.read_text(encoding="utf-8") for p in CONFIG_DIR.rglob("*.py")}
    assert on_disk == files, "run: python -m critic_tasks.adapters.opencompass.generate"
    # every task scored from one reply per document: not the sampled ones, not the second stage of a two-stage
    # task (SAvg, RealCritic's self-critique: a prior stage), not SAvg's stage 1, not the revision protocols (their
    # revisers and judge run in lm-eval's filter)
    runnable = {t.name for t in registry.TASKS.values() if t.repeats == 1 and t.kind_spec.scorer != "revision"
                and t.prior_stage is None and t.kind_spec.data_dimension != "self_feedback"}
    assert {"critic_alignbench_ref", "critic_alignbench_pairwise_free", "critic_metacritique"} <= runnable
    assert {p[len("datasets/"):-len("_gen.py")] for p in files if p.startswith("datasets/")} == runnable
    assert {"critic", "critic_sub", "critic_all", "critic_critiquellm"} <= set(collections())
    assert "summarizers/critic.py" in files


def test_a_dataset_configs_option_keys_are_its_protocols_and_not_the_tasks_own():
    """A protocol's options are dataset config keys under OpenCompass (lm-eval's --metadata): one OpenCompass hands
    the loader is checked, never dropped; a key the protocol lacks, or one the task fixes, is one line naming both."""
    from critic_tasks.adapters.opencompass.spec import check_options, config_options, dataset_spec
    from critic_tasks.core.errors import ConfigError

    # every key our generated configs write is a setting or OpenCompass's own, none taken for an option
    assert all(config_options(dataset_spec(t.name, judge_cfg={"path": "j"})) == {} for t in runnable_tasks())
    assert config_options({**dataset_spec("critic_rewardbench"), "orders": "both"}) == {"orders": "both"}
    check_options(registry.task("critic_rewardbench"), {"orders": "both", "seed": 3})
    check_options(registry.task("critic_rewardbench2"), {"ratings": True})
    with pytest.raises(ConfigError, match=r"^critic_rewardbench: unknown dataset config key 'order'; the rewardbench "
                                          r"protocol takes orders, seed$"):
        check_options(registry.task("critic_rewardbench"), {"order": "both"})
    with pytest.raises(ConfigError, match=r"^critic_rmbench_code: dataset config key 'domain' is fixed by the task "
                                          r"\(domain='code'\)"):
        check_options(registry.task("critic_rmbench_code"), {"domain": "chat"})
    with pytest.raises(ConfigError, match=r"'ratings'; the rmbench protocol takes no options$"):
        check_options(registry.task("critic_rmbench"), {"ratings": True})


@pytest.fixture(scope="session")
def oc_bin():
    if not (OC_BIN / "opencompass").exists():
        pytest.skip(f"OpenCompass environment not found at {OC_BIN.parent} (bash scripts/setup.sh --opencompass)")
    return OC_BIN


@pytest.fixture(scope="session")
def smollm2_folder(oc_bin, tmp_path_factory):
    """SmolLM2 as a Hugging Face folder (OpenCompass's tokenizer and HF classes load folders, not GGUF files),
    converted by the OpenCompass environment's transformers (.venv-vllm/smollm2-hf is transformers 5's, whose
    tokenizer files transformers 4 cannot read), once per test run: xdist's workers share the run's folder."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    out = root / "opencompass-models" / "smollm2-hf"
    if not (out / "config.json").exists():
        made = tmp_path_factory.mktemp("models") / "smollm2-hf"
        subprocess.run([str(oc_bin / "python"), str(REPO / "scripts" / "smollm2_hf.py"), str(made)], check=True,
                       capture_output=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        out.parent.mkdir(exist_ok=True)
        try:
            made.rename(out)  # whole or not at all: the other worker never sees a half-written folder
        except OSError:  # the other worker's conversion got there first: the same folder
            shutil.rmtree(made)
    return out


def _env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRITIC_JUDGE_", "OC_JUDGE_", "CRITICBENCH_"))}
    # this checkout's code in OpenCompass's processes too (the OpenCompass environment may hold another editable one)
    path = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "CRITICBENCH_DATA_DIR": "sample",
            "CRITIQUELLM_DATA_DIR": str(SHARED / "data" / "critiquellm"),
            "METACRITIQUE_DATA_DIR": str(SHARED / "data" / "metacritique"), "JUDGEBENCH_DATA_DIR": "sample",
            "PROCESSBENCH_DATA_DIR": "sample", "REALCRITIC_DATA_DIR": "sample", "RMBENCH_DATA_DIR": "sample",
            "REWARDBENCH_DATA_DIR": "sample", "REWARDBENCH2_DATA_DIR": "sample",
            # RewardBench's, RewardBench 2's and RM-Bench's samples are asked with the authors' prompts only
            authors.MIRROR_ENV: str(authors_mirror(tmp_path / "authors-mirror")),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "CRITIC_JUDGE_CACHE": str(tmp_path / "judge.sqlite"), **extra}


def _critic_eval(oc_bin, args, env, cwd, timeout=1500):
    # cwd: OpenCompass caches dataset sizes in ./.cache of the directory it runs in
    return subprocess.run([str(oc_bin / "critic-eval"), "opencompass", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


# ----------------------------------------------------------------------------- prompts: lm-eval's, byte for byte


def _lm_eval_messages(tasks: list[str]) -> dict[str, list]:
    """The chat messages lm-eval sends for each document with --apply_chat_template: what its evaluator hands the
    model's apply_chat_template (HF and vLLM render them with the tokenizer's template, the chat-completions models
    post them)."""
    import lm_eval.tasks

    def messages(chat_history, add_generation_prompt=True):
        assert add_generation_prompt
        return json.dumps(chat_history)

    out = {}
    for name, task in lm_eval.tasks.get_task_dict(tasks, critic_tasks.task_manager()).items():
        task.build_all_requests(apply_chat_template=True, chat_template=messages)
        out[name] = [json.loads(i.args[0]) for i in sorted(task.instances, key=lambda i: i.doc_id)]
    return out


@pytest.mark.slow
def test_every_task_sends_lm_evals_messages_byte_for_byte(oc_bin, tmp_path, monkeypatch):
    """For every task OpenCompass runs, the messages of HuggingFacewithChatTemplate, VLLMwithChatTemplate and
    OpenAISDK (rendered by OpenCompass's code, tests/oc_render_prompts.py) equal lm-eval's: one user message, the
    same text, nothing appended (OpenCompass's HUMAN-round template used to add "\\n"). JudgeBench with the authors'
    prompt (the shared checkout) sends a system message too: a model whose meta template declares the SYSTEM role gets
    lm-eval's system and user messages byte for byte; OpenCompass's default chat meta template maps SYSTEM to the
    user's turn, so the model gets one user message holding both (docs/opencompass.md)."""
    if not (SHARED / "data" / "critiquellm").is_dir() or not (SHARED / "data" / "metacritique").is_dir():
        pytest.skip(f"shared data not found under {SHARED / 'data'}")
    tasks = [t.name for t in runnable_tasks()]
    checkout = SHARED / "data" / "judgebench"  # the authors' prompt: their templates beside the data
    env = _env(tmp_path, **({"JUDGEBENCH_DATA_DIR": str(checkout)} if (checkout / "utils").is_dir() else {}))
    out = tmp_path / "opencompass_messages.json"
    run = subprocess.run([str(oc_bin / "python"), str(REPO / "tests" / "oc_render_prompts.py"), str(out), *tasks],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    theirs = json.loads(out.read_text(encoding="utf-8"))
    for key in ("CRITICBENCH_DATA_DIR", "CRITIQUELLM_DATA_DIR", "METACRITIQUE_DATA_DIR", "JUDGEBENCH_DATA_DIR",
                "PROCESSBENCH_DATA_DIR", "REALCRITIC_DATA_DIR", "RMBENCH_DATA_DIR", "REWARDBENCH_DATA_DIR",
                "REWARDBENCH2_DATA_DIR", authors.MIRROR_ENV, "XDG_CACHE_HOME"):
        monkeypatch.setenv(key, env[key])
    authors._text.cache_clear()
    ours = _lm_eval_messages(tasks)
    assert set(theirs) == set(ours) == set(tasks)
    systems = 0
    for task in tasks:
        assert ours[task], task
        if any(messages[0]["role"] == "system" for messages in ours[task]):  # the authors' judges
            systems += task.startswith("critic_judgebench")
            assert all([m["role"] for m in messages] in (["system", "user"], ["user"]) for messages in ours[task]), task
            assert theirs[task]["hf_system"] == ours[task], task
            # OpenCompass's default chat meta template maps SYSTEM to the user's turn
            assert theirs[task]["hf"] == [[{"role": "user", "content": f"{m[0]['content']}\n{m[1]['content']}\n"}]
                                          if len(m) == 2 else m for m in ours[task]], task
            continue
        assert all(len(m) == 1 and m[0]["role"] == "user" for m in ours[task]), task
        for model in ("hf", "vllm", "openai"):
            assert theirs[task][model] == ours[task], (task, model)
    assert systems == (5 if (checkout / "utils").is_dir() else 0)  # critic_judgebench and its four categories


EVALUATOR_CHECK = """
import inspect, json, sys
from mmengine.config import Config
from opencompass.registry import ICL_EVALUATORS
import critic_tasks.adapters.opencompass.evaluators  # registers ours
out = {}
for path in sys.argv[1:]:
    cfg = Config.fromfile(path)
    for name, value in cfg.items():
        if not name.endswith("_datasets"):
            continue
        for d in value:
            evaluator = ICL_EVALUATORS.build(d["eval_cfg"]["evaluator"])
            inferencer = d["infer_cfg"]["inferencer"]["type"]
            name = getattr(inferencer, "__name__", str(inferencer))
            out[d["abbr"]] = [sorted(inspect.signature(evaluator.score).parameters), name]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_every_evaluator_names_only_what_its_predictions_hold(oc_bin, tmp_path):
    """OpenCompass's eval task hands ``score`` exactly the prediction fields its signature names, and fails the task
    with a KeyError on a name the predictions lack: only the evaluator of the tasks whose inferencer records each
    prediction's turns (CriticGenInferencer) may name ``turns`` (one evaluator naming it for every task failed every
    OpenCompass run but JudgeBench's)."""
    configs = sorted(str(p) for p in (CONFIG_DIR / "datasets").glob("*_gen.py"))
    run = subprocess.run([str(oc_bin / "python"), "-c", EVALUATOR_CHECK, *configs], capture_output=True, text=True,
                         env=_env(tmp_path), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert set(seen) == {t.name for t in runnable_tasks()}
    for task, (names, inferencer) in seen.items():
        held = {"predictions", "references", "test_set", "origin_prompt"}
        held |= {"turns"} if inferencer == "CriticGenInferencer" else set()
        assert set(names) <= held, (task, names, inferencer)
    assert any("turns" in names for names, _ in seen.values())  # JudgeBench's evaluator takes them


# ----------------------------------------------------------------------------- RewardBench, RewardBench 2, RM-Bench


# (label, tasks, options): the defaults (one seeded order per RewardBench pair, one seeded arrangement per RewardBench 2
# prompt with Ties rated, every RM-Bench comparison in both orders) and each of their options set as a user's eval
# config sets it, on the bundled samples (the whole samples: a few seconds of replies played back)
REWARD_RUNS = (("defaults", ("critic_rewardbench", "critic_rewardbench2", "critic_rmbench", "critic_rmbench_chat",
                             "critic_rmbench_code", "critic_rmbench_math", "critic_rmbench_safety"), {}),
               ("both_orders", ("critic_rewardbench",), {"orders": "both"}),
               ("seed_7", ("critic_rewardbench", "critic_rewardbench2"), {"seed": 7}),
               ("ratings", ("critic_rewardbench2",), {"ratings": True, "seed": 7}))


def _reward_judge(system: str, user: str) -> str:
    """Replies of many shapes, chosen by the conversation: verdicts for the pairwise and four-way judges (which carry
    a system message), ratings for RewardBench 2's rating requests (which do not)."""
    from test_rewardbench import SHAPES
    from test_rewardbench2 import FOUR_WAY_SHAPES, RATING_SHAPES, _pick

    return _pick(SHAPES + FOUR_WAY_SHAPES if system else RATING_SHAPES, system, user)


@pytest.mark.slow  # OpenCompass's environment: one process, no model
def test_reward_benchmarks_give_the_lm_eval_numbers_through_opencompass(oc_bin, tmp_path, monkeypatch):
    """RewardBench, RewardBench 2 and RM-Bench through OpenCompass's inference and evaluation steps (the generated
    config files, tests/oc_replayed_datasets.py) on the replies lm-eval's run got for the same conversations: every
    conversation OpenCompass asks is one lm-eval asked with the same options (so the seeded orders and arrangements,
    both orders and the rating requests are the same), as many, and every number (per subset, section and domain,
    overall, the bias lines, the intervals) equals lm-eval's."""
    from rewardbench_authors import REWARDBENCH
    from test_rmbench import _chat_lm

    if not (REWARDBENCH / "rewardbench" / "generative.py").is_file():  # their prompts (RM-Bench asks RewardBench's)
        pytest.skip(f"the authors' checkout is absent ({REWARDBENCH})")
    import lm_eval

    env = _env(tmp_path)
    for key in ("RMBENCH_DATA_DIR", "REWARDBENCH_DATA_DIR", "REWARDBENCH2_DATA_DIR", authors.MIRROR_ENV,
                "XDG_CACHE_HOME", "HF_HUB_OFFLINE"):
        monkeypatch.setenv(key, env[key])
    authors._text.cache_clear()
    live, replies, asked = {}, {}, {}
    for label, tasks, options in REWARD_RUNS:
        lm = _chat_lm(_reward_judge)
        out = lm_eval.simple_evaluate(model=lm, tasks=list(tasks), bootstrap_iters=0, apply_chat_template=True,
                                      task_manager=critic_tasks.task_manager(metadata=options or None),
                                      log_samples=True)
        live[label] = with_logged_intervals(out)
        asked[label] = {t: len(out["samples"][t]) for t in tasks}
        replies[label] = {json.dumps(chat): _reward_judge(chat[0]["content"] if len(chat) == 2 else "",
                                                          chat[-1]["content"]) for chat in lm.chats}
    # the options changed what was asked: both orders double RewardBench's requests, a seed rearranges them
    assert asked["both_orders"]["critic_rewardbench"] == 2 * asked["defaults"]["critic_rewardbench"]
    assert replies["seed_7"].keys() - replies["defaults"].keys()
    assert asked["ratings"]["critic_rewardbench2"] > asked["defaults"]["critic_rewardbench2"]
    runs = [{"label": label, "task": task, "options": options} for label, tasks, options in REWARD_RUNS
            for task in tasks]
    (tmp_path / "runs.json").write_text(json.dumps({"replies": replies, "runs": runs}), encoding="utf-8")
    run = subprocess.run([str(oc_bin / "python"), str(REPO / "tests" / "oc_replayed_datasets.py"),
                          str(tmp_path / "out.json"), str(tmp_path / "runs.json")],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    theirs = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    compared = 0
    for label, tasks, _ in REWARD_RUNS:
        for task in tasks:
            ours, lm_values = theirs[label][task]["metrics"], live[label][task]
            assert theirs[label][task]["asked"] == asked[label][task], (label, task)
            # the same keys, but those lm-eval reports as None (a bias line one order per pair cannot give), which
            # OpenCompass's results leave out
            lm_keys = {k for k in lm_values if k.endswith(",none") and "_stderr," not in k}
            assert {f"{k},none" for k in ours} <= lm_keys, (label, task)
            assert all(lm_values[k] is None for k in lm_keys - {f"{k},none" for k in ours}), (label, task)
            for key, value in ours.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    assert lm_values[f"{key},none"] == pytest.approx(value, abs=1e-9), (label, task, key)
                else:
                    assert lm_values[f"{key},none"] == value, (label, task, key)
                compared += 1
    assert theirs["both_orders"]["critic_rewardbench"]["metrics"]["orders"] == "both"
    assert theirs["ratings"]["critic_rewardbench2"]["metrics"]["ratings"] == "ratings"
    assert compared > 200


# ----------------------------------------------------------------------------- real runs


# The same model, items and budget through both harnesses: the demo model as a HF folder, greedy, batch 1. Objective
# tasks, a judge-scored one (the llama.cpp server judges) and a CritiqueLLM one (its first rows as a data folder).
PARITY_TASKS = ["critic_feedback_chat", "critic_meta_chat", "critic_comparison_chat", "critic_feedback_sub_chat",
                "critic_alignbench_ref", "critic_judgebench_math", "critic_processbench_gsm8k", "critic_realcritic_gsm8k"]
PARITY_BUDGET = 32
# the long-prompt tasks on their first rows (most of the generating time): 2 ratings of 2 models with distinct human
# scores (the Pearsons are defined); ProcessBench's first correct solution and first one with an error (F1 and both
# accuracies are defined)
ALIGNBENCH_ROWS = 2
PROCESSBENCH_ROWS = 2


@pytest.fixture(scope="module")
def parity_runs(oc_bin, smollm2_folder, llama_server, tmp_path_factory):
    rel = Path("pointwise") / "alignbench_reference_based_sample.jsonl"
    source = SHARED / "data" / "critiquellm" / rel
    if not source.is_file():
        pytest.skip(f"shared data not found at {source}")
    tmp = tmp_path_factory.mktemp("parity")
    (tmp / "critiquellm" / rel).parent.mkdir(parents=True)
    rows = source.read_text(encoding="utf-8").splitlines(keepends=True)[:ALIGNBENCH_ROWS]
    (tmp / "critiquellm" / rel).write_text("".join(rows), encoding="utf-8")
    from critic_tasks.protocols.processbench.data import SAMPLE_DIR

    solutions = json.loads((SAMPLE_DIR / "gsm8k.json").read_text(encoding="utf-8"))[:PROCESSBENCH_ROWS]
    assert sorted(s["label"] == -1 for s in solutions) == [False, True]  # label -1: no step is wrong
    # laid out as a checkout of the authors' repository, with their template (the default prompt) beside the data
    template = Path("code") / "templates" / "critique_template.txt"
    if not (SHARED / "data" / "processbench" / template).is_file():
        pytest.skip(f"shared data not found at {SHARED / 'data' / 'processbench' / template}")
    (tmp / "processbench" / "dataset").mkdir(parents=True)
    (tmp / "processbench" / "dataset" / "gsm8k.json").write_text(json.dumps(solutions), encoding="utf-8")
    (tmp / "processbench" / template).parent.mkdir(parents=True)
    (tmp / "processbench" / template).write_bytes((SHARED / "data" / "processbench" / template).read_bytes())
    # one judge for both (same settings, same cache): identical critiques get identical grades
    env = _env(tmp, CRITIQUELLM_DATA_DIR=str(tmp / "critiquellm"), PROCESSBENCH_DATA_DIR=str(tmp / "processbench"),
               CRITIC_JUDGE_MODEL="smollm2-judge",
               CRITIC_JUDGE_BASE_URL=llama_server, CRITIC_JUDGE_API_KEY="EMPTY", CRITIC_JUDGE_MAX_TOKENS="48")
    oc = _critic_eval(oc_bin, ["--datasets", *(f"{t}_gen" for t in PARITY_TASKS), "--hf-type", "chat",
                               "--hf-path", str(smollm2_folder), "--max-out-len", str(PARITY_BUDGET),
                               "--batch-size", "1", "-w", str(tmp / "oc")], env, tmp)
    assert oc.returncode == 0, (oc.stdout[-3000:], oc.stderr[-3000:])
    # the tiny judge leaves some critiques without a grade: counted in judge_failed by both harnesses, but critic-eval
    # (lm-eval) then exits 1 unless told to accept them
    env = {**env, "CRITIC_JUDGE_ALLOW_FAILURES": "1"}
    lm = subprocess.run([sys.executable, "-m", "critic_tasks.cli", "--model", "hf", "--model_args",
                         f"pretrained={smollm2_folder}", "--apply_chat_template", "--tasks", ",".join(PARITY_TASKS),
                         "--gen_kwargs", f"max_gen_toks={PARITY_BUDGET}", "--batch_size", "1", "--log_samples",
                         "--output_path", str(tmp / "lm")], capture_output=True, text=True, env=env, cwd=tmp,
                        timeout=1500)
    assert lm.returncode == 0, (lm.stdout[-3000:], lm.stderr[-3000:])
    oc_dir = Path(sorted(glob.glob(str(tmp / "oc" / "*")))[-1])
    return {"oc": oc_dir, "oc_stderr": oc.stderr, "lm": tmp / "lm", "model": f"{smollm2_folder.name}_hf"}


def _lm_eval_generations(out: Path, task: str) -> list[str]:
    """The raw replies of an lm-eval --log_samples run, in document order."""
    [path] = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["resps"][0][0] for row in sorted(rows, key=lambda r: r["doc_id"])]


def _oc_generations(run_dir: Path, model: str, task: str) -> list[str]:
    rows = json.loads((run_dir / "predictions" / model / f"{task}.json").read_text(encoding="utf-8"))
    return [rows[str(i)]["prediction"] for i in range(len(rows))]


@pytest.mark.slow
def test_same_model_items_and_budget_give_the_same_generations_and_numbers(parity_runs):
    """critic-eval opencompass --hf-type chat and critic-eval --model hf --apply_chat_template, greedy, batch 1, the
    same budget: every generation identical, every metric OpenCompass reports equal to lm-eval's."""
    model = parity_runs["model"]
    for task in PARITY_TASKS:
        ours, theirs = _oc_generations(parity_runs["oc"], model, task), _lm_eval_generations(parity_runs["lm"], task)
        assert len(ours) == len(theirs) > 0, task
        assert ours == theirs, task
    # OpenCompass honoured --max-out-len (no dataset budget overrides it) and sent lm-eval's prompts
    logs = "".join(Path(p).read_text(encoding="utf-8", errors="replace")
                   for p in glob.glob(str(parity_runs["oc"] / "logs" / "infer" / model / "*.out")))
    assert f"'max_new_tokens': {PARITY_BUDGET}" in logs and "'max_new_tokens': 512" not in logs
    # critic-eval opencompass scored the datasets in one evaluation process (launch.py), not one each
    assert len(glob.glob(str(parity_runs["oc"] / "logs" / "eval" / model / "*.out"))) == 1
    assert f"one evaluation process for the {len(PARITY_TASKS)} datasets" in parity_runs["oc_stderr"]
    [summary] = glob.glob(str(parity_runs["oc"] / "summary" / "critic_summary_*.json"))
    oc_results = json.loads(Path(summary).read_text(encoding="utf-8"))[model]
    [results] = glob.glob(str(parity_runs["lm"] / "**" / "results_*.json"), recursive=True)
    lm_results = read_results(Path(results))  # with the intervals computed from its samples files
    compared = 0
    for task in PARITY_TASKS:
        for key, value in oc_results[task].items():
            if isinstance(value, (int, float)):
                assert lm_results[task][key] == pytest.approx(value, abs=1e-9), (task, key)
                compared += 1
    assert compared > 40
    assert "judge_parse_rate,none" in oc_results["critic_feedback_sub_chat"]
    assert "text_pearson,none" in oc_results["critic_alignbench_ref"]


@pytest.mark.slow
def test_compare_pairs_an_opencompass_run_with_an_lm_eval_run_item_by_item(parity_runs):
    """`critic-eval compare` reads an OpenCompass run's own per-item files (predictions' documents, our evaluator's
    details) as it reads lm-eval's samples: the two harnesses' runs of the same model, items and budget (identical
    generations, above) hold the same documents under the same ids, and every paired difference is 0."""
    from critic_tasks.reports.compare import compare_runs
    from critic_tasks.reports.results import load_runs

    model = parity_runs["model"]
    [oc] = glob.glob(str(parity_runs["oc"] / "summary" / f"critic_results_{model}_*.json"))
    [lm] = glob.glob(str(parity_runs["lm"] / "**" / "results_*.json"), recursive=True)
    (run_oc,), (run_lm,) = load_runs(Path(oc)), load_runs(Path(lm))
    found = compare_runs(run_lm, run_oc)
    assert {c.task for c in found} >= {"critic_feedback_chat", "critic_processbench_gsm8k", "critic_realcritic_gsm8k",
                                       "critic_judgebench_math", "critic_alignbench_ref"}
    for c in found:
        assert c.difference == pytest.approx(0.0, abs=1e-9), (c.task, c.key)



# OpenCompass starts one evaluation process per dataset by default (~20 s of imports each on these cores): the
# runs below evaluate every dataset in one
ONE_EVAL_PROCESS = """
eval = dict(partitioner=dict(type=NaivePartitioner, n=len(datasets)),
            runner=dict(type=LocalRunner, max_num_workers=1, task=dict(type=OpenICLEvalTask)))
"""

EVAL_CONFIG = """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK
from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask

with read_base():
    from critic_tasks.adapters.opencompass.configs.dataset_collections.critic_gen import critic_datasets
    from critic_tasks.adapters.opencompass.configs.datasets.critic_feedback_sub_chat_gen import (
        critic_feedback_sub_chat_datasets,
    )
    from critic_tasks.adapters.opencompass.configs.datasets.critic_alignbench_pairwise_free_gen import (
        critic_alignbench_pairwise_free_datasets,
    )
    from critic_tasks.adapters.opencompass.configs.datasets.critic_alignbench_ref_gen import (
        critic_alignbench_ref_datasets,
    )
    from critic_tasks.adapters.opencompass.configs.datasets.critic_metacritique_gen import critic_metacritique_datasets
    from critic_tasks.adapters.opencompass.configs.datasets.critic_rewardbench_gen import critic_rewardbench_datasets
    from critic_tasks.adapters.opencompass.configs.datasets.critic_rewardbench2_gen import critic_rewardbench2_datasets
    from critic_tasks.adapters.opencompass.configs.datasets.critic_rmbench_gen import critic_rmbench_datasets
    from critic_tasks.adapters.opencompass.configs.summarizers.critic import summarizer

# the other protocols on their first rows (OpenCompass's test_range): 4 ratings of 3 models with 3 distinct human
# scores (the Pearsons are defined), 2 pairs in both orders, 2 critiques (their long prompts are most of the run's
# time); RewardBench 2's four-way prompts and its first two Ties prompts (every answer rated), RM-Bench's first prompt
# (its 3 x 3 comparisons, both orders); RewardBench's 14 pairs whole (one seeded order each)
for d, rows in ((critic_alignbench_ref_datasets, 4), (critic_alignbench_pairwise_free_datasets, 4),
                (critic_metacritique_datasets, 2), (critic_rewardbench2_datasets, {rewardbench2_rows}),
                (critic_rmbench_datasets, {rmbench_rows})):
    d[0]['reader_cfg']['test_range'] = f'[0:{{rows}}]'
datasets = [*critic_datasets, *critic_feedback_sub_chat_datasets, *critic_alignbench_ref_datasets,
            *critic_alignbench_pairwise_free_datasets, *critic_metacritique_datasets, *critic_rewardbench_datasets,
            *critic_rewardbench2_datasets, *critic_rmbench_datasets]
for d in datasets:  # a short budget keeps the CPU run short; revisions get a little more room
    d['infer_cfg']['inferencer']['max_out_len'] = 96 if d['task'] == 'critic_correction' else 24

# the SYSTEM role declared: the authors' judges' system messages sent as lm-eval sends them (docs/opencompass.md)
models = [dict(abbr='{model}', type=OpenAISDK, path='smollm2', key='EMPTY', openai_api_base='{base_url}',
               tokenizer_path='{tokenizer}', max_seq_len=4096, max_out_len=24, batch_size=8, temperature=0.0,
               query_per_second=100, retry=2,
               meta_template=dict(round=[dict(role='HUMAN', api_role='HUMAN'),
                                         dict(role='BOT', api_role='BOT', generate=True)],
                                  reserved_roles=[dict(role='SYSTEM', api_role='SYSTEM')]))]
""" + ONE_EVAL_PROCESS


OTHER = {"critic_alignbench_ref": list(range(4)), "critic_alignbench_pairwise_free": list(range(4)),
         "critic_metacritique": list(range(2))}
OTHER_ROWS = sum(map(len, OTHER.values()))
# RewardBench, RewardBench 2 and RM-Bench on the bundled samples' first documents (with their judges' system messages)
REWARD = {"critic_rewardbench": list(range(14)), "critic_rewardbench2": list(range(23)),
          "critic_rmbench": list(range(18))}


# the bundled CriticBench sample with each file's first rows (its files hold 3-4): every domain, quality mix and
# file of the collection is still there, at two thirds of the generations (the run's time is the server's)
API_ROWS_PER_FILE = 2


def _first_rows_copy(dest: Path) -> dict[str, int]:
    """The sample folder with each JSON file cut to its first API_ROWS_PER_FILE items; the rows kept per file kind."""
    from critic_tasks.protocols.criticbench.data import SAMPLE_DIR

    kept = {"comp": 0, "meta": 0, "single": 0}
    for path in sorted(SAMPLE_DIR.rglob("*.json")):
        rows = json.loads(path.read_text(encoding="utf-8"))[:API_ROWS_PER_FILE]
        out = dest / path.relative_to(SAMPLE_DIR)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
        if path.relative_to(SAMPLE_DIR).parts[0] == "obj_dev_data":
            kind = ("comp" if path.name.endswith("_comp_feedback.json") else
                    "meta" if path.parent.name == "meta_feedback_single" else "single")
            kept[kind] += len(rows)
    return kept


@pytest.fixture(scope="module")
def api_run(oc_bin, smollm2_folder, llama_server, tmp_path_factory):
    """One real OpenCompass run: the four objective dimensions (the `critic` collection, on the sample's first rows)
    and one judge-scored dataset, judged through OpenCompass's OC_JUDGE_* variables by the same llama.cpp server."""
    tmp = tmp_path_factory.mktemp("oc_api")
    kept = _first_rows_copy(tmp / "criticbench")
    config = tmp / "eval_critic_api.py"
    config.write_text(EVAL_CONFIG.format(model=MODEL, base_url=llama_server, tokenizer=smollm2_folder,
                                         rewardbench2_rows=len(REWARD["critic_rewardbench2"]),
                                         rmbench_rows=len(REWARD["critic_rmbench"])))
    env = _env(tmp, OC_JUDGE_MODEL="smollm2-judge", OC_JUDGE_API_BASE=llama_server, OC_JUDGE_API_KEY="EMPTY",
               CRITIC_JUDGE_MAX_TOKENS="48", CRITICBENCH_DATA_DIR=str(tmp / "criticbench"))
    out = _critic_eval(oc_bin, [str(config), "-w", str(tmp / "out")], env, tmp)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    run_dir = Path(sorted(glob.glob(str(tmp / "out" / "*")))[-1])
    return {"dir": run_dir, "stdout": out.stdout, "env": env, "tmp": tmp, "judge_base": llama_server, "kept": kept,
            "data_dir": str(tmp / "criticbench")}


def _predictions(run_dir: Path) -> dict[str, str]:
    """prompt -> the reply OpenCompass recorded, over every prediction file of the run; a prompt with a system
    message as the JSON of its chat messages."""
    replies = {}
    roles = {"SYSTEM": "system", "HUMAN": "user"}
    for path in (run_dir / "predictions" / MODEL).glob("*.json"):
        for row in json.loads(path.read_text()).values():
            prompt = row["origin_prompt"]
            if not isinstance(prompt, str):  # the SYSTEM and HUMAN turns the model config's meta template declares
                prompt = json.dumps([{"role": roles[t["role"]], "content": t["prompt"]} for t in prompt])
            replies[prompt] = row["prediction"]
    return replies


@pytest.mark.slow
def test_opencompass_numbers_equal_the_lm_eval_path_on_the_same_generations(api_run, monkeypatch):
    summary = json.loads(Path(glob.glob(str(api_run["dir"] / "summary" / "critic_summary_*.json"))[0]).read_text())
    assert summary["missing"] == {}
    ours = summary[MODEL]
    tasks = [*registry.GROUPS["critic"].members, "critic_feedback_sub_chat"]
    assert set(tasks) | {"critic"} <= set(ours)

    replies = _predictions(api_run["dir"])
    kept = api_run["kept"]  # at least: feedback on every single-response row, both orders of each pair, each meta row
    assert len(replies) >= kept["single"] + 2 * kept["comp"] + kept["meta"] + 5 + OTHER_ROWS + sum(
        map(len, REWARD.values()))
    for key in ("HF_HUB_OFFLINE", "CRITICBENCH_DATA_DIR", "CRITIC_JUDGE_CACHE", "CRITIC_JUDGE_MAX_TOKENS",
                "CRITIQUELLM_DATA_DIR", "METACRITIQUE_DATA_DIR"):
        monkeypatch.setenv(key, api_run["env"][key])
    # the judge OpenCompass's variables named, as our own settings: same identity, so every grade is a cache hit
    monkeypatch.setenv("CRITIC_JUDGE_MODEL", "smollm2-judge")
    monkeypatch.setenv("CRITIC_JUDGE_BASE_URL", api_run["judge_base"])
    monkeypatch.setenv("CRITIC_JUDGE_API_KEY", "EMPTY")
    asked = []

    def reply(prompt):
        asked.append(prompt)
        return replies[prompt]

    import lm_eval

    # the intervals from the logged rows, as critic-eval summary computes an lm-eval run's (no lm-eval metric)
    live = with_logged_intervals(lm_eval.simple_evaluate(
        model=scripted_lm(reply), tasks=["critic", "critic_feedback_sub_chat"], task_manager=critic_tasks.task_manager(),
        bootstrap_iters=0, log_samples=True))
    # CritiqueLLM and MetaCritique on the rows OpenCompass ran (lm-eval's `samples`: those documents only)
    live.update(with_logged_intervals(lm_eval.simple_evaluate(
        model=scripted_lm(reply), tasks=list(OTHER), samples=OTHER, task_manager=critic_tasks.task_manager(),
        bootstrap_iters=0, log_samples=True)))
    # the authors' judges with the chat template (their system and user messages), on the documents OpenCompass ran
    from test_rmbench import _chat_lm

    for key in ("RMBENCH_DATA_DIR", "REWARDBENCH_DATA_DIR", "REWARDBENCH2_DATA_DIR", authors.MIRROR_ENV,
                "XDG_CACHE_HOME"):
        monkeypatch.setenv(key, api_run["env"][key])
    authors._text.cache_clear()

    def chat_reply(system: str, user: str) -> str:
        return reply(json.dumps([{"role": "system", "content": system}, {"role": "user", "content": user}])
                     if system else user)

    live.update(with_logged_intervals(lm_eval.simple_evaluate(
        model=_chat_lm(chat_reply), tasks=list(REWARD), samples=REWARD, apply_chat_template=True,
        task_manager=critic_tasks.task_manager(), bootstrap_iters=0, log_samples=True)))
    assert set(asked) == set(replies)  # every lm-eval prompt is one OpenCompass sent, byte for byte
    tasks += list(OTHER)
    # the same numbers, but that OpenCompass's results leave out what lm-eval reports as None (a bias line one order
    # per pair cannot give)
    for task in REWARD:
        assert {k for k, v in live[task].items() if k.endswith(",none") and "_stderr," not in k and v is not None} \
            == set(ours[task]), task
    tasks += list(REWARD)
    # the results name how each was asked, as lm-eval's do (text values OpenCompass's own parsing leaves out)
    assert ours["critic_rewardbench"]["orders,none"] == "random"
    assert ours["critic_rewardbench2"]["ratings,none"] == "four_way"
    assert set(OTHER) <= set(ours)
    assert "f1,none" in ours["critic_metacritique"] or "judge_failed,none" in ours["critic_metacritique"]
    assert "agreement,none" in ours["critic_alignbench_pairwise_free"]
    assert "text_pearson,none" in ours["critic_alignbench_ref"]
    compared = 0
    for task in tasks:
        for key, value in ours[task].items():
            assert live[task][key] == pytest.approx(value, abs=1e-9), (task, key)
            compared += 1
    assert live["critic"]["score,none"] == pytest.approx(ours["critic"]["score,none"], abs=1e-9)
    assert compared > 30
    judged = ours["critic_feedback_sub_chat"]
    assert "judge_parse_rate,none" in judged and "judge_deferred,none" not in judged  # graded in the run
    # the paper's table printed by the summarizer
    assert "critic-tasks: " + MODEL in api_run["stdout"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["critic_summary_*.json", f"critic_results_{MODEL}_*.json"])
def test_summary_report_and_check_read_the_opencompass_results(api_run, tmp_path, capsys, name):
    """Both files the summarizer writes: every model's results (with the datasets that have none), and one model's
    in lm-eval's shape."""
    path = Path(glob.glob(str(api_run["dir"] / "summary" / name))[0])
    ours = json.loads(path.read_text())
    score = (ours["results"] if "results" in ours else ours[MODEL])["critic"]["score,none"]
    assert cli.main(["summary", str(path)]) == 0
    table = capsys.readouterr().out
    assert any(line.split()[:3] == ["critic", "overall", f"{score:.2f}"] for line in table.splitlines()), table
    # the tiny judge fails to grade some items; the gate says so unless told to allow them
    entries = ours["results"] if "results" in ours else ours[MODEL]
    judge_failed = sum(v.get("judge_failed,none", 0) or 0 for v in entries.values() if isinstance(v, dict))
    at_least = ["check", str(path), "--min", f"critic.score={score - 1:.2f}"]
    assert cli.main(at_least) == (1 if judge_failed else 0)
    assert ("judge_failed" in capsys.readouterr().out) == bool(judge_failed)
    assert cli.main(at_least + ["--allow-judge-failures"]) == 0
    assert cli.main(["check", str(path), "--min", f"critic.score={score + 1:.2f}", "--allow-judge-failures"]) == 1
    assert cli.main(["report", str(path), "-o", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.html").is_file()
    assert MODEL in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.slow
def test_opencompass_result_files_carry_per_item_details(api_run):
    results = json.loads((api_run["dir"] / "results" / MODEL / "critic_comparison.json").read_text())
    details = results["details"]
    assert len(details) == 2 * api_run["kept"]["comp"] == 2 * 9 * API_ROWS_PER_FILE  # each pair, both orders
    first = details[0] if isinstance(details, list) else details["0"]
    assert {"item", "prediction", "verdict", "parsed"} <= set(first)
    judged = json.loads((api_run["dir"] / "results" / MODEL / "critic_feedback_sub_chat.json").read_text())
    assert judged["judge"][0]["model"] == "smollm2-judge"  # OpenCompass keeps a non-number per replica


@pytest.mark.slow
def test_critic_eval_score_rescores_an_opencompass_run(api_run, tmp_path):
    scored = tmp_path / "scored.json"
    pred_dir = api_run["dir"] / "predictions" / MODEL
    assert cli.main(["score", str(pred_dir), "--data_dir", api_run["data_dir"], "--output", str(scored)]) == 0
    rescored = json.loads(scored.read_text())
    summary = json.loads(Path(glob.glob(str(api_run["dir"] / "summary" / "critic_summary_*.json"))[0]).read_text())
    for task in registry.GROUPS["critic"].members:
        for key, value in summary[MODEL][task].items():
            assert rescored["results"][task][key] == pytest.approx(value, abs=1e-9), (task, key)
    assert rescored["results"]["critic"]["score,none"] == pytest.approx(summary[MODEL]["critic"]["score,none"])
    assert sorted(name for name, _ in rescored["skipped"]) == [  # judge-scored, or another protocol's
        "critic_alignbench_pairwise_free.json", "critic_alignbench_ref.json", "critic_feedback_sub_chat.json",
        "critic_metacritique.json", "critic_rewardbench.json", "critic_rewardbench2.json", "critic_rmbench.json"]


SPLIT_CONFIG = """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK
from opencompass.partitioners import NaivePartitioner, NumWorkerPartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLEvalTask, OpenICLInferTask

with read_base():
    from critic_tasks.adapters.opencompass.configs.datasets.critic_comparison_chat_gen import (
        critic_comparison_chat_datasets,
    )
    from critic_tasks.adapters.opencompass.configs.datasets.critic_feedback_chat_gen import critic_feedback_chat_datasets
    from critic_tasks.adapters.opencompass.configs.datasets.critic_meta_gen import critic_meta_datasets
    from critic_tasks.adapters.opencompass.configs.summarizers.critic import summarizer

# the first 9 meta items (3 domains, each quality; a chunk of 5 and one of 4): as many chunks as all 27 give. A range
# from 0 without a step: OpenCompass caches a dataset's size after its test_range and applies the range again
critic_meta_datasets[0]['reader_cfg']['test_range'] = '[0:9]'
datasets = [*critic_feedback_chat_datasets, *critic_comparison_chat_datasets, *critic_meta_datasets]
models = [dict(abbr='{model}', type=OpenAISDK, path='smollm2', key='EMPTY', openai_api_base='{base_url}',
               tokenizer_path='{tokenizer}', max_seq_len=4096, max_out_len=24, batch_size=4, temperature=0.0,
               query_per_second=100, retry=2)]
{infer}""" + ONE_EVAL_PROCESS

# OpenCompass's NumWorkerPartitioner leaves datasets of up to min_task_size (16) rows whole: a small one splits them
SPLIT_INFER = """
infer = dict(partitioner=dict(type=NumWorkerPartitioner, num_worker=2, min_task_size=2),
             runner=dict(type=LocalRunner, max_num_workers=2, task=dict(type=OpenICLInferTask)))
"""
SPLIT_TASKS = ("critic_feedback_chat", "critic_comparison_chat", "critic_meta")


@pytest.mark.slow
def test_a_run_split_across_two_workers_gives_the_whole_runs_numbers(oc_bin, smollm2_folder, llama_server, tmp_path,
                                                                      monkeypatch):
    """Each dataset split into chunks run by two workers (comparison pairs and the Spearman's items land in different
    chunks): the evaluator scores all of a dataset's chunks together, so every number is the one lm-eval computes
    from the same replies over the whole dataset (a chunk scored alone would give other Spearmans and pair
    consistencies)."""
    config = tmp_path / "eval_split.py"
    config.write_text(SPLIT_CONFIG.format(model=MODEL, base_url=llama_server, tokenizer=smollm2_folder,
                                          infer=SPLIT_INFER))
    env = _env(tmp_path)
    out = _critic_eval(oc_bin, [str(config), "--max-num-workers", "2", "-w", str(tmp_path / "out")], env, tmp_path)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    run = Path(sorted(glob.glob(str(tmp_path / "out" / "*")))[-1])
    replies, sent = {}, []
    for task in SPLIT_TASKS:
        chunks = sorted((run / "predictions" / MODEL).glob(f"{task}_[0-9].json"))
        assert len(chunks) == 2, task  # really split
        assert not (run / "predictions" / MODEL / f"{task}.json").exists()
        for chunk in chunks:
            for row in json.loads(chunk.read_text()).values():
                sent.append(row["origin_prompt"])
                replies[row["origin_prompt"]] = row["prediction"]
    for key in ("HF_HUB_OFFLINE", "CRITICBENCH_DATA_DIR"):
        monkeypatch.setenv(key, env[key])
    asked = []

    def reply(prompt):
        asked.append(prompt)
        return replies[prompt]

    import lm_eval

    # the meta items the config's test_range keeps (the first 9), the other two datasets whole
    live = with_logged_intervals(lm_eval.simple_evaluate(
        model=scripted_lm(reply), tasks=list(SPLIT_TASKS), samples={"critic_meta": list(range(9))},
        task_manager=critic_tasks.task_manager(), bootstrap_iters=0, log_samples=True))
    assert sorted(asked) == sorted(sent)  # the chunks together answered every prompt, once
    [summary] = glob.glob(str(run / "summary" / "critic_summary_*.json"))
    ours = json.loads(Path(summary).read_text())[MODEL]
    for task in SPLIT_TASKS:
        assert "parse_rate,none" in ours[task], task
        for key, value in ours[task].items():
            assert live[task][key] == pytest.approx(value, abs=1e-9), (task, key)
    assert "spearman,none" in ours["critic_meta"]


HF_CONFIG = """\
from mmengine.config import read_base
from opencompass.models import HuggingFacewithChatTemplate

with read_base():
    from critic_tasks.adapters.opencompass.configs.datasets.critic_meta_chat_gen import critic_meta_chat_datasets

datasets = critic_meta_chat_datasets  # no summarizer: critic-eval opencompass says how to add ours
datasets[0]['infer_cfg']['inferencer']['max_out_len'] = 24
models = [dict(abbr='smollm2-hf', type=HuggingFacewithChatTemplate, path='{path}', max_seq_len=4096,
               max_out_len=24, batch_size=8, run_cfg=dict(num_gpus=0))]
"""


@pytest.mark.slow
def test_hf_chat_model_run_and_rescore(oc_bin, smollm2_folder, tmp_path):
    """OpenCompass's HF chat model class on the CPU; its predictions re-score the same."""
    config = tmp_path / "eval_critic_hf.py"
    config.write_text(HF_CONFIG.format(path=smollm2_folder))
    out = _critic_eval(oc_bin, [str(config), "-w", str(tmp_path / "out")], _env(tmp_path), tmp_path)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert "add to the config's read_base: from critic_tasks.adapters.opencompass.configs.summarizers" in out.stderr
    run_dir = Path(sorted(glob.glob(str(tmp_path / "out" / "*")))[-1])
    results = json.loads((run_dir / "results" / "smollm2-hf" / "critic_meta_chat.json").read_text())
    prompt = json.loads((run_dir / "predictions" / "smollm2-hf" / "critic_meta_chat.json").read_text())["0"]
    # our prompt as it is: the chat model class makes it the one user message (no SYSTEM turn, no "\n" added)
    assert isinstance(prompt["origin_prompt"], str) and not prompt["origin_prompt"].endswith("\n")
    scored = tmp_path / "scored.json"
    assert cli.main(["score", str(run_dir / "predictions" / "smollm2-hf"), "--data_dir", "sample",
                     "--output", str(scored)]) == 0
    rescored = json.loads(scored.read_text())["results"]["critic_meta_chat"]
    numbers = {k: v for k, v in results.items() if isinstance(v, (int, float))}
    assert {"spearman", "parse_rate", "score"} <= set(numbers)
    for key, value in numbers.items():
        assert rescored[f"{key},none"] == pytest.approx(value, abs=1e-9), key


# ----------------------------------------------------------------------------- bad configuration: one line


def _one_line_error(out, *needles):
    assert "Traceback" not in out.stderr + out.stdout, out.stderr[-2000:]
    lines = [line for line in out.stderr.splitlines() if line.startswith("critic-eval")]
    assert len(lines) == 1, out.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.slow
def test_unknown_dataset_name_is_one_line(oc_bin, tmp_path):
    out = _critic_eval(oc_bin, ["--datasets", "critic_feedbak_gen", "--hf-path", "x"], _env(tmp_path), tmp_path, timeout=120)
    assert out.returncode == 2
    _one_line_error(out, "critic_feedbak_gen", "critic-eval tasks")


@pytest.mark.slow
def test_missing_data_dir_is_one_line_before_opencompass_starts(oc_bin, tmp_path):
    env = _env(tmp_path, CRITICBENCH_DATA_DIR=str(tmp_path / "nope"))
    out = _critic_eval(oc_bin, ["--datasets", "critic_feedback_gen", "--hf-path", "x"], env, tmp_path, timeout=120)
    assert out.returncode == 2
    _one_line_error(out, "CRITICBENCH_DATA_DIR", "nope")
    assert "OpenCompass - INFO" not in out.stdout + out.stderr  # stopped before OpenCompass ran


@pytest.mark.slow
def test_judge_scored_dataset_without_a_judge_is_one_line(oc_bin, tmp_path):
    out = _critic_eval(oc_bin, ["--datasets", "critic_feedback_sub_gen", "--hf-path", "x"], _env(tmp_path), tmp_path, timeout=120)
    assert out.returncode == 2
    _one_line_error(out, "critic_feedback_sub", "OC_JUDGE_MODEL", "CRITIC_JUDGE_MODEL")


@pytest.mark.slow
def test_eval_config_file_settings_checked_too(oc_bin, tmp_path):
    config = tmp_path / "eval_sub.py"
    config.write_text("from mmengine.config import read_base\nwith read_base():\n    from critic_tasks.adapters."
                      "opencompass.configs.datasets.critic_feedback_sub_gen import critic_feedback_sub_datasets\n"
                      "datasets = critic_feedback_sub_datasets\nmodels = []\n")
    out = _critic_eval(oc_bin, [str(config)], _env(tmp_path), tmp_path, timeout=180)
    assert out.returncode == 2
    _one_line_error(out, "critic_feedback_sub", "no judge")
    # a protocol option the config sets under a name its protocol lacks (RewardBench's is `orders`)
    config.write_text("from mmengine.config import read_base\nwith read_base():\n    from critic_tasks.adapters."
                      "opencompass.configs.datasets.critic_rewardbench_gen import critic_rewardbench_datasets\n"
                      "critic_rewardbench_datasets[0]['order'] = 'both'\n"
                      "datasets = critic_rewardbench_datasets\nmodels = []\n")
    out = _critic_eval(oc_bin, [str(config)], _env(tmp_path), tmp_path, timeout=180)
    assert out.returncode == 2
    _one_line_error(out, "critic_rewardbench", "unknown dataset config key 'order'", "orders, seed")


BAD_RUN = """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from critic_tasks.adapters.opencompass.configs.datasets.critic_meta_chat_gen import critic_meta_chat_datasets
    from critic_tasks.adapters.opencompass.configs.summarizers.critic import summarizer

datasets = critic_meta_chat_datasets
models = [dict(abbr='m', type=OpenAISDK, path='m', key='EMPTY', openai_api_base='http://127.0.0.1:9/v1',
               tokenizer_path='{tokenizer}', max_out_len=8, batch_size=1)]
"""


@pytest.mark.slow
@pytest.mark.parametrize("size_cached", [False, True])
def test_plain_opencompass_stops_on_our_errors_in_one_line(oc_bin, smollm2_folder, tmp_path, size_cached):
    """Without our wrapper: where OpenCompass builds the dataset in its main process (to measure it), our error
    stops the run there, in one line, exit 2. Where it has the size cached (``.cache/dataset_size.json``), each
    dataset fails in a process of its own and OpenCompass itself exits 0; our summarizer then names the dataset
    and the reason (the line our code printed in that task's log) and exits 1."""
    config = tmp_path / "eval_bad.py"
    config.write_text(BAD_RUN.format(tokenizer=smollm2_folder))
    if size_cached:
        (tmp_path / ".cache").mkdir()
        (tmp_path / ".cache" / "dataset_size.json").write_text('{"critic_meta_chat": 3}')
    nope = tmp_path / "nope"
    out = subprocess.run([str(oc_bin / "opencompass"), str(config), "-w", str(tmp_path / "out")], capture_output=True,
                         text=True, env=_env(tmp_path, CRITICBENCH_DATA_DIR=str(nope)), cwd=tmp_path, timeout=600)
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    ours = [line for line in out.stderr.splitlines() if line.startswith("critic-tasks: ")]
    if size_cached:
        assert out.returncode == 1
        assert ours == [f"critic-tasks: m/critic_meta_chat: no results: CRITICBENCH_DATA_DIR={nope}: not a directory"]
    else:
        assert out.returncode == 2
        assert ours == [f"critic-tasks: CRITICBENCH_DATA_DIR={nope}: not a directory"]


@pytest.mark.slow
def test_example_eval_config_reads_as_opencompass_reads_it(oc_bin):
    code = ("import json\nfrom critic_tasks.adapters.opencompass.preflight import tasks_in_config\n"
            f"print(json.dumps(tasks_in_config({str(REPO / 'examples' / 'eval_critic.py')!r})))")
    out = subprocess.run([str(oc_bin / "python"), "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = dict(json.loads(out.stdout.strip().splitlines()[-1]))
    assert found == {"critic_feedback": False, "critic_comparison": False, "critic_meta": False,
                     "critic_correction": False, "critic_feedback_sub": True, "critic_comparison_sub": True,
                     "critic_correction_sub": True}


def _readme_command(start: str, needle: str, page: str = "README.md") -> str:
    """The shell command of a page (README.md or docs/...; continuation lines joined) that begins with ``start``
    and contains ``needle``."""
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(start):
            continue
        command = line
        while command.rstrip().endswith("\\"):
            i += 1
            command = command.rstrip()[:-1] + lines[i]
        if needle in command:
            return command
    raise AssertionError(f"no command {start}... with {needle!r} in {page}")


@pytest.mark.slow
def test_docs_plain_opencompass_command_runs_as_printed_on_a_cpu(oc_bin, smollm2_folder, tmp_path):
    """OpenCompass's own command, as docs/opencompass.md prints it for a CPU (the demo model's folder where the
    page's previous line writes it), with the OpenCompass environment's commands on the PATH."""
    command = _readme_command("CRITICBENCH_DATA_DIR=sample opencompass --config-dir", "--hf-num-gpus 0",
                              "docs/opencompass.md")
    assert "--hf-path smollm2-hf" in command, command
    (tmp_path / "smollm2-hf").symlink_to(smollm2_folder)
    env = _env(tmp_path)
    del env["CRITICBENCH_DATA_DIR"]  # the page's command says it
    env["PATH"] = os.pathsep.join([str(oc_bin), env["PATH"]])
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1500)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    run_dir = Path(sorted(glob.glob(str(tmp_path / "outputs" / "default" / "*")))[-1])
    summary = json.loads(Path(glob.glob(str(run_dir / "summary" / "critic_summary_*.json"))[0]).read_text())
    assert summary["missing"] == {}
    assert {"critic_feedback_chat", "critic_meta_chat"} <= set(summary["smollm2-hf_hf"])
    assert "critic-tasks: smollm2-hf_hf" in out.stdout  # the paper's table


@pytest.mark.slow
def test_offline_example_config_runs_here(oc_bin, smollm2_folder, llama_server, tmp_path):
    """examples/eval_critic_local.py as written, but for the judge server's port (the test's server picks a free
    one), from a folder holding the demo model's HF folder where the example's instructions put it."""
    text = (REPO / "examples" / "eval_critic_local.py").read_text(encoding="utf-8")
    assert "http://127.0.0.1:8000/v1" in text
    config = tmp_path / "eval_critic_local.py"
    config.write_text(text.replace("http://127.0.0.1:8000/v1", llama_server), encoding="utf-8")
    (tmp_path / "smollm2-hf").symlink_to(smollm2_folder)
    out = _critic_eval(oc_bin, [str(config), "-w", str(tmp_path / "out")], _env(tmp_path), tmp_path)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    run_dir = Path(sorted(glob.glob(str(tmp_path / "out" / "*")))[-1])
    summary = json.loads(Path(glob.glob(str(run_dir / "summary" / "critic_summary_*.json"))[0]).read_text())
    assert summary["missing"] == {}
    results = summary["smollm2-135m-instruct"]
    assert {"critic_feedback_chat", "critic_meta_chat", "critic_feedback_sub_chat"} <= set(results)
    assert "judge_parse_rate,none" in results["critic_feedback_sub_chat"]
    judged = json.loads((run_dir / "results" / "smollm2-135m-instruct" / "critic_feedback_sub_chat.json").read_text())
    assert judged["judge"][0]["model"] == "smollm2"  # the example's judge_cfg


def test_tasks_opencompass_cannot_run_are_refused_in_one_line_naming_the_lm_eval_command(capsys):
    for name, why in (("critic_correction_self_gen", "SAvg"), ("critic_self_feedback_gen", "SAvg"),
                      ("critic_utility_gen", "reviser"), ("critic_revision_pool", "reviser"),
                      ("critic_correction_sampled_gen", "5 samples per item")):
        assert cli.main(["opencompass", "--datasets", "critic_feedback_gen", name, "--hf-path", "x"]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        task = name.removesuffix("_gen")
        assert len(lines) == 1 and why in lines[0], lines
        assert lines[0].endswith(f"critic-eval --model hf --model_args pretrained=MODEL --apply_chat_template "
                                 f"--tasks {task}"), lines


def test_default_eval_stage_becomes_one_process_for_a_local_one_worker_run(capsys):
    """launch.py's change to OpenCompass's default eval stage (its fill_eval_cfg, stood in for here: it writes a
    NaivePartitioner of one dataset per task): every dataset in one task where the run is local with one worker;
    OpenCompass's own partition where the user asked for workers side by side or a cluster."""
    from argparse import Namespace

    from critic_tasks.adapters.opencompass.launch import one_eval_process

    def opencompass_fill(cfg, args):
        cfg["eval"] = {"partitioner": {"type": "NaivePartitioner"}, "runner": {"max_num_workers": args.max_num_workers}}

    def filled(datasets, **args):
        cfg = {"datasets": [{"abbr": f"d{i}"} for i in range(datasets)]}
        one_eval_process(opencompass_fill)(cfg, Namespace(**{"max_num_workers": 1, "slurm": False, "dlc": False,
                                                              **args}))
        return cfg["eval"]["partitioner"]

    assert filled(8) == {"type": "NaivePartitioner", "n": 8}
    assert capsys.readouterr().err.splitlines() == [
        "critic-eval: one evaluation process for the 8 datasets (--max-num-workers N above 1: one per dataset, N at a "
        "time)"]
    assert filled(1) == {"type": "NaivePartitioner", "n": 1}
    for own in ({"max_num_workers": 2}, {"slurm": True}, {"dlc": True}):
        assert filled(8, **own) == {"type": "NaivePartitioner"}, own
    assert capsys.readouterr().err == ""  # said only where it changes OpenCompass's default


def test_critic_eval_opencompass_runs_its_environments_opencompass_through_the_launcher(tmp_path, monkeypatch):
    """With OpenCompass beside it, the wrapper runs it as ``python -m critic_tasks.adapters.opencompass.launch``
    (one evaluation process); an ``opencompass`` found only on the PATH runs as it is."""
    from critic_tasks.cli import opencompass as wrapper

    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.touch()
    (python.parent / "opencompass").touch()
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    started = []

    def execv(program, args):
        started.append((program, args))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execv", execv)
    passed = ["--config-dir", str(CONFIG_DIR), "--datasets", "critic_feedback_gen", "--models", "m",
              "--summarizer", "critic"]
    with pytest.raises(SystemExit):
        wrapper.run_command(["--datasets", "critic_feedback_gen", "--models", "m"])
    assert started == [(str(python), [str(python), "-m", "critic_tasks.adapters.opencompass.launch", *passed])]
    (python.parent / "opencompass").unlink()
    monkeypatch.setattr(shutil, "which", lambda name: "/elsewhere/opencompass" if name == "opencompass" else None)
    with pytest.raises(SystemExit):
        wrapper.run_command(["--datasets", "critic_feedback_gen", "--models", "m"])
    assert started[1] == ("/elsewhere/opencompass", ["/elsewhere/opencompass", *passed])


def test_config_dir_command_prints_the_tree(capsys):
    assert cli.main(["opencompass-config-dir"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert (printed / "datasets" / "critic_feedback_gen.py").is_file()
    assert (printed / "summarizers" / "critic.py").is_file()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.slow
def test_the_rows_a_test_range_keeps_are_the_ones_opencompass_reader_keeps(oc_bin, monkeypatch):
    """`report --chance` on a run cut with reader_cfg's test_range draws its line on the rows OpenCompass's reader
    kept (``load_partial_dataset``: a slice, or a seeded draw of n rows or of a share of them), asked here of
    OpenCompass itself."""
    from critic_tasks import engine
    from critic_tasks.reports.results import test_range_items

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    total = len(engine.task_docs("critic_feedback"))
    cuts = [3, 0.4, 5, total + 1, "[1:7:2]", "[-3:]", "[:4]"]
    script = ("import json, sys\nfrom datasets import Dataset\n"
              "from opencompass.openicl.icl_dataset_reader import load_partial_dataset\n"
              f"rows = Dataset.from_list([{{'i': i}} for i in range({total})])\n"
              f"print(json.dumps([sorted(load_partial_dataset(rows, c)['i']) for c in {cuts!r}]))\n")
    out = subprocess.run([str(oc_bin / "python"), "-c", script], capture_output=True, text=True, timeout=180,
                         cwd="/tmp")
    assert out.returncode == 0, out.stderr[-2000:]
    kept = json.loads(out.stdout.strip().splitlines()[-1])
    for cut, rows in zip(cuts, kept):
        ours = test_range_items("critic_feedback", cut, "x")
        assert (list(range(total)) if ours is None else list(ours)) == rows, cut
    assert any(0 < len(rows) < total for rows in kept[:3])  # the draws cut (else the test proves nothing)
