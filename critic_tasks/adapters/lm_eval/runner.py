"""``critic-eval run``: lm-eval's own CLI with our tasks on its path, after checks that say a mistake in one line
before the model loads, and the one line after a run (results not written, unjudged items, Ctrl-C). The runs it
chains first are stages.py's; the demo is demo.py."""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib.util
import json
import logging
import math
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

from critic_tasks import registry
from critic_tasks.adapters.lm_eval import own_path, private, resume, task_functions, tasks_dir, turns
from critic_tasks.adapters.lm_eval.flags import (
    check_flag_names,
    flag_value,
    flag_values,
    logs_samples,
    run_metadata,
    run_tasks,
)
from critic_tasks.adapters.lm_eval.stages import prior_runs, rounds_summary
from critic_tasks.adapters.lm_eval.task_functions import ScoringFailed
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.paths import looks_local
from critic_tasks.core.settings import read_flag
from critic_tasks.preflight import check_hub_data, check_local_data, check_tasks

ALLOW_JUDGE_FAILURES_ENV = "CRITIC_JUDGE_ALLOW_FAILURES"  # as `critic-eval judge --allow_failures`


def run_cli(argv: list[str], our_commands: tuple[str, ...] = ()) -> int:
    """Hand everything to lm_eval's own CLI, with our tasks directory included (SAvg: stage 1 first).
    ``our_commands``: critic-eval's own, for the "did you mean" of a command neither has."""
    if any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        print("critic-eval: --include_path is set by critic-eval; to add your own tasks too, run\n"
              f"  lm_eval --include_path {tasks_dir()} ... and a TaskManager with both paths "
              "(critic_tasks.task_manager(include_path=...)).", file=sys.stderr)
        return 2
    commands = private.cli_parsers()
    if argv and argv[0] in commands:
        command, rest = argv[0], argv[1:]
    elif argv and not argv[0].startswith("-"):  # lm-eval would take it for a stray argument of run
        import difflib

        close = difflib.get_close_matches(argv[0], [*our_commands, *commands], n=3)
        raise ConfigError(f"{argv[0]}: no such command" + (f"; did you mean {' or '.join(close)}?" if close else "")
                          + " (`critic-eval --help` lists them)")
    else:
        command, rest = "run", argv
    rest = check_flag_names(command, rest, ours=(resume.NO_RESUME_FLAG,))
    if command != "run":
        return _lm_eval(command, rest)
    original = list(argv)
    asks_help = any(a in ("-h", "--help") for a in rest)
    if not asks_help:
        rest = tasks_without_spaces(rest)
        check_run_flags(rest)
        rest = device_from_model_args(rest)
        check_lm_eval_flags(rest)
        check_output_path(flag_value(rest, "--output_path", "-o"))
        rest = with_log_samples(rest)
    rest, cache = resume.with_request_cache(rest, flag_value)
    if cache is not None and not asks_help:
        check_cache_writable(cache)
    cached_before = resume.cached_count(cache) if cache else 0
    started = time.time()
    try:
        preflight(rest)  # bad settings stop the run here, before lm-eval loads the model
        if not asks_help:
            check_data_reachable(rest)
        check_model_backend(rest)
        check_model_paths(rest)
        if not asks_help:
            check_hub_model(rest)
            check_model_server(rest)
        require_scorer_or_samples(rest)
        chained = prior_runs(rest)
        if chained is not None:  # a stage 1 not given yet, or rounds: the earlier runs first, same model arguments
            with chained as runs:
                *earlier, rest = runs
                return (next((rc for run in earlier if (rc := _lm_eval(command, run))), 0) or _lm_eval(command, rest)
                        or results_written(rest, started) or rounds_summary(runs) or point_to_intervals(rest))
        return _lm_eval(command, rest) or results_written(rest, started) or point_to_intervals(rest)
    except KeyboardInterrupt:
        pass
    # Out of the handler, the interrupted frames are gone: collecting them closes lm-eval's progress bars (which
    # print a last time), so the line below is the last one the user sees.
    gc.collect()
    print(interrupted_message(original, cache, cached_before), file=sys.stderr)
    return 130


def check_run_flags(argv: list[str]) -> None:
    """What lm-eval reports with a traceback, some after loading the model: no ``--tasks`` or an empty one, and a
    ``--limit`` of 0 or below. A ``--config`` file may hold the tasks: then lm-eval checks them itself."""
    tasks = flag_values(argv, "--tasks", "-t")
    if tasks is None and flag_value(argv, "--config", "-C") is None:
        raise ConfigError("no --tasks given: e.g. --tasks critic_feedback,critic_meta (`critic-eval tasks` lists "
                          "ours)")
    if tasks is not None and not any(n.strip() for t in tasks for n in t.split(",")):
        raise ConfigError("--tasks is empty: name at least one task, e.g. --tasks critic_feedback "
                          "(`critic-eval tasks` lists ours)")
    raw = flag_value(argv, "--limit", "-L")
    if raw is not None:
        try:
            limit = float(raw)
        except ValueError:
            raise ConfigError(f"--limit {raw}: not a number (a count of items per task, or a fraction below 1)") \
                from None
        if not limit > 0:
            raise ConfigError(f"--limit {raw}: give a positive count of items per task (or a fraction below 1); "
                              "leave it out to run every item")


def tasks_without_spaces(argv: list[str]) -> list[str]:
    """``--tasks "critic_feedback, critic_meta"``: lm-eval splits on the comma only and looks for a task named
    " critic_meta"; the spaces around each name are dropped (no task name holds one)."""
    out, taking = [], False
    for arg in argv:
        if taking and not arg.startswith("-"):
            arg = ",".join(n.strip() for n in arg.split(",") if n.strip()) or arg
        elif arg.startswith("--tasks="):
            value = arg.split("=", 1)[1]
            arg = "--tasks=" + (",".join(n.strip() for n in value.split(",") if n.strip()) or value)
        taking = arg in ("--tasks", "-t") or (taking and not arg.startswith("-"))
        out.append(arg)
    return out


# --gen_kwargs keys that generation needs as numbers (lm-eval passes a word such as `abc` on as a string, and the
# model fails on it after loading) and as true/false
NUMERIC_GEN_KWARGS = ("temperature", "top_p", "top_k", "min_p", "typical_p", "max_gen_toks", "max_new_tokens",
                      "min_new_tokens", "num_beams", "repetition_penalty", "length_penalty", "seed")
BOOLEAN_GEN_KWARGS = ("do_sample",)


def check_lm_eval_flags(argv: list[str]) -> None:
    """What lm-eval reports with a traceback, or only after loading the model, or not at all, checked from the flags
    alone: the model's name, malformed JSON, ``--log_samples`` with nowhere to write, the batch size, ``--gen_kwargs``
    values, few-shot examples our zero-shot tasks do not have, a CUDA device on a machine without one, keys the model
    class does not take, and a local model without a chat template under ``--apply_chat_template``."""
    _check_json_values(argv)
    model = _check_model_name(argv)
    if (logs_samples(argv) or "--predict_only" in argv) and not flag_value(argv, "--output_path", "-o"):
        flag = "--log_samples" if logs_samples(argv) else "--predict_only"
        raise ConfigError(f"{flag} writes the per-document rows next to the results: add --output_path DIR")
    batch = flag_value(argv, "--batch_size", "-b")
    if batch is not None and not _valid_batch_size(batch):
        raise ConfigError(f"--batch_size {batch}: give a count of 1 or more, or auto (auto:N retunes N times)")
    _check_gen_kwargs(argv)
    fewshot = flag_value(argv, "--num_fewshot", "-f")
    if fewshot not in (None, "0") and run_tasks(argv):
        raise ConfigError(f"--num_fewshot {fewshot}: the critic tasks are zero-shot (their prompts are the benchmark's "
                          "own, with no examples to add), so lm-eval would run them zero-shot; drop --num_fewshot (a "
                          "few-shot task of lm-eval's: in a run of its own)")
    _check_device(argv, model)
    _check_model_arg_names(argv, model)
    _check_chat_template(argv)


def _check_json_values(argv: list[str]) -> None:
    """A value with a ``{`` must be a JSON object (lm-eval's rule): else its JSON error, with the place."""
    for flag in ("--metadata", "--model_args", "--gen_kwargs"):
        for value in flag_values(argv, flag, "-a" if flag == "--model_args" else "") or []:
            if "{" not in value:
                continue
            try:
                json.loads(value)
            except ValueError as err:
                raise ConfigError(f"{flag} {value}: not valid JSON ({err.msg} at character {err.pos + 1}); write it "
                                  'with double quotes, e.g. --metadata \'{"data_dir": "sample"}\'') from None


def _check_model_name(argv: list[str]) -> str:
    """``--model`` names one of lm-eval's model classes (its registry, read without importing any backend)."""
    model = flag_value(argv, "--model") or "hf"
    from lm_eval.api.registry import model_registry

    if len(model_registry) == 0:
        import lm_eval.models  # noqa: F401  (registers the names; each backend is imported when first used)
    if model not in model_registry:
        import difflib

        close = difflib.get_close_matches(model, list(model_registry.keys()), n=3, cutoff=0.5)
        raise ConfigError(f"--model {model}: no such lm-eval model" + (f"; did you mean {', '.join(close)}?" if close
                          else "") + " (lm-eval's: " + ", ".join(sorted(model_registry.keys())) + ")")
    return model


def _valid_batch_size(value: str) -> bool:
    head, _, tail = value.partition(":")
    if head == "auto":
        return not tail or (tail.isdigit() and int(tail) >= 1)
    return value.isdigit() and int(value) >= 1


def _check_gen_kwargs(argv: list[str]) -> None:
    for value in flag_values(argv, "--gen_kwargs") or []:
        if value.strip().startswith("{"):
            continue  # a JSON object carries its own types
        for part in value.split(","):
            key, eq, raw = (x.strip() for x in part.partition("="))
            if not eq:
                continue
            if key in NUMERIC_GEN_KWARGS:
                try:
                    float(raw)
                except ValueError:
                    raise ConfigError(f"--gen_kwargs {key}={raw}: {key} must be a number, e.g. {key}="
                                      f"{'0' if key == 'temperature' else '1' if key == 'top_p' else '64'}") from None
            elif key in BOOLEAN_GEN_KWARGS and raw.lower() not in ("true", "false"):
                raise ConfigError(f"--gen_kwargs {key}={raw}: {key} must be true or false")


def _check_device(argv: list[str], model: str) -> None:
    """A CUDA (or MPS) ``--device`` on a machine without one fails inside the model load; said here instead."""
    device = (flag_value(argv, "--device") or "").strip().lower()
    if not device.startswith(("cuda", "mps")) or MODEL_BACKENDS.get(model, ((), ""))[1] not in ("hf", "vllm"):
        return
    if importlib.util.find_spec("torch") is None:
        return  # check_model_backend names the missing torch
    import torch

    fix = "use --device cpu (on a CPU, keep replies short: --gen_kwargs max_gen_toks=64)"
    if device.startswith("mps"):
        if not torch.backends.mps.is_available():
            raise ConfigError(f"--device {device}: no Apple GPU (MPS) here; {fix}")
        return
    if not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: no CUDA GPU visible here (torch {torch.__version__}); {fix}")
    index = device.partition(":")[2]
    if index.isdigit() and int(index) >= torch.cuda.device_count():
        raise ConfigError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s), numbered from "
                          "0; give one of them (e.g. --device cuda:0)")


def _check_model_arg_names(argv: list[str], model: str) -> None:
    """A ``--model_args`` key the model class does not take, where its ``__init__`` names every key it takes (hf
    passes unknown keys on to transformers, which refuses them only after loading: see ``_after_load``)."""
    import inspect

    from critic_tasks.adapters.lm_eval.resume import _model_args

    keys = [k for k in _model_args(flag_value(argv, "--model_args", "-a")) if k]
    if not keys or MODEL_BACKENDS.get(model, ((), ""))[1] in ("hf", "vllm", "api"):
        return  # their classes pass unknown keys on (to transformers, vLLM, the request body)
    from lm_eval.api.registry import get_model

    try:
        parameters = inspect.signature(get_model(model).__init__).parameters
    except (ImportError, ValueError, TypeError):
        return  # a backend that does not import here: lm-eval says why
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = [k for k in keys if k not in parameters]
    if unknown:
        import difflib

        taken = [n for n in parameters if n != "self"]
        close = difflib.get_close_matches(unknown[0], taken, n=3)
        raise ConfigError(f"--model_args {unknown[0]}: --model {model} takes no such argument"
                          + (f"; did you mean {', '.join(close)}?" if close else "")
                          + f" (it takes: {', '.join(taken) or 'none'})")


def _check_chat_template(argv: list[str]) -> None:
    """``--apply_chat_template`` (no template named) with a local transformers folder whose tokenizer has none: the
    chat template is read from tokenizer_config.json or chat_template.jinja / .json; a GGUF carries its own."""
    if "--apply_chat_template" not in argv:
        return
    from critic_tasks.adapters.lm_eval.resume import _model_args

    args = _model_args(flag_value(argv, "--model_args", "-a"))
    folder = Path(os.path.expanduser(str(args.get("tokenizer") or args.get("pretrained") or "")))
    if args.get("gguf_file") or not folder.name or not (folder / "tokenizer_config.json").is_file():
        return
    if any((folder / name).is_file() for name in ("chat_template.jinja", "chat_template.json")):
        return
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # transformers reports a broken tokenizer itself
    if not config.get("chat_template"):
        raise ConfigError(f"--apply_chat_template: {folder} has no chat template (a base model?); drop "
                          "--apply_chat_template, or use the model's instruct version")


def check_cache_writable(cache: str) -> None:
    """The request cache's folder can be written (lm-eval opens it only after loading the model; a read-only HOME
    failed there)."""
    folder = os.path.dirname(cache)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".critic-eval-write-check-")
    except OSError as err:
        raise ConfigError(f"the request cache (resume) folder {folder} cannot be written ({err.strerror or err}); "
                          "set CRITIC_REQUEST_CACHE to a writable folder, or add --no_resume") from None
    os.close(fd)
    os.unlink(probe)


def device_from_model_args(argv: list[str]) -> list[str]:
    """``device=...`` in ``--model_args`` (what ``simple_evaluate(model_args=...)`` takes) becomes ``--device``:
    lm-eval's CLI passes its own ``--device`` (default ``cuda:0``) as well, and the model class would get two
    (a TypeError after the data has loaded). Both given and different: one line."""
    found: list[str] = []
    out: list[str] = []
    values: list[str] | None = None  # the kept values of the --model_args being read
    for arg in [*argv, "--"]:  # a sentinel closes a trailing --model_args
        if values is not None and not arg.startswith("-"):
            kept = _drop_device(arg, found)
            if kept:
                values.append(kept)
            continue
        if values is not None:  # the flag ends: kept only with a value left (`device=cpu` alone: flag dropped)
            out += ["--model_args", *values] if values else []
            values = None
        if arg in ("--model_args", "-a"):
            values = []
        elif arg.startswith("--model_args="):
            kept = _drop_device(arg.split("=", 1)[1], found)
            out += [f"--model_args={kept}"] if kept else []
        else:
            out.append(arg)
    out.pop()  # the sentinel
    if not found:
        return argv
    device = found[-1]
    given = flag_value(argv, "--device")
    if given is not None and given != device:
        raise ConfigError(f"--model_args device={device} and --device {given}: give the device once (--device)")
    return out if given is not None else [*out, "--device", device]


def _drop_device(value: str, found: list[str]) -> str:
    """``value`` of ``--model_args`` less its ``device=`` (appended to ``found``); JSON objects too."""
    if value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value  # lm-eval reports it
        if isinstance(parsed, dict) and "device" in parsed:
            found.append(str(parsed.pop("device")))
            return json.dumps(parsed) if parsed else ""
        return value
    kept = []
    for part in value.split(","):
        key, eq, device = part.partition("=")
        if eq and key.strip() == "device":
            found.append(device.strip())
        else:
            kept.append(part)
    return ",".join(kept)


def check_output_path(output: str | None) -> None:
    """``--output_path`` must be writable before the model loads: lm-eval only warns when it cannot write the
    results, after the whole run. The nearest folder that exists is asked for a file (no folder is made here)."""
    if not output:
        return
    target = Path(output).expanduser()
    folder = target.parent if target.suffix == ".json" else target
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"--output_path {output}: {existing} is a file, not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".critic-eval-write-check-")
    except OSError as err:
        raise ConfigError(f"--output_path {output}: cannot write in {existing} ({err.strerror or err}); "
                          "give a writable folder") from None
    os.close(fd)
    os.unlink(probe)


def results_written(argv: list[str], since: float) -> int:
    """0 when lm-eval wrote a results file under ``--output_path`` during this run (or none was asked for);
    else 1 with one line. lm-eval logs a warning and exits 0 when it cannot write them."""
    output = flag_value(argv, "--output_path", "-o")
    if not output or os.environ.get("RANK", "0") != "0":
        return 0  # in a data-parallel run (torchrun / accelerate set RANK) only rank 0 writes the results
    target = Path(output).expanduser()
    if target.suffix == ".json":
        files = target.parent.glob(f"{target.stem}_*.json")
    else:
        files = target.glob("*/results_*.json")
    with contextlib.suppress(OSError):
        if any(f.stat().st_mtime >= since - 1 for f in files):
            return 0
    print(f"critic-eval: the results were not written to {output} (see lm-eval's warning above); the generations are "
          "kept in the request cache: make the folder writable and rerun the same command", file=sys.stderr)
    return 1


def record_judge_fingerprints(argv: list[str], since: float) -> None:
    """Each results file this run wrote under ``--output_path`` gets ``fingerprint``: one entry per judge-scored task
    (``reports.results.judge_fingerprints``, from the samples files beside it: the judge's model, settings, prompt
    template hash, and what its server said answered), as the `--output` file of `critic-eval judge` writes them. Nothing without
    judged tasks or samples; a file that cannot be rewritten keeps its results (one line says so)."""
    from critic_tasks.reports.results import judge_fingerprints

    output = flag_value(argv, "--output_path", "-o")
    if not output or not logs_samples(argv) or os.environ.get("RANK", "0") != "0":
        return
    target = Path(output).expanduser()
    files = target.parent.glob(f"{target.stem}_*.json") if target.suffix == ".json" else target.glob("*/results_*.json")
    for path in files:
        try:
            if path.stat().st_mtime < since - 1:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            results = data.get("results") if isinstance(data, dict) else None
            found = judge_fingerprints(path, results) if isinstance(results, dict) else {}
            if not found:
                continue
            data["fingerprint"] = found
            kept = path.with_name(f".{path.name}.tmp")
            kept.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
            os.replace(kept, path)  # whole or not at all: a reader never sees half a results file
        except (OSError, ValueError, DataError) as err:
            print(f"critic-eval: the judge fingerprints were not added to {path} ({err}); `critic-eval summary` reads "
                  "them from the samples files instead", file=sys.stderr)




def with_log_samples(argv: list[str]) -> list[str]:
    """``argv`` with ``--log_samples`` added where it writes an ``--output_path`` without it (and intervals are on):
    an interval is no lm-eval metric, so our intervals are computed from the per-document rows lm-eval keeps with
    ``--log_samples`` (``reports.results.sample_intervals``); without them a results file has values only. They cost
    a few KB a document on disk (the document, the prompt, the replies, its record), next to the results file. One
    line says so; ``CRITIC_CI=off`` (no intervals wanted) leaves the flag to the user."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    if not flag_value(argv, "--output_path", "-o") or logs_samples(argv) or not settings_from_env().enabled:
        return argv
    print("critic-eval: --log_samples added (the per-document rows the 95% intervals are computed from, a few KB a "
          "document beside the results file; CRITIC_CI=off leaves it out)", file=sys.stderr)
    return [*argv, "--log_samples"]


def point_to_intervals(argv: list[str]) -> int:
    """After a run that wrote its results and samples: `critic-eval summary OUTPUT_PATH` shows its values with their
    intervals (lm-eval's own table has no place for them), said in one line. Always 0."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    output = flag_value(argv, "--output_path", "-o")
    if output and logs_samples(argv) and os.environ.get("RANK", "0") == "0" and settings_from_env().enabled:
        print(f"\n95% bootstrap intervals of the critic metrics: `critic-eval summary {shlex.quote(output)}` shows each "
              "value with its interval (computed from the samples files).")
    return 0


def check_data_reachable(argv: list[str]) -> None:
    """CriticBench from the Hub (no local copy set): reachable now (``preflight.check_hub_data``)."""
    metadata = run_metadata(argv)
    check_hub_data(run_tasks(argv), metadata.get("data_dir"), metadata.get("items_file"), metadata)


def check_hub_model(argv: list[str]) -> None:
    """A Hub model (``pretrained=org/name``) of the hf / vllm models can be had: offline, from the local Hub cache;
    online, the Hub knows it (one call, ``CRITIC_ENDPOINT_TIMEOUT`` seconds; 0 skips it). Else one line, before
    lm-eval's ~100-line traceback."""
    from critic_tasks.adapters.lm_eval.resume import _model_args
    from critic_tasks.llm.backends.openai_compatible import _check_timeout

    if MODEL_BACKENDS.get(flag_value(argv, "--model") or "hf", ((), ""))[1] not in ("hf", "vllm"):
        return
    args = _model_args(flag_value(argv, "--model_args"))
    name = str(args.get("pretrained") or "")
    if not name or looks_local(name) or os.path.exists(os.path.expanduser(name)):
        return
    from huggingface_hub import constants

    from critic_tasks.core import hub

    revision = str(args.get("revision") or "") or None
    answer = hub.probe(name, str(args.get("gguf_file") or "config.json"), _check_timeout, revision=revision)
    advice = "or give a local folder (--model_args pretrained=/path/to/model)"
    if answer.state == "offline":
        raise ConfigError(f"--model_args pretrained={name}: HF_HUB_OFFLINE is set and {name} is not in the local Hub "
                          f"cache ({constants.HF_HUB_CACHE}); download it once online, {advice}")
    if answer.state == "missing":
        raise ConfigError(f"--model_args pretrained={name}: no such model on the Hub ({constants.ENDPOINT}; a private "
                          f"one needs HF_TOKEN or `hf auth login`), {advice}")
    if answer.state == "unreachable":
        raise ConfigError(f"--model_args pretrained={name}: the Hub ({constants.ENDPOINT}) cannot be reached "
                          f"({answer.detail}); set HF_HUB_OFFLINE=1 if the model is in the local cache, {advice}")


def check_model_server(argv: list[str]) -> None:
    """The server of an lm-eval model that takes a ``base_url`` (its API models: local-chat-completions, gguf, ...)
    answers: given in ``--model_args`` or the class's default. Any HTTP reply counts; a refused connection or a
    timeout (``CRITIC_ENDPOINT_TIMEOUT`` seconds; 0 skips it) is one line, where lm-eval printed a 135-line
    traceback after building the tasks. Local models (hf, vllm, dummy) take no base_url and are not asked."""
    import inspect

    from critic_tasks.adapters.lm_eval.resume import _model_args
    from critic_tasks.llm.backends.openai_compatible import CHECK_TIMEOUT_ENV, _check_timeout, unanswered

    model = flag_value(argv, "--model") or "hf"
    if MODEL_BACKENDS.get(model, ((), ""))[1] in ("hf", "vllm"):
        return  # known local: not worth importing their classes to find that out
    from lm_eval.api.registry import get_model

    try:
        cls = get_model(model)
    except Exception:  # a backend that does not import here: lm-eval says why
        return
    # the nearest class that names base_url gives its default (openai-chat-completions: the OpenAI API's)
    names = [inspect.signature(c.__init__).parameters.get("base_url") for c in cls.__mro__ if "__init__" in vars(c)]
    param = next((p for p in names if p is not None), None)
    args: dict = {}
    for value in flag_values(argv, "--model_args", "-a") or []:  # lm-eval takes several words (nargs="+")
        args.update(_model_args(value))
    given = args.get("base_url")
    url = str(given or (param.default if param is not None else "") or "")
    if param is None or not url or not (timeout := _check_timeout()):
        return
    why = unanswered(url, timeout)
    if why:
        what = f"--model_args base_url={url}" if given else f"--model {model}'s default base_url {url}"
        raise ConfigError(f"{what} {why}; start the server or fix base_url (or set {CHECK_TIMEOUT_ENV}=0 to skip "
                          "this check)")


def interrupted_message(argv: list[str], cache: str | None, cached_before: int = 0) -> str:
    """The one line a Ctrl-C prints: what this run added to the cache (and what it holds in all, where an earlier
    run left some), and the command that resumes."""
    resume.flush_caches()
    command = shlex.join(["critic-eval", *argv])
    if cache is None:
        return ("critic-eval: interrupted; no request cache was on (--no_resume or CRITIC_REQUEST_CACHE=off), so "
                f"nothing is kept; rerun: {command}")
    earlier = f" (and {cached_before} from earlier runs)" if cached_before else ""
    return (f"critic-eval: interrupted; {max(resume.cached_count(cache) - cached_before, 0)} generation(s) kept in "
            f"{os.path.dirname(cache)}{earlier}; resume (asks the model only for the rest): {command}")


class _OncePerRun(logging.Filter):
    """Lets the first record of each message through: lm-eval aggregates a metric once per key and filter, so one
    undefined correlation (a task of 1 item) was warned about six times in one run."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


@contextlib.contextmanager
def each_warning_once():
    """Our package's loggers say each distinct message once during the run (a logger's filter sees only its own
    records, so it goes on each logger of ours that exists, created at import)."""
    once = _OncePerRun()
    loggers = [logging.getLogger(name) for name, logger in list(logging.root.manager.loggerDict.items())
               if (name == "critic_tasks" or name.startswith("critic_tasks.")) and isinstance(logger, logging.Logger)]
    for logger in loggers:
        logger.addFilter(once)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(once)


def _lm_eval(command: str, rest: list[str]) -> int:
    ours = own_path()  # empty where `critic-eval register-lm-eval` put our tasks in lm-eval's own tree
    unscored: list[str] = []
    started = time.time()
    try:
        # a protocol's second turn (JudgeBench's Arena-Hard judge) asked through the run's own model
        with task_functions.unscored_items(unscored), each_warning_once(), private.around_evaluate(turns.second_turns):
            private.cli([command, *rest, *(["--include_path", ours[0]] if ours else [])])
    except SystemExit as exit_:
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else 1
    except Exception as err:  # lm-eval wraps our loader's errors; show ours in one line
        ours = _find_cause(err, (DataError, ConfigError))
        if ours is not None:
            raise ours from None
        if isinstance(err, ValueError) and str(err).startswith("Tasks not found"):  # lm-eval's own: one line
            print(f"critic-eval: {err} (`critic-eval tasks` lists ours; `critic-eval ls tasks` lm-eval's)",
                  file=sys.stderr)
            return 2
        rescued = _find_cause(err, ScoringFailed)
        if rescued is not None:  # the generations are safe on disk; the message says where and what to run
            print(f"critic-eval: {rescued}", file=sys.stderr)
            return 1
        line = after_load_message(err, rest)
        if line is not None:
            print(f"critic-eval: {line}", file=sys.stderr)
            return 2
        raise
    finally:
        shutdown_vllm_engines()
    if command == "run":  # whether or not every item was judged: the grades the run holds came from this judge
        record_judge_fingerprints(rest, started)
    unjudged = len(unscored)
    if unjudged and not read_flag(ALLOW_JUDGE_FAILURES_ENV):
        print(f"critic-eval: {unjudged} item(s) could not be scored by the judge or revisers (failed calls, or replies "
              "without a score or verdict; listed in the warnings above and counted in judge_failed / reviser_failed). "
              "Rerunning retries the failed calls only (the caches keep the rest); a reply without a score is cached "
              "and stays so with the same model and prompt. Set "
              f"{ALLOW_JUDGE_FAILURES_ENV}=1 to accept them", file=sys.stderr)
        return 1
    return 0


def after_load_message(err: BaseException, argv: list[str]) -> str | None:
    """The one line for a mistake that shows only once the model has loaded (the checks before cannot see it): a
    model argument transformers refuses (only a key the user gave: any other TypeError is a bug to show whole), a
    tokenizer without a chat template, a file that cannot be written."""
    import re

    from critic_tasks.adapters.lm_eval.resume import _model_args

    refused = _find_cause(err, TypeError)
    found = re.search(r"unexpected keyword argument '([^']+)'", str(refused or ""))
    if found and found.group(1) in _model_args(flag_value(argv, "--model_args", "-a")):
        return (f"--model_args {found.group(1)}: the model does not take this argument ({refused}); drop it "
                "(the model's documentation names the arguments it takes)")
    template = _find_cause(err, ValueError)
    if template is not None and "chat_template is not set" in str(template):
        return ("--apply_chat_template: this model's tokenizer has no chat template (a base model?); drop "
                "--apply_chat_template, or use the model's instruct version")
    unwritable = _find_cause(err, OSError)
    if unwritable is not None and unwritable.filename and unwritable.errno in (errno.EACCES, errno.EROFS):
        return (f"cannot write {unwritable.filename} ({unwritable.strerror}); make it writable, or point the caches "
                "elsewhere (HF_HOME, XDG_CACHE_HOME, CRITIC_REQUEST_CACHE) when HOME is read-only")
    return None


def shutdown_vllm_engines() -> None:
    """Stop every vLLM engine still alive. vLLM's engine runs in a non-daemon child process that is stopped when its
    ``LLM`` is collected; if something still holds the ``LLM`` at exit (it does after a run that checked revisions in
    the sandbox), multiprocessing's exit handler joins that child forever and ``critic-eval`` never exits."""
    if "vllm" not in sys.modules:
        return
    import gc

    from vllm import LLM

    for obj in gc.get_objects():
        if issubclass(type(obj), LLM):  # not isinstance: see resume.flush_caches
            core = getattr(getattr(obj, "llm_engine", None), "engine_core", None)
            if core is not None and hasattr(core, "shutdown"):
                core.shutdown()




def preflight(argv: list[str]) -> None:
    """Check the settings our tasks among ``--tasks`` will need (judge, executor, data directory, the critic's own
    feedback for SAvg)."""
    metadata = run_metadata(argv)
    options = {k: metadata.get(k) for k in ("data_dir", "protocol", "toolkit_dir", "self_feedback")}
    try:
        limit = float(flag_value(argv, "--limit", "-L") or "nan")
    except ValueError:
        limit = math.nan  # lm-eval reports a malformed --limit itself
    tasks = run_tasks(argv)
    registry.check_metadata(tasks, metadata)  # as the loader will (task_functions.load_docs), before the model loads
    check_tasks(tasks, limit=None if math.isnan(limit) else limit, **options)
    check_local_data(tasks, options["data_dir"], metadata)  # the files and fields the run will read, before the model loads


def check_model_paths(argv: list[str]) -> None:
    """A ``pretrained=`` (``tokenizer=``, ``peft=``) of ``--model_args`` that looks like a local path must exist, and
    so must its ``gguf_file``: checked before lm-eval loads anything (else: transformers' long traceback)."""
    from critic_tasks.adapters.lm_eval.resume import _model_args

    args = _model_args(flag_value(argv, "--model_args"))
    for key in ("pretrained", "tokenizer", "peft"):
        value = str(args.get(key) or "")
        if value and looks_local(value) and not os.path.exists(os.path.expanduser(value)):
            raise ConfigError(f"--model_args {key}={value}: no such file or folder (a Hub model is named org/name)")
    pretrained, gguf = str(args.get("pretrained") or ""), str(args.get("gguf_file") or "")
    folder = os.path.expanduser(pretrained)
    if gguf and os.path.isdir(folder) and not os.path.isabs(gguf) and not os.path.exists(os.path.join(folder, gguf)):
        raise ConfigError(f"--model_args gguf_file={gguf}: not in {folder}")


# lm-eval model names -> the modules its model class imports, and our extra that installs them.
_HF, _API = (("torch", "transformers", "accelerate"), "hf"), (("aiohttp", "requests", "tenacity"), "api")
MODEL_BACKENDS = {"hf": _HF, "hf-auto": _HF, "huggingface": _HF, "vllm": (("vllm",), "vllm"),
                  "local-completions": _API, "local-chat-completions": _API, "openai-completions": _API,
                  "openai-chat-completions": _API}


def check_model_backend(argv: list[str]) -> None:
    """The modules lm-eval's ``--model`` class imports are installed (else: a 40-line import traceback after the
    data has loaded): one line naming the missing module and the extra that brings it."""
    model = flag_value(argv, "--model") or "hf"
    needed, extra = MODEL_BACKENDS.get(model, ((), ""))
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"--model {model} needs {', '.join(missing)}, not installed here: "
                          f"pip install 'critic-tasks[{extra}]'"
                          + (" (on a CPU first: pip install torch==2.13.0 --index-url "
                             "https://download.pytorch.org/whl/cpu)" if "torch" in missing else ""))


def require_scorer_or_samples(argv: list[str]) -> None:
    """A task scored by a judge (or revisers) with none set defers its scoring to ``critic-eval judge`` / ``revise``,
    which read the logged samples: without ``--log_samples`` the run would generate, then keep nothing to score.
    Refused before the model loads."""
    if logs_samples(argv):
        return
    from critic_tasks.llm.settings import LLMSettings

    tasks = run_tasks(argv)
    judged = [t.name for t in tasks if "judge" in registry.SCORERS[t.scorer].roles]
    if judged and not LLMSettings.from_env("judge").model:
        raise ConfigError(f"{', '.join(judged[:3])}{' ...' if len(judged) > 3 else ''}: scored by a judge, and no "
                          "judge is set (CRITIC_JUDGE_MODEL), so the generations would be thrown away; set "
                          "CRITIC_JUDGE_MODEL, or add --log_samples --output_path DIR and score them later with "
                          "`critic-eval judge DIR` (`critic-eval revise DIR` for the revision tasks)")
    revised = [t.name for t in tasks if "reviser" in registry.SCORERS[t.scorer].roles]
    if revised:
        from critic_tasks.protocols.revision.pipeline import reviser_pool

        if not reviser_pool():
            raise ConfigError(f"{', '.join(revised[:3])}{' ...' if len(revised) > 3 else ''}: scored through "
                              "revisers, and none is set (CRITIC_REVISER_MODEL / CRITIC_REVISERS), so the generations "
                              "would be thrown away; set one, or add --log_samples --output_path DIR and score them "
                              "later with `critic-eval revise DIR`")




def _find_cause(err: BaseException | None, kind) -> BaseException | None:
    while err is not None:
        if isinstance(err, kind):
            return err
        err = err.__cause__ or err.__context__
    return None
