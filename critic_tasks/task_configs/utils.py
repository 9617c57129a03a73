"""The hooks the lm-eval YAML files name (``!function utils.<name>``).

A thin adapter: data loading, prompts, parsing and metrics live in the core.
``process_results`` returns the same per-document record under every metric key
the document contributes to (a ``spearman_low`` key only for low-quality items,
for example), so each aggregation below is one pure function over a list of
records and pooling across domains happens naturally.
"""

from __future__ import annotations

from critic_tasks import data, prompts, scoring

_DATASET_KWARGS = ("split", "domains", "data_dir")


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


doc_to_text = prompts.critic_prompt
doc_to_target = scoring.gold_text


def process_results(doc: dict, results: list[str]) -> dict:
    rec = scoring.record(doc, results[0] if results else None)
    out = {"parse_rate": rec, "labels_available": rec}
    if doc["dimension"] == "comparison":
        out["consistency"] = rec
        if rec["gold"] is not None:
            out.update({"accuracy": rec, "accuracy_loose": rec, f"accuracy_{rec['difficulty']}": rec, "score": rec})
    elif rec["gold"] is not None:
        out.update({"spearman": rec, f"spearman_{rec['quality']}": rec, "score": rec, "spearman_warnings": rec})
    return out


# Aggregations: each gets the records emitted under its key.
def agg_spearman(records):
    return scoring.likert_spearman(records)[0]


def agg_likert_score(records):
    return scoring.likert_metrics(records)["score"]


def agg_spearman_warnings(records):
    return scoring.likert_metrics(records)["spearman_warnings"]


def agg_likert_parse_rate(records):
    return scoring.likert_metrics(records)["parse_rate"]


def agg_labels_available(records):
    return 100.0 * sum(r["gold"] is not None for r in records) / len(records) if records else 0.0


def _comparison(key):
    def aggregate(records):
        return scoring.comparison_pair_metrics(records)[key]

    aggregate.__name__ = f"agg_comparison_{key}"
    return aggregate


agg_accuracy = _comparison("accuracy")
agg_accuracy_loose = _comparison("accuracy_loose")
agg_consistency = _comparison("consistency")
agg_comparison_parse_rate = _comparison("parse_rate")
agg_comparison_score = _comparison("score")
