"""The lm-eval adapter: every YAML loads, and a scripted LM yields exactly the expected metrics."""

import os
from pathlib import Path

import pytest
from helpers import brute_force_pass_at_k, correction_reply, expected_pass, hashed_critic, scripted_lm
from scipy import stats

import critic_tasks
from critic_tasks import registry
from critic_tasks.adapters.lm_eval import generate as _generate_configs
from critic_tasks.protocols.criticbench import data, prompts
from critic_tasks.protocols.criticbench.prompts import DOMAIN_NAMES
from critic_tasks.sandbox import get_executor

lm_eval = pytest.importorskip("lm_eval")
# lm-eval fills its model registry on first lookup only while it is empty: its own models first, or registering ours
# at collection would leave "hf" unknown to every later test in this process
import lm_eval.models  # noqa: E402,F401,F811
from lm_eval.api.model import LM  # noqa: E402  (after the skip)
from lm_eval.api.registry import register_model  # noqa: E402


@pytest.fixture(scope="module")
def manager():
    return critic_tasks.task_manager()


@pytest.fixture(autouse=True)
def sample_data(monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, "sample")


def test_generated_yaml_in_sync_with_generator():
    files = _generate_configs.render()
    on_disk = {p.name: p.read_text() for p in Path(critic_tasks.tasks_dir()).glob("*yaml")}
    assert on_disk == files, "run: python -m critic_tasks.generate"


def test_generated_utils_binds_every_name_the_yaml_files_use():
    """tasks/utils.py defines every function the YAML files name with ``!function`` (each kind's hooks and filter,
    one aggregation per metric value; grep finds each definition), and nothing else."""
    on_disk = (Path(critic_tasks.tasks_dir()) / "utils.py").read_text()
    assert on_disk == _generate_configs.render_utils(), "run: python -m critic_tasks.generate"
    assert "\nfeedback_process_results = _FEEDBACK.process_results\n" in on_disk
    assert "\naggregate = TaskFunctions.aggregate\n" in on_disk
    assert "import *" not in on_disk


@pytest.mark.slow
def test_every_task_yaml_loads(manager):
    # lm-eval skips a YAML that fails to parse without an error; make that loud here.
    groups = ["critic", "critic_sub"]
    yaml_tasks = sorted(p.stem for p in Path(critic_tasks.tasks_dir()).glob("critic_*.yaml")
                        if p.stem not in registry.GROUPS
                        and registry.TASKS[p.stem].kind_spec.protocol == "criticbench")  # other protocols: their own tests
    # objective: 3 dimensions x (all + 9 domains + test), correction x (all + empty + 2x4 domains + sampled + test);
    # subjective: feedback and comparison x (all + 9 domains), correction and correction_empty x (all + 5 text domains);
    # SAvg: stage 1 (all + 9 domains), correction_self (all + 4) and correction_self_sub (all + 5)
    assert len(yaml_tasks) == 3 * (len(DOMAIN_NAMES) + 2) + 12 + 2 * (len(DOMAIN_NAMES) + 1) + 2 * 6 + 10 + 5 + 6
    savg = [t for t in yaml_tasks if registry.TASKS[t].self_feedback]  # need stage-1 samples: tests/test_self_feedback.py
    assert len(savg) == 11 and all(t in manager.all_tasks for t in savg)
    yaml_tasks = [t for t in yaml_tasks if t not in savg]
    for name in yaml_tasks + groups + ["critic_per_domain", "critic_test", "critic_sub_per_domain"]:
        assert name in manager.all_tasks, name
    loaded = manager.load(yaml_tasks)["tasks"]
    assert sorted(loaded) == yaml_tasks
    for name, task in loaded.items():
        docs = list(task.eval_docs)
        assert docs, name
        assert task.doc_to_text(docs[0]).strip(), name


@pytest.mark.slow
def test_revisions_get_a_larger_budget(manager):
    """Whole programs need room: correction tasks generate up to 1024 tokens, the others 512 (greedy)."""
    tasks = manager.load(["critic_correction", "critic_correction_sampled", "critic_feedback"])["tasks"]
    budgets = {name: task.config.generation_kwargs["max_gen_toks"] for name, task in tasks.items()}
    assert budgets == {"critic_correction": 1024, "critic_correction_sampled": 1024, "critic_feedback": 512}
    assert tasks["critic_correction"].config.generation_kwargs["do_sample"] is False


CORRECTION_DOCS = {
    prompts.critic_prompt({**d, "with_feedback": wf}): d
    for wf in (True, False) for d in data.load_docs("correction", "dev", data_dir="sample")
}


def _scripted_reply(prompt: str) -> str:
    """A deterministic critic: a pseudo-random reply derived from the prompt, sometimes unparseable."""
    if prompt in CORRECTION_DOCS:
        return correction_reply(CORRECTION_DOCS[prompt])
    return hashed_critic(prompt)


def _expected_likert(dimension, gold_key, quality_key, marker):
    """Independent: the same replies, scored with scipy directly, pooled over all domains."""
    docs = data.load_docs(dimension, "dev", data_dir="sample")
    preds, gold, by_quality = [], [], {}
    parsed = 0
    for doc in docs:
        reply = _scripted_reply(prompts.critic_prompt(doc))
        value = 4.0 if reply.startswith("I cannot") else float(reply.split(":")[1].split()[0])
        parsed += not reply.startswith("I cannot")
        preds.append(value)
        gold.append(doc[gold_key])
        by_quality.setdefault(doc[quality_key], ([], []))
        by_quality[doc[quality_key]][0].append(value)
        by_quality[doc[quality_key]][1].append(doc[gold_key])
    rho = stats.spearmanr(preds, gold).statistic * 100
    out = {"spearman": rho, "score": (rho + 100) / 2, "parse_rate": 100 * parsed / len(docs)}
    for quality, (p, g) in by_quality.items():
        # documented rule: an undefined (constant-input) correlation is reported as 0
        constant = len(set(p)) < 2 or len(set(g)) < 2
        out[f"spearman_{quality}"] = 0.0 if constant else stats.spearmanr(p, g).statistic * 100
    return out


def _expected_comparison():
    docs = data.load_docs("comparison", "dev", data_dir="sample")
    verdicts = {}
    parsed = 0
    for doc in docs:
        reply = _scripted_reply(prompts.critic_prompt(doc))
        verdict = None if reply.startswith("I cannot") else reply.split(":")[1].split()[0]
        parsed += verdict is not None
        verdicts.setdefault(doc["pair_id"], {"gold": doc["preference"], "difficulty": doc["difficulty"]})
        verdicts[doc["pair_id"]][doc["order"]] = verdict
    swap = {"A": "B", "B": "A", "C": "C"}
    strict, loose, consistent = [], [], []
    per = {"easy": ([], []), "hard": ([], [])}
    for pair in verdicts.values():
        f, r, g = pair["forward"], pair["reverse"], pair["gold"]
        ok = f != r and f == g and r == swap[g]  # paper §4.1: the verdicts differ and both match the label
        ok_loose = f is not None and r is not None and f != r and f == g  # the toolkit's rule
        strict.append(ok)
        loose.append(ok_loose)
        per[pair["difficulty"]][0].append(ok)
        per[pair["difficulty"]][1].append(ok_loose)
        consistent.append(f is not None and r == swap[f])
    pct = lambda xs: 100 * sum(xs) / len(xs)  # noqa: E731
    return {"accuracy": pct(strict), "accuracy_loose": pct(loose), "consistency": pct(consistent),
            "accuracy_easy": pct(per["easy"][0]), "accuracy_hard": pct(per["hard"][0]),
            "accuracy_loose_easy": pct(per["easy"][1]), "accuracy_loose_hard": pct(per["hard"][1]),
            "score": pct(strict), "parse_rate": 100 * parsed / len(docs)}


def _expected_correction():
    docs = data.load_docs("correction", "dev", data_dir="sample")
    outcomes = [expected_pass(d) for d in docs]
    by_domain, by_quality = {}, {}
    for d, (_, passed) in zip(docs, outcomes):
        by_domain.setdefault(d["domain"], []).append(passed)
        by_quality.setdefault(d["quality"], {}).setdefault(d["domain"], []).append(passed)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    out = {"pass_rate": 100 * mean([mean(v) for v in by_domain.values()]),
           "parse_rate": 100 * mean([p for p, _ in outcomes]), "invalid_items": 0.0}
    out["score"] = out["pass_rate"]
    out["pass@1"] = out["pass_rate"]
    for quality, domains in by_quality.items():
        out[f"pass_rate_{quality}"] = 100 * mean([mean(v) for v in domains.values()])
    return out


@pytest.mark.slow
def test_scripted_lm_gives_exact_metrics(manager):
    lm = scripted_lm(_scripted_reply)
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic"], task_manager=manager, bootstrap_iters=0)
    results = out["results"]
    expected = {
        "critic_feedback": _expected_likert("feedback", "feedback_score", "quality", "Decision"),
        "critic_meta": _expected_likert("meta", "meta_feedback_score", "raw_quality", "Score"),
        "critic_comparison": _expected_comparison(),
        "critic_correction": _expected_correction(),
    }
    for task, metrics in expected.items():
        for key, value in metrics.items():
            assert results[task][f"{key},none"] == pytest.approx(value, abs=1e-9), (task, key)
    assert 0 < expected["critic_correction"]["pass_rate"] < 100  # the sample exercises both outcomes
    overall = sum(expected[t]["score"] for t in expected) / 4
    assert results["critic"]["score,none"] == pytest.approx(overall, abs=1e-9)
    # Both orders of every pair were asked.
    n_pairs = len(data.load_docs("comparison", "dev", data_dir="sample", both_orders=False))
    assert sum("Decision: A`, `Decision: B`" in p for p in lm.prompts) == 2 * n_pairs


# ----------------------------------------------------------------------------- the same check, fast tier
# A short lm-eval run (lm-eval's own simple_evaluate, a model it builds by its registered name, --limit 12) of
# critic_feedback and critic_comparison: the metrics it prints against values computed here from the canned replies
# and the sample data's human labels (scipy for Spearman, hand loops for the comparison rules).

LIMIT = 12  # the first 12 documents of each task: 12 feedback items; 6 comparison pairs, each in both orders


def canned_reply(prompt: str) -> str:
    """A critic that reads nothing (``helpers.hashed_critic``), one reply in five unreadable."""
    return hashed_critic(prompt, unreadable_every=5)


@register_model("critic-canned-critic")
class CannedCritic(LM):
    """A zero-cost model lm-eval builds from its name, answering with ``canned_reply``."""

    def __init__(self, **_settings):  # batch_size, device: nothing to set
        super().__init__()

    def generate_until(self, requests, disable_tqdm=False):
        return [canned_reply(r.args[0]) for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


def _by_hand_feedback(samples) -> dict:
    """Spearman x100 (scipy) of the parsed Likert scores (the midpoint 4 for an unreadable reply) against the human
    scores, pooled and per quality (0 where constant: the documented rule); score = (rho + 100) / 2."""
    preds, golds, parsed, by_quality = [], [], 0, {}
    for sample in samples:
        reply, doc = sample["resps"][0][0], sample["doc"]
        value = float(reply.split(":")[1].split()[0]) if reply.startswith("Decision:") else 4.0
        parsed += reply.startswith("Decision:")
        preds.append(value)
        golds.append(doc["feedback_score"])
        pair = by_quality.setdefault(doc["quality"], ([], []))
        pair[0].append(value)
        pair[1].append(doc["feedback_score"])
    rho = stats.spearmanr(preds, golds).statistic * 100
    out = {"spearman": rho, "score": (rho + 100) / 2, "parse_rate": 100 * parsed / len(samples)}
    for quality, (p, g) in by_quality.items():
        out[f"spearman_{quality}"] = 0.0 if len(set(p)) < 2 or len(set(g)) < 2 else stats.spearmanr(p, g).statistic * 100
    return out


def _by_hand_comparison(samples) -> dict:
    """Per pair: strict accuracy (the two orders' verdicts differ and both match the label), loose (both read, they
    differ, the forward one matches), consistency (the reverse is the swapped forward)."""
    pairs, parsed = {}, 0
    for sample in samples:
        reply, doc = sample["resps"][0][0], sample["doc"]
        verdict = reply.split(":")[1].split()[0] if reply.startswith("Decision:") else None
        parsed += verdict is not None
        pairs.setdefault(doc["pair_id"], {"gold": doc["preference"], "difficulty": doc["difficulty"]})[doc["order"]] = verdict
    assert all("forward" in p and "reverse" in p for p in pairs.values())  # whole pairs within the limit
    swap = {"A": "B", "B": "A", "C": "C"}
    strict, loose, consistent = [], [], []
    for p in pairs.values():
        f, r, g = p["forward"], p["reverse"], p["gold"]
        strict.append(f != r and f == g and r == swap[g])
        loose.append(f is not None and r is not None and f != r and f == g)
        consistent.append(f is not None and r == swap[f])
    pct = lambda xs: 100 * sum(xs) / len(xs)  # noqa: E731
    return {"accuracy": pct(strict), "accuracy_loose": pct(loose), "consistency": pct(consistent),
            "score": pct(strict), "parse_rate": 100 * parsed / len(samples)}


def test_a_short_lm_eval_run_prints_the_metrics_computed_by_hand(manager):
    out = lm_eval.simple_evaluate(model="critic-canned-critic", tasks=["critic_feedback", "critic_comparison"],
                                  task_manager=manager, limit=LIMIT, bootstrap_iters=0, log_samples=True)
    results, samples = out["results"], out["samples"]
    assert [len(samples[t]) for t in ("critic_feedback", "critic_comparison")] == [LIMIT, LIMIT]
    expected = {"critic_feedback": _by_hand_feedback(samples["critic_feedback"]),
                "critic_comparison": _by_hand_comparison(samples["critic_comparison"])}
    for task, metrics in expected.items():
        assert 0 < metrics["parse_rate"] < 100, task  # the limit holds readable and unreadable replies
        for key, value in metrics.items():
            assert results[task][f"{key},none"] == pytest.approx(value, abs=1e-9), (task, key)
    # not a degenerate sample: a correlation other than 0, and pairs both right and wrong
    assert expected["critic_feedback"]["spearman"] != 0
    assert 0 < expected["critic_comparison"]["accuracy_loose"] < 100


@pytest.mark.slow
def test_test_split_generates_and_reports_labels_unavailable(manager):
    lm = scripted_lm(_scripted_reply)
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_test"], task_manager=manager,
                                  bootstrap_iters=0, log_samples=True)
    results = out["results"]
    for task in ("critic_feedback_test", "critic_meta_test", "critic_comparison_test"):
        metrics = results[task]
        assert metrics["labels_available,none"] == 0.0
        assert "parse_rate,none" in metrics
        assert not any(k.startswith(("spearman,", "score,", "accuracy,")) for k in metrics), metrics
        assert len(out["samples"][task]) > 0  # generations kept for later scoring
    assert "consistency,none" in results["critic_comparison_test"]


def sampling_reply():
    """Each correction prompt comes `repeats` times; the first c_i replies for math_cot item i are right."""
    seen: dict[str, int] = {}

    def reply(prompt):
        j = seen[prompt] = seen.get(prompt, -1) + 1
        doc = CORRECTION_DOCS[prompt]
        if doc["domain"] == "math_cot":
            return f"#### RESULT: {doc['ground_truth_answer']}" if j < doc["item_index"] + 1 else "#### RESULT: -1"
        return correction_reply(doc)

    return reply, seen


@pytest.mark.slow
def test_sampled_correction_reports_unbiased_pass_at_k(manager):
    reply, seen = sampling_reply()
    lm = scripted_lm(reply)
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic_correction_sampled"], task_manager=manager,
                                  bootstrap_iters=0)
    metrics = out["results"]["critic_correction_sampled"]
    docs = data.load_docs("correction", "dev", data_dir="sample")
    n = 5
    assert all(count == n - 1 for count in seen.values())
    for k in (1, 5):
        per_domain = {}
        for d in docs:
            if d["domain"] == "math_cot":
                c = min(d["item_index"] + 1, n)
            else:
                c = n * expected_pass(d)[1]
            per_domain.setdefault(d["domain"], []).append(brute_force_pass_at_k(n, c, k))
        expected = 100 * sum(sum(v) / len(v) for v in per_domain.values()) / len(per_domain)
        assert metrics[f"pass@{k},none"] == pytest.approx(expected, abs=1e-9), k
    assert metrics["pass_rate,none"] == pytest.approx(metrics["pass@1,none"])
    assert "pass@10,none" not in metrics  # only 5 samples per item
    # the results name the sandbox layer that ran the code items' programs
    assert metrics["isolation,none"] == get_executor(os.environ.get("CRITIC_EXECUTOR", "sandbox")).isolation


@pytest.mark.slow
def test_task_manager_indexes_lm_evals_own_tasks_only_when_asked(monkeypatch):
    """critic_tasks.task_manager() answers like lm-eval's full TaskManager with our folder included, but reads
    lm-eval's own task tree (~14,700 YAMLs, seconds) only for a name that is not ours, a glob or a listing."""
    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._index import TaskIndex

    full = TaskManager(include_path=critic_tasks.tasks_dir())
    lm_eval_tree = Path(lm_eval.tasks.__file__).parent
    built = []
    real_build = TaskIndex.build

    def spy(paths, **kwargs):
        paths = list(paths)
        built.append([Path(p) for p in paths])
        return real_build(paths, **kwargs)

    monkeypatch.setattr(TaskIndex, "build", staticmethod(spy))
    ours = critic_tasks.task_manager()
    assert ours.match_tasks(["critic_meta", "critic_feedback"]) == ["critic_feedback", "critic_meta"]
    loaded = ours.load(["critic", "critic_meta_chat"])
    assert set(loaded["tasks"]) == set(full.load(["critic", "critic_meta_chat"])["tasks"])
    assert all(lm_eval_tree not in paths for paths in built)  # our tasks alone: lm-eval's tree never read

    assert ours.match_tasks(["critic_feed*"]) == full.match_tasks(["critic_feed*"])  # a glob: the full index
    assert lm_eval_tree in built[-1]
    assert ours.match_tasks(["gsm8k", "critic_meta"]) == full.match_tasks(["gsm8k", "critic_meta"]) == [
        "critic_meta", "gsm8k"]
    assert ours.task_index["gsm8k"].yaml_path == full.task_index["gsm8k"].yaml_path
    assert ours.all_tasks == full.all_tasks and ours.all_groups == full.all_groups

    # load() looks names up through _entry (loading gsm8k itself would need its dataset from the Hub)
    fresh = critic_tasks.task_manager()  # a name lm-eval has and we do not: found, by indexing everything
    assert fresh._entry("gsm8k").yaml_path == full.task_index["gsm8k"].yaml_path
    assert ours.match_tasks(["no_such_task"]) == full.match_tasks(["no_such_task"]) == []
    assert critic_tasks.task_manager(include_defaults=False).all_tasks == sorted(
        TaskManager(include_path=critic_tasks.tasks_dir(), include_defaults=False).all_tasks)
