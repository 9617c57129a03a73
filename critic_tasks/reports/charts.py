"""Charts of a report as PNG bytes (matplotlib, Agg backend: no display, no network).

* per overview table (one per registry group): grouped bars, one bar per run for each dimension and the overall,
  error bars from the 95 % intervals (asymmetric, as the percentile bootstrap gives them); a missing value is
  written "n/a" where its bar would be, a 0 drawn as a line at 0;
* the per-domain heat maps: a row per (run, dimension), a column per domain, the dimension's first headline metric
  (x100 metrics in one, judge scores 1-10 in another, so that each has one colour scale).
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from critic_tasks.protocols.criticbench.prompts import DOMAIN_NAMES  # noqa: E402


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def bars(table) -> bytes | None:
    """Grouped bars with interval whiskers for an overview table (rows = runs)."""
    runs = [(labels[0], cells) for labels, cells in table.rows if any(c.value is not None for c in cells)]
    if not runs:
        return None
    n_cols, n_runs = len(table.columns), len(runs)
    width = 0.8 / n_runs
    x = np.arange(n_cols)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * n_cols * max(1, n_runs) ** 0.5), 3.8))
    for i, (label, cells) in enumerate(runs):
        values = np.array([np.nan if c.value is None else c.value for c in cells])
        # no whisker where there is no interval (NaN draws nothing; 0 would draw a cap that looks like certainty)
        lower = np.array([np.nan if c.ci is None or c.value is None else max(c.value - c.ci[0], 0) for c in cells])
        upper = np.array([np.nan if c.ci is None or c.value is None else max(c.ci[1] - c.value, 0) for c in cells])
        where = x + (i - (n_runs - 1) / 2) * width
        ax.bar(where, np.nan_to_num(values), width, label=label, color=f"C{i % 10}",
               yerr=np.vstack([lower, upper]), capsize=3, error_kw={"elinewidth": 1})
        # n/a and 0 both make a bar of no height: a 0 gets a line in the run's colour at its level, an n/a the
        # words "n/a" and nothing else
        known = ~np.isnan(values)
        ax.hlines(values[known], where[known] - width / 2, where[known] + width / 2, colors=f"C{i % 10}",
                  linewidth=2.5, zorder=3)
        for at in where[~known]:
            ax.annotate("n/a", (at, 0), xytext=(0, 4), textcoords="offset points", rotation=90, ha="center",
                        va="bottom", fontsize=8, color="#444")
    ax.set_xticks(x, table.columns, rotation=20, ha="right")
    ax.axhline(0, color="#444", linewidth=0.8)
    ax.set_title(table.title)
    ax.set_ylabel("value (95% interval)")
    ax.legend(fontsize=8, loc="best")
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def heatmap(rows: dict[str, dict[str, float]]) -> bytes | None:
    """Rows (run | dimension) x domains; cells annotated with their value."""
    if not rows:
        return None
    domains = [d for d in DOMAIN_NAMES if any(d in r for r in rows.values())]
    labels = list(rows)
    grid = np.array([[rows[label].get(d, np.nan) for d in domains] for label in labels])
    fig, ax = plt.subplots(figsize=(1.0 * len(domains) + 3.5, 0.45 * len(labels) + 1.8))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(domains)), domains, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    finite = grid[np.isfinite(grid)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=7, color="white" if v < middle else "black")
    fig.colorbar(image, ax=ax, fraction=0.03)
    ax.set_title("Per domain (each dimension's first headline metric)")
    return _png(fig)


def render(report) -> dict[str, bytes]:
    """Chart key -> PNG: ``<overview table key>`` for each overview with data, ``heatmap`` with per-domain data."""
    out = {}
    for table in report.tables:
        if table.chart == "bars":
            png = bars(table)
            if png:
                out[table.key] = png
    for scale, key in (("x100", "heatmap"), ("judge", "heatmap_judge")):  # one colour scale each
        png = heatmap(report.heatmap.get(scale, {}))
        if png:
            out[key] = png
    return out
