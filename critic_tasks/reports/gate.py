"""The CI gate: thresholds on a run's metrics, and regressions against a baseline run, judged with the intervals.

    critic-eval check results.json --min critic_feedback.spearman=40 --min critic.score=55 [--max KEY=V]
                                   [--config gate.yaml] [--baseline baseline.json [--compare KEY ...]]

A metric is named ``task.key`` (a task or group of the registry, one of its metric keys; a group's key is its
overall). Unknown tasks or keys, and a named metric the results do not hold, are errors (``ConfigError``), never a
silent pass. Thresholds: ``--min`` (the value must be >= it), ``--max`` (<= it). Baseline: each compared metric
(``--compare TASK.METRIC``, repeatable; by default the headline metrics with an interval in both runs of the
all-domain tasks and the groups' overalls — per-domain tasks only when named, since many small comparisons would
fail by chance) fails when it moved the wrong way by more than ``sqrt(h_now^2 + h_base^2)``, where ``h`` are the
two intervals' half-widths on the sides facing each other (the normal approximation of the difference of two
independent estimates; runs on the same items are positively correlated, so this errs on the side of passing).

Judge failures: every task of the run that reports ``judge_failed`` (items the judge could not grade; they count
the scale's minimum, so a critique gains nothing by making the judge fail, but the judged number is then partly a
floor, not a grade) fails the gate when it is above 0, unless ``--allow-judge-failures`` (``allow_judge_failures:
true`` in the config) is given, or the task's ``judge_failed`` has its own ``--max`` (which then decides).

Config file (YAML or JSON), thresholds merged with the command line's (the command line wins)::

    min:
      critic_feedback.spearman: 40
      critic.score: 55
    max:
      critic_correction.truncated: 5
    baseline: runs/main/results.json     # relative to the config file
    compare: [critic.score, critic_feedback.spearman]   # optional: the metrics compared with the baseline
    allow_judge_failures: false          # optional: true passes runs with items the judge could not grade
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError
from critic_tasks.reports.results import Run, invalid_note


@dataclass(frozen=True)
class Outcome:
    name: str  # task.key
    passed: bool
    message: str


def label_key(label: str) -> str:
    """A group's overall as the summary table names it, written as a key ("average F1" -> ``average_f1``)."""
    return "_".join(re.findall(r"[a-z0-9]+", label.lower()))


def canonical_name(name: str, where: str) -> str:
    """``task.key`` as the results hold it: a group's overall may be named by its key (``critic_processbench.f1``)
    or as `summary` and the docs print it (``critic_processbench.average_f1``). Unknown names: ``ConfigError``."""
    task, _, key = name.partition(".")
    group = registry.GROUPS.get(task)
    if group is not None and key == label_key(group.label):
        name = f"{task}.{group.metric}"
    _metric(name, where)
    return name


def _metric(name: str, where: str) -> tuple[str, registry.Metric | None]:
    """(task, metric) for ``task.key``; the metric is None for a group's overall."""
    task, dot, key = name.partition(".")
    if not dot or not task or not key:
        raise ConfigError(f"{where}: {name!r}: expected TASK.METRIC, e.g. critic_feedback.spearman or critic.score")
    if task in registry.GROUPS:
        group = registry.GROUPS[task]
        if key != group.metric:
            raise ConfigError(f"{where}: {name!r}: group {task} reports only {task}.{group.metric} (its overall), "
                              f"also named {task}.{label_key(group.label)} as the summary prints it")
        return task, None
    if task not in registry.TASKS:
        raise ConfigError(f"{where}: {name!r}: unknown task {task!r}{_did_you_mean(task, [*registry.TASKS, *registry.GROUPS])} "
                          "(`critic-eval tasks` lists them)")
    keys = [m.key for m in registry.TASKS[task].kind_spec.metrics]
    if key not in keys:
        # the interval keys (accepted) are left out of the list: 31 names for JudgeBench hid the 15 that matter
        shown = [k for k in keys if not k.endswith(INTERVAL_SUFFIXES)]
        bounds = "; and the _ci_low / _ci_high of each with an interval" if len(shown) < len(keys) else ""
        raise ConfigError(f"{where}: {name!r}: {task} has no metric {key!r}{_did_you_mean(key, keys)} (it has: "
                          f"{', '.join(shown)}{bounds})")
    return task, registry.TASKS[task].kind_spec.metric(key)


INTERVAL_SUFFIXES = ("_ci_low", "_ci_high")


def _did_you_mean(word: str, names) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(names), n=3, cutoff=0.75)
    return f"; did you mean {', '.join(close)}?" if close else ""


def parse_threshold(text: str, where: str) -> tuple[str, float]:
    name, eq, raw = text.partition("=")
    if not eq:
        raise ConfigError(f"{where}: {text!r}: expected TASK.METRIC=VALUE, e.g. critic_feedback.spearman=40")
    name = canonical_name(name.strip(), where)
    try:
        return name, float(raw)
    except ValueError:
        raise ConfigError(f"{where}: {text!r}: the threshold {raw.strip()!r} is not a number") from None


def read_config(path: Path) -> dict:
    """{"min": {name: value}, "max": {...}, "baseline": Path | None, "compare": [...], "allow_judge_failures":
    bool} from a gate config file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such gate config file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not YAML/JSON ({str(err).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with min, max and/or baseline")
    unknown = sorted(set(data) - {"min", "max", "baseline", "compare", "allow_judge_failures"})
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)} (expected min, max, baseline, compare, "
                          "allow_judge_failures)")
    allow = data.get("allow_judge_failures", False)
    if not isinstance(allow, bool):
        raise ConfigError(f"{path}: allow_judge_failures: expected true or false, not {allow!r}")
    out: dict = {"min": {}, "max": {}, "baseline": None, "compare": [], "allow_judge_failures": allow}
    compare = data.get("compare") or []
    if not isinstance(compare, list):
        raise ConfigError(f"{path}: compare: expected a list of TASK.METRIC")
    for name in compare:
        out["compare"].append(canonical_name(str(name), f"{path}: compare"))
    for side in ("min", "max"):
        block = data.get(side) or {}
        if not isinstance(block, dict):
            raise ConfigError(f"{path}: {side}: expected a mapping TASK.METRIC: VALUE")
        for name, value in block.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{path}: {side}: {name}: the threshold {value!r} is not a number")
            out[side][canonical_name(str(name), f"{path}: {side}")] = float(value)
    if data.get("baseline"):
        out["baseline"] = (path.parent / str(data["baseline"])).resolve()
    return out


def _ci_text(ci: tuple[float, float] | None) -> str:
    # brackets, as every table prints an interval: "-100.00-0.00" read as a subtraction
    return "no interval" if ci is None else f"95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"


def _left_out(run: Run, name: str) -> str:
    """A rate's unchecked items, said on its line: a gate passed on fewer items than the run had should say so."""
    note = invalid_note(run.invalid_items(*name.split(".", 1)))
    return f"; {note}" if note else ""


def _lookup(run: Run, name: str) -> tuple[float, tuple[float, float] | None]:
    task, key = name.split(".", 1)
    if task not in run.results:
        raise ConfigError(f"{name}: task {task} is not in {run.path} (it has: {', '.join(sorted(run.results))})")
    value = run.value(task, key)
    if value is None:
        raise ConfigError(f"{name}: {run.path} has no value for {key} in {task}: {why_undefined(run, task, key)}")
    return value, run.interval(task, key)


ORDER_KEYS = ("consistency", "inconsistency")  # with the bias lines: values of pairs asked in both orders


def why_undefined(run: Run, task: str, key: str) -> str:
    """The cause of an absent value, read from what the run's results do hold: no reply read, no labels, pairs asked
    in one order only, every verdict a tie; else that no record counted towards it."""
    if task in registry.GROUPS:
        missing = [m for m in registry.GROUPS[task].members if run.value(m, registry.GROUPS[task].metric) is None]
        return (f"its members {', '.join(missing)} have no {registry.GROUPS[task].metric}" if missing
                else "the run's results hold no overall for it")
    spec = registry.TASKS[task]
    both_orders = spec.kind_spec.pairwise and (key in ORDER_KEYS or key in registry.BIAS_LINES.get(spec.kind, ()))
    if run.value(task, "parse_rate") == 0:
        return ("no reply could be read (parse_rate = 0: no verdict, score or answer in any reply), so there is "
                "nothing to count")
    if run.value(task, "labels_available") == 0 or spec.split == "test":
        return "no human labels in this split"
    orders = run.settings(task).get("orders")
    if both_orders and orders not in (None, "both"):
        return f"each pair was asked in one order only (orders={orders}); it needs pairs asked in both orders"
    limit = run.settings(task).get("limit")
    if both_orders and limit is not None:
        return (f"no pair was asked in both orders (--limit {limit} cut the run's items: a pair is two of them); it "
                "needs pairs asked in both orders")
    if both_orders and key in registry.BIAS_LINES.get(spec.kind, ()) and run.value(task, "tie_rate") == 100:
        return "every verdict was a tie: no A or B verdict to count"
    return "no record of this run counted towards it (its items were left out)"


def check_thresholds(run: Run, minimum: dict[str, float], maximum: dict[str, float]) -> list[Outcome]:
    out = []
    for side, thresholds in (("min", minimum), ("max", maximum)):
        for name, limit in thresholds.items():
            value, ci = _lookup(run, name)
            ok = value >= limit if side == "min" else value <= limit
            if ok:
                sign = ">=" if side == "min" else "<="
                msg = f"{name} = {value:.2f} ({_ci_text(ci)}) {sign} {limit:g}"
            else:
                word = "below the minimum" if side == "min" else "above the maximum"
                msg = f"{name} = {value:.2f} ({_ci_text(ci)}) is {word} {limit:g} by {abs(value - limit):.2f}"
            out.append(Outcome(name, ok, msg + _left_out(run, name)))
    return out


def check_judge_failures(run: Run, maximum: dict[str, float], allow: bool = False) -> list[Outcome]:
    """One outcome per task of the run that reports ``judge_failed`` without its own ``--max``: it fails when items
    went ungraded (counted at the scale's minimum), unless ``allow``."""
    out = []
    for task in sorted(run.results):
        name = f"{task}.judge_failed"
        failed = run.value(task, "judge_failed")
        if failed is None or name in maximum:
            continue
        if not failed:
            out.append(Outcome(name, True, f"{name} = 0: the judge graded every item"))
            continue
        what = (f"{name} = {failed:.0f}: items the judge could not grade, counted at the scale's minimum "
                "(the toolkit protocol leaves them out)")
        out.append(Outcome(name, allow, what + ("; allowed (--allow-judge-failures)" if allow else
                                                "; rerun (failed calls are retried), or pass --allow-judge-failures "
                                                f"or --max {name}=N")))
    return out


def check_name(name: str, where: str) -> str:
    return canonical_name(name, where)


def baseline_metrics(run: Run, baseline: Run) -> list[str]:
    """Headline metrics with an interval in both runs: the all-domain tasks' headline keys, the groups' overalls."""
    names = []
    for task in registry.TASKS.values():
        if len(task.domains) > 1 and task.name in run.results and task.name in baseline.results:
            names += [f"{task.name}.{k}" for k in task.headline_keys()
                      if run.interval(task.name, k) and baseline.interval(task.name, k)]
    for group in registry.GROUPS.values():
        if run.interval(group.name, group.metric) and baseline.interval(group.name, group.metric):
            names.append(f"{group.name}.{group.metric}")
    return names


def _toward_best(metric: registry.Metric | None, value: float, ci: tuple[float, float]) -> tuple[float, tuple]:
    """``value`` and its interval on a scale where higher is better: as read, negated for a lower-is-better metric,
    the negated distance from the target for one best at a target (0 where the interval covers it)."""
    if metric is None or metric.higher_is_better:
        return value, ci
    if metric.best_at is None:
        return -value, (-ci[1], -ci[0])
    ends = (abs(ci[0] - metric.best_at), abs(ci[1] - metric.best_at))
    nearest = 0.0 if ci[0] <= metric.best_at <= ci[1] else min(ends)
    return -abs(value - metric.best_at), (-max(ends), -nearest)


def check_baseline(run: Run, baseline: Run, compare: list[str] | None = None) -> list[Outcome]:
    names = list(compare) if compare else baseline_metrics(run, baseline)
    if not names:
        raise ConfigError(f"--baseline {baseline.path}: no metric with an interval in both runs to compare "
                          f"(tasks here: {', '.join(sorted(run.results))}; there: {', '.join(sorted(baseline.results))})")
    out = []
    for name in names:
        task, key = name.split(".", 1)
        metric = registry.TASKS[task].kind_spec.metric(key) if task in registry.TASKS else None
        if metric is not None and metric.higher_is_better is None and metric.best_at is None:
            raise ConfigError(f"--baseline: {name} has no better side (a description of the run, not a score): "
                              "nothing to judge a drop by")
        (now, ci_now), (then, ci_then) = _lookup(run, name), _lookup(baseline, name)
        if ci_now is None or ci_then is None:
            raise ConfigError(f"--baseline: {name} has no interval in {run.path if ci_now is None else baseline.path}: "
                              "nothing to judge a drop by (compare metrics with intervals)")
        (good_now, (_, hi_now)), (good_then, (lo_then, _)) = (_toward_best(metric, now, ci_now),
                                                              _toward_best(metric, then, ci_then))
        drop = good_then - good_now
        # half-widths on the facing sides: the current run's towards the baseline, the baseline's towards it
        h_now, h_then = hi_now - good_now, good_then - lo_then
        verb = ("dropped {:.2f}" if metric is None or metric.higher_is_better else "rose {:.2f}"
                if metric.best_at is None else f"moved {{:.2f}} away from {metric.best_at:g}")
        allowed = math.hypot(h_now, h_then)
        ok = drop <= allowed
        detail = (f"{name} {(verb if drop > 0 else 'moved {:.2f}').format(abs(now - then))}: {then:.2f} "
                  f"({_ci_text(ci_then)}) -> {now:.2f} ({_ci_text(ci_now)}); allowed {allowed:.2f}")
        text = detail if not ok or drop > 0 else f"{name} {then:.2f} -> {now:.2f} ({_ci_text(ci_now)})"
        out.append(Outcome(name, ok, text + _left_out(run, name)))
    return out
