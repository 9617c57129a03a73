"""Load ProcessBench's subsets into flat documents.

Source of truth is the Hub dataset ``Qwen/ProcessBench``: one JSON array per subset at the repository's root
(``gsm8k.json``, ``math.json``, ``olympiadbench.json``, ``omnimath.json``; the dataset card maps each file to a split
of that name). Each item:

    id                    "gsm8k-0"
    generator             the model that wrote the solution
    problem               the problem text
    steps                 the solution, split into steps (paragraphs), a non-empty list of strings
    final_answer_correct  whether the solution's final answer is right (kept, not scored)
    label                 the index (from 0) of the earliest wrong step, or -1 when every step is right

``PROCESSBENCH_DATA_DIR`` (or ``data_dir``) names a local folder holding the same files (or a checkout of the
paper repository QwenLM/ProcessBench, whose ``dataset/`` folder holds them); ``sample`` selects the small fixtures of
ours shipped in the package. A subset whose file a local copy lacks is one DataError saying so. Every other problem
with a file is one DataError naming the file, item and field.

The authors' prompt template (``TEMPLATE``, their wording) is read like data, never copied here
(``protocols.authors``): from the checkout the documents came from when it holds ``code/templates/``, else the
cache, a mirror or GitHub at the pinned commit, always checked by sha256. The ``prompt`` option
(``protocols.prompt_choice``: ``authors``, the default; ``ours`` on the bundled sample) is written into every
document; with ``authors`` the loader reads the template once, so a run without it stops before any generation.
"""

from __future__ import annotations

import os
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import prompt_choice, remote
from critic_tasks.protocols.authors import AuthorsFile
from critic_tasks.protocols.processbench.scoring import NO_ERROR
from critic_tasks.protocols.remote import field, read_json

HUB_REPO = "Qwen/ProcessBench"
DATA_DIR_ENV = "PROCESSBENCH_DATA_DIR"
SAMPLE_DIR = Path(__file__).parent / "sample_data"
SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")
DIMENSION = "processbench"  # the data dimension of every document (one task kind); the subset is an option
# code/templates/critique_template.txt, as code/run_eval.py reads it. The commit is the newest of the repository this
# project's code index holds (it does not hold the template itself); the sha256 is that of the template released
# with the paper's code (../shared/data/processbench), which is what any source must match.
TEMPLATE = AuthorsFile("QwenLM/ProcessBench", "04d347e7282ce12124be7b0a9cc2fa4d7c562d53",
                       "code/templates/critique_template.txt",
                       "0e7dba24bfaa9dea379907e11b8dc701c6cd6e74453ab2ffc9b1d63237cc4434", DATA_DIR_ENV)


def subset_file(subset: str) -> str:
    if subset not in SUBSETS:
        raise ConfigError(f"processbench subset {subset!r}: expected one of {', '.join(SUBSETS)}")
    return f"{subset}.json"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local root to read from (``sample``: the bundled fixtures), or None for the Hub."""
    return resolve_dir(data_dir, DATA_DIR_ENV, default="hub", named={"sample": SAMPLE_DIR})


def locate(subset: str, data_dir: str | os.PathLike | None = None) -> Path:
    name = subset_file(subset)
    root = resolve_data_dir(data_dir)
    if root is None:
        return _download(name)
    for candidate in (root / name, root / "dataset" / name):
        if candidate.is_file():
            return candidate
    for folder in (root, root / "dataset"):  # a partial copy (the shared one has no omnimath): name the file where
        present = [s for s in SUBSETS if (folder / f"{s}.json").is_file()]  # its siblings are, so it can be added
        if present:
            tasks = ",".join(f"critic_processbench_{s}" for s in present)
            raise DataError(f"{folder / name}: file not found (this copy holds only {', '.join(present)}); add "
                            f"{name} there from the Hub's {HUB_REPO}, unset {DATA_DIR_ENV} to read every subset from "
                            f"the Hub, or ask only for the subsets it holds (--tasks {tasks})")
    raise DataError(f"{root / name}: file not found (expected {', '.join(subset_file(s) for s in SUBSETS)} under "
                    f"{root}, the layout of the Hub's {HUB_REPO})")


def _download(name: str) -> Path:
    from huggingface_hub import constants, hf_hub_download

    try:
        return Path(hf_hub_download(HUB_REPO, name, repo_type="dataset"))
    except Exception as err:  # network, offline mode, a missing file: one message for all
        if constants.HF_HUB_OFFLINE:
            raise DataError(f"HF_HUB_OFFLINE is set and hf://datasets/{HUB_REPO}/{name} is not in the local Hub cache "
                            f"({constants.HF_HUB_CACHE}); set {DATA_DIR_ENV} to a local copy of the dataset, or to "
                            "'sample' for the bundled sample") from None
        first = str(err).splitlines()[0] if str(err) else ""
        raise DataError(f"hf://datasets/{HUB_REPO}/{name}: could not be read from the Hub ({type(err).__name__}: "
                        f"{first}). Set {DATA_DIR_ENV} to a local copy of the dataset, or to 'sample' for the "
                        f"bundled sample.") from None


def check_published(timeout: float = 5.0) -> None:
    """Online, before a run: the Hub answers one call for the dataset within ``timeout`` seconds (offline, the
    run's own loading from the cache is the check). One DataError naming the fix if not."""
    remote.check_hub_dataset(HUB_REPO, DATA_DIR_ENV, subset_file(SUBSETS[0]), timeout)


def _steps(item: dict, where: str) -> list[str]:
    steps = field(item, "steps", where, (list,))
    if not steps:
        raise DataError(f"{where}: field 'steps' is an empty list (a solution has at least one step)")
    for k, step in enumerate(steps):
        if not isinstance(step, str):
            raise DataError(f"{where}: field 'steps'[{k}] should be str, got {type(step).__name__}")
    return steps


def to_doc(item: dict, where: str, subset: str, index: int, source: str) -> dict:
    steps = _steps(item, where)
    label = field(item, "label", where, (int,))
    if not NO_ERROR <= label < len(steps):
        raise DataError(f"{where}: field 'label' should be -1 or a step index 0..{len(steps) - 1}, got {label}")
    correct = item.get("final_answer_correct")
    if correct is not None and not isinstance(correct, bool):
        raise DataError(f"{where}: field 'final_answer_correct' should be bool, got {type(correct).__name__}")
    return {"id": field(item, "id", where, (str, int)), "subset": subset, "dimension": DIMENSION,
            "generator": item.get("generator") if isinstance(item.get("generator"), str) else "",
            "problem": field(item, "problem", where), "steps": list(steps), "n_steps": len(steps), "label": label,
            "final_answer_correct": correct, "source_file": source, "item_index": index}


def load_subset(subset: str, data_dir: str | os.PathLike | None = None) -> list[dict]:
    path = locate(subset, data_dir)
    items = read_json(path)
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON array of items, got {type(items).__name__}")
    if not items:
        raise DataError(f"{path}: an empty list (expected the {subset} items; a truncated copy?)")
    docs = [to_doc(item, f"{path}[{i}]", subset, i, str(path)) for i, item in enumerate(items)]
    kinds = {type(doc["id"]) for doc in docs}
    if len(kinds) > 1:  # a harness turns the documents into one Arrow table: a column holds one type
        first = next(d for d in docs if type(d["id"]) is not type(docs[0]["id"]))
        raise DataError(f"{path}[{first['item_index']}]: field 'id' is {type(first['id']).__name__} where item 0's is "
                        f"{type(docs[0]['id']).__name__} (one type per file)")
    seen: dict = {}
    for doc in docs:
        if doc["id"] in seen:
            raise DataError(f"{doc['source_file']}[{doc['item_index']}]: field 'id' {doc['id']!r} repeats item "
                            f"{seen[doc['id']]}")
        seen[doc["id"]] = doc["item_index"]
    return docs


def checkout_root(source_file: str | os.PathLike) -> Path:
    """The folder a data file was read from, or the checkout above it when that folder is a checkout's
    ``dataset/``: where the authors' ``code/templates/`` would be."""
    folder = Path(source_file).parent
    return folder.parent if folder.name == "dataset" else folder


def template(doc: dict) -> str:
    """The authors' template text (``TEMPLATE``), from the checkout the document came from if it holds it."""
    source = doc.get("source_file")
    return TEMPLATE.text(checkout_root(source) if source else None)


def load_task_docs(dimension: str, data_dir: str | os.PathLike | None = None, subset: str | None = None,
                   prompt: str | None = None, **_ignored) -> list[dict]:
    """The documents of one ProcessBench subset: ``dimension`` "processbench" with the ``subset`` option (gsm8k |
    math | olympiadbench | omnimath), or the subset's name as ``dimension``; each carries the ``prompt`` choice
    (``protocols.prompt_choice``)."""
    if dimension != DIMENSION:
        if subset not in (None, dimension):
            raise ConfigError(f"processbench: dimension {dimension!r} and subset {subset!r} disagree")
        subset = dimension
    if subset is None:
        raise ConfigError(f"processbench: no subset given (the task option 'subset': {', '.join(SUBSETS)})")
    choice = prompt_choice.resolve(prompt, sample=resolve_data_dir(data_dir) == SAMPLE_DIR)
    docs = load_subset(subset, data_dir)
    for doc in docs:
        doc[prompt_choice.KEY] = choice
    if choice == prompt_choice.AUTHORS:
        template(docs[0])  # read (and checked) now: a run without the template stops before any generation
    return docs
