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
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SHARED
from helpers import scripted_lm

import critic_tasks
from critic_tasks import cli, registry
from critic_tasks.adapters.opencompass import CONFIG_DIR
from critic_tasks.adapters.opencompass import generate as _generate_configs
from critic_tasks.adapters.opencompass.spec import collections

OC_BIN = Path(os.environ.get("CRITIC_OPENCOMPASS_VENV", REPO / ".venv-opencompass")) / "bin"
MODEL = "smollm2-llamacpp"


def test_generated_config_tree_in_sync_with_generator():
    files = _generate_configs.render()
    on_disk = {p.relative_to(CONFIG_DIR).as_posix(): p.read_text(encoding="utf-8") for p in CONFIG_DIR.rglob("*.py")}
    assert on_disk == files, "run: python -m critic_tasks.adapters.opencompass.generate"
    # every task scored from one reply per document: not the sampled ones, not SAvg's two stages, not the revision
    # protocols (their revisers and judge run in lm-eval's filter)
    runnable = {t.name for t in registry.TASKS.values() if t.repeats == 1 and t.dimension_spec.scorer != "revision"
                and not t.self_feedback and t.dimension_spec.data_dimension != "self_feedback"}
    assert {"critic_alignbench_ref", "critic_alignbench_pairwise_free", "critic_metacritique"} <= runnable
    assert {p[len("datasets/"):-len("_gen.py")] for p in files if p.startswith("datasets/")} == runnable
    assert {"critic", "critic_sub", "critic_all", "critic_critiquellm"} <= set(collections())
    assert "summarizers/critic.py" in files


@pytest.fixture(scope="session")
def oc_bin():
    if not (OC_BIN / "opencompass").exists():
        pytest.skip(f"OpenCompass environment not found at {OC_BIN.parent} (bash scripts/setup.sh --opencompass)")
    return OC_BIN


@pytest.fixture(scope="session")
def smollm2_folder(oc_bin, tmp_path_factory):
    """SmolLM2 as a Hugging Face folder (OpenCompass's tokenizer and HF classes load folders, not GGUF files)."""
    out = tmp_path_factory.mktemp("models") / "smollm2-hf"
    subprocess.run([str(oc_bin / "python"), str(REPO / "scripts" / "smollm2_hf.py"), str(out)], check=True,
                   capture_output=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return out


def _env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRITIC_JUDGE_", "OC_JUDGE_", "CRITICBENCH_"))}
    return {**env, "HF_HUB_OFFLINE": "1", "CRITICBENCH_DATA_DIR": "sample",
            "CRITIQUELLM_DATA_DIR": str(SHARED / "data" / "critiquellm"),
            "METACRITIQUE_DATA_DIR": str(SHARED / "data" / "metacritique"),
            "CRITIC_JUDGE_CACHE": str(tmp_path / "judge.sqlite"), **extra}


def _critic_eval(oc_bin, args, env, cwd, timeout=1500):
    # cwd: OpenCompass caches dataset sizes in ./.cache of the directory it runs in
    return subprocess.run([str(oc_bin / "critic-eval"), "opencompass", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


EVAL_CONFIG = """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

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
    from critic_tasks.adapters.opencompass.configs.summarizers.critic import summarizer

# the other protocols on their first rows (OpenCompass's test_range): 10 ratings, 5 pairs in both orders, 3 critiques
for d, rows in ((critic_alignbench_ref_datasets, 10), (critic_alignbench_pairwise_free_datasets, 10),
                (critic_metacritique_datasets, 3)):
    d[0]['reader_cfg']['test_range'] = f'[0:{{rows}}]'
datasets = [*critic_datasets, *critic_feedback_sub_chat_datasets, *critic_alignbench_ref_datasets,
            *critic_alignbench_pairwise_free_datasets, *critic_metacritique_datasets]
for d in datasets:  # a short budget keeps the CPU run short; revisions get a little more room
    d['infer_cfg']['inferencer']['max_out_len'] = 96 if d['task'] == 'critic_correction' else 40

models = [dict(abbr='{model}', type=OpenAISDK, path='smollm2', key='EMPTY', openai_api_base='{base_url}',
               tokenizer_path='{tokenizer}', max_seq_len=4096, max_out_len=40, batch_size=8, temperature=0.0,
               query_per_second=100, retry=2)]
"""


OTHER = {"critic_alignbench_ref": list(range(10)), "critic_alignbench_pairwise_free": list(range(10)),
         "critic_metacritique": list(range(3))}
OTHER_ROWS = sum(map(len, OTHER.values()))


@pytest.fixture(scope="module")
def api_run(oc_bin, smollm2_folder, llama_server, tmp_path_factory):
    """One real OpenCompass run: the four objective dimensions (the `critic` collection, 141 generations) and one
    judge-scored dataset, judged through OpenCompass's OC_JUDGE_* variables by the same llama.cpp server."""
    tmp = tmp_path_factory.mktemp("oc_api")
    config = tmp / "eval_critic_api.py"
    config.write_text(EVAL_CONFIG.format(model=MODEL, base_url=llama_server, tokenizer=smollm2_folder))
    env = _env(tmp, OC_JUDGE_MODEL="smollm2-judge", OC_JUDGE_API_BASE=llama_server, OC_JUDGE_API_KEY="EMPTY",
               CRITIC_JUDGE_MAX_TOKENS="48")
    out = _critic_eval(oc_bin, [str(config), "-w", str(tmp / "out")], env, tmp)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    run_dir = Path(sorted(glob.glob(str(tmp / "out" / "*")))[-1])
    return {"dir": run_dir, "stdout": out.stdout, "env": env, "tmp": tmp, "judge_base": llama_server}


def _predictions(run_dir: Path) -> dict[str, str]:
    """prompt -> the reply OpenCompass recorded, over every prediction file of the run."""
    replies = {}
    for path in (run_dir / "predictions" / MODEL).glob("*.json"):
        for row in json.loads(path.read_text()).values():
            prompt = row["origin_prompt"]
            assert isinstance(prompt, str)  # an API model's prompt is the plain text we rendered
            replies[prompt] = row["prediction"]
    return replies


def test_opencompass_numbers_equal_the_lm_eval_path_on_the_same_generations(api_run, monkeypatch):
    summary = json.loads(Path(glob.glob(str(api_run["dir"] / "summary" / "critic_summary_*.json"))[0]).read_text())
    assert summary["missing"] == {}
    ours = summary[MODEL]
    tasks = [*registry.GROUPS["critic"].members, "critic_feedback_sub_chat"]
    assert set(tasks) | {"critic"} <= set(ours)

    replies = _predictions(api_run["dir"])
    assert len(replies) >= 141 + 5 + OTHER_ROWS
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

    live = lm_eval.simple_evaluate(model=scripted_lm(reply), tasks=["critic", "critic_feedback_sub_chat"],
                                   task_manager=critic_tasks.task_manager(), bootstrap_iters=0)["results"]
    # CritiqueLLM and MetaCritique on the rows OpenCompass ran (lm-eval's `samples`: those documents only)
    live.update(lm_eval.simple_evaluate(model=scripted_lm(reply), tasks=list(OTHER), samples=OTHER,
                                        task_manager=critic_tasks.task_manager(), bootstrap_iters=0)["results"])
    assert set(asked) == set(replies)  # every lm-eval prompt is one OpenCompass sent, byte for byte
    tasks += list(OTHER)
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


def test_summary_report_and_check_read_the_opencompass_results(api_run, tmp_path, capsys):
    path = Path(glob.glob(str(api_run["dir"] / "summary" / f"critic_results_{MODEL}_*.json"))[0])
    ours = json.loads(path.read_text())
    assert cli.main(["summary", str(path)]) == 0
    table = capsys.readouterr().out
    score = ours["results"]["critic"]["score,none"]
    assert any(line.split()[:3] == ["critic", "overall", f"{score:.2f}"] for line in table.splitlines()), table
    assert cli.main(["check", str(path), "--min", f"critic.score={score - 1:.2f}"]) == 0
    assert cli.main(["check", str(path), "--min", f"critic.score={score + 1:.2f}"]) == 1
    assert cli.main(["report", str(path), "-o", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.html").is_file()


def test_opencompass_result_files_carry_per_item_details(api_run):
    results = json.loads((api_run["dir"] / "results" / MODEL / "critic_comparison.json").read_text())
    details = results["details"]
    assert len(details) == 54  # 27 pairs, both orders
    first = details[0] if isinstance(details, list) else details["0"]
    assert {"item", "prediction", "verdict", "parsed"} <= set(first)
    judged = json.loads((api_run["dir"] / "results" / MODEL / "critic_feedback_sub_chat.json").read_text())
    assert judged["judge"][0]["model"] == "smollm2-judge"  # OpenCompass keeps a non-number per replica


def test_critic_eval_score_rescores_an_opencompass_run(api_run, tmp_path):
    scored = tmp_path / "scored.json"
    pred_dir = api_run["dir"] / "predictions" / MODEL
    assert cli.main(["score", str(pred_dir), "--data_dir", "sample", "--output", str(scored)]) == 0
    rescored = json.loads(scored.read_text())
    summary = json.loads(Path(glob.glob(str(api_run["dir"] / "summary" / "critic_summary_*.json"))[0]).read_text())
    for task in registry.GROUPS["critic"].members:
        for key, value in summary[MODEL][task].items():
            assert rescored["results"][task][key] == pytest.approx(value, abs=1e-9), (task, key)
    assert rescored["results"]["critic"]["score,none"] == pytest.approx(summary[MODEL]["critic"]["score,none"])
    assert sorted(name for name, _ in rescored["skipped"]) == [  # judge-scored, or another protocol's
        "critic_alignbench_pairwise_free.json", "critic_alignbench_ref.json", "critic_feedback_sub_chat.json",
        "critic_metacritique.json"]


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


def test_hf_chat_model_run_and_rescore(oc_bin, smollm2_folder, tmp_path):
    """OpenCompass's HF chat model class on the CPU; its predictions (prompts as chat turns) re-score the same."""
    config = tmp_path / "eval_critic_hf.py"
    config.write_text(HF_CONFIG.format(path=smollm2_folder))
    out = _critic_eval(oc_bin, [str(config), "-w", str(tmp_path / "out")], _env(tmp_path), tmp_path)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert "add to the config's read_base: from critic_tasks.adapters.opencompass.configs.summarizers" in out.stderr
    run_dir = Path(sorted(glob.glob(str(tmp_path / "out" / "*")))[-1])
    results = json.loads((run_dir / "results" / "smollm2-hf" / "critic_meta_chat.json").read_text())
    prompt = json.loads((run_dir / "predictions" / "smollm2-hf" / "critic_meta_chat.json").read_text())["0"]
    assert isinstance(prompt["origin_prompt"], list)  # a chat model's prompt: turns
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


def test_unknown_dataset_name_is_one_line(oc_bin, tmp_path):
    out = _critic_eval(oc_bin, ["--datasets", "critic_feedbak_gen", "--hf-path", "x"], _env(tmp_path), tmp_path, timeout=120)
    assert out.returncode == 2
    _one_line_error(out, "critic_feedbak_gen", "critic-eval tasks")


def test_missing_data_dir_is_one_line_before_opencompass_starts(oc_bin, tmp_path):
    env = _env(tmp_path, CRITICBENCH_DATA_DIR=str(tmp_path / "nope"))
    out = _critic_eval(oc_bin, ["--datasets", "critic_feedback_gen", "--hf-path", "x"], env, tmp_path, timeout=120)
    assert out.returncode == 2
    _one_line_error(out, "CRITICBENCH_DATA_DIR", "nope")
    assert "OpenCompass - INFO" not in out.stdout + out.stderr  # stopped before OpenCompass ran


def test_judge_scored_dataset_without_a_judge_is_one_line(oc_bin, tmp_path):
    out = _critic_eval(oc_bin, ["--datasets", "critic_feedback_sub_gen", "--hf-path", "x"], _env(tmp_path), tmp_path, timeout=120)
    assert out.returncode == 2
    _one_line_error(out, "critic_feedback_sub", "OC_JUDGE_MODEL", "CRITIC_JUDGE_MODEL")


def test_eval_config_file_settings_checked_too(oc_bin, tmp_path):
    config = tmp_path / "eval_sub.py"
    config.write_text("from mmengine.config import read_base\nwith read_base():\n    from critic_tasks.adapters."
                      "opencompass.configs.datasets.critic_feedback_sub_gen import critic_feedback_sub_datasets\n"
                      "datasets = critic_feedback_sub_datasets\nmodels = []\n")
    out = _critic_eval(oc_bin, [str(config)], _env(tmp_path), tmp_path, timeout=180)
    assert out.returncode == 2
    _one_line_error(out, "critic_feedback_sub", "no judge")


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


def test_example_eval_config_reads_as_opencompass_reads_it(oc_bin):
    code = ("import json\nfrom critic_tasks.adapters.opencompass.preflight import tasks_in_config\n"
            f"print(json.dumps(tasks_in_config({str(REPO / 'examples' / 'eval_critic.py')!r})))")
    out = subprocess.run([str(oc_bin / "python"), "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = dict(json.loads(out.stdout.strip().splitlines()[-1]))
    assert found == {"critic_feedback": False, "critic_comparison": False, "critic_meta": False,
                     "critic_correction": False, "critic_feedback_sub": True, "critic_comparison_sub": True,
                     "critic_correction_sub": True}


def test_config_dir_command_prints_the_tree(capsys):
    assert cli.main(["opencompass-config-dir"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert (printed / "datasets" / "critic_feedback_gen.py").is_file()
    assert (printed / "summarizers" / "critic.py").is_file()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
