"""The hooks the lm-eval YAML files name (``!function utils.<name>``).

A thin adapter: data loading, prompts, parsing and metrics live in the core.
``process_results`` returns the same per-document record under every metric key
the document contributes to (a ``spearman_low`` key only for low-quality items,
for example), so each aggregation below is one pure function over a list of
records and pooling across domains happens naturally.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict

from critic_tasks import data, prompts, scoring

log = logging.getLogger("critic_tasks")

_DATASET_KWARGS = ("split", "domains", "data_dir", "fmt")


def _load(dimension: str, **kwargs):
    import datasets

    # lm-eval passes the task's metadata (version, --metadata JSON) and dataset_kwargs together.
    options = {k: kwargs[k] for k in _DATASET_KWARGS if k in kwargs}
    extra = {k: kwargs[k] for k in ("with_feedback",) if k in kwargs}
    docs = data.load_docs(dimension, **options)
    for doc in docs:
        doc.update(extra)
    return datasets.DatasetDict({"eval": datasets.Dataset.from_list(docs)})


def load_feedback(**kwargs):
    return _load("feedback", **kwargs)


def load_comparison(**kwargs):
    return _load("comparison", **kwargs)


def load_meta(**kwargs):
    return _load("meta", **kwargs)


def load_correction(**kwargs):
    return _load("correction", **kwargs)


class CorrectionCheck:
    """lm-eval filter: check every revision of the task in one batch, so programs run in parallel.

    Replaces each document's generations with their check results (dicts, kept in
    ``--log_samples`` output). Items whose gold answer or unit test is unusable are
    marked ``invalid``, excluded from pass rates and counted in ``invalid_items``.
    """

    def __init__(self, **kwargs):
        self.executor_name = kwargs.get("executor") or os.environ.get("CRITIC_EXECUTOR", "sandbox")

    def apply(self, resps, docs):
        from critic_tasks.correction import check_corrections
        from critic_tasks.plugins.executor import get_executor

        executor = get_executor(self.executor_name)
        flat = [(i, text) for i, texts in enumerate(resps) for text in texts]
        by_domain = defaultdict(list)
        for position, (i, _) in enumerate(flat):
            by_domain[docs[i]["domain"]].append(position)
        outcomes = [None] * len(flat)
        for domain, positions in by_domain.items():
            checked = check_corrections(domain, [flat[p][1] for p in positions], [docs[flat[p][0]] for p in positions],
                                        executor=executor, invalid="mark")
            for p, outcome in zip(positions, checked):
                if outcome["status"] == "invalid":
                    doc = docs[flat[p][0]]
                    log.warning("critic_tasks: %s[%s] excluded: %s", doc["source_file"], doc["item_index"],
                                outcome["detail"])
                outcomes[p] = outcome
        per_doc = [[] for _ in resps]
        for (i, _), outcome in zip(flat, outcomes):
            per_doc[i].append(outcome)
        return per_doc


doc_to_text = prompts.critic_prompt
doc_to_target = scoring.gold_text


class JudgeFilter:
    """lm-eval filter for the subjective tasks: judge every generation of the task concurrently.

    Settings come from CRITIC_JUDGE_* (see ``critic_tasks.plugins.judge``). Without a judge model
    configured, judging is deferred: the run keeps its generations (use ``--log_samples``) and
    ``critic-eval judge <output dir>`` scores them later, with the same numbers.
    """

    def __init__(self, **kwargs):
        pass

    def apply(self, resps, docs):
        from critic_tasks.plugins.judge import JudgeSettings
        from critic_tasks.subjective import judge_docs

        settings = JudgeSettings.from_env()
        if not settings.model:
            log.warning("critic_tasks: no judge configured (CRITIC_JUDGE_MODEL unset): judging deferred; "
                        "keep generations with --log_samples and run `critic-eval judge <output_path>`")
            return [[{"deferred": True}] for _ in resps]
        records = judge_docs(docs, [r[0] if r else None for r in resps], settings)
        identity = settings.identity()
        return [[{**rec, "judge": identity}] for rec in records]


def process_results(doc: dict, results: list) -> dict:
    if doc.get("fmt") == "sub":
        return _judged_results(results[0][0])  # the JudgeFilter's record for this document
    if doc["dimension"] == "correction":
        return _correction_results(doc, results[0])
    rec = scoring.record(doc, results[0] if results else None)
    out = {"parse_rate": rec, "labels_available": rec}
    if doc["dimension"] == "comparison":
        out["consistency"] = rec
        if rec["gold"] is not None:
            out.update({"accuracy": rec, "accuracy_loose": rec, f"accuracy_{rec['difficulty']}": rec, "score": rec})
    elif rec["gold"] is not None:
        out.update({"spearman": rec, f"spearman_{rec['quality']}": rec, "score": rec, "spearman_warnings": rec})
    return out


def _correction_results(doc: dict, outcomes) -> dict:
    if isinstance(outcomes, dict) or isinstance(outcomes, str):  # one sample without our filter list
        outcomes = [outcomes]
    rec = scoring.correction_record(doc, outcomes)
    out = {"parse_rate": rec, "invalid_items": rec}
    if not rec["invalid"]:
        out.update({"pass_rate": rec, f"pass_rate_{rec['quality']}": rec, "score": rec})
        out.update({f"pass@{k}": rec for k in scoring.PASS_AT_K if k <= len(rec["passed"])})
    return out


def _judged_results(rec: dict) -> dict:
    if rec.get("deferred"):
        return {"judge_deferred": 1.0}
    out = {"judge_parse_rate": rec, "judge_failed": rec}
    if rec["score"] is not None:  # no usable score: counted above, and absent from the means (not zero)
        out.update({"judge_score": rec, f"judge_score_{rec['group']}": rec})
    return out


# Aggregations: each gets the records emitted under its key (a per-quality key only its quality's records).
def _metric_of(metrics_fn, key: str, name: str):
    def aggregate(records):
        return metrics_fn(records)[key]

    aggregate.__name__ = name
    return aggregate


def _judge_metrics(records):
    from critic_tasks.subjective import judge_metrics

    return judge_metrics(records)


def agg_spearman(records):
    return scoring.likert_spearman(records)[0]


def agg_labels_available(records):
    return 100.0 * sum(r["gold"] is not None for r in records) / len(records) if records else 0.0


agg_likert_score = _metric_of(scoring.likert_metrics, "score", "agg_likert_score")
agg_spearman_warnings = _metric_of(scoring.likert_metrics, "spearman_warnings", "agg_spearman_warnings")
agg_likert_parse_rate = _metric_of(scoring.likert_metrics, "parse_rate", "agg_likert_parse_rate")

agg_accuracy = _metric_of(scoring.comparison_pair_metrics, "accuracy", "agg_accuracy")
agg_accuracy_loose = _metric_of(scoring.comparison_pair_metrics, "accuracy_loose", "agg_accuracy_loose")
agg_consistency = _metric_of(scoring.comparison_pair_metrics, "consistency", "agg_consistency")
agg_comparison_parse_rate = _metric_of(scoring.comparison_pair_metrics, "parse_rate", "agg_comparison_parse_rate")
agg_comparison_score = _metric_of(scoring.comparison_pair_metrics, "score", "agg_comparison_score")

agg_pass_rate = _metric_of(scoring.correction_metrics, "pass_rate", "agg_pass_rate")
agg_correction_parse_rate = _metric_of(scoring.correction_metrics, "parse_rate", "agg_correction_parse_rate")
agg_invalid_items = _metric_of(scoring.correction_metrics, "invalid_items", "agg_invalid_items")
agg_pass_at_1 = _metric_of(scoring.correction_metrics, "pass@1", "agg_pass_at_1")
agg_pass_at_5 = _metric_of(scoring.correction_metrics, "pass@5", "agg_pass_at_5")
agg_pass_at_10 = _metric_of(scoring.correction_metrics, "pass@10", "agg_pass_at_10")

agg_judge_score = _metric_of(_judge_metrics, "judge_score", "agg_judge_score")
agg_judge_parse_rate = _metric_of(_judge_metrics, "judge_parse_rate", "agg_judge_parse_rate")
agg_judge_failed = _metric_of(_judge_metrics, "judge_failed", "agg_judge_failed")


def agg_count(values):
    return float(sum(values))
