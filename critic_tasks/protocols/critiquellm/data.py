"""Load CritiqueLLM's AlignBench evaluation samples into flat documents.

Files, as in the CritiqueLLM repository (``data/evaluation/``) and ``../shared/data/critiquellm/``:

    pointwise/alignbench_reference_{based,free}_sample.jsonl   id, category, question, [reference], response,
                                                               model, human_score
    pairwise/alignbench_reference_{based,free}_sample.jsonl    id, category, question, [reference], response_1,
                                                               response_2, human_score_1, human_score_2, label

``label`` is 0 when response 1 is preferred, 1 for response 2 (2, a tie, is accepted too). Default source: the
repository's raw files (downloaded once); ``CRITIQUELLM_DATA_DIR`` (or ``data_dir``) names a local folder with the
same layout. A pairwise row becomes two documents, forward (response 1 shown as A) and reverse. Every document
carries the prompt ``variant`` of the run (``protocols.variants``: task option / --metadata, else
``CRITIC_PROMPT_VARIANT``, else ``paper``).
"""

from __future__ import annotations

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols import remote, variants

DATA_DIR_ENV = "CRITIQUELLM_DATA_DIR"
REPO = "thu-coai/CritiqueLLM"  # GitHub: the evaluation data live in the paper repository
REPO_URL = f"https://raw.githubusercontent.com/{REPO}/main/data/evaluation"
MODES = ("pointwise", "pairwise")
# AlignBench's eight categories -> metric-key slugs; anything else is reported under "other".
CATEGORIES = {"基本能力": "fundamental", "中文理解": "chinese", "综合问答": "open_qa", "文本写作": "writing",
              "逻辑推理": "reasoning", "数学计算": "math", "角色扮演": "role_play", "专业能力": "professional"}
CATEGORY_SLUGS = (*CATEGORIES.values(), "other")
LABELS = {0: "A", 1: "B", 2: "C"}
NUMBER = (int, float)


def relpath(mode: str, reference: bool) -> str:
    if mode not in MODES:
        raise ConfigError(f"critiquellm mode {mode!r}: expected one of {', '.join(MODES)}")
    return f"{mode}/alignbench_reference_{'based' if reference else 'free'}_sample.jsonl"


def read_rows(mode: str, reference: bool, data_dir=None) -> tuple[list[dict], str]:
    rel = relpath(mode, reference)
    path = remote.locate(rel, data_dir, DATA_DIR_ENV, f"{REPO_URL}/{rel}", "critiquellm")
    return remote.read_jsonl(path), str(path)


def _common(row: dict, where: str, reference: bool) -> dict:
    doc = {"id": remote.field(row, "id", where, (int, str)), "question": remote.field(row, "question", where),
           "category": remote.field(row, "category", where), "with_reference": reference}
    doc["category_slug"] = CATEGORIES.get(doc["category"], "other")
    if reference:
        doc["reference"] = remote.field(row, "reference", where)
    return doc


def load_pointwise(reference: bool, data_dir=None) -> list[dict]:
    rows, name = read_rows("pointwise", reference, data_dir)
    docs = []
    for i, row in enumerate(rows):
        where = f"{name}[{i}]"
        doc = _common(row, where, reference)
        doc.update(dimension="alignbench_pointwise", fmt="obj", response=remote.field(row, "response", where),
                   model=remote.field(row, "model", where), human_score=float(remote.field(row, "human_score", where, NUMBER)),
                   source_file=name, item_index=i)
        docs.append(doc)
    if not docs:
        raise DataError(f"{name}: no samples")
    return docs


def load_pairwise(reference: bool, data_dir=None) -> list[dict]:
    rows, name = read_rows("pairwise", reference, data_dir)
    docs = []
    for i, row in enumerate(rows):
        where = f"{name}[{i}]"
        base = _common(row, where, reference)
        label = remote.field(row, "label", where, (int,))
        if label not in LABELS:
            raise DataError(f"{where}: field 'label' should be 0 (response_1 better), 1 or 2 (tie), got {label}")
        r1, r2 = remote.field(row, "response_1", where), remote.field(row, "response_2", where)
        s1 = float(remote.field(row, "human_score_1", where, NUMBER))
        s2 = float(remote.field(row, "human_score_2", where, NUMBER))
        for order, (a, b) in (("forward", (r1, r2)), ("reverse", (r2, r1))):
            docs.append({**base, "dimension": "alignbench_pairwise", "fmt": "obj", "pair_id": f"{i}", "order": order,
                         "response_a": a, "response_b": b, "preference": LABELS[label],
                         "human_scores": [s1, s2], "source_file": name, "item_index": i})
    if not docs:
        raise DataError(f"{name}: no samples")
    return docs


def load_task_docs(dimension: str, reference=True, data_dir=None, variant=None, **_ignored) -> list[dict]:
    """The documents of one CritiqueLLM task (``dimension``: alignbench_pointwise | alignbench_pairwise), each
    carrying the run's prompt ``variant``."""
    if isinstance(reference, str):
        reference = reference.lower() not in ("false", "0", "no", "free")
    chosen = variants.resolve(variant)  # a bad value stops the run here, before any generation
    if dimension == "alignbench_pointwise":
        docs = load_pointwise(bool(reference), data_dir)
    elif dimension == "alignbench_pairwise":
        docs = load_pairwise(bool(reference), data_dir)
    else:
        raise ConfigError(f"critiquellm: unknown dimension {dimension!r}")
    for doc in docs:
        doc["variant"] = chosen
    return docs
