"""Subjective (judge-scored) evaluation: critic output -> judge prompt -> 1-10 grade -> ``JudgedRecord``.

CriticBench's subjective protocol (Lan et al. 2024): a judge grades the critic's free-text feedback, comparison or
correction against the human reference (worth 8). Both ways of running it use these functions, so they give the
same numbers: inside an lm-eval run (the adapter's judge filter) and afterwards on saved generations
(``critic-eval judge``). The judge is called through the model-calling layer (``critic_tasks.llm``: settings from
``CRITIC_JUDGE_*``, cache, concurrency, retries); the metrics are ``scoring.judge_metrics``.

An item the judge could not grade (a failed call, a reply without its ``Score: x`` line, one with a second grade in
it) counts the scale's minimum in ``judge_score`` and is counted in ``judge_failed``: whatever the graded text makes
the judge write, it can never do better than the lowest grade by making the judge fail (issue 34). With
``CRITIC_JUDGE_RETRY=1`` such a reply is first re-asked once, the prompt ending in a reminder of the form
(``judge_prompts.RETRY_NOTE``); off by default (the paper asks once, and a re-ask costs calls).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field, replace
from typing import Sequence

from critic_tasks.core.columns import item_label
from critic_tasks.core.parsing import grade_or_echo, parse_grade
from critic_tasks.core.quoting import blocks
from critic_tasks.core.settings import read_flag
from critic_tasks.llm import LLMSettings, complete
from critic_tasks.llm.canary import Probe
from critic_tasks.llm.client import identity, template_sha256
from critic_tasks.protocols.criticbench.judge_prompts import (
    LOWEST,
    PROMPT_VERSION,
    RETRY_NOTE,
    comparison_judge_prompt,
    correction_judge_prompt,
    feedback_judge_prompt,
)
from critic_tasks.protocols.criticbench.scoring import JudgedRecord
from critic_tasks.protocols.scorer import Judged, first_replies, judge_settings

log = logging.getLogger("critic_tasks")
JUDGE_PROMPTS = {"feedback": feedback_judge_prompt, "comparison": comparison_judge_prompt,
                 "correction": correction_judge_prompt}
PARSE_ERROR = ("no 'Score: x' with 1 <= x <= 10 on the last line of the judge's reply, or another grade in it, or a "
               "last line that repeats the graded text")
RETRY_ENV = "CRITIC_JUDGE_RETRY"
ECHO_NOTE = (f"the judge's reply repeats a grade the graded text states and gives none of its own: counted "
             f"{LOWEST:g}, the scale's minimum")


def retry_enabled() -> bool:
    """``CRITIC_JUDGE_RETRY``: re-ask a reply without a grade once (default off); a value not a switch is an error."""
    return read_flag(RETRY_ENV)


# Every field a judge prompt shows, as its own name: the templates' text before filling (``template_text``).
_PLACEHOLDER_FIELDS = ("article", "question", "unit_test", "generation", "exec_rest", "feedback", "correction",
                       "generation_a", "generation_b", "exec_rest_a", "exec_rest_b", "sub_feedback")


@functools.lru_cache(maxsize=1)
def template_text() -> str:
    """The judge's templates before filling: each prompt built from a document whose fields hold their own names
    (``{question}``...), once with every optional section and once with none, and the retry reminder. Any change
    of wording, section or fencing changes it; the documents' contents do not."""
    full = {name: "{" + name + "}" for name in _PLACEHOLDER_FIELDS}
    bare = {**{name: full[name] for name in ("question", "generation", "feedback", "correction", "generation_a",
                                             "generation_b", "sub_feedback")}, "with_feedback": False}
    return "\x00".join([build(doc, "{prediction}") for build in JUDGE_PROMPTS.values() for doc in (full, bare)]
                       + [RETRY_NOTE])


def template_hash() -> str:
    """sha256 of ``template_text``: part of the judge's identity, so of every cache key and logged sample."""
    return template_sha256(template_text())


def judge_identity(settings: LLMSettings) -> dict:
    """What determined the grades (model, sampling settings, prompt version, template hash): recorded with every
    judged result and hashed into the cache key."""
    return identity(settings, PROMPT_VERSION, template_hash())


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
    retried: bool = False  # the first reply had no grade and the prompt was asked again (``CRITIC_JUDGE_RETRY``)
    served: dict | None = field(default=None, compare=False)  # what the server said answered (model, fingerprint)


def read_grade(prompt: str, own: str | None, text: str | None) -> tuple[float | None, bool]:
    """(score, echoed) of a judge's reply to ``prompt`` grading ``own``: how every reply is read."""
    score = parse_grade(text, quoted=blocks(prompt))  # an echo of the graded text is never the grade
    return grade_or_echo(score, text, [own], LOWEST)


def _grades(prompts: Sequence[str], graded: Sequence[str | None], settings: LLMSettings,
            progress: bool) -> list[Grade]:
    out = []
    replies = complete(list(prompts), settings, PROMPT_VERSION, progress=progress, template_hash=template_hash())
    for prompt, own, c in zip(prompts, graded, replies):
        score, echoed = read_grade(prompt, own, c.text)
        error = c.error if c.text is None else None if score is not None else PARSE_ERROR
        out.append(Grade(score, c.text, error, c.cached, echoed=echoed, served=c.served))
    return out


def grade_prompts(prompts: Sequence[str], settings: LLMSettings, progress: bool = True,
                  graded: Sequence[str | None] | None = None, retry: bool | None = None) -> list[Grade]:
    """One ``Grade`` per prompt, through the cached judge: a reply without a usable score is a counted failure
    (``score`` None; the metrics count it the scale's minimum, ``scoring.judge_metrics``).

    ``graded``: per prompt, the text under test (the critic's output). A reply without a grade of the judge's own
    that repeats a grade this text states failed because of the text (it forged a grade for the judge to quote):
    it counts LOWEST, never left out, so a critique cannot abstain through the judge (issue 27).
    ``retry`` (default: ``CRITIC_JUDGE_RETRY``): a reply with no grade of the judge's own is asked once more, the
    prompt ending in ``RETRY_NOTE``; the second reply is kept only where it gives a grade of the judge's own."""
    prompts = list(prompts)
    graded = list(graded) if graded is not None else [None] * len(prompts)
    out = _grades(prompts, graded, settings, progress)
    if not (retry_enabled() if retry is None else retry):
        return out
    again = [i for i, g in enumerate(out) if g.text is not None and (g.score is None or g.echoed)]
    second = _grades([prompts[i] + RETRY_NOTE for i in again], [graded[i] for i in again], settings, progress)
    for i, g in zip(again, second):
        out[i] = replace(g, retried=True) if g.score is not None and not g.echoed else replace(out[i], retried=True)
    return out


def judge_docs(docs: Sequence[dict], predictions: Sequence[str | None], settings: LLMSettings | None = None,
               progress: bool = True) -> list[JudgedRecord]:
    """Judge every (doc, prediction) concurrently through the cached judge; one record per doc. A document of the
    toolkit protocol (``protocol`` "toolkit") records the released toolkit's rule: an ungraded item left out."""
    if len(docs) != len(predictions):
        raise ValueError(f"{len(docs)} documents but {len(predictions)} predictions")
    settings = settings or judge_settings()
    graded = grade_prompts([judge_prompt(d, p) for d, p in zip(docs, predictions)], settings, progress,
                           graded=[p or "" for p in predictions])
    records = []
    for doc, g in zip(docs, graded):
        where = item_label(doc)
        if g.score is None:
            log.warning("critic_tasks: judge failed on %s: %s (counted %s)", where, g.error,
                        "under the toolkit's rule: left out" if doc.get("protocol") == "toolkit"
                        else f"{LOWEST:g}, the scale's minimum")
        elif g.echoed:
            log.warning("critic_tasks: judge on %s: %s", where, ECHO_NOTE)
        records.append(JudgedRecord(domain=doc["domain"], group=judge_group(doc), score=g.score, error=g.error,
                                    cached=g.cached, judge_text=g.text, item=where, echoed=g.echoed,
                                    rule="toolkit" if doc.get("protocol") == "toolkit" else "", judge_served=g.served))
    return records


def canary_probes(task: str, docs: Sequence[dict], predictions: Sequence[str | None]) -> list[Probe]:
    """Each item's judge prompt as a ``llm.canary.Probe``, read into its grade as ``grade_prompts`` reads it (the
    first ask; a ``CRITIC_JUDGE_RETRY`` re-ask is another prompt)."""
    probes = []
    for doc, prediction in zip(docs, predictions):
        prompt = judge_prompt(doc, prediction)
        read = functools.partial(_score_only, prompt, prediction or "")
        probes.append(Probe(f"{task} {item_label(doc)}", prompt, PROMPT_VERSION, template_hash(), read))
    return probes


def _score_only(prompt: str, own: str, text: str) -> float | None:
    return read_grade(prompt, own, text)[0]


def deferred_record(doc: dict) -> JudgedRecord:
    """An item generated without a judge configured: counted under ``judge_deferred`` until judged."""
    return JudgedRecord(domain=doc["domain"], group=judge_group(doc),
                        item=item_label(doc), is_deferred=True)


class Judge(Judged):
    """CriticBench's subjective dimensions: each critique graded 1-10 by the judge against the human one."""

    name = "judge"
    about = "graded 1-10 by a judge against the human critique"

    def batch(self, kind, docs, samples, ctx):
        return judge_docs(docs, first_replies(samples), ctx.judge or judge_settings(), progress=ctx.progress)

    def deferred_record(self, doc):
        return deferred_record(doc)

    def identity(self, judge):
        return judge_identity(judge)

    def failed(self, record):
        return record.score is None
