"""Bootstrap intervals: checked against hand loops (same seed, same draws), scipy.stats.bootstrap and the normal
approximation on hand-made data, and end to end in an lm-eval run's saved results and samples files."""

import json

import numpy as np
import pytest
from helpers import hashed_critic, scripted_lm
from scipy import stats

import critic_tasks
from critic_tasks import cli
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.metrics.bootstrap import (
    BootstrapSettings,
    mean_interval,
    settings_from_env,
    spearman_interval,
)
from critic_tasks.protocols.criticbench import data, prompts

lm_eval = pytest.importorskip("lm_eval")

B = 400


def _hand_spearman_ci(pred, gold, seed=0, resamples=B, level=0.95):
    """One resample at a time: scipy's spearmanr on the resampled items (0 where undefined), numpy percentiles."""
    pred, gold = np.asarray(pred, float), np.asarray(gold, float)
    draws = np.random.default_rng(seed).integers(0, len(pred), size=(resamples, len(pred)))
    reps = []
    for row in draws:
        p, g = pred[row], gold[row]
        reps.append(0.0 if len(set(p)) < 2 or len(set(g)) < 2 else 100 * stats.spearmanr(p, g).statistic)
    a = 100 * (1 - level) / 2
    return np.percentile(reps, a), np.percentile(reps, 100 - a)


def _hand_domain_mean_ci(values, domains, seed=0, resamples=B, level=0.95):
    """Mean of domain means; each domain (in sorted order) draws its own items, one resample at a time."""
    rng = np.random.default_rng(seed)
    order = sorted(set(domains))
    groups = {d: [v for v, dd in zip(values, domains) if dd == d] for d in order}
    draws = {d: rng.integers(0, len(groups[d]), size=(resamples, len(groups[d]))) for d in order}
    reps = []
    for b in range(resamples):
        means = []
        for d in order:
            picked = [groups[d][i] for i in draws[d][b]]
            means.append(sum(picked) / len(picked))
        reps.append(sum(means) / len(means))
    a = 100 * (1 - level) / 2
    return np.percentile(reps, a), np.percentile(reps, 100 - a)


def _likert_data(n=300, seed=1):
    rng = np.random.default_rng(seed)
    gold = rng.integers(1, 8, size=n).astype(float)
    pred = np.clip(gold + rng.integers(-3, 4, size=n), 1, 7)  # correlated, with many ties
    return pred, gold


def test_spearman_interval_equals_hand_loop():
    pred, gold = _likert_data()
    settings = BootstrapSettings(resamples=B, seed=7)
    low, high = spearman_interval(pred, gold, settings)
    hand = _hand_spearman_ci(pred, gold, seed=7)
    assert (low, high) == pytest.approx(hand, abs=1e-9)
    point = 100 * stats.spearmanr(pred, gold).statistic
    assert low < point < high and 5 < high - low < 30


def test_spearman_interval_with_constant_resamples_counts_them_as_zero():
    pred = [1.0] * 9 + [7.0]  # most resamples of these 10 items see a constant prediction
    gold = list(range(1, 11))
    ci = spearman_interval(pred, gold, BootstrapSettings(resamples=B, seed=3))
    assert ci == pytest.approx(_hand_spearman_ci(pred, gold, seed=3), abs=1e-9)
    assert ci[0] == 0.0


def test_domain_mean_interval_equals_hand_loop_and_keeps_strata():
    rng = np.random.default_rng(5)
    domains = ["chat"] * 40 + ["qa"] * 15 + ["code_exec"] * 70
    values = [float(v) for v in rng.integers(0, 2, size=len(domains)) * 100]
    settings = BootstrapSettings(resamples=B, seed=11, level=0.9)
    ci = mean_interval(values, domains, settings)
    assert ci == pytest.approx(_hand_domain_mean_ci(values, domains, seed=11, level=0.9), abs=1e-9)
    # a domain that is all 100 stays all 100 in every resample: strata are never mixed
    fixed = mean_interval([100.0] * 20 + [0.0] * 20, ["a"] * 20 + ["b"] * 20, settings)
    assert fixed == (50.0, 50.0)


def test_mean_interval_agrees_with_scipy_bootstrap_and_the_normal_approximation():
    rng = np.random.default_rng(2)
    flags = (rng.random(500) < 0.6).astype(float) * 100
    ours = mean_interval(flags, None, BootstrapSettings(resamples=4000, seed=0))
    ref = stats.bootstrap((flags,), np.mean, n_resamples=4000, method="percentile", random_state=1,
                          confidence_level=0.95).confidence_interval
    assert ours == pytest.approx((ref.low, ref.high), abs=0.6)
    p = flags.mean() / 100
    half = 196 * np.sqrt(p * (1 - p) / len(flags))
    assert ours == pytest.approx((100 * p - half, 100 * p + half), abs=0.8)


def test_same_seed_same_interval_other_seed_other_interval():
    pred, gold = _likert_data()
    a = spearman_interval(pred, gold, BootstrapSettings(resamples=200, seed=4))
    assert spearman_interval(pred, gold, BootstrapSettings(resamples=200, seed=4)) == a
    assert spearman_interval(pred, gold, BootstrapSettings(resamples=200, seed=5)) != a


def test_settings_from_env_and_bad_values():
    assert settings_from_env({}) == BootstrapSettings(1000, 0.95, 0, True)
    assert settings_from_env({"CRITIC_CI": "off", "CRITIC_CI_SEED": "3"}) == BootstrapSettings(1000, 0.95, 3, False)
    with pytest.raises(ConfigError, match="CRITIC_CI_RESAMPLES='many'"):
        settings_from_env({"CRITIC_CI_RESAMPLES": "many"})
    with pytest.raises(ConfigError, match="CRITIC_CI_LEVEL"):
        settings_from_env({"CRITIC_CI_LEVEL": "95"})
    with pytest.raises(ConfigError, match="CRITIC_CI="):
        settings_from_env({"CRITIC_CI": "maybe"})


# ----------------------------------------------------------------------------- end to end, lm-eval


_reply = hashed_critic  # feedback and comparison prompts: Decision lines, one reply in nine unreadable


def _value(reply):
    return None if reply.startswith("I cannot") else reply.split(":")[1].split()[0]


@pytest.fixture
def sample(monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, "sample")
    monkeypatch.setenv("CRITIC_CI_RESAMPLES", str(B))
    monkeypatch.setenv("CRITIC_CI_SEED", "13")


def _saved_run(tasks, folder):
    """A run of the scripted critic saved as lm-eval's CLI saves one with --output_path --log_samples (results and
    samples files, one time), then read back as `critic-eval summary / report / check` read it; lm-eval's results."""
    from lm_eval.loggers import EvaluationTracker

    from critic_tasks.reports.results import read_results

    out = lm_eval.simple_evaluate(model=scripted_lm(_reply), tasks=tasks, task_manager=critic_tasks.task_manager(),
                                  bootstrap_iters=0, log_samples=True)
    samples = out.pop("samples")
    tracker = EvaluationTracker(output_path=str(folder))
    tracker.save_results_aggregated(results=out, samples=samples)
    for task in out["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return read_results(folder), out["results"]


def test_lm_eval_results_carry_intervals_computed_like_the_metric(sample, tmp_path):
    results, own = _saved_run(["critic_feedback", "critic_comparison"], tmp_path / "run")
    # an interval is no lm-eval metric: its results hold the values only; the intervals come from the samples files
    assert "spearman,none" in own["critic_feedback"] and not [k for m in own.values() for k in m if "_ci_" in k]
    # feedback: pooled Spearman over every labelled item (unparsed -> 4), items resampled
    # items in the documented canonical order: sorted by the record's fields as text (domain, pred, parsed, gold,
    # quality), so that the interval does not depend on the order a harness hands records over
    rows = []
    for d in data.load_docs("feedback", "dev", data_dir="sample"):
        value = _value(_reply(prompts.critic_prompt(d)))
        rows.append((d["domain"], float(value or 4), value is not None, float(d["feedback_score"]), d["quality"]))
    rows.sort(key=lambda row: tuple(map(str, row)))
    pred, gold = [r[1] for r in rows], [r[3] for r in rows]
    fb = results["critic_feedback"]
    low, high = _hand_spearman_ci(pred, gold, seed=13)
    assert (fb["spearman_ci_low,none"], fb["spearman_ci_high,none"]) == pytest.approx((low, high), abs=1e-9)
    assert (fb["score_ci_low,none"], fb["score_ci_high,none"]) == pytest.approx(((low + 100) / 2, (high + 100) / 2))
    assert fb["spearman_ci_low,none"] <= fb["spearman,none"] <= fb["spearman_ci_high,none"]
    low_items = [(r[1], r[3]) for r in rows if r[4] == "low"]
    lo = _hand_spearman_ci([p for p, _ in low_items], [g for _, g in low_items], seed=13)
    assert (fb["spearman_low_ci_low,none"], fb["spearman_low_ci_high,none"]) == pytest.approx(lo, abs=1e-9)
    # comparison: pairs (both orders together) resampled, in pair-id order
    pairs = {}
    for d in data.load_docs("comparison", "dev", data_dir="sample"):
        pairs.setdefault(d["pair_id"], {"gold": d["preference"]})[d["order"]] = _value(_reply(prompts.critic_prompt(d)))
    swap = {"A": "B", "B": "A", "C": "C"}
    flags = [100.0 * (p["forward"] != p["reverse"] and p["forward"] == p["gold"] and p["reverse"] == swap[p["gold"]])
             for _, p in sorted(pairs.items())]
    cmp = results["critic_comparison"]
    assert (cmp["accuracy_ci_low,none"], cmp["accuracy_ci_high,none"]) == pytest.approx(
        _hand_domain_mean_ci(flags, ["all"] * len(flags), seed=13), abs=1e-9)
    assert cmp["accuracy,none"] == pytest.approx(sum(flags) / len(flags))
    # the same numbers on a rerun with the same seed
    again, _ = _saved_run(["critic_feedback"], tmp_path / "again")
    assert again["critic_feedback"]["spearman_ci_low,none"] == fb["spearman_ci_low,none"]


def test_intervals_off_leave_the_keys_out_and_values_unchanged(sample, monkeypatch, tmp_path):
    on, _ = _saved_run(["critic_feedback_chat"], tmp_path / "on")
    monkeypatch.setenv("CRITIC_CI", "off")
    results, _ = _saved_run(["critic_feedback_chat"], tmp_path / "off")
    metrics = results["critic_feedback_chat"]
    assert "spearman,none" in metrics and not any("_ci_" in k for k in metrics)
    assert metrics == {k: v for k, v in on["critic_feedback_chat"].items() if "_ci_" not in k}
    assert "spearman_ci_low,none" in on["critic_feedback_chat"]


def test_the_demo_prints_and_writes_each_value_with_its_interval(sample, monkeypatch, tmp_path, capsys):
    """`critic-eval demo` (its lm-eval run answered by the scripted critic): the table it prints and the results file
    it writes hold each value with its interval, computed from the run's logged rows (lm-eval's own results hold
    none)."""
    from critic_tasks.adapters.lm_eval import demo

    monkeypatch.setenv("CRITIC_REQUEST_CACHE", "off")
    monkeypatch.setattr(demo, "smollm2_model_args", lambda: "pretrained=scripted")
    evaluate, seen = lm_eval.simple_evaluate, []

    def scripted(**kwargs):  # the demo's own call, answered by the scripted critic (no chat template to apply)
        out = evaluate(**{**kwargs, "model": scripted_lm(_reply), "model_args": None, "apply_chat_template": False})
        seen.append({task: dict(metrics) for task, metrics in out["results"].items()})
        return out

    monkeypatch.setattr(lm_eval, "simple_evaluate", scripted)
    path = tmp_path / "demo.json"
    assert cli.main(["demo", "--tasks", "critic_feedback", "--output_path", str(path)]) == 0
    assert not [k for metrics in seen[0].values() for k in metrics if "_ci_" in k]
    rows, per_domain = [], {}
    for d in data.load_docs("feedback", "dev", data_dir="sample"):
        per_domain[d["domain"]] = per_domain.get(d["domain"], 0) + 1
        if per_domain[d["domain"]] > 1:  # the demo runs the first item of each domain
            continue
        value = _value(_reply(prompts.critic_prompt(d)))
        rows.append((d["domain"], float(value or 4), value is not None, float(d["feedback_score"]), d["quality"]))
    rows.sort(key=lambda row: tuple(map(str, row)))
    low, high = _hand_spearman_ci([r[1] for r in rows], [r[3] for r in rows], seed=13)
    written = json.loads(path.read_text())["critic_feedback"]
    assert (written["spearman_ci_low,none"], written["spearman_ci_high,none"]) == pytest.approx((low, high), abs=1e-9)
    table = {tuple(line.split()[:2]): line.split()[2:] for line in capsys.readouterr().out.splitlines()}
    value, chance = " ".join(table[("critic_feedback", "spearman")][:3]), table[("critic_feedback", "spearman")][3]
    assert value == f"{written['spearman,none']:.2f} [{low:.2f}, {high:.2f}]"
    assert float(chance) >= 0  # its chance line beside it (tests/test_demo_chance.py: its value)


def test_bad_interval_setting_stops_the_run_in_one_line(sample, monkeypatch, capsys):
    monkeypatch.setenv("CRITIC_CI_LEVEL", "high")
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "critic-eval: CRITIC_CI_LEVEL='high': expected a number"


# --- the other protocols' values: hand loops, one resample at a time, the same draws --------------------------


def _percentiles(reps, level=0.95):
    a = 100 * (1 - level) / 2
    return np.percentile(reps, a), np.percentile(reps, 100 - a)


def _draws(n, seed=0, resamples=B):
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _aiu_records(n=40, seed=3):
    from critic_tasks.protocols.metacritique.scoring import AIURecord

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k, m = int(rng.integers(0, 5)), int(rng.integers(1, 5))
        out.append(AIURecord(domain="metacritique", item=f"item{i:03d}", n_aius=k,
                             precision=tuple(bool(v) for v in rng.integers(0, 2, k)),
                             recall=tuple(bool(v) for v in rng.integers(0, 2, m))))
    return out


def test_aiu_intervals_equal_hand_loops():
    from critic_tasks.core.records import canonical
    from critic_tasks.protocols.metacritique.scoring import aiu_interval

    records = _aiu_records()
    settings = BootstrapSettings(resamples=B, level=0.95, seed=0)
    rows = canonical(records)  # the documented order the draws index into
    p = [list(r.precision) for r in rows]
    r = [list(r.recall) for r in rows]
    draws = _draws(len(rows))

    def share(x):
        return sum(x) / len(x) if x else 0.0

    def f1(a, b):
        return 0.0 if a == 0 or b == 0 else 2 * a * b / (a + b)

    macro = [sum(share(p[i]) for i in row) / len(row) * 100 for row in draws]
    assert aiu_interval(records, "precision", settings) == pytest.approx(_percentiles(macro))
    macro_f1 = [sum(f1(share(p[i]), share(r[i])) for i in row) / len(row) * 100 for row in draws]
    assert aiu_interval(records, "f1", settings) == pytest.approx(_percentiles(macro_f1))
    micro_f1 = []
    for row in draws:
        pu, ru = sum(len(p[i]) for i in row), sum(len(r[i]) for i in row)
        pm = sum(sum(p[i]) for i in row) / pu if pu else 0.0
        rm = sum(sum(r[i]) for i in row) / ru if ru else 0.0
        micro_f1.append(100 * f1(pm, rm))
    assert aiu_interval(records, "f1_micro", settings) == pytest.approx(_percentiles(micro_f1))


def test_preference_agreement_interval_equals_hand_loop():
    from critic_tasks.protocols.critiquellm.scoring import PreferenceRecord, preference_interval

    rng = np.random.default_rng(5)
    swap = {"A": "B", "B": "A", "C": "C"}
    records, agree = [], {}
    for i in range(60):
        gold, f = "ABC"[rng.integers(0, 3)], "ABC"[rng.integers(0, 3)]
        r = swap[f] if rng.random() < 0.7 else "ABC"[rng.integers(0, 3)]
        pid = f"p{i:02d}"
        records += [PreferenceRecord(domain="x", pair_id=pid, order="forward", verdict=f, parsed=True, gold=gold),
                    PreferenceRecord(domain="x", pair_id=pid, order="reverse", verdict=r, parsed=True, gold=gold)]
        agree[pid] = 100.0 * (r == swap[f] and f == gold)
    flags = [agree[k] for k in sorted(agree)]
    reps = [sum(flags[i] for i in row) / len(row) for row in _draws(len(flags))]
    got = preference_interval(records, "agreement", BootstrapSettings(resamples=B, level=0.95, seed=0))
    assert got == pytest.approx(_percentiles(reps))


def test_text_level_pearson_interval_equals_hand_loop_over_questions():
    from critic_tasks.protocols.critiquellm.scoring import RatingRecord, rating_interval

    rng = np.random.default_rng(9)
    records = []
    for q in range(25):
        for m in range(4):
            human = float(rng.integers(1, 11))
            records.append(RatingRecord(domain="writing", pred=float(np.clip(human + rng.integers(-3, 4), 1, 10)),
                                        parsed=True, gold=human, question=f"q{q:02d}", model=f"m{m}"))
    per_q = {}
    for q in sorted({r.question for r in records}):
        x = [r.pred for r in records if r.question == q]
        y = [r.gold for r in records if r.question == q]
        if len(set(x)) > 1 and len(set(y)) > 1:
            per_q[q] = 100 * stats.pearsonr(x, y).statistic
    values = list(per_q.values())
    reps = [sum(values[i] for i in row) / len(row) for row in _draws(len(values))]
    got = rating_interval(records, "text_pearson", BootstrapSettings(resamples=B, level=0.95, seed=0))
    assert got == pytest.approx(_percentiles(reps))
    assert rating_interval(records, "system_pearson", BootstrapSettings(resamples=B)) is None


def test_revision_intervals_equal_hand_loops():
    """RCO's critique utility (a mean over items) and MultiCritique's r_obj (per-reviser pass rates recomputed on
    each resample of items, then averaged over revisers)."""
    from critic_tasks.core.records import canonical
    from critic_tasks.protocols.revision.scoring import RevisionRecord, revision_interval

    rng = np.random.default_rng(11)
    records = []
    for i in range(50):
        passed = tuple(None if rng.random() < 0.1 else bool(rng.integers(0, 2)) for _ in range(2))
        prefs = tuple(float(rng.choice([0.0, 0.5, 1.0])) for _ in range(2))
        records.append(RevisionRecord(domain="math_cot", item=f"i{i:02d}", checked=True, revisers=("a", "b"),
                                      passed=passed, prefs=prefs))
    settings = BootstrapSettings(resamples=B, level=0.95, seed=0)
    rows = canonical(records)
    draws = _draws(len(rows))
    utility = [100 * sum(r.prefs) / len(r.prefs) for r in rows]
    reps = [sum(utility[i] for i in row) / len(row) for row in draws]
    assert revision_interval(records, "critique_utility", settings) == pytest.approx(_percentiles(reps))
    reps = []
    for row in draws:
        rates = []
        for j in range(2):
            verdicts = [rows[i].passed[j] for i in row if rows[i].passed[j] is not None]
            if verdicts:
                rates.append(100 * sum(verdicts) / len(verdicts))
        reps.append(sum(rates) / len(rates))
    assert revision_interval(records, "r_obj", settings) == pytest.approx(_percentiles(reps))
