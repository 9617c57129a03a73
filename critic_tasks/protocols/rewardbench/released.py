"""RewardBench's released per-pair results of a model, re-scored: its numbers as the authors compute them, and its
per-pair records, so that a run can be compared with it pair by pair (``critic-eval compare RUN --against
rewardbench:MODEL``, ``critic-eval score --released rewardbench:MODEL``).

What the authors release: every model run for the leaderboard leaves ``eval-set-scores/<org>/<model>.json`` in the
Hub dataset ``allenai/reward-bench-results``. Their ``scripts/run_rm.py`` (reward models) and
``scripts/run_generative.py`` (generative judges) write it with ``utils.save_to_hub``: the scored dataset's
``to_dict()``, one list per column and one entry per pair,

    id               the pair's id in ``allenai/reward-bench`` (split ``filtered``)
    subset           its subset (constants.py's 23)
    results          1 when the model preferred the chosen response, 0 when the rejected one; a generative judge's
                     pair without a verdict 0.5 ("effectively a tie")
    scores_chosen,   a reward model's two scores (absent for a generative judge)
    scores_rejected
    text_chosen,     the two conversations as the model saw them
    text_rejected

plus the scalars ``model``, ``model_type`` (and ``chat_template``). A list of rows with the same fields (a JSON list,
or JSON lines) is read the same way. Only ``id``, ``subset`` and ``results`` are read: the decision is the authors',
recorded per pair, so a reward model's tie of scores is their 0, and a judge's order is not in the file.

Their numbers from it, as ``run_rm.py`` computes them: each subset's mean result, then
``calculate_scores_per_section`` with ``constants.py``'s weights (``scoring.section_values``) and the leaderboard's
mean of the four sections; each released pair becomes one ``RewardBenchRecord`` (one order, the verdict that gives
its result: 1 names the chosen response, 0 the rejected one, 0.5 none), which ``scoring`` scores to exactly those
numbers, and which ``compare`` pairs with the run's records of the same pair id.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols import remote
from critic_tasks.protocols.rewardbench import scoring
from critic_tasks.protocols.rewardbench.authors_prompts import sections
from critic_tasks.protocols.rewardbench.data import SECTION_SLUGS, subset_slug

RESULTS_REPO = "allenai/reward-bench-results"  # their utils.EVAL_REPO
SCORES_FOLDER = "eval-set-scores"  # run_rm.py's sub_path_scores for the core set
RELEASED_ORDERS = "released"  # a released pair's record: no order was recorded
RESULTS = {1.0: "A", 0.0: "B", 0.5: None}  # a pair's released result -> the forward order's verdict giving it


@dataclass
class Matched:
    """A run's documents matched to a released model's items by id: ``records`` holds each matched document's
    record of the released model (None for a document whose item's record another document of it holds), and the
    counts of the items in one of the two only."""

    records: dict = field(default_factory=dict)  # doc_id -> Record | None
    shared: int = 0  # items in both
    run_only: int = 0  # the run's items the released file lacks
    released_only: int = 0  # the released file's items the run did not ask
    unit: str = "pairs"


def locate(name: str, local_dir: Path | None, repo: str, flag: str) -> tuple[Path, str]:
    """(the released file, where it was read) for ``name``: a file's path; else, with ``local_dir`` (a copy of
    ``repo`` or its eval-set-scores folder), ``<dir>/<name>``, ``<dir>/eval-set-scores/<name>.json`` or
    ``<dir>/<name>.json``; else the Hub's ``repo``, ``eval-set-scores/<name>.json`` (the commit read named)."""
    given = Path(name)
    if given.is_file():
        return given, str(given)
    if local_dir is not None:
        if not local_dir.is_dir():
            raise ConfigError(f"{flag} {local_dir}: not a folder (a copy of {repo}, or its {SCORES_FOLDER} folder)")
        for candidate in (local_dir / name, local_dir / SCORES_FOLDER / f"{name}.json", local_dir / f"{name}.json"):
            if candidate.is_file():
                return candidate, str(candidate)
        raise ConfigError(f"{flag} {local_dir}: holds neither {name} nor {SCORES_FOLDER}/{name}.json (a copy of "
                          f"{repo}, or its {SCORES_FOLDER} folder)")
    if given.suffix in (".json", ".jsonl"):
        raise ConfigError(f"{name}: no such file (a released per-pair file, or a model as {repo} names it under "
                          f"{SCORES_FOLDER}/, e.g. openai/gpt-4o-2024-05-13)")
    hub_path = f"{SCORES_FOLDER}/{name}.json"
    path = remote.hub_file(repo, hub_path, f"give the file's path, or {flag} a local copy of {repo}")
    commit = remote.hub_commit(path)
    return path, f"hf://datasets/{repo}/{hub_path}" + (f"@{commit[:10]}" if commit else "")


def read_table(path: Path, where: str, required: Sequence[str], wanted: Sequence[str] = ()) -> tuple[list[dict], dict]:
    """(rows, scalars) of a released file: a dict of columns (``Dataset.to_dict()``, as ``save_to_hub`` writes it)
    with its scalar fields, a JSON list of rows, or JSON lines. Rows keep the ``required`` and ``wanted`` fields;
    one DataError naming the file and the field for a missing column or columns of unequal lengths."""
    keep = (*required, *wanted)
    if path.suffix == ".jsonl":
        data = remote.read_jsonl(path)
    else:
        data = remote.read_json(path)
    if isinstance(data, dict):
        columns = {k: v for k, v in data.items() if isinstance(v, list)}
        scalars = {k: v for k, v in data.items() if not isinstance(v, list)}
        for key in required:
            if key not in columns:
                raise DataError(f"{where}: no column '{key}' (a released per-item file holds "
                                f"{', '.join(repr(k) for k in required)} as lists, one entry per item)")
        n = len(columns[required[0]])
        for key in keep:
            if key in columns and len(columns[key]) != n:
                raise DataError(f"{where}: column '{key}' has {len(columns[key])} entries, column "
                                f"'{required[0]}' {n}: not one entry per item")
        rows = [{k: columns[k][i] for k in keep if k in columns} for i in range(n)]
        return rows, scalars
    if isinstance(data, list):
        for i, row in enumerate(data):
            if not isinstance(row, dict):
                raise DataError(f"{where}[{i}]: expected an object with {', '.join(repr(k) for k in required)}, "
                                f"got {type(row).__name__}")
            for key in required:
                if key not in row:
                    raise DataError(f"{where}[{i}]: missing field '{key}'")
        return [{k: row[k] for k in keep if k in row} for row in data], {}
    raise DataError(f"{where}: expected a dict of columns (as the authors' save_to_hub writes) or a list of rows, "
                    f"got {type(data).__name__}")


def number(value, where: str, name: str) -> float:
    """A finite number (not a bool), or a DataError naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DataError(f"{where}: field '{name}' {value!r} is not a number")
    return float(value)


@dataclass(frozen=True)
class ReleasedPair:
    pair_id: str
    subset: str
    result: float


@dataclass
class Released:
    model: str
    where: str
    items: dict  # id -> ReleasedPair (or the v2 module's ReleasedPrompt)
    source: str = "rewardbench"


def read(path: Path, where: str, name: str = "") -> Released:
    """A released per-pair file of RewardBench (module docstring); one DataError per bad field."""
    counts, _ = sections()
    rows, scalars = read_table(path, where, ("id", "subset", "results"))
    items: dict[str, ReleasedPair] = {}
    for i, row in enumerate(rows):
        at = f"{where}, item {i}"
        if isinstance(row["id"], bool) or not isinstance(row["id"], (int, str)):
            raise DataError(f"{at}: field 'id' {row['id']!r} is not a pair id")
        pair_id = str(row["id"])
        at = f"{where}, item {i} (id {pair_id})"
        if pair_id in items:
            raise DataError(f"{at}: field 'id' repeats an earlier item")
        subset = row["subset"]
        if subset not in counts:
            raise DataError(f"{at}: field 'subset' {subset!r} is none of the authors' {len(counts)} subsets "
                            "(constants.py's EXAMPLE_COUNTS)")
        result = number(row["results"], at, "results")
        if result not in RESULTS:
            raise DataError(f"{at}: field 'results' {row['results']!r} is none of 1, 0, 0.5 (the authors' result of "
                            "a pair)")
        items[pair_id] = ReleasedPair(pair_id, subset, result)
    if not items:
        raise DataError(f"{where}: no items")
    model = scalars.get("model") if isinstance(scalars.get("model"), str) else name or path.stem
    return Released(model, where, items)


def _section_of() -> dict[str, str]:
    _, mapping = sections()
    return {subset: SECTION_SLUGS.get(name, name) for name, subsets in mapping.items() for subset in subsets}


def pair_record(item: ReleasedPair, section_of: dict[str, str] | None = None) -> scoring.RewardBenchRecord:
    """The record of a released pair: one order, the verdict giving its result."""
    section_of = _section_of() if section_of is None else section_of
    verdict = RESULTS[item.result]
    return scoring.RewardBenchRecord(domain=section_of.get(item.subset, ""), subset=item.subset,
                                     subset_slug=subset_slug(item.subset), pair_id=item.pair_id, order="forward",
                                     orders=RELEASED_ORDERS, verdict=verdict, parsed=verdict is not None, gold="A")


def values(released: Released) -> dict[str, float]:
    """The released model's numbers (x100): ``accuracy_<subset>`` per subset, the four sections, ``score`` (their
    mean, when all four have pairs), ``accuracy`` over every pair and ``pairs``."""
    section_of = _section_of()
    records = [pair_record(item, section_of) for item in released.items.values()]
    per_subset = scoring.subset_values(records)
    per_section = scoring.section_values(per_subset)
    out = {f"accuracy_{subset_slug(s)}": v for s, v in sorted(per_subset.items())}
    out.update(per_section)
    found = scoring.score_of(per_section)
    if found is not None:
        out["score"] = found
    out["accuracy"] = scoring.accuracy(records)
    out["pairs"] = float(len(records))
    return out


def match_by_id(docs: dict, released: Released, id_field: str, unit: str, record_of) -> Matched:
    """The run's logged documents (doc_id -> doc) matched to the released items by ``id_field``, in doc_id order:
    ``record_of(item, doc, first)`` gives a matched document's record (``first``: no document of that item came
    before it); an item whose subset differs between the two is one DataError, and ``record_of`` raises one for
    whatever else must agree."""
    matched = Matched(unit=unit)
    run_items, missing, given = set(), set(), set()
    for doc_id in sorted(docs, key=lambda d: (str(type(d)), d)):
        doc = docs[doc_id]
        item_id = str(doc.get(id_field))
        run_items.add(item_id)
        item = released.items.get(item_id)
        if item is None:
            missing.add(item_id)
            continue
        if item.subset != doc.get("subset"):
            noun = unit.removesuffix("s")
            raise DataError(f"{released.where}: id {item_id}: field 'subset' is {item.subset!r}, the run's {noun} "
                            f"{item_id} is in {doc.get('subset')!r}: not the same {unit}")
        matched.records[doc_id] = record_of(item, doc, item_id not in given)
        given.add(item_id)
    matched.shared, matched.run_only = len(given), len(missing)
    matched.released_only = len(released.items.keys() - run_items)
    return matched


def match(docs: dict, released: Released) -> Matched:
    """The run's logged documents (doc_id -> doc) matched to the released pairs by pair id: the first document of
    each pair gets the released record (a pair asked in both orders is one unit either way); a pair whose subset
    differs between the two is one DataError."""
    section_of = _section_of()
    return match_by_id(docs, released, "pair_id", "pairs",
                       lambda item, doc, first: pair_record(item, section_of) if first else None)
