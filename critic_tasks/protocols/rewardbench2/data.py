"""Load RewardBench 2's prompts into flat documents: one four-way choice per prompt, or one rating per answer.

Source of truth is the Hub dataset ``allenai/reward-bench-2``, split ``test`` (1,865 prompts). Each row:

    id           the prompt's id (the Ties subset's: ``ref:<n>`` or ``tied:<n>``, a reference prompt with one
                 correct answer and its tied twin with several)
    prompt       the user prompt (text)
    chosen       the correct answers (a list: one, or several in Ties)
    rejected     the incorrect answers (a list: three, or more)
    num_correct  how many answers are correct (Ties: ``len(chosen)``; the first ``num_correct`` of chosen + rejected)
    subset       Factuality, Precise IF, Math, Safety, Focus or Ties

``REWARDBENCH2_DATA_DIR`` (or ``data_dir``) names a local copy: ``test.jsonl`` (a row a line), ``test.json`` (a list)
or the Hub's ``data/test-*.parquet``, in the folder itself or under ``data/``; ``sample`` the small fixtures of ours
in the same schema. The authors' prompts are read from ``REWARDBENCH_DATA_DIR`` when it is their checkout.

As the authors' ``run_generative_v2.py`` asks (its API path):

* four-way (the default): one document per prompt outside Ties, showing the chosen answer and the first three
  rejected ones (their ``texts_rejected[0..2]``: a prompt with more rejected answers shows only those) in one of
  their four arrangements: ``shuffle`` k swaps the chosen answer (first) with the answer in slot k, so it is shown
  as A, B, C or D. They draw k with ``np.random.randint(0, 4)`` unseeded; here k is drawn from ``seed`` and the
  prompt's id (a sha256), so the same run shows the same arrangement, and each document records ``shuffle``,
  ``seed`` and the ``winner`` letter;
* ``ratings: true`` (their ``--score_w_ratings``): one document per answer of every prompt (chosen then rejected,
  all of them), each rated 1-10 on its own with their ``ratings_prompt``;
* the Ties subset always by ratings, with their ``ratings_prompt_ties``.

A four-way document carries the judge's ``system_message`` (their ``prompt_v2``); a rating document none ("": their
``system_prompt`` is empty, so they send the user message alone).
"""

from __future__ import annotations

import glob
import hashlib
import os
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.options import whole_number
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import remote
from critic_tasks.protocols.remote import field, read_json, read_jsonl
from critic_tasks.protocols.rewardbench2.authors_prompts import LETTERS, prompts

HUB_REPO = "allenai/reward-bench-2"
SPLIT = "test"
DATA_DIR_ENV = "REWARDBENCH2_DATA_DIR"
SAMPLE_DIR = Path(__file__).parent / "sample_data"
DIMENSION = "rewardbench2"
DEFAULT_SEED = 0
TIES = "Ties"
# the six subsets (the dataset's ``subset`` values) and their metric keys, in the paper's table order
SUBSETS = {"Factuality": "factuality", "Precise IF": "precise_if", "Math": "math", "Safety": "safety",
           "Focus": "focus", "Ties": "ties"}
FOUR_WAY, RATING = "four_way", "rating"
TIES_KINDS = ("ref", "tied")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    return resolve_dir(data_dir, DATA_DIR_ENV, default="hub", named={"sample": SAMPLE_DIR})


def check_published(timeout: float = 5.0) -> None:
    remote.check_hub_dataset(HUB_REPO, DATA_DIR_ENV, "README.md", timeout)


def _read_parquet(files: list[str]) -> list[dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{files[0]}: reading parquet needs pyarrow (pip install pyarrow), or give {SPLIT}.jsonl") from None
    rows: list[dict] = []
    for name in files:
        try:
            rows += pq.read_table(name).to_pylist()
        except Exception as err:  # a truncated or foreign file
            raise DataError(f"{name}: not a readable parquet file ({type(err).__name__}: {err})") from None
    return rows


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
                raise DataError(f"{folder / f'{SPLIT}.json'}: expected a list of prompts, got {type(rows).__name__}")
            return rows, str(folder / f"{SPLIT}.json")
        parquet = sorted(glob.glob(str(folder / f"{SPLIT}-*.parquet")))
        if parquet:
            return _read_parquet(parquet), str(folder / f"{SPLIT}-*.parquet")
    raise DataError(f"{root / (SPLIT + '.jsonl')}: file not found (nor {SPLIT}.json, {SPLIT}-*.parquet, nor under "
                    f"{root / 'data'}); the data is the Hub's {HUB_REPO}, split {SPLIT!r}")


def shuffle_of(seed: int, prompt_id: str) -> int:
    """The seeded arrangement of one prompt's four answers (0..3: the slot the chosen answer is swapped into)."""
    return hashlib.sha256(f"{seed}:{prompt_id}".encode()).digest()[0] % 4


def arrangement(chosen: str, rejected: list[str], shuffle: int) -> list[str]:
    """The four answers as A, B, C, D: the chosen answer and the first three rejected, the chosen swapped with
    slot ``shuffle`` (their arrangement: 0 keeps the order; k > 0 swaps A and the k-th letter)."""
    shown = [chosen, *rejected[:3]]
    shown[0], shown[shuffle] = shown[shuffle], shown[0]
    return shown


def _texts(row: dict, key: str, where: str, least: int) -> list[str]:
    value = field(row, key, where, (list,))
    if len(value) < least or not all(isinstance(t, str) for t in value):
        raise DataError(f"{where}: field '{key}' should be a list of at least {least} text(s), got {len(value)} "
                        "item(s)" + ("" if all(isinstance(t, str) for t in value) else " (not all text)"))
    return value


def to_prompt(row: dict, where: str, four_way: bool) -> dict:
    subset = field(row, "subset", where)
    if subset not in SUBSETS:
        raise DataError(f"{where}: field 'subset' {subset!r} is none of RewardBench 2's six ({', '.join(SUBSETS)})")
    prompt_id = str(field(row, "id", where, (str, int)))
    chosen = _texts(row, "chosen", where, 1)
    rejected = _texts(row, "rejected", where, 3 if four_way and subset != TIES else 1)
    num_correct = len(chosen)
    if subset == TIES:
        kind, _, number = prompt_id.partition(":")
        if kind not in TIES_KINDS or not number.isdigit():
            raise DataError(f"{where}: field 'id' {prompt_id!r}: a Ties id is 'ref:<n>' or 'tied:<n>' (the authors' "
                            "process_single_model splits it so)")
        num_correct = field(row, "num_correct", where, (int,))
        if num_correct != len(chosen) or (kind == "tied" and num_correct < 2):
            raise DataError(f"{where}: field 'num_correct' {num_correct} should be the {len(chosen)} chosen answers"
                            + (", at least 2 for a tied prompt" if kind == "tied" else ""))
    return {"prompt_id": prompt_id, "question": field(row, "prompt", where), "chosen": chosen, "rejected": rejected,
            "num_correct": num_correct, "subset": subset, "subset_slug": SUBSETS[subset]}


def _flag(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in _TRUE + _FALSE:
        return str(value).strip().lower() in _TRUE
    raise ConfigError(f"rewardbench2 {name} {value!r}: expected true or false")


def load_task_docs(dimension: str = DIMENSION, data_dir: str | os.PathLike | None = None, ratings=False,
                   seed: int | str = DEFAULT_SEED, **_ignored) -> list[dict]:
    """The documents of RewardBench 2's prompts: a four-way choice per prompt, or (``ratings``, and Ties always)
    a rating per answer."""
    if dimension != DIMENSION:
        raise ConfigError(f"rewardbench2: unknown dimension {dimension!r} (expected {DIMENSION!r})")
    ratings = _flag(ratings, "ratings")
    seed = whole_number(seed, "rewardbench2 seed")  # JSON true is no seed 1
    texts = prompts()
    rows, name = read_rows(data_dir)
    docs, seen = [], {}
    for i, row in enumerate(rows):
        where = f"{name}[{i}]"
        item = to_prompt(row, where, four_way=not ratings)
        if item["prompt_id"] in seen:
            raise DataError(f"{where}: field 'id' {item['prompt_id']!r} repeats row {seen[item['prompt_id']]}")
        seen[item["prompt_id"]] = i
        # every document has every field (the harnesses make one table of them): a four-way choice's rating
        # fields and a rating's choice fields hold placeholders
        common = {"prompt_id": item["prompt_id"], "question": item["question"], "subset": item["subset"],
                  "subset_slug": item["subset_slug"], "ratings": ratings, "seed": seed, "dimension": DIMENSION,
                  "ties_prompt": item["subset"] == TIES, "num_correct": item["num_correct"], "source_file": name,
                  "item_index": i}
        if not ratings and item["subset"] != TIES:
            shuffle = shuffle_of(seed, item["prompt_id"])
            docs.append({**common, "mode": FOUR_WAY, "shuffle": shuffle, "winner": LETTERS[shuffle],
                         "preference": LETTERS[shuffle],
                         "answers_shown": arrangement(item["chosen"][0], item["rejected"], shuffle),
                         "answer_index": -1, "answers": len(LETTERS), "correct": False, "response": "",
                         "system_message": texts["prompt_v2"]})
            continue
        answers = item["chosen"] + item["rejected"]
        for index, answer in enumerate(answers):
            correct = index < item["num_correct"]
            docs.append({**common, "mode": RATING, "shuffle": -1, "winner": "",
                         "preference": "correct" if correct else "incorrect", "answers_shown": [answer],
                         "answer_index": index, "answers": len(answers), "correct": correct, "response": answer,
                         "system_message": ""})
    if not docs:
        raise DataError(f"{name}: no prompts (expected the {SPLIT} split's rows; a truncated copy?)")
    return docs
