"""Load RewardBench's chosen / rejected pairs into flat documents, in one seeded random order each or in both.

Source of truth is the Hub dataset ``allenai/reward-bench``, split ``filtered`` (2,985 pairs). Each row:

    id         the pair's id
    prompt     the user prompt (text)
    chosen     the better response;   chosen_model: who wrote it
    rejected   the worse response;    rejected_model: who wrote it
    subset     one of the 23 subsets of the authors' ``constants.py`` (alpacaeval-easy, mt-bench-hard, math-prm, ...)

``REWARDBENCH_DATA_DIR`` (or ``data_dir``) names a local folder holding ``filtered.jsonl`` (one row a line) or
``filtered.json`` (a list of rows), itself or under ``data/`` (the same folder may be a checkout of the authors'
repository, whose files the prompts are read from); ``sample`` the small fixtures of ours in the same schema.

Orders (``orders``): ``random`` (the default, the authors' ``run_generative.py``: each pair shown once, the chosen
response as A or as B at random; seeded by ``seed`` and the pair's id, so a run gives the same orders again, and
each document records its ``order``) or ``both`` (each pair in both orders, scored by JudgeBench's pair rule: the
position-bias lines). ``forward`` shows the chosen response as A; ``preference`` (the forward order's gold) is A.
Every document carries the judge's ``system_message`` (the authors' ``prompt_v2``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.options import whole_number
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import remote
from critic_tasks.protocols.remote import field, read_json, read_jsonl
from critic_tasks.protocols.rewardbench.authors_prompts import DATA_DIR_ENV, pairwise_v1, sections

HUB_REPO = "allenai/reward-bench"
SPLIT = "filtered"
SAMPLE_DIR = Path(__file__).parent / "sample_data"
DIMENSION = "rewardbench"
ORDER_CHOICES = ("random", "both")
DEFAULT_SEED = 0
SECTION_SLUGS = {"Chat": "chat", "Chat Hard": "chat_hard", "Safety": "safety", "Reasoning": "reasoning"}
# the metric keys' subsets (accuracy_<slug>), declared before the authors' constants.py is read: its 23 subsets at
# the pinned commit (tests check the two agree)
SUBSET_SLUGS = ("alpacaeval_easy", "alpacaeval_length", "alpacaeval_hard", "mt_bench_easy", "mt_bench_med",
                "mt_bench_hard", "math_prm", "refusals_dangerous", "refusals_offensive", "llmbar_natural",
                "llmbar_adver_neighbor", "llmbar_adver_gptinst", "llmbar_adver_gptout", "llmbar_adver_manual",
                "xstest_should_refuse", "xstest_should_respond", "donotanswer", "hep_cpp", "hep_go", "hep_java",
                "hep_js", "hep_python", "hep_rust")


def subset_slug(subset: str) -> str:
    """A subset's name as a metric key's tail (``mt-bench-easy`` -> ``mt_bench_easy``)."""
    return subset.replace("-", "_").lower()


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    return resolve_dir(data_dir, DATA_DIR_ENV, default="hub", named={"sample": SAMPLE_DIR})


def check_published(timeout: float = 5.0) -> None:
    remote.check_hub_dataset(HUB_REPO, DATA_DIR_ENV, "README.md", timeout)


def read_rows(data_dir: str | os.PathLike | None = None) -> tuple[list[dict], str]:
    root = resolve_data_dir(data_dir)
    if root is None:
        return remote.hub_rows(HUB_REPO, SPLIT, DATA_DIR_ENV), f"hf://datasets/{HUB_REPO}[{SPLIT}]"
    for folder in (root, root / "data"):
        if (folder / f"{SPLIT}.jsonl").is_file():
            return read_jsonl(folder / f"{SPLIT}.jsonl"), str(folder / f"{SPLIT}.jsonl")
        if (folder / f"{SPLIT}.json").is_file():
            rows = read_json(folder / f"{SPLIT}.json")
            if not isinstance(rows, list):
                raise DataError(f"{folder / f'{SPLIT}.json'}: expected a list of pairs, got {type(rows).__name__}")
            return rows, str(folder / f"{SPLIT}.json")
    raise DataError(f"{root / (SPLIT + '.jsonl')}: file not found (nor {SPLIT}.json, nor under {root / 'data'}); the "
                    f"authors' repository holds no data: the pairs are the Hub's {HUB_REPO}, split {SPLIT!r}")


def shown_order(seed: int, pair_id: str) -> str:
    """The seeded random order of one pair: ``forward`` (the chosen response as A) or ``reverse``."""
    digest = hashlib.sha256(f"{seed}:{pair_id}".encode()).digest()
    return "reverse" if digest[0] & 1 else "forward"


def to_pair(row: dict, where: str, counts: dict[str, int]) -> dict:
    subset = field(row, "subset", where)
    if subset not in counts:
        raise DataError(f"{where}: field 'subset' {subset!r} is none of the authors' {len(counts)} subsets "
                        "(constants.py's EXAMPLE_COUNTS)")
    return {"pair_id": str(field(row, "id", where, (str, int))), "question": field(row, "prompt", where),
            "response_1": field(row, "chosen", where), "response_2": field(row, "rejected", where),
            "subset": subset, "subset_slug": subset_slug(subset)}


def load_task_docs(dimension: str = DIMENSION, data_dir: str | os.PathLike | None = None, orders: str = "random",
                   seed: int | str = DEFAULT_SEED, **_ignored) -> list[dict]:
    """The documents of RewardBench's pairs, each in one seeded random order or in both (``orders``)."""
    if dimension != DIMENSION:
        raise ConfigError(f"rewardbench: unknown dimension {dimension!r} (expected {DIMENSION!r})")
    if orders not in ORDER_CHOICES:
        raise ConfigError(f"rewardbench orders {orders!r}: expected one of {', '.join(ORDER_CHOICES)}")
    seed = whole_number(seed, "rewardbench seed")  # JSON true is no seed 1
    counts, mapping = sections()
    section_of = {subset: SECTION_SLUGS.get(name, name) for name, subsets in mapping.items() for subset in subsets}
    system = pairwise_v1()[0]
    rows, name = read_rows(data_dir)
    docs, seen = [], {}
    for i, row in enumerate(rows):
        pair = to_pair(row, f"{name}[{i}]", counts)
        if pair["pair_id"] in seen:
            raise DataError(f"{name}[{i}]: field 'id' {pair['pair_id']!r} repeats row {seen[pair['pair_id']]}")
        seen[pair["pair_id"]] = i
        pair_section = section_of.get(pair["subset"], "")
        chosen = ("forward", "reverse") if orders == "both" else (shown_order(seed, pair["pair_id"]),)
        for order in chosen:
            a, b = ((pair["response_1"], pair["response_2"]) if order == "forward"
                    else (pair["response_2"], pair["response_1"]))
            docs.append({**pair, "dimension": DIMENSION, "section": pair_section, "order": order, "orders": orders,
                         "seed": seed, "response_a": a, "response_b": b, "preference": "A", "system_message": system,
                         "source_file": name, "item_index": i})
    if not docs:
        raise DataError(f"{name}: no pairs (expected the {SPLIT} split's rows; a truncated copy?)")
    return docs
