"""RewardBench 2's released per-prompt results of a model, re-scored: its numbers as the authors compute them, and
its per-prompt records, so that a run can be compared with it prompt by prompt (``critic-eval compare RUN --against
rewardbench2:MODEL``, ``critic-eval score --released rewardbench2:MODEL``).

What the authors release: ``eval-set-scores/<org>/<model>.json`` in the Hub dataset ``allenai/reward-bench-2-results``,
written by ``utils.save_to_hub(..., best_of_n=True)`` as the scored dataset's ``to_dict()`` (one list per column, one
entry per prompt) and the scalars ``model``, ``model_type``:

* reward models (``scripts/run_v2.py``): ``id``, ``subset``, ``num_correct``, ``scores`` (the model's score of each
  answer, the correct ones first), ``text`` and ``results``: outside Ties 1 / k when the first answer's score is the
  highest, shared by k answers (``reroll_and_score_dataset``), else 0; Ties rows' ``results`` empty (None);
* generative judges (``scripts/run_generative_v2.py``): ``id``, ``subset``, ``num_correct``, ``texts_chosen``,
  ``texts_rejected`` and ``results`` outside Ties (four-way: 1, 0, 0.25 without a letter; ratings: 1 / |winners| or
  0, 0.25 without a valid rating); Ties rows with ``scores`` (each answer's rating, -1 unread) and no result.

Their numbers from it: each subset's mean ``results`` outside Ties, and Ties by ``process_single_model`` over the
Ties rows' ``scores`` and ``num_correct`` (``scoring.ties_score``: the file's per-prompt scores allow it to be
recomputed, not merely read); the overall is the mean of the six. Each released prompt outside Ties becomes one
``RewardBench2Record`` of mode ``released`` holding its result; each Ties answer a rating record holding its score,
so that ``scoring`` scores them to exactly those numbers and ``compare`` pairs them with the run's records of the
same prompt ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from critic_tasks.core.errors import DataError
from critic_tasks.protocols.rewardbench.released import Matched, Released, locate, match_by_id, number, read_table
from critic_tasks.protocols.rewardbench2 import scoring
from critic_tasks.protocols.rewardbench2.data import RATING, SUBSETS, TIES, TIES_KINDS

RESULTS_REPO = "allenai/reward-bench-2-results"  # their utils.EVAL_REPO_V2

__all__ = ["RESULTS_REPO", "ReleasedPrompt", "locate", "match", "read", "records", "values"]


@dataclass(frozen=True)
class ReleasedPrompt:
    prompt_id: str
    subset: str
    result: float | None = None  # outside Ties
    scores: tuple[float, ...] = ()  # Ties: each answer's score, the correct ones first
    num_correct: int = 0


def _scores(value, at: str) -> tuple[float, ...]:
    """A Ties row's scores: numbers, or one-number lists (their ``raw_score[0] if isinstance(raw_score, list)``)."""
    if not isinstance(value, list) or len(value) < 2:
        raise DataError(f"{at}: field 'scores' should list each answer's score (two at least), got {value!r:.60}")
    return tuple(number(v[0] if isinstance(v, list) and len(v) == 1 else v, at, "scores") for v in value)


def read(path: Path, where: str, name: str = "") -> Released:
    """A released per-prompt file of RewardBench 2 (module docstring); one DataError per bad field."""
    rows, scalars = read_table(path, where, ("id", "subset", "results"), wanted=("scores", "num_correct"))
    items: dict[str, ReleasedPrompt] = {}
    for i, row in enumerate(rows):
        if isinstance(row["id"], bool) or not isinstance(row["id"], (int, str)):
            raise DataError(f"{where}, item {i}: field 'id' {row['id']!r} is not a prompt id")
        prompt_id = str(row["id"])
        at = f"{where}, item {i} (id {prompt_id})"
        if prompt_id in items:
            raise DataError(f"{at}: field 'id' repeats an earlier item")
        subset = row["subset"]
        if subset not in SUBSETS:
            raise DataError(f"{at}: field 'subset' {subset!r} is none of RewardBench 2's six ({', '.join(SUBSETS)})")
        if subset != TIES:
            result = number(row["results"], at, "results")
            if not 0.0 <= result <= 1.0:
                raise DataError(f"{at}: field 'results' {result!r} is not a result between 0 and 1")
            items[prompt_id] = ReleasedPrompt(prompt_id, subset, result=result)
            continue
        kind, _, n = prompt_id.partition(":")
        if kind not in TIES_KINDS or not n.isdigit():
            raise DataError(f"{at}: field 'id': a Ties id is 'ref:<n>' or 'tied:<n>' (the authors' "
                            "process_single_model splits it so)")
        if "scores" not in row or "num_correct" not in row:
            raise DataError(f"{at}: a Ties row needs fields 'scores' and 'num_correct' (its score is recomputed "
                            "from them, as process_single_model does)")
        scores = _scores(row["scores"], at)
        num_correct = row["num_correct"]
        if isinstance(num_correct, bool) or not isinstance(num_correct, int) or not 1 <= num_correct < len(scores):
            raise DataError(f"{at}: field 'num_correct' {num_correct!r} should count the correct answers among the "
                            f"{len(scores)} scored (at least one of each kind)")
        items[prompt_id] = ReleasedPrompt(prompt_id, subset, scores=scores, num_correct=num_correct)
    if not items:
        raise DataError(f"{where}: no items")
    model = scalars.get("model") if isinstance(scalars.get("model"), str) else name or path.stem
    return Released(model, where, items, source="rewardbench2")


def _answer_record(item: ReleasedPrompt, index: int) -> scoring.RewardBench2Record:
    return scoring.RewardBench2Record(domain=SUBSETS[TIES], subset=TIES, prompt_id=item.prompt_id, mode=RATING,
                                      rating=item.scores[index], answer_index=index, answers=len(item.scores),
                                      num_correct=item.num_correct, correct=index < item.num_correct, parsed=True)


def _result_record(item: ReleasedPrompt) -> scoring.RewardBench2Record:
    return scoring.RewardBench2Record(domain=SUBSETS[item.subset], subset=item.subset, prompt_id=item.prompt_id,
                                      mode=scoring.RELEASED, result=item.result, parsed=True)


def records(released: Released) -> list[scoring.RewardBench2Record]:
    """Every released prompt's records: one per prompt outside Ties, one per answer in Ties."""
    out = []
    for item in released.items.values():
        if item.subset == TIES:
            out += [_answer_record(item, i) for i in range(len(item.scores))]
        else:
            out.append(_result_record(item))
    return out


def values(released: Released) -> dict[str, float]:
    """The released model's numbers (x100): the six subsets, ``score`` (their mean, when all six are there) and
    ``prompts``."""
    recs = records(released)
    out = scoring.subset_values(recs)
    found = scoring.score_of(out)
    if found is not None:
        out["score"] = found
    out["prompts"] = scoring.prompt_count(recs)
    return out


def match(docs: dict, released: Released) -> Matched:
    """The run's logged documents (doc_id -> doc) matched to the released prompts by prompt id: outside Ties the
    first document of each prompt gets the released result (a four-way prompt has one; a rated one, one per
    answer), in Ties each answer's document gets that answer's released score. A prompt whose subset, answers or
    correct answers differ between the two is one DataError."""
    def record_of(item, doc, first):
        if item.subset != TIES:
            return _result_record(item) if first else None
        prompt_id = str(doc.get("prompt_id"))
        if doc.get("answers") != len(item.scores) or doc.get("num_correct") != item.num_correct:
            raise DataError(f"{released.where}: id {prompt_id}: field 'scores' scores {len(item.scores)} answers "
                            f"({item.num_correct} correct), the run's prompt has {doc.get('answers')} "
                            f"({doc.get('num_correct')} correct): not the same prompt")
        index = doc.get("answer_index")
        if not isinstance(index, int) or not 0 <= index < len(item.scores):
            raise DataError(f"{released.where}: id {prompt_id}: the run's answer {index!r} is not among the "
                            f"{len(item.scores)} scored")
        return _answer_record(item, index)

    return match_by_id(docs, released, "prompt_id", "prompts", record_of)
