"""MetaCritique's judge: critique -> AIUs -> precision verdicts, and reference AIUs -> recall verdicts.

Every call goes through the model-calling layer (``critic_tasks.llm``) with the CriticBench judge's settings
(``CRITIC_JUDGE_*``): cached per prompt as each reply arrives, so a rerun costs no calls and a killed run resumes
with nothing lost. Steps 1 (extraction) and 3 (recall: the reference units against the critique's text) run
first, in one concurrent batch; step 2 (precision, on the extracted units) then runs in a second batch.

Rules: a verdict the judge's reply does not give for a unit is None (counted, never guessed); an empty critique
has no AIU and entails nothing (its recall verdicts are False without a call); a reply to step 1 that lists no unit
and does not say "None", or a failed call, leaves the AIUs unknown (``n_aius`` None): the critique is a counted
judge failure (its recall verdicts are still asked, and kept in the record and the cache).
"""

from __future__ import annotations

import functools
import logging
from typing import Sequence

from critic_tasks.core.columns import item_label
from critic_tasks.core.parsing import echoed_units, parse_numbered_units, parse_numbered_verdicts
from critic_tasks.llm import LLMSettings, complete
from critic_tasks.llm.canary import Probe
from critic_tasks.llm.client import Completion, identity, template_sha256
from critic_tasks.protocols.metacritique.judge_prompts import (
    PROMPT_VERSION,
    extraction_prompt,
    numbered,
    precision_prompt,
    recall_prompt,
)
from critic_tasks.protocols.metacritique.scoring import AIURecord
from critic_tasks.protocols.scorer import Judged, first_replies, judge_settings

log = logging.getLogger("critic_tasks")
EXTRACT_ERROR = "the judge's AIU extraction listed no numbered unit and did not say None"


@functools.lru_cache(maxsize=1)
def template_hash() -> str:
    """sha256 of the three steps' templates before filling: each prompt built from fields that hold their own names
    (``{critique}``...), so a change of wording or fencing changes it and the documents' contents do not."""
    doc = {"question": "{question}", "response": "{response}", "reference_answer": "{reference_answer}",
           "reference_aius": ["{reference_unit}"]}
    return template_sha256(extraction_prompt("{critique}"), precision_prompt(doc, ["{unit}"]),
                           recall_prompt(doc, "{critique}"))


def judge_identity(settings: LLMSettings) -> dict:
    """What determined the verdicts (model, sampling settings, prompt version, template hash): recorded with every
    judged result and hashed into the cache key."""
    return identity(settings, PROMPT_VERSION, template_hash())


def _verdicts(completion, n: int, quoted: Sequence[str] = ()):
    """(verdicts, error, cached, echoed units). ``quoted``: what the critic wrote that the judge was shown (the
    critique, or the units extracted from it). A reply line repeating one of its verdict lines is never a verdict;
    a unit left without a verdict of the judge's own whose line the reply only echoed is False, the minimum: the
    critique forged the judge's list, so it is judged, never left out (issue 27)."""
    if completion.text is None:
        return (None,) * n, completion.error, completion.cached, 0
    verdicts = parse_numbered_verdicts(completion.text, n, quoted)
    echoed = {k for k in echoed_units(completion.text, n, quoted) if verdicts[k - 1] is None}
    verdicts = tuple(False if k in echoed else v for k, v in enumerate(verdicts, 1))
    error = None if all(v is not None for v in verdicts) else f"{sum(v is None for v in verdicts)} of {n} verdicts unreadable"
    return verdicts, error, completion.cached, len(echoed)


def verdict_batches(settings: LLMSettings, precision_jobs: Sequence[tuple[dict, Sequence[str]]],
                    recall_jobs: Sequence[tuple[dict, str]], progress: bool = True, extra: Sequence[str] = ()):
    """Steps 2 and 3 in one concurrent batch: ``precision_jobs`` (doc, AIUs), ``recall_jobs`` (doc, critique); any
    ``extra`` prompts ride along in the same batch.

    Returns (precision, recall, extra completions): one (verdicts, error, cached, echoed) per job, verdicts one per
    unit (None: unreadable), echoed the units counted False because the reply only echoed the critic's text."""
    return _verdict_batches(settings, precision_jobs, recall_jobs, progress, extra)[:3]


def _verdict_batches(settings: LLMSettings, precision_jobs, recall_jobs, progress: bool = True, extra=()):
    """``verdict_batches`` and, last, the precision and recall completions (what the server said answered)."""
    prompts = [precision_prompt(d, u) for d, u in precision_jobs] + [recall_prompt(d, c) for d, c in recall_jobs]
    prompts += list(extra)
    sizes = [len(u) for _, u in precision_jobs] + [len(d["reference_aius"]) for d, _ in recall_jobs]
    # the critic's text each prompt shows: its extracted units (precision), its critique (recall)
    theirs = [[numbered(u)] for _, u in precision_jobs] + [[c] for _, c in recall_jobs]
    done = complete(prompts, settings, PROMPT_VERSION, progress=progress, template_hash=template_hash()) \
        if prompts else []
    judged = [_verdicts(c, n, q) for c, n, q in zip(done, sizes, theirs)]
    n_p = len(precision_jobs)
    return judged[:n_p], judged[n_p:], done[len(sizes):], done[:n_p], done[n_p:len(sizes)]


def judge_critiques(docs: Sequence[dict], critiques: Sequence[str | None], settings: LLMSettings | None = None,
                    progress: bool = True) -> list[AIURecord]:
    """One ``AIURecord`` per (doc, critique)."""
    if len(docs) != len(critiques):
        raise ValueError(f"{len(docs)} documents but {len(critiques)} critiques")
    settings = settings or judge_settings()
    texts = [(c or "").strip() for c in critiques]
    todo = [i for i, t in enumerate(texts) if t]
    # batch 1: extraction (step 1) and recall (step 3, which needs only the critique's text), concurrently
    _, recall, extracted, _, recall_done = _verdict_batches(settings, [], [(docs[i], texts[i]) for i in todo],
                                                           progress, extra=[extraction_prompt(texts[i]) for i in todo])
    units: dict[int, list[str] | None] = {i: [] for i, t in enumerate(texts) if not t}
    errors: dict[int, str] = {}
    for i, c in zip(todo, extracted):
        units[i] = parse_numbered_units(c.text)
        if units[i] is None:
            errors[i] = c.error or EXTRACT_ERROR
    # batch 2: precision (step 2) on the extracted units
    with_units = [i for i in todo if units[i]]
    precision, _, _, precision_done, _ = _verdict_batches(settings, [(docs[i], units[i]) for i in with_units], [],
                                                         progress)
    p_by, r_by = dict(zip(with_units, precision)), dict(zip(todo, recall))
    x_by = dict(zip(todo, extracted))
    calls: dict[int, list[Completion]] = {i: [x_by[i], c] for i, c in zip(todo, recall_done)}
    for i, c in zip(with_units, precision_done):
        calls[i].append(c)
    records = []
    for i, doc in enumerate(docs):
        aius = units[i]
        p, p_err, p_cached, p_echo = p_by.get(i, ((), None, True, 0))
        # an empty critique entails nothing: its recall verdicts are False without asking
        r, r_err, r_cached, r_echo = r_by.get(i, ((False,) * len(doc["reference_aius"]), None, True, 0))
        error = errors.get(i) or p_err or r_err
        x = x_by.get(i)
        rec = AIURecord(domain="metacritique", item=item_label(doc), aius=tuple(aius or ()),
                        n_aius=None if aius is None else len(aius), precision=tuple(p), recall=tuple(r), error=error,
                        cached=(x is None or x.cached) and p_cached and r_cached,
                        extraction_text=None if x is None else x.text, echoed=p_echo + r_echo,
                        judge_served=merged_served(calls.get(i, [])))
        if p_echo + r_echo:
            log.warning("critic_tasks: metacritique judge on %s: %d verdict(s) the judge only echoed from the critique "
                        "counted False", rec.item, p_echo + r_echo)
        if error:
            log.warning("critic_tasks: metacritique judge on %s: %s", rec.item, error)
        records.append(rec)
    return records


def merged_served(completions: Sequence[Completion]) -> dict | None:
    """What the server said answered a critique's calls: per field its one value, or the sorted distinct values
    where the calls differ (a model swapped mid-run shows); None when no call's reply said."""
    values: dict[str, set] = {}
    for c in completions:
        for name, value in (c.served or {}).items():
            values.setdefault(name, set()).add(value)
    return {name: next(iter(v)) if len(v) == 1 else sorted(v) for name, v in values.items()} or None


def canary_probes(task: str, docs: Sequence[dict], critiques: Sequence[str | None]) -> list:
    """The prompts of each critique that its text alone determines, as ``llm.canary.Probe``s: the extraction (read
    into its list of units) and the recall check (read into its verdicts). Precision prompts are built from the
    extracted units, so a changed extraction already shows."""
    probes = []
    for doc, critique in zip(docs, critiques):
        text = (critique or "").strip()
        if not text:  # an empty critique is never asked
            continue
        label = f"{task} {item_label(doc)}"
        probes.append(Probe(f"{label} (extraction)", extraction_prompt(text), PROMPT_VERSION, template_hash(),
                            _units))
        probes.append(Probe(f"{label} (recall)", recall_prompt(doc, text), PROMPT_VERSION, template_hash(),
                            functools.partial(_recall_verdicts, len(doc["reference_aius"]), text)))
    return probes


def _units(text: str) -> tuple | None:
    units = parse_numbered_units(text)
    return None if units is None else tuple(units)


def _recall_verdicts(n: int, critique: str, text: str) -> tuple:
    return _verdicts(Completion(text, None, True), n, [critique])[0]


def deferred_record(doc: dict) -> AIURecord:
    return AIURecord(domain="metacritique", item=item_label(doc), is_deferred=True)


class AIUJudge(Judged):
    """MetaCritique: the judge extracts a critique's atomic information units and checks their precision and recall."""

    name = "aiu_judge"
    about = "a judge extracts the critique's atomic units and checks precision and recall"
    what = "MetaCritique judging"

    def batch(self, kind, docs, samples, ctx):
        return judge_critiques(docs, first_replies(samples), ctx.judge, progress=ctx.progress)

    def deferred_record(self, doc):
        return deferred_record(doc)

    def identity(self, judge):
        return judge_identity(judge)

    def failed(self, record):
        return not record.scored
