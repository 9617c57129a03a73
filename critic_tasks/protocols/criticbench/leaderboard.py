"""The published CriticEval leaderboard files (``scores_obj.csv``, ``scores_sub.csv``) and what their columns mean.

Format: a header ``Model,<score columns>,opensourced,link``, one row per model. The objective file's columns are
feedback, correction, comparison, meta_feedback and overall (x100); the subjective file's feedback, correction,
comparison and overall (judge scores, 1-10). They were computed on the **test** split with the released toolkit's
prompts, parser and comparison rule (our ``toolkit`` protocol), so each column corresponds to one of our metrics:
the Spearman of feedback and meta-feedback (not their ``score``), the toolkit's comparison rule (``accuracy_loose``),
the correction pass rate, the judge scores, and the groups' overalls.

Not every published overall follows the toolkit's formula (``compute_overall.py``: objective = the mean of
(feedback + 100) / 2, correction, comparison and (meta + 100) / 2; subjective = the plain mean of the three).
``overall_mismatch`` says, row by row, when it does not and why: critique-only models (scorers with correction and
meta-feedback 0, as never evaluated there) were given the plain mean of their remaining raw columns; a few rows match
no formula at all. The report marks them, since our runs' overall is always the formula's.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from critic_tasks.core.errors import DataError

PUBLISHED_SPLIT = "test"
PUBLISHED_PROTOCOL = "toolkit"

# leaderboard kind -> column -> (our task, our metric key); the first columns identify the kind
COLUMNS = {
    "objective": {"feedback": ("critic_feedback", "spearman"), "correction": ("critic_correction", "pass_rate"),
                  "comparison": ("critic_comparison", "accuracy_loose"), "meta_feedback": ("critic_meta", "spearman"),
                  "overall": ("critic", "score")},
    "subjective": {"feedback": ("critic_feedback_sub", "judge_score"),
                   "correction": ("critic_correction_sub", "judge_score"),
                   "comparison": ("critic_comparison_sub", "judge_score"), "overall": ("critic_sub", "judge_score")},
}


# Published values are rounded to 2 decimals: a recomputed overall within this of the published one reproduces it.
TOLERANCE = 0.01
_NORMALISED = {"objective": ("feedback", "meta_feedback"), "subjective": ()}  # Spearman columns: (x + 100) / 2


def formula_overall(kind: str, values: dict[str, float]) -> float:
    """The toolkit's overall from a row's dimension columns."""
    dims = [c for c in COLUMNS[kind] if c != "overall"]
    return sum((values[c] + 100) / 2 if c in _NORMALISED[kind] else values[c] for c in dims) / len(dims)


def overall_mismatch(kind: str, values: dict[str, float]) -> str:
    """Why a published row's overall is not the formula's ('' when the formula reproduces it)."""
    if "overall" not in values or any(c not in values for c in COLUMNS[kind]):
        return ""
    published, formula = values["overall"], formula_overall(kind, values)
    if abs(formula - published) <= TOLERANCE:
        return ""
    dims = [c for c in COLUMNS[kind] if c != "overall"]
    zero, rest = [c for c in dims if values[c] == 0], [c for c in dims if values[c] != 0]
    if zero and rest and abs(sum(values[c] for c in rest) / len(rest) - published) <= TOLERANCE:
        return (f"overall not by the formula: {', '.join(zero)} 0 (a critique-only model), so the overall is the "
                f"plain mean of the raw {' and '.join(rest)}; the formula gives {formula:.2f}")
    return f"overall matches no formula: the formula gives {formula:.2f}, the row says {published:.2f}"


@dataclass(frozen=True)
class Leaderboard:
    kind: str  # objective | subjective
    path: Path
    columns: tuple[str, ...]
    rows: tuple[tuple[str, dict[str, float]], ...]  # (model, column -> value)


def read_leaderboard(path: Path) -> Leaderboard:
    """One leaderboard CSV; a file in another shape is one DataError naming the file and what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such leaderboard file")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        kind = next((k for k, cols in COLUMNS.items() if set(cols) <= set(header) and
                     (k == "objective") == ("meta_feedback" in header)), None)
        if not header or header[0] != "Model" or kind is None:
            raise DataError(f"{path}: not a CriticEval leaderboard CSV (expected Model,feedback,correction,comparison,"
                            f"[meta_feedback,]overall,...; found {','.join(header) or 'nothing'})")
        columns = tuple(c for c in header if c in COLUMNS[kind])
        rows = []
        for line, row in enumerate(reader, start=2):
            values = {}
            for c in columns:
                try:
                    values[c] = float(row[c])
                except (TypeError, ValueError):
                    raise DataError(f"{path}: line {line}: {c}={row.get(c)!r} is not a number") from None
            rows.append((row["Model"].strip(), values))
    return Leaderboard(kind, path, columns, tuple(rows))
