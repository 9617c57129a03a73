"""Is critic B better than critic A? Paired differences of two runs' metrics, item by item, with an interval and a
p-value (``critic-eval compare``).

Two runs scored on the same items are correlated: an item both critics find hard pulls both values down. Two
separate intervals ignore that and overlap even when B wins on nearly every item; the paired interval resamples the
*same* items for both runs, so what the two runs share cancels out of the difference.

Reading: each run is a results file with lm-eval's ``--log_samples`` rows beside it (``results.samples_file``);
under each metric key a row holds the record ``process_results`` returned for that document (as
``results.logged_intervals`` reads them). An OpenCompass run (the summarizer's files) holds the same in its run
folder: each prediction's ``gold`` is the document, our evaluator's ``details`` the records
(``read_opencompass_logged``). The two runs' documents are paired by ``doc_id`` and the document's content
(the logged ``doc`` but for what a run's settings write into it and where the data was read from,
``document_identity``: two copies of the data in two folders compare); a document in one run only, or a ``doc_id``
whose documents differ, is refused in one line naming the field that differs (``ItemMismatch``): a paired
comparison needs the same items. So are rows compare cannot trust, each in one line: a document logged twice, a
record holding NaN or an infinity (``check_finite``), and a results file whose value its own rows do not give
(``check_reported``).

The unit resampled and swapped is the one the metric's own interval resamples
(``registry.INTERVALS``), as each family declares it beside its interval (``registry.UNITS``): a comparison pair with both
of its orders (``pair_id``), a prompt (RM-Bench, RewardBench 2), a question for CritiqueLLM's text-level correlations,
else a document; resampled within the strata the family declares beside
its interval (``registry.STRATA``, each protocol's ``scoring.STRATA``: CriticBench's corrections and judge scores,
RealCritic and the revision protocols' r_obj / r_sub by domain, ProcessBench's F1 by subset and class). Each
resample recomputes the metric itself (``registry.metric_value``) on the
drawn units' records for both runs, so correlations and domain means are recomputed, not approximated; a unit drawn
twice enters twice (its ``pair_id`` / ``prompt_id`` / ``question`` / ``item`` told apart by the copy, so the metric's own grouping
sees two units).

The pure functions below (``paired_bootstrap``, ``paired_permutation``, ``mcnemar``) take the statistic as a
function of drawn unit positions, and know nothing of records or harnesses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Iterable, Sequence

import numpy as np

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, percentile_interval, resample_indices
from critic_tasks.core.rank_rows import row_of
from critic_tasks.core.records import RECORD_TYPES, Record

RELABELLED = ("pair_id", "prompt_id", "question", "item")  # the fields a metric groups by: a unit drawn twice counts twice
TOLERANCE = 1e-9  # a resampled |difference| this close to the observed one counts as reaching it


# ----------------------------------------------------------------------------- the pure statistics


# the files the OpenCompass summarizer writes (critic_tasks.adapters.opencompass.summarizer)
OPENCOMPASS_FILES = ("critic_results_", "critic_summary_")

def stacked_indices(strata: Sequence[Hashable], resamples: int, seed: int) -> np.ndarray:
    """The (B, n) unit positions of B paired resamples: ``numpy.random.default_rng(seed)``; each stratum (sorted by
    its text) draws its own n_s positions with replacement, ``rng.integers(0, n_s, (B, n_s))``, in turn
    (``bootstrap.resample_indices``), the blocks side by side."""
    blocks = resample_indices(strata, resamples, np.random.default_rng(seed))
    return np.concatenate(blocks, axis=1)


def paired_bootstrap(difference: Callable[[np.ndarray], float | None], strata: Sequence[Hashable],
                     settings: BootstrapSettings) -> tuple[float, float] | None:
    """The paired percentile bootstrap interval of a difference B - A (Efron & Tibshirani 1993, *An Introduction to
    the Bootstrap*, ch. 13 and 16.4, the two-sample paired case):

        idx_b      = stacked_indices(strata)[b]          the same units drawn for both runs   (b = 1..B)
        d*_b       = theta(B's units idx_b) - theta(A's units idx_b)   the metric recomputed on each side
        interval   = the (1 - level)/2 and (1 + level)/2 quantiles of d*  (numpy's linear quantile)

    ``difference(idx)``: d for the drawn positions ``idx`` (None where a side has no value: left out). None when
    no resample has a value.

    >>> values = np.array([1.0, 2.0, 3.0])
    >>> paired_bootstrap(lambda idx: float(values[idx].mean() - values[idx].mean()), [0, 0, 0],
    ...                  BootstrapSettings(resamples=20))
    (0.0, 0.0)
    """
    idx = stacked_indices(strata, settings.resamples, settings.seed)
    replicates = [d for d in (difference(row) for row in idx) if d is not None]
    return percentile_interval(np.array(replicates), settings.level) if replicates else None


def paired_permutation(difference: Callable[[np.ndarray], float | None], n: int, resamples: int,
                       seed: int) -> float:
    """The two-sided p-value of a paired permutation test (Fisher 1935, *The Design of Experiments*, sec. 21; Good
    2005, *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 3.2): under "A and B are exchangeable", each
    unit's two runs may swap their records. ``difference(swap)``: B - A with the units where ``swap`` is True
    swapped, the metric recomputed on each side.

        swap_p     = rng.integers(0, 2, (P, n)) as booleans, rng = numpy.random.default_rng(seed)   (p = 1..P)
        p-value    = (1 + #{p : |d(swap_p)| >= |d_observed| - 1e-9}) / (1 + P)

    (the observed assignment counted among the permutations, so p is never 0; Phipson & Smyth 2010). Identical runs:
    every swap gives the observed 0, p = 1.

    >>> paired_permutation(lambda swap: 0.0, 5, 99, 0)
    1.0
    """
    observed = difference(np.zeros(n, dtype=bool))
    if observed is None:
        return math.nan
    masks = np.random.default_rng(seed).integers(0, 2, size=(resamples, n)).astype(bool)
    reached = 0
    for mask in masks:
        d = difference(mask)
        reached += d is not None and abs(d) >= abs(observed) - TOLERANCE
    return (1 + reached) / (1 + resamples)


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> tuple[float, int, int]:
    """McNemar's exact test of paired 0/1 outcomes (McNemar 1947, Psychometrika 12:153; the exact form: the
    discordant units are binomial under the null, Agresti 2013, *Categorical Data Analysis*, 11.1.4):

        n01 = #{A wrong, B right},  n10 = #{A right, B wrong}
        p   = two-sided exact binomial test of n01 successes in n01 + n10 trials at 1/2  (scipy.stats.binomtest);
              1 when no unit is discordant

    Returns (p, n01, n10).

    >>> mcnemar([True, True, False], [True, True, False])
    (1.0, 0, 0)
    >>> round(mcnemar([False] * 10, [True] * 10)[0], 6)  # 10 of 10 discordant units favour B: 2 / 2**10
    0.001953
    """
    from scipy.stats import binomtest

    if len(a) != len(b):
        raise ValueError(f"{len(a)} outcomes of A vs {len(b)} of B")
    n01 = sum(1 for x, y in zip(a, b) if not x and y)
    n10 = sum(1 for x, y in zip(a, b) if x and not y)
    if n01 + n10 == 0:
        return 1.0, 0, 0
    return float(binomtest(n01, n01 + n10, 0.5).pvalue), n01, n10


# ----------------------------------------------------------------------------- two runs' records, paired


class ItemMismatch(ConfigError):
    """The two runs of a task were not scored on the same items: runs that cannot be paired, as runs of different
    tasks cannot (a ConfigError: its line names the command, with no "data error" before it)."""


@dataclass
class Logged:
    """One run's samples of one task: per document, its identity and its record under each metric key."""

    identity: dict  # doc_id -> the document's identity (``document_identity``: field -> its JSON text)
    records: dict  # doc_id -> {key: Record}


# What a run's settings write into its documents (the prompt variant, the revision failure rule, the toolkit
# protocol and the prompt it composes; JudgeBench's judge format, prompt and the messages they make): two runs
# differing only there were asked about the same items.
RUN_SETTING_FIELDS = ("variant", "failure_rule", "protocol", "prompt", "judge", "system_message", "user_message")
# Where the run read the item from: the data file's path (another folder, machine or cache holds the same items) and
# the item's place in that file (RealCritic's physical ``line``, the ``item_index`` of a row: a blank line or another
# copy's order moves them). An item is what it says, not where it was read; the runs pair by lm-eval's ``doc_id``,
# the item's place among the documents, which a blank line does not move.
PLACE_FIELDS = ("source_file", "line", "item_index")
# What a scorer writes into a document as it scores it (RealCritic grades the shown solution once per document and
# keeps the grade there, scoring.shown_correct): lm-eval logs the document after scoring, OpenCompass's reference is
# the document before it, so the field is set on one side and empty on the other; it is computed from the item.
SCORER_FIELDS = ("prior_correct",)
HASH_FIELD = "doc_hash"  # the identity of a row that logged no document: lm-eval's hash of it


def document_identity(sample: dict) -> dict[str, str]:
    """What tells a logged document from another: its content, each field of the logged ``doc`` as JSON text, less
    ``RUN_SETTING_FIELDS`` (two prompt variants compare), ``PLACE_FIELDS`` (two copies of the data in two folders,
    or with a blank line in one, compare) and ``SCORER_FIELDS`` (an lm-eval run and an OpenCompass run compare); a
    row without a ``doc``: lm-eval's ``doc_hash`` alone."""
    doc = sample.get("doc")
    if isinstance(doc, dict):
        return {str(k): json.dumps(v, sort_keys=True, default=str) for k, v in doc.items()
                if k not in RUN_SETTING_FIELDS and k not in PLACE_FIELDS and k not in SCORER_FIELDS}
    return {HASH_FIELD: str(sample.get("doc_hash", ""))}


def read_logged(path: Path, task: str) -> Logged:
    """The records a task's lm-eval samples file logged (the "none" filter's rows, as the results were computed)."""
    return logged_rows(task, ((where, sample) for _, where, sample in iter_jsonl(path, "an lm-eval --log_samples file")))


def logged_rows(task: str, samples: Iterable[tuple[str, dict]]) -> Logged:
    """The records of a task's logged rows: ``(where, sample)`` pairs, a samples file's lines or the rows lm-eval
    returns in memory (``simple_evaluate(..., log_samples=True)["samples"][task]``, as the demo holds them)."""
    keys = {m.key for m in registry.TASKS[task].kind_spec.metrics if not m.ci}
    logged = Logged({}, {})
    seen: dict = {}  # doc_id -> where its row was
    for where, sample in samples:
        if sample.get("filter", "none") != "none":
            continue
        if "doc_id" not in sample:
            raise DataError(f"{where}: no doc_id (an lm-eval samples row names its document)")
        doc_id = sample["doc_id"]
        # lm-eval logs a document once per filter (its repeats inside the row's resps, each rank its own documents):
        # a second row would silently replace the first, the result then hanging on the rows' order
        if doc_id in seen:
            raise DataError(f"{where}: doc_id {doc_id} repeats {seen[doc_id]} (lm-eval logs each document once): "
                            "not one run's samples")
        seen[doc_id] = where
        logged.identity[doc_id] = document_identity(sample)
        held = logged.records.setdefault(doc_id, {})
        for key in sorted(keys & sample.keys()):  # sorted: a refusal names the same key each run
            row = row_of(sample[key])
            if row is None:
                continue
            if not (isinstance(row, dict) and isinstance(row.get("kind"), str) and row["kind"] in RECORD_TYPES):
                raise DataError(f"{where}: {task}.{key} = {json.dumps(row, default=str)[:80]}: not a critic_tasks "
                                "record (an lm-eval samples file of this task holds one under each metric key)")
            check_finite(row, f"{where}: {task}.{key} of doc_id {doc_id}")
            held[key] = Record.from_dict(row)
    return logged


def check_finite(row: dict, what: str) -> None:
    """One DataError naming ``what`` and the field, where a record holds NaN or an infinity (Python's JSON reads
    both): the metric recomputed from it would be nan, its interval (nan, nan), read as a result."""
    def finite(value) -> bool:
        if isinstance(value, (list, tuple)):
            return all(finite(v) for v in value)
        return not isinstance(value, float) or math.isfinite(value)

    for name, value in row.items():
        if not finite(value):
            raise DataError(f"{what}: field {name!r} = {json.dumps(value)}: not a finite number")


def opencompass_files(work_dir: Path, model: str, task: str) -> tuple[list[Path], Path] | None:
    """An OpenCompass run's per-item files of ``task`` for ``model``: its predictions (``predictions/<model>/<task>.json``,
    or the chunks ``<task>_0.json``, ``<task>_1.json``, ... of a split run, in OpenCompass's own order) and the
    evaluation result holding our evaluator's per-item ``details`` (``results/<model>/<task>.json``); None if
    either is absent."""
    predictions, result = Path(work_dir) / "predictions" / model, Path(work_dir) / "results" / model / f"{task}.json"
    files = [predictions / f"{task}.json"]
    if not files[0].is_file():
        files = []
        while (predictions / f"{task}_{len(files)}.json").is_file():
            files.append(predictions / f"{task}_{len(files)}.json")
    return (files, result) if files and result.is_file() else None


def read_opencompass_logged(prediction_files: Sequence[Path], result_file: Path, task: str) -> Logged:
    """The records of an OpenCompass run of ``task``, as ``read_logged`` holds an lm-eval run's: item i is the i-th
    prediction (its ``gold``, the document as JSON: the dataset's ``doc`` column, the evaluator's reference) and the
    i-th of our evaluator's ``details`` (each the item's record, ``CriticTaskEvaluator.scored``), under every metric
    key, as lm-eval's rows hold it."""
    golds = []
    for path in prediction_files:
        chunk = _read_json_object(path, "an OpenCompass predictions file")
        golds += [chunk.get(str(i), {}).get("gold") if isinstance(chunk.get(str(i)), dict) else None
                  for i in range(len(chunk))]
    details = _read_json_object(result_file, "an OpenCompass result file").get("details")
    if isinstance(details, dict):
        details = [details.get(str(i)) for i in range(len(details))]
    if not isinstance(details, list):
        raise ConfigError(f"{result_file}: no per-item 'details' (OpenCompass keeps them with --dump-eval-details, "
                          "its default; a run without them cannot be compared item by item)")
    if len(details) != len(golds):
        raise DataError(f"{result_file}: {len(details)} per-item details for {len(golds)} predictions of {task} "
                        f"({', '.join(str(p) for p in prediction_files)}): not the same run")
    keys = {m.key for m in registry.TASKS[task].kind_spec.metrics if not m.ci}
    logged = Logged({}, {})
    for i, (gold, row) in enumerate(zip(golds, details)):
        where = f"{result_file}, details[{i}]"
        try:
            doc = json.loads(gold) if isinstance(gold, str) else gold
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise DataError(f"{where}: its prediction's 'gold' is not a document (our datasets' reference is the "
                            "document as JSON)")
        row = _one_replica(row, where)
        if not (isinstance(row, dict) and isinstance(row.get("kind"), str) and row["kind"] in RECORD_TYPES):
            raise DataError(f"{where}: {json.dumps(row, default=str)[:80]}: not a critic_tasks record (our "
                            "evaluator's details hold one per item)")
        check_finite(row, f"{where}: {task} record")
        logged.identity[i] = document_identity({"doc": doc})
        record = Record.from_dict(row)
        logged.records[i] = {key: record for key in keys}
    return logged


def _one_replica(row, where: str):
    """A detail as our evaluator wrote it: OpenCompass's evaluation (``BaseEvaluator.evaluate``) hands it on with
    each value made a list, one per replica of the item (its ``n``), and the item's ``example_abbr`` added."""
    if not isinstance(row, dict):
        return row
    values = {k: v for k, v in row.items() if k != "example_abbr"}
    if not values or not all(isinstance(v, list) for v in values.values()):
        return row  # not wrapped
    replicas = {len(v) for v in values.values()}
    if replicas == {1}:
        return {k: v[0] for k, v in values.items()}
    raise DataError(f"{where}: {max(replicas)} replicas of one item (the dataset config's n): compare pairs one "
                    "reply per item")


def _read_json_object(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path}: cannot be read as {what} ({err})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: not {what} (expected a JSON object)")
    return data


def differing_field(a: dict[str, str], b: dict[str, str]) -> str:
    """The first field (in sorted order) two documents' identities disagree on, each side's value (as JSON) shown
    from a little before the first character where they part, shortened."""
    name = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))[0]
    va, vb = a.get(name), b.get(name)
    start = 0
    if va is not None and vb is not None:
        start = next((i for i, (x, y) in enumerate(zip(va, vb)) if x != y), min(len(va), len(vb)))
        start = max(0, start - 12)

    def shown(value: str | None) -> str:
        if value is None:
            return "absent"
        part = value[start:start + 40]
        return ("..." if start else "") + part + ("..." if start + 40 < len(value) else "")

    return f"field {name!r} ({shown(va)} in A, {shown(vb)} in B)"


def check_same_items(task: str, a: Logged, b: Logged, setting_note: str = "") -> None:
    """One ``ItemMismatch`` line naming the task, how many items differ, and for a changed document the field that
    differs (``setting_note``: which recorded run setting differs, where one does), unless both runs hold the same
    documents under the same doc_ids."""
    only_a = a.identity.keys() - b.identity.keys()
    only_b = b.identity.keys() - a.identity.keys()
    changed = sorted((d for d in a.identity.keys() & b.identity.keys() if a.identity[d] != b.identity[d]), key=str)
    if only_a or only_b or changed:
        n = len(only_a) + len(only_b) + len(changed)
        first = (f"; doc_id {changed[0]} differs in {differing_field(a.identity[changed[0]], b.identity[changed[0]])}"
                 if changed else "")
        raise ItemMismatch(f"compare: {task}: {n} item{'s differ' if n != 1 else ' differs'} between the runs "
                           f"({len(only_a)} only in A, "
                           f"{len(only_b)} only in B, {len(changed)} with a different document under the same "
                           f"doc_id){first}{setting_note or ''}; a paired comparison needs both runs scored on the "
                           "same items")


def unit_of(family: str, base: str, record: Record, doc_id) -> str:
    """The unit a record's metric resamples: what its family declares beside its interval (``registry.UNITS``: a
    pair, a prompt, a question), else its document."""
    declared = registry.UNITS.get(family)
    return (declared(record, base) if declared else "") or f"doc {doc_id}"


@dataclass
class Units:
    """A metric's units, paired: the records each run holds for unit i (``a[i]``, ``b[i]``), and its stratum."""

    names: list[str]
    a: list[list[Record]]
    b: list[list[Record]]
    strata: list[str]


def paired_units(metric: registry.Metric, a: Logged, b: Logged) -> Units:
    """Each document's records under ``metric.key`` (those the metric accepts) gathered into the units its interval
    resamples, in the units' sorted order; a unit neither run holds a record of is left out."""
    per_unit: dict[str, tuple[list, list, str]] = {}
    for doc_id in sorted(a.identity, key=str):
        ra, rb = a.records[doc_id].get(metric.key), b.records[doc_id].get(metric.key)
        ra = ra if ra is not None and metric.accepts(ra) else None
        rb = rb if rb is not None and metric.accepts(rb) else None
        either = ra or rb
        if either is None:
            continue
        name = unit_of(metric.family, metric.base, either, doc_id)
        held = per_unit.setdefault(name, ([], [], registry.metric_stratum(metric.family, metric.base, either)))
        if ra is not None:
            held[0].append(ra)
        if rb is not None:
            held[1].append(rb)
    names = sorted(per_unit)
    return Units(names, [per_unit[n][0] for n in names], [per_unit[n][1] for n in names],
                 [per_unit[n][2] for n in names])


class Recompute:
    """The metric over drawn units: each unit's records, a unit's k-th copy in one draw relabelled (``RELABELLED``
    fields + ``#k``) so that the metric's grouping by pair, question or item counts it again."""

    def __init__(self, metric: registry.Metric, units: Units):
        self.metric, self.units = metric, units
        self._copies: dict[tuple[int, int, int], list[Record]] = {}

    def _records(self, side: int, unit: int, copy: int) -> list[Record]:
        held = (self.units.a, self.units.b)[side][unit]
        if copy == 0:
            return held
        found = self._copies.get((side, unit, copy))
        if found is None:
            found = self._copies[(side, unit, copy)] = [
                dataclasses.replace(r, **{f: f"{getattr(r, f)}#{copy}" for f in RELABELLED
                                          if isinstance(getattr(r, f, None), str) and getattr(r, f)})
                for r in held]
        return found

    def value(self, side: int, units: Sequence[int]) -> float | None:
        seen: dict[int, int] = {}
        records = []
        for u in units:
            copy = seen[u] = seen.get(u, -1) + 1
            records += self._records(side, int(u), copy)
        if not records:
            return None
        value = registry.metric_value(self.metric.family, self.metric.base, records)
        return None if value is None else float(value)

    def difference(self, units: Sequence[int]) -> float | None:
        a, b = self.value(0, units), self.value(1, units)
        return None if a is None or b is None else b - a

    def swapped_difference(self, swap: np.ndarray) -> float | None:
        """B - A with each unit where ``swap`` holds giving its A records to B and its B records to A."""
        if not swap.any():
            return self.difference(range(len(self.units.names)))
        a = [r for i, s in enumerate(swap) for r in (self.units.b if s else self.units.a)[i]]
        b = [r for i, s in enumerate(swap) for r in (self.units.a if s else self.units.b)[i]]
        va = registry.metric_value(self.metric.family, self.metric.base, a) if a else None
        vb = registry.metric_value(self.metric.family, self.metric.base, b) if b else None
        return None if va is None or vb is None else float(vb) - float(va)

    def binary_outcomes(self) -> tuple[list[bool], list[bool]] | None:
        """Each unit's own value as a 0/1 outcome, when the metric is the plain mean of them x100 (an accuracy, a
        pass rate of one sample per item, a consistency): then McNemar's test applies; else None."""
        sides = []
        for side in (0, 1):
            values = [self.value(side, [i]) for i in range(len(self.units.names))]
            if not values or any(v not in (0.0, 100.0) for v in values):
                return None
            whole = self.value(side, range(len(values)))
            if whole is None or abs(whole - sum(values) / len(values)) > 1e-6:
                return None
            sides.append([v == 100.0 for v in values])
        return sides[0], sides[1]


@dataclass(frozen=True)
class Comparison:
    task: str
    key: str
    a: float
    b: float
    interval: tuple[float, float] | None
    p_value: float
    test: str  # "McNemar (n01 B-only right, n10 A-only right)" | "permutation"
    units: int
    unit: str  # what a unit is: pair, prompt, question, item

    @property
    def counted(self) -> str:
        """How many units, in words: "1 pair", "12 pairs"."""
        return f"{self.units} {self.unit}{'' if self.units == 1 else 's'}"

    @property
    def difference(self) -> float:
        return self.b - self.a


@contextlib.contextmanager
def _quiet():
    """The metric functions' log lines (a Spearman of one item, a constant side) silenced while resamples and single
    units are recomputed: they are about a draw, not about either run (the runs' own values are computed aloud)."""
    logger = logging.getLogger("critic_tasks")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def compare_metric(task: str, metric: registry.Metric, a: Logged, b: Logged,
                   settings: BootstrapSettings) -> Comparison | None:
    """B - A of one metric with its paired interval and p-value (None when a run has no value on these items)."""
    units = paired_units(metric, a, b)
    if not units.names:
        return None
    recompute = Recompute(metric, units)
    everything = range(len(units.names))
    va, vb = recompute.value(0, everything), recompute.value(1, everything)
    if va is None or vb is None:
        return None
    with _quiet():
        interval = paired_bootstrap(recompute.difference, units.strata, settings)
        outcomes = recompute.binary_outcomes()
        if outcomes is not None:
            p, n01, n10 = mcnemar(*outcomes)
            test = f"McNemar ({n01} only B, {n10} only A)"
        else:
            p = paired_permutation(recompute.swapped_difference, len(units.names), settings.resamples, settings.seed)
            test = "permutation"
    unit = units.names[0].split(" ", 1)[0]
    return Comparison(task, metric.key, va, vb, interval, p, test, len(units.names),
                      {"pair": "pair", "prompt": "prompt", "question": "question", "doc": "item"}[unit])


def comparable_metrics(task: str) -> list[registry.Metric]:
    """The metrics of a task with a declared interval (a per-item resampling unit): the ones compared."""
    kind = registry.TASKS[task].kind_spec
    return [kind.metric(m.key.removesuffix("_ci_low")) for m in kind.metrics if m.ci == "low"]


def setting_note(run_a, run_b, task: str) -> str:
    """Which recorded setting of how the two runs chose ``task``'s items differs (``Run.settings``: --limit, the
    task's options such as split or orders), as '; the runs' settings differ: split gpt in A, claude in B'; '' when
    the results record no difference."""
    sa, sb = run_a.settings(task), run_b.settings(task)
    differ = [f"{k} {sa.get(k, 'unset')} in A, {sb.get(k, 'unset')} in B" for k in sorted(sa.keys() | sb.keys())
              if sa.get(k) != sb.get(k)]
    return f"; the runs' settings differ: {'; '.join(differ)}" if differ else ""


def check_two_runs(run_a, run_b) -> None:
    """One line, unless A and B are two runs holding a task in common: the same results file given twice (a
    comparison of a run with itself is all zeros, which reads as a result), or runs of different tasks."""
    if Path(run_a.path).resolve() == Path(run_b.path).resolve():
        raise ConfigError(f"compare: A and B are the same run ({run_a.path}): give two runs (two runs with identical "
                          "replies compare as zeros, a determinism check; one run given twice checks nothing)")
    tasks_a = [t for t in run_a.results if t in registry.TASKS]
    tasks_b = [t for t in run_b.results if t in registry.TASKS]
    if not set(tasks_a) & set(tasks_b):
        def listed(tasks):
            return ", ".join(tasks[:6]) + (f" and {len(tasks) - 6} more" if len(tasks) > 6 else "") or "none"
        raise ConfigError(f"compare: the runs hold different tasks (A: {listed(tasks_a)}; B: {listed(tasks_b)}); a "
                          "paired comparison needs the same task in both runs")


def _opencompass_run(run) -> bool:
    return run.config.get("harness") == "opencompass" or Path(run.path).name.startswith(OPENCOMPASS_FILES)


def per_item_rows(run, task: str) -> Callable[[], Logged] | None:
    """How to read a run's per-item rows of ``task``: an lm-eval run's ``--log_samples`` file beside its results
    file; an OpenCompass run's predictions and result files in its folder (the summary files' folder's parent; the
    model: ``config['model']``, which the summarizer records); None where there are none."""
    from critic_tasks.reports.results import samples_file

    if _opencompass_run(run):
        found = opencompass_files(Path(run.path).parent.parent, str(run.config.get("model", run.label)), task)
        return None if found is None else (lambda: read_opencompass_logged(*found, task))
    path = samples_file(run.path, task)
    return None if path is None else (lambda: read_logged(path, task))


def compare_runs(run_a, run_b, names: Sequence[str] = (), settings: BootstrapSettings | None = None
                 ) -> list[Comparison]:
    """Every metric both runs (``results.Run``) report with samples files beside them, or those ``names``
    (``task.metric``) only; refuses one run given twice, runs of different tasks (``check_two_runs``), mismatched
    items (``ItemMismatch``, naming the setting that differs) and a name no such metric has."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    check_two_runs(run_a, run_b)
    settings = settings_from_env() if settings is None else settings
    available: dict[str, tuple[Callable[[], Logged], Callable[[], Logged]]] = {}
    for task in registry.TASKS:
        if task in run_a.results and task in run_b.results:
            fa, fb = per_item_rows(run_a, task), per_item_rows(run_b, task)
            if fa is not None and fb is not None:
                available[task] = (fa, fb)
    known = {f"{t}.{m.key}": (t, m) for t in available for m in comparable_metrics(t)
             if run_a.value(t, m.key) is not None and run_b.value(t, m.key) is not None}
    for name in names:
        if name not in known:
            listed = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "") if known else "none"
            raise ConfigError(f"--metric {name}: not a metric both runs report with per-item rows (lm-eval "
                              "--log_samples files beside a results file, an OpenCompass run's predictions and "
                              f"results); these are: {listed}")
    chosen = [known[n] for n in names] if names else list(known.values())
    if not chosen:
        shared = [t for t in registry.TASKS if t in run_a.results and t in run_b.results]
        rows = {side: [t for t in shared if per_item_rows(run, t) is not None]
                for side, run in (("A", run_a), ("B", run_b))}

        def listed(tasks):
            return ", ".join(tasks[:4]) + (", ..." if len(tasks) > 4 else "")

        lacking = [side for side, tasks in rows.items() if not tasks]
        if lacking:
            runs = {"A": run_a, "B": run_b}
            opencompass = [side for side in lacking if _opencompass_run(runs[side])]
            if opencompass:  # its per-item rows sit in OpenCompass's own predictions and result files
                models = ", ".join(dict.fromkeys(str(runs[s].config.get("model", runs[s].label)) for s in opencompass))
                raise ConfigError(f"compare: run {' and '.join(opencompass)} (OpenCompass) "
                                  f"{'have' if len(opencompass) > 1 else 'has'} no per-item files of "
                                  f"{listed(shared)} (model {models}): compare reads "
                                  "predictions/<model>/<task>.json and results/<model>/<task>.json in the run's "
                                  "folder (the one above summary/); give the summary file of a run whose folder "
                                  "holds them")
            raise ConfigError(f"compare: run {' and '.join(lacking)} {'have' if len(lacking) > 1 else 'has'} no "
                              f"per-item rows of {listed(shared)}: run it with lm-eval --log_samples "
                              "(samples_<task>_<time>.jsonl beside results_<time>.json)")
        if not set(rows["A"]) & set(rows["B"]):
            raise ConfigError(f"compare: no task has per-item rows in both runs (A: {listed(rows['A'])}; B: "
                              f"{listed(rows['B'])})")
        raise ConfigError(f"compare: no metric with an interval has a value in both runs of {listed(shared)}")
    logged: dict[str, tuple[Logged, Logged]] = {}
    out = []
    for task, metric in chosen:
        if task not in logged:
            la, lb = (read() for read in available[task])
            check_same_items(task, la, lb, setting_note(run_a, run_b, task))
            logged[task] = (la, lb)
        found = compare_metric(task, metric, *logged[task], settings)
        if found is not None:
            check_reported(run_a, "A", found.task, found.key, found.a)
            check_reported(run_b, "B", found.task, found.key, found.b)
            out.append(found)
    return out


def check_reported(run, side: str, task: str, key: str, recomputed: float) -> None:
    """One DataError unless the run's results file reports the value compare recomputed from its per-item rows (up
    to float rounding: the items summed in another order): else the table would show a value the run does not
    report, the results and samples files being of different runs or one of them edited."""
    reported = run.value(task, key)
    if reported is not None and not math.isclose(reported, recomputed, rel_tol=1e-6, abs_tol=1e-6):
        raise DataError(f"{run.path}: {task}.{key} = {reported:g}, but run {side}'s per-item rows give "
                        f"{recomputed:g}: the results and per-item files are not of one run")


def compare_samples(samples_a: dict[str, list[dict]], samples_b: dict[str, list[dict]],
                    settings: BootstrapSettings | None = None) -> list[Comparison]:
    """``compare_runs`` on rows held in memory (the demo's two seeded runs): ``samples_*`` map each task to the rows
    lm-eval logged for it (``simple_evaluate(..., log_samples=True)["samples"]``). Every metric with an interval of
    every critic task both hold, compared as `critic-eval compare` compares the files of the same runs; mismatched
    items are refused (``ItemMismatch``)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    settings = settings_from_env() if settings is None else settings
    out = []
    for task in registry.TASKS:
        if task not in samples_a or task not in samples_b:
            continue
        a, b = (logged_rows(task, ((f"run {side}, {task} row {n}", row) for n, row in enumerate(rows, 1)))
                for side, rows in (("A", samples_a[task]), ("B", samples_b[task])))
        check_same_items(task, a, b)
        for metric in comparable_metrics(task):
            found = compare_metric(task, metric, a, b, settings)
            if found is not None:
                out.append(found)
    return out


def _number(value: float) -> str:
    return f"{value:.2f}"


def format_comparisons(comparisons: Sequence[Comparison], label_a: str, label_b: str, level: float) -> str:
    """The Markdown table: each metric's A, B, B - A, its paired interval, the p-value and its test."""
    lines = [f"Paired comparison: difference = B - A (A: {label_a}; B: {label_b}); {level:.0%} paired bootstrap "
             "interval; p-value: McNemar's exact test for 0/1 outcomes, else a paired permutation test",
             "",
             "| metric | A | B | B − A | interval | p | test | units |",
             "|---|---|---|---|---|---|---|---|"]
    for c in comparisons:
        interval = f"[{_number(c.interval[0])}, {_number(c.interval[1])}]" if c.interval else "—"
        p = "—" if math.isnan(c.p_value) else f"{c.p_value:.3g}"
        lines.append(f"| {c.task}.{c.key} | {_number(c.a)} | {_number(c.b)} | {c.difference:+.2f} | {interval} | {p} "
                     f"| {c.test} | {c.counted} |")
    return "\n".join(lines)


def comparison_table(comparisons: Sequence[Comparison], label_a: str, label_b: str, level: float):
    """The same as a ``report.Table`` ("Paired comparison", `critic-eval report --paired`): A, B, and B - A with its
    paired interval; the p-value and its test beside the metric's name."""
    from critic_tasks.reports.report import Cell, Table

    rows = [([f"{c.task}.{c.key}", "n/a" if math.isnan(c.p_value) else f"{c.p_value:.3g}", c.test],
             [Cell(c.a), Cell(c.b), Cell(c.difference, c.interval)]) for c in comparisons]
    note = (f"B − A (A: {label_a}; B: {label_b}), the same items resampled for both runs ({level:.0%} paired "
            "bootstrap interval); p: McNemar's exact test for 0/1 outcomes, else a paired permutation test")
    return Table("paired_comparison", "Paired comparison", ["metric", "p", "test"], ["A", "B", "B − A"], rows, note)
