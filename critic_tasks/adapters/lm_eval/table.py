"""lm-eval's results table without our interval bounds as rows of their own."""

from __future__ import annotations

INTERVAL_SUFFIXES = ("_ci_low", "_ci_high")
NOTE = ("\n95% bootstrap intervals of the critic metrics: in the results JSON as <metric>_ci_low / <metric>_ci_high; "
        "`critic-eval summary OUTPUT_PATH` shows each value with its interval.\n")


def table_without_interval_rows(make_table):
    """lm-eval's results table less our interval bounds (``<metric>_ci_low`` / ``_ci_high``), which it would show
    as metrics of their own with arrows (and blank value cells where a bound is null); a note says where they
    are."""
    if getattr(make_table, "critic_tasks_wrapped", False):  # critic-eval's own wrap and the tasks' (plain lm_eval)
        return make_table

    def table(result_dict, column: str = "results", sort_results: bool = False):
        shown, hidden = dict(result_dict), 0
        rows = {}
        for name, metrics in (result_dict.get(column) or {}).items():
            if name.startswith("critic"):
                kept = {k: v for k, v in metrics.items() if not k.split(",")[0].endswith(INTERVAL_SUFFIXES)}
                hidden += len(metrics) - len(kept)
                metrics = kept
            rows[name] = metrics
        shown[column] = rows
        out = make_table(shown, column, sort_results)
        return out + NOTE if hidden and column == "results" else out

    table.critic_tasks_wrapped = True
    return table


def install() -> None:
    """Wrap ``lm_eval.utils.make_table`` once (lm-eval's CLI imports it from there when it prints): done when our
    tasks are built, so a plain ``lm_eval`` run prints the same table as ``critic-eval``."""
    import lm_eval.utils

    lm_eval.utils.make_table = table_without_interval_rows(lm_eval.utils.make_table)
