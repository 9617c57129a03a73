"""What a critic's own text can do to its score (issue 27): NaN as a score, and its undefined correlation."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from critic_tasks.core.metrics import correlations, spearman_x100
from critic_tasks.protocols.criticbench import scoring, toolkit

# ----------------------------------------------------------------------------- 6. NaN as a score


@pytest.mark.parametrize("text", ["Decision: nan", "Decision: NaN", "Decision: inf", "Decision: -inf",
                                  "Decision: infinity", "Decision: 1e999", "I rate it 1e999", "Decision: nan 5"])
def test_toolkit_parse_score_refuses_non_finite_values(text):
    assert toolkit.parse_score(text) is None


def _toolkit_doc(gold: float) -> dict:
    return {"protocol": "toolkit", "dimension": "feedback", "domain": "chat", "feedback_score": gold,
            "quality": "low"}


def test_one_nan_reply_cannot_lift_an_anti_correlated_critic():
    """Six items, the critic's scores exactly reversed: Spearman -100, score 0. Replacing one reply with
    "Decision: nan" made the toolkit protocol's Spearman undefined, reported 0, score 50; now that reply is
    unparsed (the midpoint, 4) and the correlation stays strongly negative."""
    golds = [1, 2, 3, 5, 6, 7]
    replies = [f"Decision: {8 - g}" for g in golds]
    replies[0] = "Decision: nan"
    records = [scoring.likert_record(_toolkit_doc(g), r) for g, r in zip(golds, replies)]
    assert [r.parsed for r in records] == [False, True, True, True, True, True]
    out = scoring.likert_metrics(records)
    expected = 100 * stats.spearmanr([4, 6, 5, 3, 2, 1], golds)[0]
    assert out["spearman"] == pytest.approx(expected) and expected < -80
    assert out["score"] == pytest.approx((expected + 100) / 2) and out["score"] < 10
    assert out["parse_rate"] == pytest.approx(100 * 5 / 6)


def test_a_non_finite_score_never_becomes_a_correlation_of_zero():
    with pytest.raises(ValueError, match="non-finite"):
        spearman_x100([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-finite"):
        spearman_x100([1.0, 2.0, 3.0], [1.0, math.inf, 3.0])
    with pytest.raises(ValueError, match="non-finite"):
        correlations([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0])
