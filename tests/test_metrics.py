"""Metric functions against scipy / hand computation on hand-made data."""

import math

import pytest
from scipy import stats

from critic_tasks.core.metrics.pairwise import pairwise_metrics as comparison_metrics
from critic_tasks.core.metrics.spearman import likert_score, spearman_x100
from critic_tasks.protocols.criticbench.scoring import LikertRecord, VerdictRecord, likert_metrics
from critic_tasks.protocols.criticbench.scoring import pairwise_family as comparison_pair_metrics


def test_spearman_matches_scipy_with_ties():
    pred = [1, 3, 3, 7, 5, 2, 6, 4]
    gold = [2, 2, 4, 7, 6, 1, 5, 5]
    value, warning = spearman_x100(pred, gold)
    assert warning is None
    assert value == pytest.approx(stats.spearmanr(pred, gold).statistic * 100)


def test_constant_predictions_give_zero_and_warning():
    value, warning = spearman_x100([4, 4, 4], [1, 5, 7])
    assert value == 0.0 and "constant predictions" in warning
    value, warning = spearman_x100([1, 2], [3, 3])
    assert value == 0.0 and "constant human scores" in warning


def test_likert_score_is_paper_normalisation():
    # compute_overall.py: GPT-4-turbo feedback 63.54 -> 81.77
    assert likert_score(63.54) == pytest.approx(81.77)
    assert likert_score(-100) == 0 and likert_score(100) == 100


def test_likert_metrics_pool_and_midpoint_for_unparsed():
    records = [
        LikertRecord(domain="chat", **{"pred": 2.0, "parsed": True, "gold": 1.0, "quality": "low"}),
        LikertRecord(domain="chat", **{"pred": 4.0, "parsed": False, "gold": 3.0, "quality": "low"}),  # unparsed -> midpoint
        LikertRecord(domain="chat", **{"pred": 6.0, "parsed": True, "gold": 6.0, "quality": "high"}),
        LikertRecord(domain="chat", **{"pred": 5.0, "parsed": True, "gold": 7.0, "quality": "high"}),
        LikertRecord(domain="chat", **{"pred": 3.0, "parsed": True, "gold": 5.0, "quality": "med"}),
    ]
    out = likert_metrics(records)
    pooled = stats.spearmanr([2, 4, 6, 5, 3], [1, 3, 6, 7, 5]).statistic * 100
    assert out["spearman"] == pytest.approx(pooled)
    assert out["score"] == pytest.approx((pooled + 100) / 2)
    assert out["spearman_low"] == pytest.approx(100.0)  # 2<4 and 1<3
    assert out["spearman_high"] == pytest.approx(-100.0)
    assert out["spearman_med"] == 0.0  # one item: undefined -> 0 with a warning
    assert out["spearman_warnings"] == 1.0
    assert out["parse_rate"] == pytest.approx(80.0)
    assert "spearman_super-high" not in out


def test_unlabelled_records_report_no_label_metrics():
    out = likert_metrics([LikertRecord(domain="chat", **{"pred": 3.0, "parsed": True, "gold": None, "quality": "low"})] * 3)
    assert out == {"parse_rate": 100.0, "labels_available": 0.0}


@pytest.mark.parametrize(
    "forward,reverse,gold,strict,loose,consistent",
    [
        ("A", "B", "A", 1, 1, 1),
        ("A", "C", "A", 0, 1, 0),  # the toolkit's rule lets A then C pass
        ("C", "C", "C", 0, 0, 1),  # a gold tie never counts: the paper's verdicts must differ, so must the toolkit's
        ("B", "A", "B", 1, 1, 1),
        ("B", "A", "A", 0, 0, 1),
        ("A", "A", "A", 0, 0, 0),
        (None, "B", "A", 0, 0, 0),
        ("A", None, "A", 0, 0, 0),
    ],
)
def test_comparison_rules(forward, reverse, gold, strict, loose, consistent):
    out = comparison_metrics([forward], [reverse], [gold])
    assert out == {"accuracy": 100.0 * strict, "accuracy_loose": 100.0 * loose, "consistency": 100.0 * consistent}


def test_comparison_pooling_and_difficulty():
    def rec(pair, order, verdict, gold, difficulty):
        return VerdictRecord(domain="chat", pair_id=pair, order=order, verdict=verdict, parsed=verdict is not None,
                             gold=gold, difficulty=difficulty)

    records = [
        rec("x/0", "forward", "A", "A", "easy"), rec("x/0", "reverse", "B", "A", "easy"),
        rec("x/1", "forward", "B", "B", "hard"), rec("x/1", "reverse", "C", "B", "hard"),
        rec("y/0", "forward", "C", "A", "hard"), rec("y/0", "reverse", None, "A", "hard"),
        rec("y/1", "forward", "B", "A", "hard"),  # reverse half missing (e.g. --limit): counts as unparsed
    ]
    out = comparison_pair_metrics(records)
    assert out["accuracy"] == pytest.approx(25.0)
    assert out["accuracy_loose"] == pytest.approx(50.0)
    assert out["accuracy_easy"] == pytest.approx(100.0)
    assert out["accuracy_hard"] == pytest.approx(0.0)
    assert out["consistency"] == pytest.approx(25.0)
    assert out["parse_rate"] == pytest.approx(100 * 6 / 7)
    assert out["score"] == out["accuracy"]
    assert not any(isinstance(v, float) and math.isnan(v) for v in out.values())


def test_an_undefined_correlation_is_said_by_the_key_that_computes_it(caplog):
    """lm-eval computes each metric key once: the pooled ``spearman`` key and the ``spearman_low`` key (its own pool)
    each say their undefined correlation once; ``score`` and ``spearman_warnings`` read the same values silently, and
    the count holds the pooled and the per-quality one."""
    from critic_tasks.registry import metric_value

    pool = [LikertRecord(domain="qa", pred=4.0, parsed=True, gold=float(g), quality="low") for g in (1, 3, 5, 7)]
    with caplog.at_level("WARNING", logger="critic_tasks"):
        values = {key: metric_value("likert", base, pool) for key, base in
                  (("spearman", "spearman"), ("spearman_low", "spearman"), ("score", "score"),
                   ("spearman_warnings", "spearman_warnings"))}
    assert values == {"spearman": 0.0, "spearman_low": 0.0, "score": 50.0, "spearman_warnings": 2.0}
    assert sum("Spearman undefined" in r.getMessage() for r in caplog.records) == 2  # one per key that computes it
