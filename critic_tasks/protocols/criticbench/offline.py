"""Score saved predictions in the toolkit's / OpenCompass's file format against the dataset, without a harness.

A predictions directory holds ``{split}_{domain}_{dimension}_{format}.json`` files (``comp_feedback`` with a
``_reverse`` twin, ``feedback`` with ``_correction_part`` twins), each mapping "0".."N-1" to ``{"origin_prompt": ...,
"prediction": ...}``; or, from an OpenCompass run of our datasets (``predictions/<model>/``), ``<task>.json`` files
(``<task>_<i>.json`` chunks when OpenCompass split a dataset across workers), one row per document of that task.
Predictions are matched to the dataset's items by index, and each match is checked: the count
must be the file's item count and the item's task input must appear in the prompt (with the toolkit protocol and a
toolkit checkout, the whole prompt must be the one the toolkit renders). The objective files are scored with the same
records and metric families as a live run, so the numbers are the same; the judge-scored (``_sub``) files are
counted and left to ``critic-eval judge``.

What the readers need of the registered tasks (which names are tasks, their documents and scoring, the groups) is
handed in (``Registered``, made by ``critic_tasks.cli.registered()``): a protocol does not read the registry.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import DataError
from critic_tasks.core.records import Record
from critic_tasks.protocols.criticbench import scoring
from critic_tasks.protocols.criticbench.correction import check_corrections
from critic_tasks.protocols.criticbench.data import load_task_docs
from critic_tasks.protocols.criticbench.prompts import DOMAIN_NAMES, OBJECTIVE_CORRECTION_DOMAINS
from critic_tasks.protocols.criticbench.toolkit import MODES

DIMENSION_OF = {mode: dim for dim, mode in MODES.items()}
FILE_NAME = re.compile(rf"^(?P<split>dev|test)_(?P<domain>{'|'.join(DOMAIN_NAMES)})_(?P<mode>comp_feedback|"
                       r"meta_feedback|feedback|correction)_(?P<fmt>obj|sub)(?P<reverse>_reverse)?"
                       r"(?P<part>_correction_part)?\.json$")
OPENCOMPASS_FILE = re.compile(r"^(?P<task>critic_\w+?)(?:_(?P<chunk>\d+))?\.json$")  # <task>.json, <task>_<i>.json


@dataclass(frozen=True)
class Registered:
    """The registered tasks, as the CLI hands them to the readers here (``critic_tasks.cli.registered()``)."""

    tasks: Mapping[str, Any]  # task name -> its ``registry.Task``
    groups: Sequence[Any]  # ``registry.Group``s: each the unweighted mean of its members' headline value
    judged: Callable[[Any], bool]  # a task -> graded by a judge (not scored here)
    task_docs: Callable[..., list[dict]]  # (task, data_dir, protocol, toolkit_dir) -> its documents
    score_task: Callable[..., tuple[dict, list]]  # (task, docs, replies, executor=) -> (metrics, records)
    kind_metrics: Callable[[str, list], dict]  # (a registered dimension's name, records) -> its metric keys


@dataclass
class Scored:
    results: dict = field(default_factory=dict)  # lm-eval shape: task -> {"metric,none": value}
    groups: dict = field(default_factory=dict)
    items: dict = field(default_factory=dict)  # file name -> {index: parsed value} (for a test-split submission)
    skipped: list = field(default_factory=list)  # files not scored here, with why
    scored: list = field(default_factory=list)  # (document, record) of each item of a toolkit-format file


def _read(path: Path) -> list[dict]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a predictions JSON file ({err})") from None
    if not isinstance(rows, dict) or any(str(i) not in rows for i in range(len(rows))):
        raise DataError(f"{path}: expected an object mapping \"0\"..\"N-1\" to predictions")
    out = []
    for i in range(len(rows)):
        row = rows[str(i)]
        if not isinstance(row, dict) or not isinstance(row.get("prediction"), str):
            raise DataError(f"{path}[{i}]: missing field 'prediction'")
        out.append(row)
    return out


def _prompt_text(prompt) -> str:
    """OpenCompass writes a chat model's prompt as a list of turns; the toolkit and API models as one string."""
    if isinstance(prompt, list):
        return "\n".join(str(t.get("prompt", "")) if isinstance(t, dict) else str(t) for t in prompt)
    return str(prompt or "")


def _check_match(path: Path, docs: list[dict], rows: list[dict], exact: bool) -> None:
    if len(rows) != len(docs):
        raise DataError(f"{path}: {len(rows)} predictions but the dataset file has {len(docs)} items "
                        f"({docs[0]['source_file'] if docs else 'none'}): not the same split or version")
    for i, (doc, row) in enumerate(zip(docs, rows)):
        prompt = _prompt_text(row.get("origin_prompt"))
        if exact:
            if doc["prompt"] not in prompt:
                raise DataError(f"{path}[{i}]: origin_prompt is not the toolkit's prompt for {item_label(doc)}")
        elif prompt and doc["question"].strip()[:200] not in prompt:
            raise DataError(f"{path}[{i}]: origin_prompt does not contain the task input of "
                            f"{item_label(doc)}: predictions and dataset do not match")


def prediction_files(pred_dir: Path) -> list[Path]:
    """The JSON prediction files in ``pred_dir`` (the toolkit's or OpenCompass's), sorted; one-line errors."""
    pred_dir = Path(pred_dir)
    if not pred_dir.is_dir():
        raise DataError(f"{pred_dir}: not a directory of prediction files")
    files = sorted(pred_dir.glob("*.json"))
    if not files:
        raise DataError(f"{pred_dir}: no prediction files ({{split}}_{{domain}}_{{dimension}}_{{format}}.json)")
    return files


def toolkit_file(path: Path, skipped: list, judged_why: str) -> re.Match | None:
    """The name of an objective toolkit prediction file, parsed; None (with why appended to ``skipped``) for any
    other file: an unknown name, or a judge-scored one (``judged_why``: what to run instead)."""
    m = FILE_NAME.match(path.name)
    if m is None:
        skipped.append((path.name, "not a CriticEval prediction file name"))
    elif m["fmt"] == "sub":
        skipped.append((path.name, judged_why))
    elif DIMENSION_OF[m["mode"]] == "correction" and m["domain"] not in OBJECTIVE_CORRECTION_DOMAINS:
        skipped.append((path.name, "text-domain correction is judge-scored"))
    else:
        return m
    return None


def score_predictions(pred_dir: Path, data_dir=None, protocol: str = "ours", toolkit_dir: str | None = None,
                      executor=None, *, registered: Registered, dimensions=None) -> Scored:
    """``dimensions``: score only the toolkit files of these (feedback, comparison, meta, correction; default all)."""
    files = prediction_files(pred_dir)
    exact = protocol == "toolkit" and toolkit_dir is not None
    out = Scored()
    records: dict[tuple[str, str], list] = defaultdict(list)  # (dimension, domain) -> records
    corrections: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))  # domain -> (docs, revisions)
    for task, paths in _opencompass_files(files, registered.tasks).items():
        files = [f for f in files if f not in paths]
        _score_opencompass(task, paths, data_dir, protocol, toolkit_dir, executor, out, registered)
    for path in files:
        m = toolkit_file(path, out.skipped, "judge-scored: run it through `critic-eval judge`")
        if m is None:
            continue
        dimension, domain, split = DIMENSION_OF[m["mode"]], m["domain"], m["split"]
        if dimensions is not None and dimension not in dimensions:
            continue
        options: dict = {"protocol": protocol, "toolkit_dir": toolkit_dir} if exact else {"protocol": "ours"}
        docs = load_task_docs(dimension, split, domain, data_dir, **options)
        if dimension == "feedback":
            part = "correction_part" if m["part"] else "main"
            docs = [d for d in docs if d["part"] == part]
        if dimension == "comparison":
            docs = [d for d in docs if d["order"] == ("reverse" if m["reverse"] else "forward")]
        rows = _read(path)
        _check_match(path, docs, rows, exact)
        for doc in docs:
            doc["protocol"] = protocol  # parsing rules follow the protocol, with or without a checkout
        texts = [row["prediction"] for row in rows]
        if dimension == "correction":
            corrections[(split, domain)][0].extend(docs)
            corrections[(split, domain)][1].extend(texts)
            continue
        recs = [scoring.record(d, t) for d, t in zip(docs, texts)]
        out.scored += zip(docs, recs)
        records[(split, dimension, domain)] += recs
        out.items[path.name] = {str(i): (r.verdict if hasattr(r, "verdict") else (r.pred if r.parsed else None))
                                for i, r in enumerate(recs)}
    for (split, domain), (docs, texts) in corrections.items():
        outcomes = check_corrections(domain, texts, docs, executor=executor, invalid="mark")
        recs = [scoring.correction_record(d, [o]) for d, o in zip(docs, outcomes)]
        out.scored += zip(docs, recs)
        records[(split, "correction", domain)] += recs
        out.items[f"{split}_{domain}_correction_obj.json"] = {str(i): o.passed for i, o in enumerate(outcomes)}
    _aggregate(records, out, registered)
    _groups(out, registered.groups)
    return out


def _opencompass_files(files: list[Path], tasks: Mapping[str, Any]) -> dict[str, list[Path]]:
    """Our tasks' OpenCompass prediction files (``tasks``: the registered task names), by task, chunks in order."""
    chunks: dict[str, list[tuple[int, Path]]] = defaultdict(list)
    for path in files:
        m = OPENCOMPASS_FILE.match(path.name)
        if m and m["task"] in tasks and not FILE_NAME.match(path.name):
            chunks[m["task"]].append((-1 if m["chunk"] is None else int(m["chunk"]), path))
    return {task: [p for _, p in sorted(found)] for task, found in chunks.items()}


def _score_opencompass(task: str, paths: list[Path], data_dir, protocol: str, toolkit_dir, executor, out: Scored,
                       registered: Registered):
    spec = registered.tasks[task]
    names = ", ".join(p.name for p in paths)
    if registered.judged(spec):
        out.skipped.append((names, "judge-scored: OpenCompass's evaluator grades it with the judge"))
        return
    protocol_name = spec.kind_spec.protocol
    if protocol_name != "criticbench":
        out.skipped.append((names, f"{protocol_name}: its OpenCompass result file holds the scores (this command "
                                   "re-scores CriticBench predictions)"))
        return
    if len(paths) > 1 and any(OPENCOMPASS_FILE.match(p.name)["chunk"] is None for p in paths):
        raise DataError(f"{paths[0].parent}: both {task}.json and chunks {task}_<i>.json: two runs in one folder?")
    rows = [row for path in paths for row in _read(path)]
    docs = registered.task_docs(task, data_dir, protocol, toolkit_dir)
    _check_match(paths[0] if len(paths) == 1 else paths[0].parent / f"{task}_*.json", docs, rows,
                 exact=protocol == "toolkit" and toolkit_dir is not None)
    texts = [row["prediction"] for row in rows]
    metrics, records = registered.score_task(task, docs, texts, executor=executor)
    out.results[task] = {f"{k},none": v for k, v in metrics.items()}
    out.items[task] = {str(i): _parsed_value(r) for i, r in enumerate(records)}


def _parsed_value(record: Record):
    """What a submission needs of one item: the verdict, the parsed score (None if unparsed), or passed."""
    if hasattr(record, "verdict"):
        return record.verdict
    if hasattr(record, "passed"):
        return record.passed[0] if len(record.passed) == 1 else list(record.passed)
    return record.pred if record.parsed else None


def _metrics(dimension: str, recs: list[Record], registered: Registered) -> dict[str, float]:
    """The registry's metric keys for this dimension, from the same metric family a live run uses (run once over
    all records, the family reports the breakdown keys, e.g. ``spearman_low``, itself)."""
    return {f"{key},none": value for key, value in registered.kind_metrics(dimension, recs).items()}


def _aggregate(records: dict, out: Scored, registered: Registered) -> None:
    for split in sorted({s for s, _, _ in records}):
        suffix = "" if split == "dev" else "_test"
        by_dim: dict[str, list] = defaultdict(list)
        for (s, dimension, domain), recs in sorted(records.items()):
            if s != split:
                continue
            by_dim[dimension] += recs
            if split == "dev":
                out.results[f"critic_{dimension}_{domain}"] = _metrics(dimension, recs, registered)
        for dimension, recs in by_dim.items():
            out.results[f"critic_{dimension}{suffix}"] = _metrics(dimension, recs, registered)
    _groups(out, registered.groups)


def _groups(out: Scored, groups: Sequence[Any]) -> None:
    """Each registry group whose members were all scored: the unweighted mean of their headline values."""
    for group in groups:
        scores = [out.results.get(m, {}).get(f"{group.metric},none") for m in group.members]
        if all(isinstance(v, (int, float)) for v in scores):
            out.results[group.name] = {f"{group.metric},none": sum(scores) / len(scores)}
            out.groups[group.name] = out.results[group.name]
