"""How far to trust a judge on MetaCritique: run its precision and recall steps on the released AIUs and compare
with the human per-unit labels (``annotation_data.json``).

Per critique source (and all sources pooled): ``precision_accuracy`` / ``recall_accuracy`` (x100: share of units
whose readable verdict equals the human label), ``precision_parse_rate`` / ``recall_parse_rate`` (units with a
readable verdict), and the Pearson / Spearman / Kendall (x100, ``core.metrics.correlation``) between the judge's
and the humans' critique-level precision, recall and F1 (each critique's scores from its readable verdicts; no
AIU -> 0, the rule of ``core.metrics.prf``), next to the macro P/R/F1 each side gives. The judge sees the
released AIUs, so the extraction step is not part of this check.
"""

from __future__ import annotations

from pathlib import Path

from critic_tasks.core.metrics import correlations, precision_recall_f1
from critic_tasks.core.metrics.prf import f1
from critic_tasks.llm import LLMSettings
from critic_tasks.protocols.metacritique.data import load_annotations
from critic_tasks.protocols.metacritique.judge import verdict_batches


def _share(labels) -> float:
    return sum(labels) / len(labels) if labels else 0.0


def _summary(rows: list[dict]) -> dict:
    out: dict = {"critiques": len(rows)}
    for step in ("precision", "recall"):
        pairs = [(j, h) for r in rows for j, h in zip(r[f"judge_{step}"], r[f"human_{step}"])]
        readable = [(j, h) for j, h in pairs if j is not None]
        out[f"{step}_units"] = len(pairs)
        out[f"{step}_parse_rate"] = 100.0 * len(readable) / len(pairs) if pairs else 0.0
        out[f"{step}_accuracy"] = 100.0 * sum(j == h for j, h in readable) / len(readable) if readable else 0.0
    judge = {"p": [], "r": [], "f1": []}
    human = {"p": [], "r": [], "f1": []}
    for r in rows:
        jp = _share([v for v in r["judge_precision"] if v is not None])
        jr = _share([v for v in r["judge_recall"] if v is not None])
        hp, hr = _share(r["human_precision"]), _share(r["human_recall"])
        for side, (p, q) in ((judge, (jp, jr)), (human, (hp, hr))):
            side["p"].append(p)
            side["r"].append(q)
            side["f1"].append(f1(p, q))
    for key, name in (("p", "precision"), ("r", "recall"), ("f1", "f1")):
        c = correlations(judge[key], human[key])
        out[f"{name}_correlation"] = c or {"pearson": None, "spearman": None, "kendall": None}
    judged = precision_recall_f1([[v for v in r["judge_precision"] if v is not None] for r in rows],
                                 [[v for v in r["judge_recall"] if v is not None] for r in rows])
    humans = precision_recall_f1([r["human_precision"] for r in rows], [r["human_recall"] for r in rows])
    out["judge_macro"] = {k: judged[k] for k in ("precision", "recall", "f1")}
    out["human_macro"] = {k: humans[k] for k in ("precision", "recall", "f1")}
    return out


def calibrate(path: str | Path, settings: LLMSettings, sources: list[str] | None = None, limit: int | None = None,
              progress: bool = True) -> dict:
    """``{source: summary, "all": summary}`` for the first ``limit`` items of each chosen source."""
    docs, by_source = load_annotations(path)
    chosen = sources or list(by_source)
    unknown = [s for s in chosen if s not in by_source]
    if unknown:
        raise ValueError(f"{path}: no critique source {', '.join(unknown)} (the file has {', '.join(by_source)})")
    n = len(docs) if limit is None else max(0, min(limit, len(docs)))
    keys = [(s, i) for s in chosen for i in range(n)]
    p_keys = [k for k in keys if by_source[k[0]][k[1]]["aius"]]  # a critique without AIU: nothing to ask
    precision, recall, _ = verdict_batches(settings, [(docs[i], by_source[s][i]["aius"]) for s, i in p_keys],
                                        [(docs[i], by_source[s][i]["critique"]) for s, i in keys], progress)
    p_by = dict(zip(p_keys, precision))
    rows: dict[str, list[dict]] = {s: [] for s in chosen}
    for k, (r_verdicts, *_) in zip(keys, recall):
        s, i = k
        labels = by_source[s][i]
        rows[s].append({"judge_precision": p_by[k][0] if k in p_by else (), "judge_recall": r_verdicts,
                        "human_precision": labels["precision_labels"], "human_recall": labels["recall_labels"]})
    out = {s: _summary(r) for s, r in rows.items()}
    if len(chosen) > 1:
        out["all"] = _summary([r for s in chosen for r in rows[s]])
    return out
