"""Subjective (judge-scored) evaluation: critic output -> judge prompt -> 1-10 score -> metrics.

CriticBench's subjective protocol (Lan et al. 2024): a judge grades the critic's free-text feedback,
comparison or correction against the human reference (worth 8). Both ways of running it use these
functions, so they give the same numbers: inside an lm-eval run (the ``JudgeFilter`` of the task
configs) and afterwards on saved generations (``critic-eval judge``).

Metrics: ``judge_score`` (mean 1-10: per-domain means, then their unweighted mean, as the paper),
``judge_score_<quality>`` (quality for feedback/correction, easy/hard for comparison),
``judge_parse_rate`` (x100 share of items with a usable score) and ``judge_failed`` (count; the failed
items are logged and kept in the per-item records, never dropped).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Sequence

from critic_tasks.judge_prompts import comparison_judge_prompt, correction_judge_prompt, feedback_judge_prompt

log = logging.getLogger("critic_tasks")
JUDGE_PROMPTS = {"feedback": feedback_judge_prompt, "comparison": comparison_judge_prompt,
                 "correction": correction_judge_prompt}


def judge_prompt(doc: dict, prediction: str | None) -> str:
    item = doc
    if doc["dimension"] == "comparison":  # our docs lift `sub` to the top level; the judge reads it nested
        item = {**doc, "sub": {"generation_a": doc["generation_a"], "generation_b": doc["generation_b"],
                               "exec_rest_a": doc.get("exec_rest_a"), "exec_rest_b": doc.get("exec_rest_b"),
                               "feedback": doc.get("sub_feedback")}}
    return JUDGE_PROMPTS[doc["dimension"]](item, prediction or "")


def judge_group(doc: dict) -> str:
    return doc["difficulty"] if doc["dimension"] == "comparison" else doc["quality"]


def judge_docs(docs: Sequence[dict], predictions: Sequence[str | None], settings=None, progress=True) -> list[dict]:
    """Judge every (doc, prediction) concurrently through the cached judge; one record per doc."""
    from critic_tasks.judging import judge_prompts

    if len(docs) != len(predictions):
        raise ValueError(f"{len(docs)} documents but {len(predictions)} predictions")
    results = judge_prompts([judge_prompt(d, p) for d, p in zip(docs, predictions)], settings, progress=progress)
    records = []
    for doc, result in zip(docs, results):
        if result.score is None:
            log.warning("critic_tasks: judge failed on %s[%s]: %s", doc["source_file"], doc["item_index"], result.error)
        records.append({"domain": doc["domain"], "group": judge_group(doc), "score": result.score,
                        "error": result.error, "cached": result.cached, "judge_text": result.text,
                        "item": f"{doc['source_file']}[{doc['item_index']}]"})
    return records


def _domain_mean(records: Sequence[dict]) -> float | None:
    by_domain = defaultdict(list)
    for r in records:
        if r["score"] is not None:
            by_domain[r["domain"]].append(r["score"])
    means = [sum(v) / len(v) for v in by_domain.values()]
    return sum(means) / len(means) if means else None


def judge_metrics(records: Sequence[dict]) -> dict[str, float]:
    """Metrics over judged records; a score that cannot be computed is absent, never NaN."""
    scored = sum(r["score"] is not None for r in records)
    out = {"judge_parse_rate": 100.0 * scored / len(records) if records else 0.0,
           "judge_failed": float(len(records) - scored)}
    overall = _domain_mean(records)
    if overall is not None:
        out["judge_score"] = overall
    for group in sorted({r["group"] for r in records}):
        value = _domain_mean([r for r in records if r["group"] == group])
        if value is not None:
            out[f"judge_score_{group}"] = value
    return out
