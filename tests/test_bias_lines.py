"""Judge-bias lines of the pairwise tasks (issue 36, point 2): position consistency, first-position rate and length
bias, each with an interval, for CriticEval's comparison, CritiqueLLM's pairwise task and JudgeBench.

Made-up pairs go through each task's own record maker (lm-eval's process_results, rows read back as JSON as from a
--log_samples file, then the key's aggregation) and through ``engine.kind_metrics`` (with the intervals); every
expected value is a hand loop over the pairs below, written from the definitions (which response a verdict names,
by content), not from the package's functions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from critic_tasks import chance, engine, registry
from critic_tasks.adapters.lm_eval import task_functions
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.core.records import KeyedRow
from critic_tasks.protocols.scorer import Context
from critic_tasks.reports import report
from critic_tasks.reports.results import Run
from critic_tasks.reports.tables import format_table

# (response 1, response 2, the label of the forward order (A: response 1 better), the forward verdict, the reverse
# verdict); verdicts name a slot of their own order (A: the response shown first), None: an unreadable reply,
# "absent": that order was never asked (the pair counts in no bias line)
PAIRS = [
    ("short", "a much longer response", "B", "B", "A"),  # consistent; the label and the critic name the longer
    ("a long long response text", "tiny", "B", "A", "A"),  # always the first slot
    ("abc", "abcdefgh", "A", "A", "B"),  # consistent, names the shorter, as the label does
    ("same len", "len same", "A", "A", "B"),  # equal lengths: no length line
    ("x" * 30, "y" * 5, "C", "B", "C"),  # a tie label: no length line; one decided verdict
    ("q" * 12, "r" * 40, "A", None, "A"),  # unreadable forward reply
    ("m" * 50, "n" * 10, "A", "A", "B"),  # names the longer, as the label does
    ("z" * 3, "w" * 99, "A", "B", "absent"),  # asked forward only
]
SETTINGS = BootstrapSettings(resamples=2000, seed=11)


def _reply(protocol: str, verdict: str | None) -> str:
    if verdict is None:
        return "I would rather not say which is better."
    if protocol == "judgebench":
        return f"My verdict: [[{ {'A': 'A>B', 'B': 'B>A', 'C': 'A=B'}[verdict] }]]"
    if protocol == "critiquellm":
        return f"Both are fine, but overall [[{verdict}]]"
    return f"Some analysis.\nDecision: {verdict}"


def _doc(protocol: str, i: int, order: str, first: str, second: str, gold: str) -> dict:
    shown = (first, second) if order == "forward" else (second, first)
    if protocol == "criticbench":
        return {"dimension": "comparison", "domain": "chat", "pair_id": f"chat/{i}", "order": order, "preference": gold,
                "difficulty": "easy", "generation_a": shown[0], "generation_b": shown[1]}
    if protocol == "critiquellm":
        return {"dimension": "alignbench_pairwise", "category_slug": "math", "pair_id": str(i), "order": order,
                "preference": gold, "response_a": shown[0], "response_b": shown[1], "variant": "paper"}
    return {"dimension": "judgebench", "source_slug": "knowledge", "pair_id": str(i), "order": order,
            "preference": gold, "response_a": shown[0], "response_b": shown[1]}


def _docs_and_replies(protocol: str, pairs=PAIRS) -> tuple[list[dict], list[str]]:
    docs, replies = [], []
    for i, (first, second, gold, forward, reverse) in enumerate(pairs):
        for order, verdict in (("forward", forward), ("reverse", reverse)):
            if verdict != "absent":
                docs.append(_doc(protocol, i, order, first, second, gold))
                replies.append(_reply(protocol, verdict))
    return docs, replies


# ----------------------------------------------------------------------------- the definitions, by hand

def _named(order: str, verdict: str) -> int:
    """Which response (1 or 2) a decided verdict of ``order`` names: forward shows response 1 first."""
    return (1 if verdict == "A" else 2) if order == "forward" else (2 if verdict == "A" else 1)


def hand_first_position(pairs) -> float:
    first = decided = 0
    for *_, forward, reverse in pairs:
        if "absent" in (forward, reverse):
            continue
        for verdict in (forward, reverse):
            if verdict in ("A", "B"):
                decided += 1
                first += verdict == "A"
    return 100.0 * first / decided


def hand_length_bias(pairs) -> float:
    critic_longer = label_longer = counted = 0
    for first, second, gold, forward, reverse in pairs:
        if "absent" in (forward, reverse) or gold == "C" or len(first) == len(second):
            continue
        longer = 1 if len(first) > len(second) else 2
        for order, verdict in (("forward", forward), ("reverse", reverse)):
            if verdict in ("A", "B"):
                counted += 1
                critic_longer += _named(order, verdict) == longer
                label_longer += (1 if gold == "A" else 2) == longer
    return 100.0 * (critic_longer - label_longer) / counted


def hand_consistency(pairs) -> float:
    """Share of pairs (all of them: an order never asked is no verdict) naming one response in both orders."""
    kept = sum(forward in ("A", "B", "C") and reverse in ("A", "B", "C") and (
        forward == reverse == "C" or (forward != "C" and reverse != "C" and
                                      _named("forward", forward) == _named("reverse", reverse)))
               for *_, forward, reverse in pairs)
    return 100.0 * kept / len(pairs)


def labels_longer_rate(pairs) -> float:
    eligible = [(first, second, gold) for first, second, gold, forward, reverse in pairs
                if "absent" not in (forward, reverse) and gold != "C" and len(first) != len(second)]
    return 100.0 * sum((len(first) > len(second)) == (gold == "A") for first, second, gold in eligible) / len(eligible)


# ----------------------------------------------------------------------------- through each task

KINDS = {"criticbench": ("comparison", "pairwise", "critic_comparison", "consistency"),
         "critiquellm": ("alignbench_pairwise", "preference", "critic_alignbench_pairwise_ref", "consistency"),
         "judgebench": ("judgebench", "judgebench", "critic_judgebench", "inconsistency")}


def _lm_eval_value(kind: registry.TaskKind, family: str, key: str, docs, replies):
    """process_results per document, the rows through JSON (as --log_samples writes them: the same row), each still
    naming its key's (family, base), then the aggregation."""
    rows = []
    for doc, reply in zip(docs, replies):
        fed = task_functions.TaskFunctions(kind).process_results(doc, [reply])
        if key in fed:
            assert fed[key].metric == (family, key)
            rows.append(KeyedRow(json.loads(json.dumps(fed[key])), fed[key].metric))
    return task_functions.TaskFunctions.aggregate(rows)


@pytest.mark.parametrize("protocol", sorted(KINDS))
def test_bias_lines_through_lm_evals_path_and_kind_metrics(protocol):
    # the loops above against the arithmetic done on paper: A in 7 of the 12 decided verdicts of pairs asked both
    # ways; the critic names the longer once more than the label in two of the nine counted verdicts
    assert (hand_first_position(PAIRS), hand_length_bias(PAIRS)) == pytest.approx((100 * 7 / 12, 100 * 2 / 9))
    kind_name, family, _, position_key = KINDS[protocol]
    kind = registry.TASK_KINDS[kind_name]
    docs, replies = _docs_and_replies(protocol)
    assert _lm_eval_value(kind, family, "first_position", docs, replies) == pytest.approx(hand_first_position(PAIRS))
    assert _lm_eval_value(kind, family, "length_bias", docs, replies) == pytest.approx(hand_length_bias(PAIRS))

    records = engine.score(kind, docs, [[r] for r in replies], Context())
    values = engine.kind_metrics(kind, records, intervals=SETTINGS)
    assert values["first_position"] == pytest.approx(hand_first_position(PAIRS))
    assert values["length_bias"] == pytest.approx(hand_length_bias(PAIRS))
    if position_key == "consistency":
        assert values["consistency"] == pytest.approx(hand_consistency(PAIRS))
    else:  # JudgeBench: over the pairs asked both ways
        both = [p for p in PAIRS if p[4] != "absent"]
        assert values["inconsistency"] == pytest.approx(100.0 - hand_consistency(both))
    for key in registry.BIAS_LINES[kind_name]:
        low, high = values[f"{key}_ci_low"], values[f"{key}_ci_high"]
        assert low <= values[key] <= high and low < high, (key, low, values[key], high)


def test_length_bias_interval_is_the_pair_bootstrap_written_out():
    """CriticEval's length_bias interval: the pairs that count anything, resampled with numpy's generator as the
    house's bootstrap draws them (n of n with replacement, B times), the pooled difference recomputed on each."""
    kind = registry.TASK_KINDS["comparison"]
    docs, replies = _docs_and_replies("criticbench")
    records = engine.score(kind, docs, [[r] for r in replies], Context())
    values = engine.kind_metrics(kind, records, intervals=SETTINGS)
    per_pair = []  # (sum of [critic names longer] - [label names longer], verdicts counted), pair-id order
    for _, (first, second, gold, forward, reverse) in sorted((f"chat/{i}", p) for i, p in enumerate(PAIRS)):
        if "absent" in (forward, reverse) or gold == "C" or len(first) == len(second):
            continue
        longer = 1 if len(first) > len(second) else 2
        diffs = [(_named(o, v) == longer) - ((1 if gold == "A" else 2) == longer)
                 for o, v in (("forward", forward), ("reverse", reverse)) if v in ("A", "B")]
        if diffs:
            per_pair.append((sum(diffs), len(diffs)))
    top, bottom = np.array(per_pair, dtype=float).T
    idx = np.random.default_rng(SETTINGS.seed).integers(0, len(per_pair), size=(SETTINGS.resamples, len(per_pair)))
    replicates = 100.0 * top[idx].sum(axis=1) / bottom[idx].sum(axis=1)
    low, high = np.quantile(replicates, [0.025, 0.975])
    assert (values["length_bias_ci_low"], values["length_bias_ci_high"]) == pytest.approx((low, high))


@pytest.mark.parametrize("protocol", sorted(KINDS))
def test_canned_always_first_and_always_longer_critics(protocol):
    kind_name, _, task, _ = KINDS[protocol]
    docs, _ = _docs_and_replies(protocol)
    line = chance.chance_line(task, docs=docs)
    assert line.values["always_first"]["first_position"] == 100.0
    always_first = [(a, b, g, "A", "A" if r != "absent" else r) for a, b, g, _, r in PAIRS]
    assert line.values["always_first"]["length_bias"] == pytest.approx(hand_length_bias(always_first))

    def longer_slot(order, first, second):
        shown = (first, second) if order == "forward" else (second, first)
        return "A" if len(shown[0]) > len(shown[1]) else "B" if len(shown[1]) > len(shown[0]) else "C"

    longer_pairs = [(a, b, g, longer_slot("forward", a, b), longer_slot("reverse", a, b) if r != "absent" else r)
                    for a, b, g, _, r in PAIRS]
    kind = registry.TASK_KINDS[kind_name]
    docs, replies = _docs_and_replies(protocol, longer_pairs)
    values = engine.kind_metrics(kind, engine.score(kind, docs, [[r] for r in replies], Context()),
                                 intervals=BootstrapSettings(enabled=False))
    assert values["length_bias"] == pytest.approx(100.0 - labels_longer_rate(PAIRS)) == pytest.approx(60.0)


def test_records_logged_without_lengths_give_no_length_bias_but_a_first_position():
    """A samples file written before the records kept the responses' lengths: no length line (never a made-up 0)."""
    kind = registry.TASK_KINDS["comparison"]
    docs, replies = _docs_and_replies("criticbench")
    rows = []
    for doc, reply in zip(docs, replies):
        row = dict(task_functions.TaskFunctions(kind).process_results(doc, [reply])["first_position"])
        row.pop("lengths")
        rows.append(row)
    assert task_functions.TaskFunctions.aggregate([KeyedRow(r, ("pairwise", "length_bias")) for r in rows]) is None
    assert task_functions.TaskFunctions.aggregate([KeyedRow(r, ("pairwise", "first_position")) for r in rows]) == pytest.approx(
        hand_first_position(PAIRS))


def test_summary_and_report_show_the_bias_lines_with_their_intervals(tmp_path):
    kind = registry.TASK_KINDS["judgebench"]
    docs, replies = _docs_and_replies("judgebench")
    values = engine.kind_metrics(kind, engine.score(kind, docs, [[r] for r in replies], Context()),
                                 intervals=SETTINGS)
    results = {"critic_judgebench": {f"{k},none": v for k, v in values.items()}}
    text = format_table(results)
    block = text.split("Judge-bias lines\n", 1)[1]
    rows = {r.split()[1]: r.split(None, 2)[2] for r in block.splitlines()[1:4]}
    assert set(rows) == {"inconsistency", "first_position", "length_bias"}
    for key, shown in rows.items():
        assert shown == f"{values[key]:.2f} [{values[key + '_ci_low']:.2f}, {values[key + '_ci_high']:.2f}]"
    assert f"{hand_length_bias(PAIRS):.2f} [" in rows["length_bias"]

    built = report.build([Run("model-x", tmp_path, results)])
    table = next(t for t in built.tables if t.key == "bias")
    cells = {tuple(labels): cell for labels, (cell,) in table.rows}
    assert cells[("critic_judgebench", "first_position")].value == pytest.approx(hand_first_position(PAIRS))
    assert cells[("critic_judgebench", "length_bias")].ci == (values["length_bias_ci_low"],
                                                               values["length_bias_ci_high"])
    assert "Judge-bias lines" in report.to_markdown(built, "runs")
