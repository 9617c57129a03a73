"""``critic-eval`` commands of the MetaCritique protocol.

    critic-eval metacritique-score annotation_data.json --json          # P/R/F1 per critique source, from labels
    critic-eval metacritique-calibrate annotation_data.json --model ...  # a judge's agreement with the human labels
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from critic_tasks.core.errors import DataError
from critic_tasks.reports.tables import render_rows


def score_command(argv: list[str]) -> int:
    from critic_tasks.protocols.metacritique.annotations import parse_pool, score_annotations
    from critic_tasks.protocols.metacritique.data import critique_sources, remote

    parser = argparse.ArgumentParser(prog="critic-eval metacritique-score", description=(
        "Macro (critique-level) and micro (AIU-level) precision / recall / F1, x100, of every critique source in a "
        "file of MetaCritique's annotation format, computed from precision_labels / recall_labels (stored score "
        "fields are ignored). By default the llm*_critique sources are also pooled as 'llm' (the paper's Table 6)."))
    parser.add_argument("file", type=Path, help="annotation_data.json (or a file in its format)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--pool", action="append", default=None, metavar="NAME=SRC1,SRC2",
                        help="report these sources pooled under NAME (repeatable; replaces the default 'llm' pool)")
    args = parser.parse_args(argv)
    pools = None
    if args.pool:
        if not args.file.is_file():
            raise DataError(f"{args.file}: no such annotation file")
        sources = critique_sources(remote.read_json(args.file))
        pools = dict(parse_pool(p, sources) for p in args.pool)
    report = score_annotations(args.file, pools)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    rows = [("source", "macro P", "macro R", "macro F1", "micro P", "micro R", "micro F1", "critiques", "no AIU")]
    for name, r in report.items():
        rows.append((name, *(f"{r[level][k]:.2f}" for level in ("macro", "micro") for k in ("precision", "recall", "f1")),
                     str(r["critiques"]), str(r["empty_precision"])))
    print(render_rows(rows))
    return 0


def calibrate_command(argv: list[str]) -> int:
    from critic_tasks.cli.judge import _judge_flags, _settings
    from critic_tasks.protocols.metacritique.calibration import calibrate
    from critic_tasks.protocols.metacritique.judge import judge_identity

    parser = argparse.ArgumentParser(prog="critic-eval metacritique-calibrate", description=(
        "Run the judge's MetaCritique precision and recall steps on the released AIUs of an annotation file and "
        "report its agreement with the human per-unit labels (accuracy) and the correlation of critique-level "
        "scores with the human ones."))
    parser.add_argument("file", type=Path, help="annotation_data.json (or a file in its format)")
    parser.add_argument("--sources", default=None, help="comma-separated critique sources (default: all in the file)")
    parser.add_argument("--limit", type=int, default=None, help="first N items of each source (a quick look)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no_progress", action="store_true")
    _judge_flags(parser)
    args = parser.parse_args(argv)
    settings = _settings(args)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()] if args.sources else None
    report = calibrate(args.file, settings, sources, args.limit, progress=not args.no_progress)
    if args.json:
        print(json.dumps({"results": report, "judge": judge_identity(settings)}, indent=2))
        return 0
    fmt = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
    rows = [("source", "critiques", "P acc", "P parsed", "R acc", "R parsed", "F1 pearson", "F1 spearman",
             "judge F1", "human F1")]
    for name, r in report.items():
        rows.append((name, str(r["critiques"]), fmt(r["precision_accuracy"]), fmt(r["precision_parse_rate"]),
                     fmt(r["recall_accuracy"]), fmt(r["recall_parse_rate"]), fmt(r["f1_correlation"]["pearson"]),
                     fmt(r["f1_correlation"]["spearman"]), fmt(r["judge_macro"]["f1"]), fmt(r["human_macro"]["f1"])))
    print(f"judge {settings.model} ({settings.backend}) against MetaCritique's human labels (x100):")
    print(render_rows(rows))
    return 0
