"""MetaCritique scoring: judged critiques (``AIURecord``) -> metrics, x100.

``precision`` / ``recall`` / ``f1`` (critique level, macro) and ``precision_micro`` / ``recall_micro`` /
``f1_micro`` (AIU level) from ``core.metrics.prf`` over the scored critiques, counting only the units the judge gave
a verdict for; ``judge_parse_rate``: share of asked verdicts that were readable (a failed AIU extraction counts
as one unreadable verdict); ``judge_failed``: critiques that could not be scored (AIUs unknown, or no readable
verdict on a side that has units); ``empty_critiques``: scored critiques with no AIU (precision 0 by our rule,
``core.metrics.prf``); ``judge_deferred``: critiques generated without a judge configured.
"""

from __future__ import annotations

from typing import Callable, Sequence

from critic_tasks.core.metrics import precision_recall_f1
from critic_tasks.core.records import AIURecord

KEYS = ("precision", "recall", "f1", "precision_micro", "recall_micro", "f1_micro")


def aiu_metrics(records: Sequence[AIURecord]) -> dict[str, float]:
    done = [r for r in records if not r.deferred]
    out = {"judge_deferred": float(len(records) - len(done))} if len(done) < len(records) else {}
    if not done:
        return out
    scored = [r for r in done if r.scored]
    asked = sum(len(r.precision) + len(r.recall) + (r.n_aius is None) for r in done)
    readable = sum(v is not None for r in done for v in (*r.precision, *r.recall))
    out.update(judge_parse_rate=100.0 * readable / asked if asked else 100.0, judge_failed=float(len(done) - len(scored)),
               empty_critiques=float(sum(r.n_aius == 0 for r in scored)))
    if scored:
        values = precision_recall_f1([[v for v in r.precision if v is not None] for r in scored],
                                     [[v for v in r.recall if v is not None] for r in scored])
        out.update({k: values[k] for k in KEYS})
    return out


FAMILIES: dict[str, Callable[[Sequence], dict[str, float]]] = {"aiu": aiu_metrics}
