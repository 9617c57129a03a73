"""The protocols' defaults against the papers and their released code (issue 28), each value computed here by hand:
MultiCritique's per-domain averaging, self-consistency that samples, one default budget in both harnesses, the
released prompt text read at run time, RCO's system message, and one line for mixed-type ids in every loader."""

import pytest

from critic_tasks.core.records import RevisionRecord
from critic_tasks.protocols.revision.scoring import multicritique_metrics, per_reviser_pass_rates

# ----------------------------------------------------------------------------- 1. MultiCritique: per domain


def test_multicritique_averages_per_domain_then_across_domains_as_criticevals_codebase():
    """The test split's checked domains hold 50 / 50 / 30 / 30 items (math_cot, math_pot, code_exec, code_not_exec).
    A reviser passing 30, 25, 6 and 6 of them: pooled, 67 / 160 = 41.875; CriticEval's codebase (a pass rate per
    domain file, then their mean): (60 + 50 + 20 + 20) / 4 = 37.5. A second reviser passing 40, 40, 15, 3:
    (80 + 80 + 50 + 10) / 4 = 55, so R_obj = (37.5 + 55) / 2 = 46.25. R_sub likewise: chat's grades 9, 9, 9, 1
    (mean 7) and qa's 3 (mean 3) give (7 + 3) / 2 = 5, not the pooled 31 / 5 = 6.2."""
    plan = {"math_cot": (50, 30, 40), "math_pot": (50, 25, 40), "code_exec": (30, 6, 15), "code_not_exec": (30, 6, 3)}
    records = [RevisionRecord(domain=d, item=f"{d}{i}", checked=True, revisers=("one", "two"),
                              passed=(i < one, i < two))
               for d, (n, one, two) in plan.items() for i in range(n)]
    records += [RevisionRecord(domain="chat", rqs=g) for g in (9.0, 9.0, 9.0, 1.0)]
    records += [RevisionRecord(domain="qa", rqs=3.0)]
    out = multicritique_metrics(records)
    assert out["r_obj"] == pytest.approx(46.25)
    assert out["r_sub"] == pytest.approx(5.0)
    assert per_reviser_pass_rates(records) == pytest.approx({"one": 37.5, "two": 55.0})
    # one reviser alone: the example, 37.5 where pooling gives 41.9
    alone = [RevisionRecord(domain=r.domain, checked=True, revisers=("one",), passed=r.passed[:1])
             for r in records if r.checked]
    assert multicritique_metrics(alone)["r_obj"] == pytest.approx(37.5)
