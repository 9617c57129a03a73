"""Metric families of the revision protocols: ``RevisionRecord`` lists -> metrics (rates and utility x100).

The record (``RevisionRecord``, made by ``pipeline``): what a critique did to the revisions of one initial response,
registered in ``core.records.RECORD_TYPES`` under its ``kind`` (``register_record``), so that ``Record.from_dict``
reads it back from logged samples.

``multicritique`` (Lan et al. 2024b, "Training Language Models to Critique With Multi-agent Feedback",
arXiv:2410.15287, sec. on critique utility):

    R_obj = 100 * (1/|V|) * sum_v (1/|D|) * sum_d  passed_vd / checked_vd
            over the revisers v of the pool and the checked domains d, where checked_vd counts the valid checked
            items of domain d that v revised and passed_vd those whose revision passed (answer check or sandbox):
            each reviser's pass rate is the mean of its per-domain pass rates, as CriticEval's codebase computes a
            model's correction score (``run_correction.py``: one pass rate per domain file, then their mean), which
            MultiCritique says it evaluates with. ``r_obj_<domain>`` = the mean over revisers of their pass rates
            on that domain. (Pooling the items instead weighs math's 50 + 50 test items over code's 30 + 30.)
    R_sub = mean over domains of the mean over that domain's judged (text) items of the judge's 1-10 grade of the
            first reviser's revision (CriticEval's codebase again: a mean per domain, then their mean), with
            ``r_sub_<domain>`` per domain: on the paper variant CriticEval's correction judge against the human
            reference revision (worth 8), the CriticEval scale; on the short variant a reference-free 1-10 rating (a
            different scale, not comparable)

``rco`` (Yu et al. 2025, "Training Language Model to Critique for Better Refinement", arXiv:2506.22157, the
critique utility CU and the revision quality RQS):

    pref(order) = 1 if the judge prefers the revision, 0.5 for a tie ([[C]]), 0 if it prefers the initial response
    CU_i        = mean of pref over both orders (and over the M revisions, when M > 1), readable verdicts only
    critique_utility = 100 * mean_i CU_i           over the items with at least one readable verdict
    rqs              = mean_i judge rating (1-10) of the revision
    refine_accuracy  = 100 * share of the valid checked items whose revision passes

Shared counts: ``judge_parse_rate`` = 100 * readable / asked judgments; ``judge_failed`` = items with a failed or
unreadable judgment, which counts the minimum (a 1-10 grade of 1, a preference of 0) whatever the failure rule, so a
critique gains nothing by making the judge fail (``pipeline.run``; issue 34); ``judge_echoed`` = items with a
judgment counted the minimum because the judge gave no verdict of its own and repeated one the critique or its
revision states (a forged verdict: the failure is the critique's, so it is scored, never left out; these count as
readable);
``reviser_failed`` = failed revision calls (item x reviser); ``invalid_items`` = checked items
whose gold answer or test is unusable; ``revision_deferred`` = items generated with no reviser / judge configured.
A value with nothing to average is left out (absent, never NaN).

Missing revisions, and the judgments never asked because the revision failed, follow the run's ``failure_rule``
(``data.FAILURE_RULES``: exclude, ours and the default; tie; zero). What they touched is counted whatever the rule:
``partial_items`` = items whose value rests on part of what was asked (RCO: one of the two orders there;
MultiCritique: a checked item some, not all, revisers revised); ``empty_items`` = items with nothing to score (RCO:
no revision to judge; MultiCritique: a checked item no reviser revised, a judged item without a revision).
``variant``, ``failure_rule`` and ``prompt_source`` (where each role's prompt text came from: CriticEval's
released file, our paraphrase of the paper, or our own short prompts) are recorded beside the numbers.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

import numpy as np

from critic_tasks.core.metrics.bootstrap import BootstrapSettings, mean_interval, percentile_interval, resample_indices
from critic_tasks.core.records import Metric, Record, breakdown, canonical, domain_mean, register_record
from critic_tasks.protocols import variants
from critic_tasks.protocols.criticbench.prompts import OBJECTIVE_CORRECTION_DOMAINS, TEXT_DOMAINS

# ----------------------------------------------------------------------------- records


@register_record
@dataclass(frozen=True)
class RevisionRecord(Record):
    """What a critique did to the revisions of one initial response (MultiCritique, RCO): per reviser, whether its
    revision passed the item's check (None: no check, no revision, or the item is ``invalid``); the judge's 1-10
    quality score of the first reviser's revision (``rqs``); and its preference for that revision over the initial
    response, one value per judged order (1 win, 0.5 tie, 0 loss; None unreadable). ``judge_asked`` /
    ``judge_parsed`` count the judgments; ``reviser_failed`` the revisions whose call failed. ``rqs`` holds
    MultiCritique's R_sub too (a 1-10 grade, against the reference revision on the paper variant)."""

    kind: ClassVar[str] = "revision"
    item: str = ""
    group: str = ""
    checked: bool = False  # the item has a gold answer or a test
    revisers: tuple[str, ...] = field(default_factory=tuple)
    revisions: tuple[str | None, ...] = field(default_factory=tuple)
    passed: tuple[bool | None, ...] = field(default_factory=tuple)
    invalid: bool = False
    rqs: float | None = None
    prefs: tuple[float | None, ...] = field(default_factory=tuple)
    judge_asked: int = 0
    judge_parsed: int = 0
    reviser_failed: int = 0
    error: str | None = None
    is_deferred: bool = False
    # judgments counted the minimum (1, or the revision's loss): the judge gave no verdict of its own and repeated
    # one the critique or its revision states (issue 27); they are in judge_parsed
    judge_echoed: int = 0
    models: str = ""  # JSON: the revisers, the judge and the prompt versions (pipeline.models)
    variant: str = ""  # the prompt variant (protocols.variants)
    failure_rule: str = ""  # what a missing verdict or revision counts as (revision.data.FAILURE_RULES; "": exclude)
    # JSON: role -> where its prompt text came from ("released: <file>", "paraphrase", "ours"; prompts.sources)
    prompt_source: str = ""

    @property
    def scored(self) -> bool:
        return not self.is_deferred

    @property
    def deferred(self) -> bool:
        return self.is_deferred

    @property
    def failed(self) -> bool:
        """A reviser or judge call failed, or a judgment was unreadable: counted, and retried on the next run."""
        return self.reviser_failed > 0 or self.judge_parsed < self.judge_asked


EXCLUDE = "exclude"
FILLED_PREFERENCE = {"tie": 0.5, "zero": 0.0}  # what a missing preference verdict counts as, by rule


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _defined(out: dict) -> dict:
    """A value with nothing to average over is left out (absent, never NaN), as the judge family does."""
    return {k: v for k, v in out.items() if v is not None}


def _done(records: Sequence[RevisionRecord]) -> list[RevisionRecord]:
    return [r for r in records if not r.deferred]


def revision_deferred(records: Sequence[RevisionRecord]) -> float | None:
    """Items kept for ``critic-eval revise`` (absent when none is)."""
    deferred = len(records) - len(_done(records))
    return float(deferred) if deferred else None


def _over_done(value: Callable[[list[RevisionRecord]], object]) -> Callable[[Sequence[RevisionRecord]], object]:
    """A value over the scored (not deferred) items; absent where every item is deferred."""
    def over(records):
        done = _done(records)
        return value(done) if done else None

    over.__name__ = getattr(value, "__name__", "value")
    return over


def _judge_parse_rate(done: list[RevisionRecord]) -> float:
    asked = sum(r.judge_asked for r in done)
    return 100.0 * sum(r.judge_parsed for r in done) / asked if asked else 100.0


def _counts(family: str) -> dict[tuple[str, str], Callable]:
    """What both families count: deferred, judge and reviser failures, invalid items."""
    return {(family, "revision_deferred"): revision_deferred,
            (family, "judge_parse_rate"): _over_done(_judge_parse_rate),
            (family, "judge_failed"): _over_done(lambda done: float(sum(r.judge_parsed < r.judge_asked for r in done))),
            (family, "judge_echoed"): _over_done(lambda done: float(sum(r.judge_echoed > 0 for r in done))),
            (family, "reviser_failed"): _over_done(lambda done: float(sum(r.reviser_failed for r in done))),
            (family, "invalid_items"): _over_done(lambda done: float(sum(r.invalid for r in done)))}


def _rule(record: RevisionRecord) -> str:
    return record.failure_rule or EXCLUDE


def _settings(records: Sequence[RevisionRecord]) -> dict[str, str]:
    """The variant and failure rule the values were made with (text entries beside the numbers)."""
    return {"variant": variants.recorded(r.variant for r in records),
            "failure_rule": "+".join(sorted({_rule(r) for r in records}))}


def _pass(record: RevisionRecord, ok: bool | None) -> bool | None:
    """A revision's check outcome under the record's rule: a missing revision (None) is left out, or fails."""
    return ok if ok is not None or _rule(record) == EXCLUDE else False


def per_domain_pass_rates(records: Sequence[RevisionRecord]) -> dict[str, dict[str, float]]:
    """Reviser name -> domain -> 100 * its pass rate over that domain's valid checked items (those it revised, under
    the exclude rule; all of them, a missing revision failing, under tie / zero)."""
    by: dict[str, dict[str, list[bool]]] = {}
    for r in records:
        if r.deferred or not r.checked or r.invalid:
            continue
        for name, ok in zip(r.revisers, r.passed):
            ok = _pass(r, ok)
            if ok is not None:
                by.setdefault(name, {}).setdefault(r.domain, []).append(ok)
    return {name: {d: 100.0 * sum(v) / len(v) for d, v in domains.items()} for name, domains in by.items()}


def per_reviser_pass_rates(records: Sequence[RevisionRecord]) -> dict[str, float]:
    """Reviser name -> its pass rate: the mean of its per-domain pass rates (CriticEval's correction score)."""
    return {name: _mean(domains.values()) for name, domains in per_domain_pass_rates(records).items()}


def _multicritique_touched(r: RevisionRecord) -> str:
    """"partial", "empty" or "" (complete): what is missing from a MultiCritique item."""
    if not r.checked:
        return "empty" if r.rqs is None else ""
    if r.invalid:
        return ""
    missing = sum(ok is None for ok in r.passed)
    return "" if not missing else "empty" if missing == len(r.passed) else "partial"


def _multicritique_counts(done: list[RevisionRecord]) -> list[str]:
    return [_multicritique_touched(r) for r in done]


def _prefs(record: RevisionRecord) -> list[float | None]:
    """The preference of each order (forward, reverse), None where missing: unreadable, failed, or never asked
    because the actor's revision failed."""
    prefs = list(record.prefs)
    return prefs + [None] * (2 - len(prefs)) if len(prefs) < 2 else prefs


def item_utility(record: RevisionRecord) -> float | None:
    """CU of one item under its failure rule: the mean over both orders, a missing order left out (exclude: None
    when neither is there) or filled in (tie 0.5, zero 0)."""
    prefs = _prefs(record)
    if _rule(record) != EXCLUDE:
        prefs = [FILLED_PREFERENCE[_rule(record)] if p is None else p for p in prefs]
    prefs = [p for p in prefs if p is not None]
    return sum(prefs) / len(prefs) if prefs else None


def _actor_passed(record: RevisionRecord) -> bool | None:
    """refine_accuracy's outcome of a valid checked item: the actor's (first reviser's) revision, under the rule."""
    return _pass(record, record.passed[0] if record.passed else None)


def _critique_utility(done: list[RevisionRecord]) -> float | None:
    utility = _mean(u for u in map(item_utility, done) if u is not None)
    return None if utility is None else 100.0 * utility


def _refine_accuracy(done: list[RevisionRecord]) -> float | None:
    accuracy = _mean(ok for ok in (_actor_passed(r) for r in done if r.checked and not r.invalid) if ok is not None)
    return None if accuracy is None else 100.0 * accuracy


def _readable(done: list[RevisionRecord]) -> list[int]:
    """Per item, its readable preference verdicts (of the two orders)."""
    return [sum(p is not None for p in _prefs(r)) for r in done]


def _one_json(values) -> str | None:
    """One JSON text the records carry (a list of them where they differ), or None where none does."""
    found = sorted(set(v for v in values if v))
    return found[0] if len(found) == 1 else (json.dumps([json.loads(m) for m in found]) if found else None)


def _models(records: Sequence[RevisionRecord]) -> str | None:
    """The revisers, the judge and the prompt versions that made these values (JSON text: a results entry beside
    the numbers it stands for), or None for records scored before they carried it."""
    return _one_json(r.models for r in records)


def _prompt_source(records: Sequence[RevisionRecord]) -> str | None:
    """Where each role's prompt text came from (JSON: role -> "released: <file>", "paraphrase" or "ours")."""
    return _one_json(r.prompt_source for r in records)


def _recorded(family: str) -> dict[tuple[str, str], Callable]:
    """What made the values (text entries beside the numbers): models, prompt sources, variant, failure rule."""
    return {(family, "models"): _over_done(_models), (family, "prompt_source"): _over_done(_prompt_source),
            (family, "variant"): _over_done(lambda done: _settings(done)["variant"]),
            (family, "failure_rule"): _over_done(lambda done: _settings(done)["failure_rule"])}


# Each (family, base) the registry's metrics name: its one value over the records a key accepts (None: absent).
METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    **_counts("multicritique"),
    # R_obj: the mean of each reviser's pass rate (a mean of its domains'); R_sub: the judge's, per domain
    ("multicritique", "r_obj"): _over_done(lambda done: _mean(per_reviser_pass_rates(done).values())),
    ("multicritique", "r_sub"): _over_done(lambda done: domain_mean((r.domain, r.rqs) for r in done
                                                                    if not r.checked and r.rqs is not None)),
    ("multicritique", "partial_items"): _over_done(lambda done: float(_multicritique_counts(done).count("partial"))),
    ("multicritique", "empty_items"): _over_done(lambda done: float(_multicritique_counts(done).count("empty"))),
    **_recorded("multicritique"),
    **_counts("rco"),
    ("rco", "critique_utility"): _over_done(_critique_utility),
    ("rco", "rqs"): _over_done(lambda done: _mean(r.rqs for r in done if r.rqs is not None)),
    ("rco", "refine_accuracy"): _over_done(_refine_accuracy),
    ("rco", "partial_items"): _over_done(lambda done: float(_readable(done).count(1))),
    ("rco", "empty_items"): _over_done(lambda done: float(_readable(done).count(0))),
    **_recorded("rco"),
}


def _family(name: str) -> Callable[[Sequence[RevisionRecord]], dict[str, float]]:
    """Every value of a family (``METRICS``) over one pool of records; a value with nothing to average over is left
    out (absent, never NaN), as the judge family does."""
    def values(records):
        return _defined({base: fn(records) for (family, base), fn in METRICS.items() if family == name})

    values.__name__ = f"{name}_metrics"
    return values


multicritique_metrics, rco_metrics = _family("multicritique"), _family("rco")

# ----------------------------------------------------------------------------- metric keys



def _count_keys(family: str) -> tuple[Metric, ...]:
    return (Metric("judge_parse_rate", family), Metric("judge_failed", family, higher_is_better=False, scale="count"),
            Metric("judge_echoed", family, higher_is_better=False, scale="count"),
            Metric("reviser_failed", family, higher_is_better=False, scale="count"),
            Metric("invalid_items", family, higher_is_better=False, scale="count"),
            Metric("revision_deferred", family, when="deferred", higher_is_better=False, scale="count"),
            # items a missing verdict or revision touched (what became of them: failure_rule)
            Metric("partial_items", family, when="scored", higher_is_better=False, scale="count"),
            Metric("empty_items", family, when="scored", higher_is_better=False, scale="count"),
            # text: the revisers, the judge, the prompt versions (JSON); the prompt variant; exclude | tie | zero
            Metric("models", family, when="scored", scale="text", higher_is_better=None),
            Metric("variant", family, when="scored", scale="text", higher_is_better=None),
            Metric("failure_rule", family, when="scored", scale="text", higher_is_better=None),
            # JSON: role -> "released: <file>" (CriticEval's text, the user's checkout) | "paraphrase" | "ours"
            Metric("prompt_source", family, when="scored", scale="text", higher_is_better=None))


# MultiCritique: R_obj (pass rates, math/code) and R_sub (judge 1-10, text); per domain, as R_obj and R_sub are means
# of these (CriticEval's codebase: per domain, then the mean)
MULTICRITIQUE_KEYS = (
    Metric("r_obj", "multicritique", when="scored", subset=("checked", True), valid_only=True),
    Metric("r_sub", "multicritique", when="scored", subset=("checked", False), scale="judge"),
    *breakdown("multicritique", "r_obj", "domain", OBJECTIVE_CORRECTION_DOMAINS, valid_only=True),
    *breakdown("multicritique", "r_sub", "domain", TEXT_DOMAINS, scale="judge"),
    *_count_keys("multicritique"))

# RCO: critique utility (the judge prefers the revision), RQS and the checked items' refine accuracy
RCO_KEYS = (Metric("critique_utility", "rco", when="scored"), Metric("rqs", "rco", when="scored", scale="judge"),
            Metric("refine_accuracy", "rco", when="scored", subset=("checked", True), valid_only=True),
            *_count_keys("rco"))

FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {"multicritique": multicritique_metrics,
                                                               "rco": rco_metrics}


# ----------------------------------------------------------------------------- intervals


def _item_values(records: Sequence[RevisionRecord], base: str) -> list[float]:
    """Per item, the quantity a mean-valued metric averages (x100 where the metric is a percentage)."""
    if base == "critique_utility":
        return [100.0 * u for u in map(item_utility, records) if u is not None]
    if base == "rqs":
        return [r.rqs for r in records if r.rqs is not None]
    if base == "refine_accuracy":
        return [100.0 * ok for ok in (_actor_passed(r) for r in records if r.checked and not r.invalid)
                if ok is not None]
    raise KeyError(base)


def revision_interval(records: Sequence[RevisionRecord], base: str, settings: BootstrapSettings) -> tuple | None:
    """Items resampled. ``r_obj``: items resampled within each domain, each reviser's per-domain pass rates
    recomputed on the drawn items, averaged over the domains, then over the revisers, as the value is; ``r_sub``:
    graded items resampled within each domain (a mean of domain means); the other values are means over items
    (``mean_interval``)."""
    done = [r for r in canonical(records) if not r.deferred]
    if base == "r_sub":
        graded = [r for r in done if not r.checked and r.rqs is not None]
        return mean_interval([r.rqs for r in graded], [r.domain for r in graded], settings) if graded else None
    if base != "r_obj":
        values = _item_values(done, base)
        return mean_interval(values, None, settings) if values else None
    checked = [r for r in done if r.checked and not r.invalid]
    names = sorted({n for r in checked for n in r.revisers})
    if not checked or not names:
        return None
    table = np.full((len(checked), len(names)), np.nan)  # item x reviser: 1 passed, 0 failed, nan no verdict
    for i, r in enumerate(checked):
        for name, ok in zip(r.revisers, r.passed):
            ok = _pass(r, ok)
            if ok is not None:
                table[i, names.index(name)] = float(ok)
    blocks = resample_indices([r.domain for r in checked], settings.resamples, np.random.default_rng(settings.seed))
    per_domain = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for idx in blocks:  # one domain's draws
            drawn = table[idx]  # (B, n_d, revisers)
            counts = (~np.isnan(drawn)).sum(axis=1)
            per_domain.append(np.nansum(drawn, axis=1) / counts)  # (B, revisers); nan: no drawn verdict
        with warnings.catch_warnings():  # an all-nan slice (a reviser with no drawn verdict) is dropped below
            warnings.simplefilter("ignore", RuntimeWarning)
            rates = np.nanmean(np.stack(per_domain), axis=0)  # (B, revisers): the mean of the domains' rates
            replicates = 100.0 * np.nanmean(rates, axis=1)
    replicates = replicates[~np.isnan(replicates)]
    return percentile_interval(replicates, settings.level) if replicates.size else None


INTERVALS: dict[str, Callable] = {"multicritique": revision_interval, "rco": revision_interval}


def revision_stratum(record: RevisionRecord, base: str) -> str:
    """``r_obj`` / ``r_sub``: the item's domain (``revision_interval`` resamples them within each domain); the means
    over items: none."""
    return record.domain if base in ("r_obj", "r_sub") else ""


# family -> (record, value) -> the stratum its interval resamples within
STRATA: dict[str, Callable] = {"multicritique": revision_stratum, "rco": revision_stratum}
