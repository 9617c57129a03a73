"""Subjective (judge-scored) evaluation: critic output -> judge prompt -> 1-10 grade -> ``JudgedRecord``.

CriticBench's subjective protocol (Lan et al. 2024): a judge grades the critic's free-text feedback, comparison or
correction against the human reference (worth 8). Both ways of running it use these functions, so they give the
same numbers: inside an lm-eval run (the adapter's judge filter) and afterwards on saved generations
(``critic-eval judge``). The judge is called through the model-calling layer (``critic_tasks.llm``: settings from
``CRITIC_JUDGE_*``, cache, concurrency, retries); the metrics are ``scoring.judge_metrics``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from critic_tasks.core.columns import item_label
from critic_tasks.core.parsing import grade_or_echo, parse_grade
from critic_tasks.core.quoting import blocks
from critic_tasks.core.records import JudgedRecord
from critic_tasks.llm import LLMSettings, complete
from critic_tasks.llm.client import identity
from critic_tasks.protocols.criticbench.judge_prompts import (
    PROMPT_VERSION,
    comparison_judge_prompt,
    correction_judge_prompt,
    feedback_judge_prompt,
)

log = logging.getLogger("critic_tasks")
JUDGE_PROMPTS = {"feedback": feedback_judge_prompt, "comparison": comparison_judge_prompt,
                 "correction": correction_judge_prompt}
PARSE_ERROR = ("no 'Score: x' with 1 <= x <= 10 on the last line of the judge's reply, or another grade in it, or a "
               "last line that repeats the graded text")
LOWEST = 1.0  # the judge scale's minimum: what a reply that failed on an echo of the graded text's grade counts
ECHO_NOTE = (f"the judge's reply repeats a grade the graded text states and gives none of its own: counted "
             f"{LOWEST:g}, the scale's minimum")


def judge_settings(**overrides) -> LLMSettings:
    return LLMSettings.from_env("judge", **overrides)


def judge_identity(settings: LLMSettings) -> dict:
    """What determined the grades (model, decoding, prompt version): recorded with every judged result."""
    return identity(settings, PROMPT_VERSION)


def judge_prompt(doc: dict, prediction: str | None) -> str:
    return JUDGE_PROMPTS[doc["dimension"]](doc, prediction or "")


def judge_group(doc: dict) -> str:
    """The breakdown a judged item is reported under: difficulty for comparison, quality otherwise."""
    return doc["difficulty"] if doc["dimension"] == "comparison" else doc["quality"]


@dataclass(frozen=True)
class Grade:
    """A judge's reply to one prompt: its 1-10 ``score``, or None with the ``error`` (call failed, or no score)."""

    score: float | None
    text: str | None
    error: str | None
    cached: bool
    echoed: bool = False  # no grade of the judge's own, one the graded text states echoed: ``score`` is LOWEST


def grade_prompts(prompts: Sequence[str], settings: LLMSettings, progress: bool = True,
                  graded: Sequence[str | None] | None = None) -> list[Grade]:
    """One ``Grade`` per prompt, through the cached judge: a reply without a usable score is a counted failure.

    ``graded``: per prompt, the text under test (the critic's output). A reply without a grade of the judge's own
    that repeats a grade this text states failed because of the text (it forged a grade for the judge to quote):
    it counts LOWEST, never left out, so a critique cannot abstain through the judge (issue 27)."""
    out = []
    prompts = list(prompts)
    graded = list(graded) if graded is not None else [None] * len(prompts)
    for prompt, own, c in zip(prompts, graded, complete(prompts, settings, PROMPT_VERSION, progress=progress)):
        score = parse_grade(c.text, quoted=blocks(prompt))  # an echo of the graded text is never the grade
        score, echoed = grade_or_echo(score, c.text, [own], LOWEST)
        error = c.error if c.text is None else None if score is not None else PARSE_ERROR
        out.append(Grade(score, c.text, error, c.cached, echoed=echoed))
    return out


def judge_docs(docs: Sequence[dict], predictions: Sequence[str | None], settings: LLMSettings | None = None,
               progress: bool = True) -> list[JudgedRecord]:
    """Judge every (doc, prediction) concurrently through the cached judge; one record per doc."""
    if len(docs) != len(predictions):
        raise ValueError(f"{len(docs)} documents but {len(predictions)} predictions")
    settings = settings or judge_settings()
    graded = grade_prompts([judge_prompt(d, p) for d, p in zip(docs, predictions)], settings, progress,
                           graded=[p or "" for p in predictions])
    records = []
    for doc, g in zip(docs, graded):
        where = item_label(doc)
        if g.score is None:
            log.warning("critic_tasks: judge failed on %s: %s", where, g.error)
        elif g.echoed:
            log.warning("critic_tasks: judge on %s: %s", where, ECHO_NOTE)
        records.append(JudgedRecord(domain=doc["domain"], group=judge_group(doc), score=g.score, error=g.error,
                                    cached=g.cached, judge_text=g.text, item=where, echoed=g.echoed))
    return records


def deferred_record(doc: dict) -> JudgedRecord:
    """An item generated without a judge configured: counted under ``judge_deferred`` until judged."""
    return JudgedRecord(domain=doc["domain"], group=judge_group(doc),
                        item=item_label(doc), is_deferred=True)
