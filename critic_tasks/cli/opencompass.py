"""``critic-eval opencompass-config-dir`` and ``critic-eval opencompass``: OpenCompass with our config tree.

The wrapper checks what it can before OpenCompass starts (our dataset names — from ``--datasets`` or from the eval
config file —, the data directory, the judge for judge-scored datasets, the executor), adds ``--config-dir`` and
``--summarizer critic`` where they are missing and ``--hf-num-gpus 0`` for an ``--hf-path`` model on a machine
without a GPU (OpenCompass's local runner asserts otherwise), then replaces itself with the ``opencompass`` command:
every other flag passes through.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from critic_tasks import registry
from critic_tasks.adapters.opencompass import CONFIG_DIR
from critic_tasks.adapters.opencompass.spec import collections, refusal, supported
from critic_tasks.core.errors import ConfigError
from critic_tasks.engine import SCORERS
from critic_tasks.preflight import check_tasks


def config_dir_command(argv: list[str]) -> int:
    print(CONFIG_DIR)
    return 0


def _flag_values(argv: list[str], flag: str) -> list[str]:
    """The values after ``flag`` up to the next option (OpenCompass's nargs='+')."""
    if flag not in argv:
        return []
    out = []
    for value in argv[argv.index(flag) + 1:]:
        if value.startswith("-"):
            break
        out.append(value)
    return out


def our_dataset_tasks(names: list[str]) -> list[registry.Task]:
    """The registry tasks behind ``--datasets`` names that are ours (``critic_*``); an unknown one is an error."""
    known = {p.stem: p for p in CONFIG_DIR.glob("*/*.py")}
    tasks = []
    for name in names:
        stem = name.split("/", 1)[0]
        if not stem.startswith("critic"):
            continue  # OpenCompass's own datasets: its lookup, its errors
        if stem not in known:
            task = registry.TASKS.get(stem[: -len("_gen")] if stem.endswith("_gen") else stem)
            if task is not None and not supported(task):  # SAvg, the revision protocols, the sampled variants
                raise ConfigError(refusal(task))
            raise ConfigError(f"--datasets {stem}: no such critic dataset config; ours are named <task>_gen (e.g. "
                              "critic_feedback_gen; `critic-eval tasks` lists the tasks) or critic_gen, critic_sub_gen, "
                              "critic_all_gen")
        task = stem[: -len("_gen")]
        members = [task] if task in registry.TASKS else collections()[task][0]
        tasks += [registry.TASKS[t] for t in members]
    return tasks


def _judge_configured() -> bool:
    return bool(os.environ.get("CRITIC_JUDGE_MODEL") or os.environ.get("OC_JUDGE_MODEL"))


def _config_file(argv: list[str]) -> str | None:
    """OpenCompass's positional argument, the eval config file (dataset and model names carry no ``.py``)."""
    return next((a for a in argv if a.endswith(".py") and not a.startswith("-")), None)


def _no_gpu() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return True
    try:
        import torch
    except ImportError:
        return shutil.which("nvidia-smi") is None
    return torch.cuda.device_count() == 0


def run_command(argv: list[str]) -> int:
    argv = list(argv)
    tasks = our_dataset_tasks(_flag_values(argv, "--datasets"))
    judged = [t.name for t in tasks if SCORERS[t.scorer].judged]
    config, cfg = _config_file(argv), None
    if config is not None:
        if not Path(config).is_file():
            raise ConfigError(f"{config}: no such eval config file")
        from critic_tasks.adapters.opencompass.preflight import read_config, tasks_in_config

        cfg = read_config(config)
        found = tasks_in_config(cfg)
        tasks += [registry.TASKS[t] for t, _ in found]
        judged += [t for t, has_judge_cfg in found if SCORERS[registry.TASKS[t].scorer].judged and not has_judge_cfg]
    check_tasks(tasks)
    if judged and not _judge_configured():
        raise ConfigError(f"{', '.join(judged)}: judge-scored, but no judge is configured: set CRITIC_JUDGE_MODEL "
                          "(and CRITIC_JUDGE_BASE_URL) or OC_JUDGE_MODEL / OC_JUDGE_API_BASE / OC_JUDGE_API_KEY")
    if "--config-dir" not in argv:
        argv = ["--config-dir", str(CONFIG_DIR), *argv]
    if tasks and cfg is None and "--summarizer" not in argv:
        argv += ["--summarizer", "critic"]
    elif tasks and cfg is not None and not cfg.get("summarizer"):  # OpenCompass reads no --summarizer with a config
        print("critic-eval: for the paper's table, add to the config's read_base: from critic_tasks.adapters."
              "opencompass.configs.summarizers.critic import summarizer", file=sys.stderr)
    if tasks and "--hf-path" in argv and "--max-out-len" not in argv:
        ours = sorted({t.spec.max_gen_toks for t in tasks})
        print(f"critic-eval: no --max-out-len: OpenCompass's default (256 tokens) is every dataset's reply budget; "
              f"lm-eval's defaults for these tasks: {', '.join(map(str, ours))} (correction needs room for a whole "
              "program)", file=sys.stderr)
    if "--hf-path" in argv and "--hf-num-gpus" not in argv and _no_gpu():
        print("critic-eval: no GPU here: adding --hf-num-gpus 0 (the model runs on the CPU)", file=sys.stderr)
        argv += ["--hf-num-gpus", "0"]
    beside = Path(sys.executable).parent / "opencompass"
    program = str(beside) if beside.exists() else shutil.which("opencompass")
    if program is None:
        raise ConfigError("the opencompass command is not installed here: pip install 'critic-tasks[opencompass]' "
                          "(in an environment of its own: bash scripts/setup.sh --opencompass)")
    sys.stdout.flush()
    os.execv(program, [program, *argv])
    return 0  # not reached
