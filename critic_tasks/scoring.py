"""Harness-neutral scoring: (document, generation) -> record, records -> metrics.

Both adapters (lm-eval, OpenCompass) and the offline scorer go through these
functions, so a metric fixed here is fixed everywhere. Metric keys are a public
contract, all on the paper's x100 scale:

* feedback / meta: ``spearman``, ``spearman_<quality>``, ``score`` = (spearman+100)/2,
  ``parse_rate``, ``spearman_warnings`` (correlations that were undefined and
  reported as 0);
* comparison: ``accuracy``, ``accuracy_loose``, ``accuracy_<difficulty>``,
  ``consistency``, ``score`` = accuracy, ``parse_rate``;
* correction: ``pass_rate`` (unweighted mean of the domains' pass rates, as the paper),
  ``pass_rate_<quality>``, ``score`` = pass_rate, ``parse_rate`` (revisions with an
  extractable answer / code block), ``pass@k`` when each item has at least k samples,
  ``invalid_items`` (items whose gold answer or unit test is unusable; excluded, logged);
* every dimension: ``labels_available`` (share of items with human labels; 0 on
  the test split, whose label-based metrics are then absent, not zero).

An unparseable reply takes the scale midpoint (4) in the correlation and counts
against ``parse_rate``: deterministic, never dropped.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Iterable, Sequence

from critic_tasks.metrics.comparison import comparison_metrics, pair_consistent
from critic_tasks.metrics.spearman import likert_score, spearman_x100
from critic_tasks.parsing import parse_likert, parse_verdict, swap_verdict

log = logging.getLogger("critic_tasks")

LIKERT_LOW, LIKERT_HIGH = 1, 7
LIKERT_MIDPOINT = (LIKERT_LOW + LIKERT_HIGH) / 2
_LIKERT = {  # dimension -> (marker, gold field, quality field)
    "feedback": ("Decision", "feedback_score", "quality"),
    "meta": ("Score", "meta_feedback_score", "raw_quality"),
}


# ----------------------------------------------------------------------------- records


def likert_record(doc: dict, text: str | None) -> dict:
    marker, gold_key, quality_key = _LIKERT[doc["dimension"]]
    value = parse_likert(text, marker, LIKERT_LOW, LIKERT_HIGH)
    return {
        "pred": LIKERT_MIDPOINT if value is None else value,
        "parsed": value is not None,
        "gold": doc.get(gold_key),
        "quality": doc.get(quality_key),
        "domain": doc["domain"],
    }


def comparison_record(doc: dict, text: str | None) -> dict:
    verdict = parse_verdict(text)
    return {
        "pair_id": doc["pair_id"],
        "order": doc["order"],
        "verdict": verdict,
        "parsed": verdict is not None,
        "gold": doc.get("preference"),
        "difficulty": doc["difficulty"],
        "domain": doc["domain"],
    }


RECORDERS = {"feedback": likert_record, "meta": likert_record, "comparison": comparison_record}


def record(doc: dict, text: str | None) -> dict:
    return RECORDERS[doc["dimension"]](doc, text)


# ----------------------------------------------------------------------------- metrics


def _rate(flags: Iterable[bool]) -> float:
    flags = list(flags)
    return 100.0 * sum(flags) / len(flags) if flags else 0.0


def likert_spearman(records: Sequence[dict]) -> tuple[float, list[str]]:
    """Pooled Spearman x100 over labelled records, and any warnings."""
    labelled = [r for r in records if r["gold"] is not None]
    value, warning = spearman_x100([r["pred"] for r in labelled], [float(r["gold"]) for r in labelled])
    if warning:
        log.warning("critic_tasks: %s", warning)
    return value, [warning] if warning else []


def likert_metrics(records: Sequence[dict]) -> dict[str, float]:
    """All feedback / meta-feedback metrics for one pool of records."""
    out = {"parse_rate": _rate(r["parsed"] for r in records),
           "labels_available": _rate(r["gold"] is not None for r in records)}
    if not any(r["gold"] is not None for r in records):
        return out
    warnings: list[str] = []
    out["spearman"], w = likert_spearman(records)
    warnings += w
    by_quality = defaultdict(list)
    for r in records:
        by_quality[r["quality"]].append(r)
    for quality, group in sorted(by_quality.items()):
        out[f"spearman_{quality}"], w = likert_spearman(group)
        warnings += w
    out["score"] = likert_score(out["spearman"])
    out["spearman_warnings"] = float(len(warnings))
    return out


def _pairs(records: Sequence[dict]) -> tuple[list, list, list, list]:
    """Align forward and reverse verdicts by pair; a missing half counts as unparsed."""
    pairs: dict[str, dict] = {}
    for r in records:
        pairs.setdefault(r["pair_id"], {"gold": r["gold"], "difficulty": r["difficulty"]})[r["order"]] = r["verdict"]
    ids = sorted(pairs)
    return (
        [pairs[i].get("forward") for i in ids],
        [pairs[i].get("reverse") for i in ids],
        [pairs[i]["gold"] for i in ids],
        [pairs[i]["difficulty"] for i in ids],
    )


def comparison_pair_metrics(records: Sequence[dict]) -> dict[str, float]:
    """Comparison metrics; label-free ones (parse_rate, consistency) always present."""
    forward, reverse, gold, difficulty = _pairs(records)
    out = {"parse_rate": _rate(r["parsed"] for r in records),
           "labels_available": _rate(g is not None for g in gold),
           "consistency": _rate(map(pair_consistent, forward, reverse))}
    if any(g is None for g in gold):
        return out
    out.update(comparison_metrics(forward, reverse, gold))
    for level in sorted(set(difficulty)):
        idx = [i for i, d in enumerate(difficulty) if d == level]
        out[f"accuracy_{level}"] = comparison_metrics(
            [forward[i] for i in idx], [reverse[i] for i in idx], [gold[i] for i in idx]
        )["accuracy"]
    out["score"] = out["accuracy"]
    return out


def correction_record(doc: dict, outcomes: Sequence[dict]) -> dict:
    """``outcomes``: one check result per sample of this item (see ``critic_tasks.correction``)."""
    return {
        "domain": doc["domain"],
        "quality": doc.get("quality"),
        "passed": [bool(o["passed"]) for o in outcomes],
        "parsed": [bool(o["parsed"]) for o in outcomes],
        "invalid": any(o["status"] == "invalid" for o in outcomes),
    }


def _domain_mean(records: Sequence[dict], item_value) -> float:
    """Mean over domains of the mean over items: the paper averages the domains' pass rates unweighted."""
    by_domain = defaultdict(list)
    for r in records:
        by_domain[r["domain"]].append(item_value(r))
    return sum(sum(v) / len(v) for v in by_domain.values()) / len(by_domain) if by_domain else 0.0


PASS_AT_K = (1, 5, 10)


def correction_metrics(records: Sequence[dict]) -> dict[str, float]:
    from critic_tasks.metrics.pass_at_k import pass_at_k

    valid = [r for r in records if not r["invalid"]]
    out = {
        "parse_rate": _rate(p for r in records for p in r["parsed"]),
        "invalid_items": float(len(records) - len(valid)),
        "pass_rate": 100.0 * _domain_mean(valid, lambda r: sum(r["passed"]) / len(r["passed"])),
    }
    out["score"] = out["pass_rate"]
    for quality in sorted({r["quality"] for r in valid}):
        group = [r for r in valid if r["quality"] == quality]
        out[f"pass_rate_{quality}"] = 100.0 * _domain_mean(group, lambda r: sum(r["passed"]) / len(r["passed"]))
    n_min = min((len(r["passed"]) for r in valid), default=0)
    for k in PASS_AT_K:
        if k <= n_min:
            out[f"pass@{k}"] = 100.0 * _domain_mean(valid, lambda r, k=k: pass_at_k(len(r["passed"]), sum(r["passed"]), k))
    return out


METRICS = {"feedback": likert_metrics, "meta": likert_metrics, "comparison": comparison_pair_metrics}


def score_dimension(dimension: str, docs: Sequence[dict], generations: Sequence[str | None]) -> dict[str, float]:
    """Score a whole dimension from its documents and the model's replies (same order)."""
    if len(docs) != len(generations):
        raise ValueError(f"{len(docs)} documents but {len(generations)} generations")
    return METRICS[dimension]([record(d, g) for d, g in zip(docs, generations)])


def gold_text(doc: dict) -> str:
    """The human label as text, for logs (empty on the test split)."""
    if doc["dimension"] == "comparison":
        gold = doc.get("preference")
        return (swap_verdict(gold) if doc["order"] == "reverse" else gold) or ""
    _, gold_key, _ = _LIKERT.get(doc["dimension"], (None, None, None))
    value = doc.get(gold_key) if gold_key else None
    return "" if value is None else f"{value:g}"
