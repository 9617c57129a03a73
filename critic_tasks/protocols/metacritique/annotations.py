"""P/R/F1 of each critique source of a file in MetaCritique's annotation format, from the labels alone.

The stored ``precision_score`` / ``recall_score`` / ``f1_score`` fields are never read: every number comes from
``precision_labels`` and ``recall_labels`` through ``core.metrics.prf.precision_recall_f1`` (macro = mean over
critiques, micro = pooled units). Pools combine sources: by default ``llm`` = every ``llm*_critique`` source, as
the paper's Table 6 pools its two LLM critiques (Llama-2-70B-Chat and Vicuna-13B).
"""

from __future__ import annotations

from pathlib import Path

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.metrics import precision_recall_f1
from critic_tasks.protocols.metacritique.data import load_annotations

LEVELS = {"macro": ("precision", "recall", "f1"), "micro": ("precision_micro", "recall_micro", "f1_micro")}


def _report(values: dict) -> dict:
    out = {level: {k.split("_")[0]: values[k] for k in keys} for level, keys in LEVELS.items()}
    out.update({k: int(values[k]) for k in ("critiques", "empty_precision", "empty_recall", "precision_units",
                                             "recall_units")})
    return out


def default_pools(sources: list[str]) -> dict[str, list[str]]:
    llm = [s for s in sources if s.startswith("llm")]
    return {"llm": llm} if len(llm) > 1 else {}


def parse_pool(spec: str, sources: list[str]) -> tuple[str, list[str]]:
    """``NAME=src1,src2`` -> (NAME, sources), each source checked against the file's."""
    name, sep, members = spec.partition("=")
    chosen = [m.strip() for m in members.split(",") if m.strip()]
    if not sep or not name or not chosen:
        raise ConfigError(f"--pool {spec!r}: expected NAME=source1,source2")
    unknown = [m for m in chosen if m not in sources]
    if unknown:
        raise ConfigError(f"--pool {spec!r}: unknown source(s) {', '.join(unknown)}; the file has {', '.join(sources)}")
    return name, chosen


def score_annotations(path: str | Path, pools: dict[str, list[str]] | None = None) -> dict:
    """``{source or pool: {"macro": {precision, recall, f1}, "micro": {...}, counts}}``, all x100."""
    _, by_source = load_annotations(path)
    pools = default_pools(list(by_source)) if pools is None else pools
    out = {}
    for name, members in [*((s, [s]) for s in by_source), *pools.items()]:
        rows = [row for m in members for row in by_source[m]]
        values = precision_recall_f1([r["precision_labels"] for r in rows], [r["recall_labels"] for r in rows])
        out[name] = {**_report(values), "sources": members}
    return out
