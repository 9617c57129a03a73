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
