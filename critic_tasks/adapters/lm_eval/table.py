"""lm-eval's results table without our interval bounds as rows of their own.

lm-eval lists every metric key of a task as a row; our intervals are keys too (``<metric>_ci_low`` /
``_ci_high``, until issue 30 moves them), so its table showed them as metrics with arrows, blank where a bound is
null. Its CLI binds ``make_table`` before our tasks are built, so the rows are taken out one step later, in the
Markdown writer it calls (``pytablewriter.MarkdownTableWriter``, imported when the table is made), and only in
lm-eval's results tables (recognised by their header), only for ``critic`` rows; a note says where the intervals
are. Installed when our tasks are built (plain ``lm_eval``) and by ``critic-eval`` before a run.
"""

from __future__ import annotations

INTERVAL_SUFFIXES = ("_ci_low", "_ci_high")
NOTE = ("\n95% bootstrap intervals of the critic metrics: in the results JSON as <metric>_ci_low / <metric>_ci_high; "
        "`critic-eval summary OUTPUT_PATH` shows each value with its interval.\n")
LM_EVAL_HEADER = ("Version", "Filter", "n-shot", "Metric")  # lm-eval's make_table: name column, then these


def without_interval_rows(rows: list[list]) -> tuple[list[list], int]:
    """(rows less the critic tasks' interval-bound rows, how many were dropped). A task's name and version sit on
    its first row only: a dropped first row hands them to the next row kept."""
    kept, dropped, task, carry = [], 0, "", None
    for row in rows:
        row = list(row)
        if str(row[0]).strip():
            task, carry = str(row[0]).strip().lstrip("- "), None
        if task.startswith("critic") and str(row[4]).endswith(INTERVAL_SUFFIXES):
            dropped += 1
            if str(row[0]).strip():
                carry = row[:2]
            continue
        if carry is not None:
            row[:2], carry = carry, None
        kept.append(row)
    return kept, dropped


def _writer(base):
    class Writer(base):
        """lm-eval's Markdown writer, less our interval rows in its results tables."""

        critic_tasks_wrapped = True

        def dumps(self, *args, **kwargs):
            dropped = 0
            if tuple(self.headers[1:5]) == LM_EVAL_HEADER:
                rows, dropped = without_interval_rows(self.value_matrix)
                if dropped:
                    self.value_matrix = rows
            out = super().dumps(*args, **kwargs)
            return out + NOTE if dropped else out

    Writer.__name__ = Writer.__qualname__ = base.__name__
    return Writer


def install() -> None:
    """Once per process: the Markdown writer lm-eval's ``make_table`` imports is ours."""
    import pytablewriter

    if not getattr(pytablewriter.MarkdownTableWriter, "critic_tasks_wrapped", False):
        pytablewriter.MarkdownTableWriter = _writer(pytablewriter.MarkdownTableWriter)
