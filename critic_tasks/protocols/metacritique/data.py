"""Load MetaCritique's benchmark and annotation files.

``benchmark_data.json`` (the repository's ``data/`` and ``../shared/data/metacritique/``): a list of 100 items with
``question``, ``response`` (the answer to critique), ``gpt4_answer`` (the reference answer), ``gpt4_critique``
(the reference critique: ``critique`` and its ``aius``), ``index``, ``dataset``.

``annotation_data.json``: the same items, plus one object per critique source (``human_critique``,
``llm1_critique``, ``llm2_critique``; any key ending in ``_critique`` other than the reference) with ``critique``,
``aius``, ``precision_labels`` (one bool per AIU of this critique) and ``recall_labels`` (one bool per AIU of the
reference critique). Default source: the repository's raw file (downloaded once); ``METACRITIQUE_DATA_DIR`` (or
``data_dir``) names a local folder holding ``benchmark_data.json``.
"""

from __future__ import annotations

from pathlib import Path

from critic_tasks.core.errors import DataError
from critic_tasks.protocols import remote

DATA_DIR_ENV = "METACRITIQUE_DATA_DIR"
REPO = "GAIR-NLP/MetaCritique"  # GitHub: the benchmark and annotation files live in the paper repository
REPO_URL = f"https://raw.githubusercontent.com/{REPO}/main/data"
BENCHMARK_FILE = "benchmark_data.json"
REFERENCE = "gpt4_critique"


def _items(data, name: str) -> list[dict]:
    if not isinstance(data, list):
        raise DataError(f"{name}: expected a JSON array of items, got {type(data).__name__}")
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise DataError(f"{name}[{i}]: expected an object, got {type(item).__name__}")
    return data


def _aius(critique: dict, where: str) -> list[str]:
    aius = remote.field(critique, "aius", where, (list,))
    for j, unit in enumerate(aius):
        if not isinstance(unit, str):
            raise DataError(f"{where}: field 'aius'[{j}] should be str, got {type(unit).__name__}")
    return aius


def item_doc(item: dict, where: str, name: str, i: int) -> dict:
    ref = remote.field(item, REFERENCE, where, (dict,))
    aius = _aius(ref, f"{where}.{REFERENCE}")
    if not aius:
        raise DataError(f"{where}.{REFERENCE}: field 'aius' is empty (recall needs the reference's units)")
    return {"dimension": "metacritique", "fmt": "sub", "question": remote.field(item, "question", where),
            "response": remote.field(item, "response", where),
            "reference_answer": remote.field(item, "gpt4_answer", where),
            "reference_critique": remote.field(ref, "critique", f"{where}.{REFERENCE}"), "reference_aius": aius,
            "index": item.get("index", i), "dataset": str(item.get("dataset", "")), "source_file": name,
            "item_index": i}


def load_benchmark(data_dir=None) -> list[dict]:
    """One document per benchmark item."""
    path = remote.locate(BENCHMARK_FILE, data_dir, DATA_DIR_ENV, f"{REPO_URL}/{BENCHMARK_FILE}", "metacritique")
    items = _items(remote.read_json(path), str(path))
    if not items:
        raise DataError(f"{path}: no items")
    return [item_doc(item, f"{path}[{i}]", str(path), i) for i, item in enumerate(items)]


def load_task_docs(dimension: str = "metacritique", data_dir=None, **_ignored) -> list[dict]:
    return load_benchmark(data_dir)


def critique_sources(items: list[dict]) -> list[str]:
    """The annotated critique sources of a file, in first-seen order (the reference critique excluded)."""
    keys: dict[str, None] = {}
    for item in items:
        keys.update({k: None for k, v in item.items() if k.endswith("_critique") and k != REFERENCE and isinstance(v, dict)})
    return list(keys)


def load_annotations(path: str | Path) -> tuple[list[dict], dict[str, list[dict]]]:
    """(benchmark documents, source -> one ``{"critique", "aius", "precision_labels", "recall_labels"}`` per item).

    Every source must have both label lists on every item: the precision labels one per AIU of that critique, the
    recall labels one per reference AIU; anything else is a DataError naming the item and field."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such annotation file")
    items = _items(remote.read_json(path), str(path))
    sources = critique_sources(items)
    if not sources:
        raise DataError(f"{path}: no critique sources (objects named *_critique with precision_labels) in any item")
    docs, out = [], {s: [] for s in sources}
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        doc = item_doc(item, where, str(path), i)
        docs.append(doc)
        for s in sources:
            c = remote.field(item, s, where, (dict,))
            cw = f"{where}.{s}"
            aius = _aius(c, cw)
            p = remote.field(c, "precision_labels", cw, (list,))
            r = remote.field(c, "recall_labels", cw, (list,))
            for key, labels in (("precision_labels", p), ("recall_labels", r)):
                bad = [j for j, v in enumerate(labels) if not isinstance(v, bool)]
                if bad:
                    raise DataError(f"{cw}: field '{key}'[{bad[0]}] should be true/false, got {labels[bad[0]]!r}")
            if len(p) != len(aius):
                raise DataError(f"{cw}: field 'precision_labels' has {len(p)} labels for {len(aius)} aius")
            if len(r) != len(doc["reference_aius"]):
                raise DataError(f"{cw}: field 'recall_labels' has {len(r)} labels for the reference's "
                                f"{len(doc['reference_aius'])} aius")
            out[s].append({"critique": str(c.get("critique") or ""), "aius": aius, "precision_labels": p,
                           "recall_labels": r, "model": c.get("model")})
    return docs, out
