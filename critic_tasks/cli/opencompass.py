"""``critic-eval opencompass-config-dir`` and ``critic-eval opencompass``: OpenCompass with our config tree.

The wrapper checks what it can before OpenCompass starts (our dataset names — from ``--datasets`` or from the eval
config file —, the data directory, the judge for judge-scored datasets, the executor), adds ``--config-dir`` and
``--summarizer critic`` where they are missing and ``--hf-num-gpus 0`` for an ``--hf-path`` model on a machine
without a GPU (OpenCompass's local runner asserts otherwise), then replaces itself with the ``opencompass`` command:
every other flag passes through. Where OpenCompass is installed in this environment, that command is run through
``critic_tasks.adapters.opencompass.launch``: one evaluation process for all datasets instead of one per dataset.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from critic_tasks import registry
from critic_tasks.adapters.opencompass import CONFIG_DIR
from critic_tasks.adapters.opencompass.spec import collections, refusal, supported
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.paths import cache_dir
from critic_tasks.core.settings import read_setting, role_setting
from critic_tasks.preflight import check_tasks


def config_dir_command(argv: list[str]) -> int:
    """Our config tree; with ``--max-out-len N`` a copy whose every dataset sets N (for OpenCompass's own command:
    a dataset's budget wins over its --max-out-len)."""
    unknown = [a for a in argv if a.startswith("-") and a != "--max-out-len"]
    if unknown:
        raise ConfigError(f"opencompass-config-dir: unknown option {unknown[0]} (it takes --max-out-len N only)")
    budget = _budget_value(argv)
    print(CONFIG_DIR if budget is None else budget_config_dir(budget))
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
    return bool(role_setting("judge", "MODEL")[0] or read_setting("OC_JUDGE_MODEL"))


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


def _budget_value(argv: list[str]) -> int | None:
    values = _flag_values(argv, "--max-out-len")
    if "--max-out-len" not in argv:
        return None
    if len(values) != 1 or not values[0].isdigit() or int(values[0]) < 1:
        raise ConfigError(f"--max-out-len {' '.join(values)}: expected one whole number of tokens, at least 1")
    return int(values[0])


def budget_config_dir(max_out_len: int) -> Path:
    """Our config tree written with one reply budget for every dataset (a dataset's own max_out_len wins over
    OpenCompass's --max-out-len, so an explicit one must be written into the datasets): a folder per budget and
    content, in the user's cache, written once (atomically: two runs at once both end up with a whole tree)."""
    from critic_tasks.adapters.opencompass.generate import render, write_tree

    digest = hashlib.sha256(json.dumps(render(max_out_len), sort_keys=True).encode()).hexdigest()[:12]
    base = cache_dir("opencompass-configs")
    folder = base / f"max_out_len_{max_out_len}-{digest}"
    if not folder.is_dir():
        base.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=base, prefix=".partial-"))
        write_tree(partial, max_out_len)
        try:
            partial.rename(folder)
        except OSError:  # another run wrote it first
            shutil.rmtree(partial, ignore_errors=True)
    return folder


def _config_budgets(cfg) -> str:
    """Each of an eval config's critic datasets with the budget it runs with (its inferencer's max_out_len, which the
    config may have changed), and lm-eval's where that differs."""
    said = []
    for d in cfg.get("datasets", []):
        if not isinstance(d, dict) or d.get("task") not in registry.TASKS:
            continue
        budget = ((d.get("infer_cfg") or {}).get("inferencer") or {}).get("max_out_len")
        lm_eval = registry.TASKS[d["task"]].kind_spec.max_gen_toks
        said.append(f"{d.get('abbr', d['task'])} {budget}" + ("" if budget == lm_eval else f" (lm-eval's: {lm_eval})"))
    return ", ".join(said)


def _reply_budget(argv: list[str], tasks: list[registry.Task], cfg) -> list[str]:
    """The reply budget of our datasets, said in one line: lm-eval's per task by default (the configs' own
    max_out_len); an explicit --max-out-len for every dataset (the tree written with it)."""
    if not tasks:
        return argv
    budget = _budget_value(argv)
    if budget is None and cfg is not None:  # an eval config's datasets run with the budgets it sets
        print(f"critic-eval: reply budgets (tokens), the config's: {_config_budgets(cfg)}", file=sys.stderr)
        return argv
    if budget is None:
        ours = ", ".join(f"{t.name} {t.kind_spec.max_gen_toks}" for t in tasks)
        print(f"critic-eval: reply budgets (tokens) as lm-eval's: {ours}; --max-out-len N sets one for all",
              file=sys.stderr)
        return argv
    if cfg is not None or "--config-dir" in argv:
        where = "the config's" if cfg is not None else "--config-dir's"
        print(f"critic-eval: --max-out-len {budget} does not reach {where} critic datasets (each sets its own "
              "max_out_len, which wins): set d['infer_cfg']['inferencer']['max_out_len'] there", file=sys.stderr)
        return argv
    folder = budget_config_dir(budget)
    print(f"critic-eval: --max-out-len {budget}: every critic dataset's reply budget (configs: {folder})",
          file=sys.stderr)
    return ["--config-dir", str(folder), *argv]


def run_command(argv: list[str]) -> int:
    argv = list(argv)
    tasks = our_dataset_tasks(_flag_values(argv, "--datasets"))
    judged = [t.name for t in tasks if registry.SCORERS[t.scorer].judged]
    config, cfg = _config_file(argv), None
    if config is not None:
        if not Path(config).is_file():
            raise ConfigError(f"{config}: no such eval config file")
        from critic_tasks.adapters.opencompass.preflight import read_config, tasks_in_config

        cfg = read_config(config)
        found = tasks_in_config(cfg)
        tasks += [registry.TASKS[t] for t, _ in found]
        judged += [t for t, has_judge_cfg in found if registry.SCORERS[registry.TASKS[t].scorer].judged and not has_judge_cfg]
    check_tasks(tasks)
    if judged and not _judge_configured():
        raise ConfigError(f"{', '.join(judged)}: judge-scored, but no judge is configured: set CRITIC_JUDGE_MODEL "
                          "(and CRITIC_JUDGE_BASE_URL) or OC_JUDGE_MODEL / OC_JUDGE_API_BASE / OC_JUDGE_API_KEY")
    argv = _reply_budget(argv, tasks, cfg)  # before our --config-dir: an explicit budget brings its own tree
    if "--config-dir" not in argv:
        argv = ["--config-dir", str(CONFIG_DIR), *argv]
    if tasks and cfg is None and "--summarizer" not in argv:
        argv += ["--summarizer", "critic"]
    elif tasks and cfg is not None and not cfg.get("summarizer"):  # OpenCompass reads no --summarizer with a config
        print("critic-eval: for the paper's table, add to the config's read_base: from critic_tasks.adapters."
              "opencompass.configs.summarizers.critic import summarizer", file=sys.stderr)
    if "--hf-path" in argv and "--hf-num-gpus" not in argv and _no_gpu():
        print("critic-eval: no GPU here: adding --hf-num-gpus 0 (the model runs on the CPU)", file=sys.stderr)
        argv += ["--hf-num-gpus", "0"]
    beside = Path(sys.executable).parent / "opencompass"
    program = str(beside) if beside.exists() else shutil.which("opencompass")
    if program is None:
        raise ConfigError("the opencompass command is not installed here: pip install 'critic-tasks[opencompass]' "
                          "(in an environment of its own; from a checkout of critic-tasks: bash scripts/setup.sh --opencompass)")
    sys.stdout.flush()
    if beside.exists():  # OpenCompass in this environment: its command, with one evaluation process (launch.py)
        os.execv(sys.executable, [sys.executable, "-m", "critic_tasks.adapters.opencompass.launch", *argv])
    os.execv(program, [program, *argv])
    return 0  # not reached
