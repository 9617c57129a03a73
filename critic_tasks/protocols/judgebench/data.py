"""Load JudgeBench's response pairs into flat documents, one per order in which the pair is shown.

Source of truth is the Hub dataset ``ScalerLab/JudgeBench`` with two splits: ``gpt`` (350 pairs answered by
GPT-4o) and ``claude`` (270 pairs answered by Claude-3.5-Sonnet). The paper repository keeps the same rows in
``data/dataset=judgebench,response_model=<model>.jsonl``. Each row:

    pair_id         unique id of the response pair
    original_id     the question's id in its source dataset (may be null)
    source          mmlu-pro-<subject> | livebench-reasoning | livebench-math | livecodebench
    question        the question the two responses answer
    response_model  the model that wrote both responses
    response_A      one response
    response_B      the other
    label           "A>B" or "B>A": which response is objectively correct

``JUDGEBENCH_DATA_DIR`` (or ``data_dir``) names a local folder holding those files (or a checkout of the paper
repository, whose ``data/`` folder holds them); ``sample`` selects the small fixtures of ours shipped in the
package. Sources map to the paper's four categories (``SOURCES``); a source outside them is a DataError, since its
pairs would fall out of every per-category number.

Each pair becomes two documents, as the authors run it by default: ``forward`` shows response_A as A and
response_B as B, ``reverse`` swaps them; ``orders="single"`` keeps only the forward one (the authors'
``--single_game``). ``preference`` is the forward order's gold in the comparison alphabet (A / B).

Every document also carries the run's judge format and prompt (``judge``: ``judges.JUDGES``; ``prompt``: ``authors``
| ``ours``) and the messages they make: ``system_message`` ("" for none; lm-eval sends it as the system turn through
the YAML's ``description``) and ``user_message`` (the critic's prompt), rendered here, once, so that a missing
authors' file stops the run before any generation; ``follow_up``: the user turn the Arena-Hard judge sends when a
reply has no verdict ("" where the run asks once: another judge format, or our prompt).
"""

from __future__ import annotations

import os
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import remote
from critic_tasks.protocols.judgebench import judges, prompts
from critic_tasks.protocols.remote import field

HUB_REPO = "ScalerLab/JudgeBench"
DATA_DIR_ENV = judges.DATA_ENV  # JUDGEBENCH_DATA_DIR
SAMPLE_DIR = Path(__file__).parent / "sample_data"
SPLITS = {"gpt": "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl",
          "claude": "dataset=judgebench,response_model=claude-3-5-sonnet-20240620.jsonl"}
# the paper's categories (Table 2): MMLU-Pro -> knowledge, LiveBench reasoning / math, LiveCodeBench -> coding
SOURCES = {"knowledge": "mmlu-pro", "reasoning": "livebench-reasoning", "math": "livebench-math",
           "coding": "livecodebench"}
DIMENSION = "judgebench"  # the task kind's data dimension (every document's ``dimension``)
CATEGORIES = ("all", *SOURCES)
LABELS = {"A>B": "A", "B>A": "B"}
ORDER_CHOICES = ("both", "single")


def source_slug(source: str) -> str | None:
    """The category of a row's ``source`` (the authors' per-category reports match the source's prefix)."""
    for slug, prefix in SOURCES.items():
        if source.startswith(prefix):
            return slug
    return None


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local root to read from (``sample``: the bundled fixtures), or None for the Hub."""
    return resolve_dir(data_dir, DATA_DIR_ENV, default="hub", named={"sample": SAMPLE_DIR})


def _split_file(split: str) -> str:
    if split not in SPLITS:
        raise ConfigError(f"judgebench split {split!r}: expected one of {', '.join(SPLITS)}")
    return SPLITS[split]


def read_rows(split: str, data_dir: str | os.PathLike | None = None) -> tuple[list[dict], str]:
    name = _split_file(split)
    root = resolve_data_dir(data_dir)
    if root is None:
        return remote.hub_rows(HUB_REPO, split, DATA_DIR_ENV), f"hf://datasets/{HUB_REPO}[{split}]"
    for candidate in (root / name, root / "data" / name):
        if candidate.is_file():
            return [row for _, _, row in iter_jsonl(candidate)], str(candidate)
    raise DataError(f"{root / name}: file not found (expected {name} under {root} or {root / 'data'}, the layout "
                    f"of the paper repository's data/)")


def check_published(timeout: float = 5.0) -> None:
    """Online, before a run: the Hub answers one call for the dataset within ``timeout`` seconds (offline, the
    run's own loading from the cache is the check). One DataError naming the fix if not."""
    remote.check_hub_dataset(HUB_REPO, DATA_DIR_ENV, "README.md", timeout)


def to_pair(row: dict, where: str, split: str, index: int, source_file: str) -> dict:
    label = field(row, "label", where)
    if label not in LABELS:
        raise DataError(f"{where}: field 'label' should be 'A>B' or 'B>A', got {label!r}")
    source = field(row, "source", where)
    slug = source_slug(source)
    if slug is None:
        raise DataError(f"{where}: field 'source' {source!r} is none of the paper's categories (sources starting "
                        f"with {', '.join(SOURCES.values())})")
    return {"pair_id": str(field(row, "pair_id", where, (str, int))), "question": field(row, "question", where),
            "response_1": field(row, "response_A", where), "response_2": field(row, "response_B", where),
            "label": label, "preference": LABELS[label], "source": source, "source_slug": slug, "split": split,
            "response_model": row.get("response_model") if isinstance(row.get("response_model"), str) else "",
            "source_file": source_file, "item_index": index}


def load_pairs(split: str = "gpt", data_dir: str | os.PathLike | None = None) -> list[dict]:
    rows, name = read_rows(split, data_dir)
    if not rows:
        raise DataError(f"{name}: no pairs (expected the {split} split's rows; a truncated copy?)")
    pairs = [to_pair(row, f"{name}[{i}]", split, i, name) for i, row in enumerate(rows)]
    seen: dict[str, int] = {}
    for pair in pairs:
        if pair["pair_id"] in seen:
            raise DataError(f"{name}[{pair['item_index']}]: field 'pair_id' {pair['pair_id']!r} repeats row "
                            f"{seen[pair['pair_id']]}")
        seen[pair["pair_id"]] = pair["item_index"]
    return pairs


def pair_docs(pair: dict, category: str, orders: str = "both") -> list[dict]:
    shown = {"forward": (pair["response_1"], pair["response_2"]), "reverse": (pair["response_2"], pair["response_1"])}
    chosen = ("forward", "reverse") if orders == "both" else ("forward",)
    return [{**pair, "dimension": DIMENSION, "category": category, "order": order, "response_a": shown[order][0],
             "response_b": shown[order][1]} for order in chosen]


def with_messages(docs: list[dict], fmt: judges.JudgeFormat, chosen: str, root: Path | None) -> list[dict]:
    """``docs`` with the run's judge format (``fmt``) and prompt (``chosen``: authors | ours) and the messages they
    make (``system_message``, ``user_message``); ``root``: the data folder (None: the Hub), where a checkout of the
    paper repository holds the authors' files."""
    where = None if root is None or root == SAMPLE_DIR else root
    # the authors' second turn (their wording: their judges.py), for the judge that asks it; our prompt asks once
    follow_up = judges.second_turn_text(None if where is None else str(where)) if chosen == judges.AUTHORS and fmt.turns > 1 else ""
    out = []
    for doc in docs:
        if chosen == judges.AUTHORS:
            system, user = judges.messages(fmt, doc["question"], doc["response_a"], doc["response_b"], where)
        else:
            system, user = "", prompts.our_prompt(doc)
        out.append({**doc, "judge": fmt.name, "prompt": chosen, "system_message": system, "user_message": user,
                    "follow_up": follow_up})
    return out


def load_task_docs(dimension: str = DIMENSION, data_dir: str | os.PathLike | None = None, split: str = "gpt",
                   orders: str = "both", category: str = "all", judge: str | None = None, prompt: str | None = None,
                   **_ignored) -> list[dict]:
    """The documents of one JudgeBench task (``dimension``: judgebench) on one response set (``split``: gpt |
    claude), the pairs of one ``category`` (all | knowledge | reasoning | math | coding), each in both orders
    (``orders``: both | single), asked by one of the authors' judge formats (``judge``: arena_hard, the default,
    ...) in their wording or ours (``prompt``: authors | ours)."""
    root = resolve_data_dir(data_dir)  # where the files are (the data setting), then how they are asked
    # bad options stop the run before the data is read; prompt unset: ours on the bundled sample (no authors' file
    # needed), else the authors'
    fmt, chosen = judges.resolve(judge, prompt, root == SAMPLE_DIR)
    if dimension != DIMENSION:
        raise ConfigError(f"judgebench: unknown dimension {dimension!r} (expected {DIMENSION!r})")
    if category not in CATEGORIES:
        raise ConfigError(f"judgebench category {category!r}: expected one of {', '.join(CATEGORIES)}")
    if orders not in ORDER_CHOICES:
        raise ConfigError(f"judgebench orders {orders!r}: expected one of {', '.join(ORDER_CHOICES)}")
    pairs = [p for p in load_pairs(split, root) if category == "all" or p["source_slug"] == category]
    if not pairs:
        raise DataError(f"judgebench {split}: no pairs of category {category!r}")
    return with_messages([doc for pair in pairs for doc in pair_docs(pair, category, orders)], fmt, chosen, root)
