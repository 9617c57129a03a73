"""``critic-eval report``: several runs side by side, every value with its interval, laid out by the registry.

Tables, in order (each only where some run has its data):

* one overview per registry group (``critic``: the objective overview — feedback, comparison, correction, meta,
  overall; ``critic_sub``: the subjective one): a row per run, a column per member's first headline metric and the
  group's overall;
* optionally, the runs placed among a published CriticEval leaderboard (``--leaderboard scores_obj.csv``), sorted by
  overall, published rows marked as such with the split and protocol they were computed with;
* per domain: each task with per-domain variants, its first headline metric per domain (a row per domain, a column
  per run);
* per quality / difficulty / group: each task's breakdown metrics;
* the judge-bias lines of each pairwise task (``registry.BIAS_LINES``: position consistency, first-position rate,
  length bias);
* the judges of the judge-scored tasks (model, settings, prompt template hash, what the server said answered);
* every task's headline metrics (the other protocols' and variants' tables included).

Rendered as Markdown (the terminal and ``report.md``), CSV (``report.csv``: one line per cell with its interval) and
one self-contained HTML page (``report.html``: inline CSS, charts as data: URIs, a Content-Security-Policy that
allows nothing to be fetched).
"""

from __future__ import annotations

import base64
import csv
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

from critic_tasks import registry
from critic_tasks.protocols.criticbench.leaderboard import (
    COLUMNS,
    PUBLISHED_PROTOCOL,
    PUBLISHED_SPLIT,
    Leaderboard,
    overall_mismatch,
    read_leaderboard,
)
from critic_tasks.reports.results import Run, invalid_note, prompt_note
from critic_tasks.reports.tables import BIAS_NOTE, format_value, interval_note, judge_lines


@dataclass
class Cell:
    value: float | None
    ci: tuple[float, float] | None = None
    note: str = ""  # said beside the value: the unchecked items a rate left out

    def text(self) -> str:
        return "" if self.value is None else format_value(self.value, self.ci) + (f"; {self.note}" if self.note else "")


@dataclass
class Table:
    key: str  # a slug: CSV rows, HTML anchors, chart file names
    title: str
    labels: list[str]  # the header of the row-label columns
    columns: list[str]  # the header of the value columns
    rows: list[tuple[list[str], list[Cell]]]
    note: str = ""
    chart: str = ""  # "bars": an overview whose rows are runs
    published: set[int] = field(default_factory=set)  # indices of rows holding published numbers
    canned: set[int] = field(default_factory=set)  # indices of rows holding a canned critic's numbers (chance line)


@dataclass
class Report:
    runs: list[Run]
    tables: list[Table]
    heatmap: dict = field(default_factory=dict)  # scale (x100 | judge) -> row label -> {domain: value}


def _short(task: str) -> str:
    return task.removeprefix("critic_") if task.startswith("critic_") else task


def _present(runs: list[Run], task: str) -> bool:
    return any(task in r.results for r in runs)


def _cell(run: Run, task: str, key: str) -> Cell:
    notes = (invalid_note(run.invalid_items(task, key)), prompt_note(run.results.get(task, {})))
    return Cell(run.value(task, key), run.interval(task, key), "; ".join(filter(None, notes)))


def _overviews(runs: list[Run]) -> list[Table]:
    tables = []
    for group in registry.GROUPS.values():
        columns = [(m, registry.TASKS[m].headline_keys()[0]) for m in group.members] + [(group.name, group.metric)]
        if not any(_present(runs, t) for t, _ in columns):
            continue
        header = [f"{_short(t)} {k}" for t, k in columns[:-1]] + [group.label]
        rows = [([run.label], [_cell(run, t, k) for t, k in columns]) for run in runs]
        note = (f"{group.about}. The overall's interval combines its members' ({group.metric}): "
                "sqrt(sum of squared half-widths) / number of members, each side.")
        tables.append(Table(f"overview_{group.name}", f"Overview: {group.name}", ["run"], header, rows, note, "bars"))
    return tables


def _run_protocol(run: Run) -> str:
    return run.protocol or "not recorded"


def _leaderboard_table(board: Leaderboard, runs: list[Run]) -> Table:
    mapping = COLUMNS[board.kind]
    entries: list[tuple[str, str, list[Cell], bool]] = []
    for model, values in board.rows:
        entries.append((model, f"published ({PUBLISHED_SPLIT} split, {PUBLISHED_PROTOCOL} protocol)",
                        [Cell(values.get(c)) for c in board.columns], True, overall_mismatch(board.kind, values)))
    for run in runs:
        cells = [_cell(run, *mapping[c]) for c in board.columns]
        if all(c.value is None for c in cells):
            continue
        splits = sorted({run.split(mapping[c][0]) for c in board.columns if mapping[c][0] in registry.TASKS} - {""})
        entries.append((run.label, f"this report ({'/'.join(splits)} split, protocol {_run_protocol(run)})", cells,
                        False, ""))
    overall = board.columns.index("overall") if "overall" in board.columns else None
    entries.sort(key=lambda e: -(e[2][overall].value if overall is not None and e[2][overall].value is not None
                                 else float("-inf")))
    header = list(board.columns)
    rows = [([str(i + 1), name, source, why], cells) for i, (name, source, cells, _, why) in enumerate(entries)]
    unlike = sum(bool(e[4]) for e in entries)
    note = ("Columns: " + ", ".join(f"{c} = {mapping[c][0]}.{mapping[c][1]}" for c in board.columns) + ". "
            f"Published rows are the CriticEval leaderboard's numbers ({board.path.name}), computed on the "
            f"{PUBLISHED_SPLIT} split with the released toolkit's prompts, parser and comparison rule; they carry no "
            "interval. Rows marked 'this report' are your runs on the split and protocol shown: comparable with the "
            "published ones only when those match (run the toolkit protocol on the test split for a like-for-like "
            "placement)." + (f" {unlike} published overall{'s are' if unlike > 1 else ' is'} not the formula's (the "
                             "mean of (feedback + 100) / 2, correction, comparison and (meta + 100) / 2 for the objective "
                             "board, the plain mean for the subjective one), which your runs' overall always is: the "
                             "note column says why; place a run among those rows with care." if unlike else ""))
    return Table(f"leaderboard_{board.kind}", f"Among the published CriticEval leaderboard ({board.kind})",
                 ["rank", "model", "source", "note"], header, rows, note,
                 published={i for i, e in enumerate(entries) if e[3]})


def _per_domain(runs: list[Run], heatmap: dict) -> list[Table]:
    tables = []
    for root in registry.TASKS.values():
        children = [t for t in registry.TASKS.values()
                    if t.section == root.name and len(t.domains) == 1 and t.name != root.name and t.split == root.split
                    and t.with_feedback == root.with_feedback and t.repeats == 1]
        if root.name != root.section or len(root.domains) == 1 or not any(_present(runs, t.name) for t in children):
            continue
        key = root.headline_keys()[0]
        rows = []
        for child in children:
            cells = [_cell(run, child.name, key) for run in runs]
            if any(c.value is not None for c in cells):
                rows.append(([child.domains[0]], cells))
                for run, c in zip(runs, cells):
                    if c.value is not None:
                        scale = heatmap.setdefault("judge" if key.startswith("judge") else "x100", {})
                        scale.setdefault(f"{run.label} | {_short(root.name)} {key}", {})[child.domains[0]] = c.value
        tables.append(Table(f"domains_{root.name}", f"Per domain: {root.name} ({key})", ["domain"],
                            [r.label for r in runs], rows, f"Each domain's own task ({root.name}_<domain>)."))
    return tables


def _breakdowns(runs: list[Run]) -> list[Table]:
    tables = []
    for task in registry.TASKS.values():
        if not _present(runs, task.name) or len(task.domains) == 1:
            continue
        keys = [m.key for m in task.kind_spec.metrics if m.subset is not None and not m.ci]
        rows = [([k], [_cell(run, task.name, k) for run in runs]) for k in keys]
        rows = [r for r in rows if any(c.value is not None for c in r[1])]
        if rows:
            field_names = sorted({m.subset[0] for m in task.kind_spec.metrics if m.subset is not None})
            tables.append(Table(f"breakdown_{task.name}", f"Per {', '.join(field_names)}: {task.name}", ["metric"],
                                [r.label for r in runs], rows))
    return tables


def _bias(runs: list[Run]) -> list[Table]:
    """One table of every pairwise task's judge-bias lines (``registry.BIAS_LINES``), a column per run."""
    rows = []
    for task in registry.TASKS.values():
        if _present(runs, task.name):
            rows += [([task.name, key], [_cell(run, task.name, key) for run in runs])
                     for key in registry.BIAS_LINES.get(task.kind, ())]
    return [Table("bias", "Judge-bias lines", ["task", "line"], [r.label for r in runs], rows, BIAS_NOTE)] if rows else []


def _judges(runs: list[Run]) -> list[Table]:
    """Each run's judge of each judged task (``Run.fingerprints``): the judge's model and settings, its prompt
    version and template hash, and what the server said answered (``tables.judge_lines``)."""
    rows = []
    for run in runs:
        for line in judge_lines(run.fingerprints):
            task, _, rest = line.removeprefix("judge of ").partition(": ")
            judge, _, served = rest.partition("; served by: ")
            rows.append(([run.label, task, judge, served], []))
    if not rows:
        return []
    return [Table("judges", "Judges", ["run", "task", "judge (backend, temperature), prompt, template", "served by"],
                  [], rows, "what graded each judge-scored task: the same name with another template hash or served "
                  "model is another judge (critic-eval judge --canary N re-asks cached prompts)")]


def _headlines(runs: list[Run]) -> Table:
    rows = []
    tasks = [t for t in registry.TASKS.values() if _present(runs, t.name)]
    tasks.sort(key=lambda t: (registry.SECTIONS.index(t.section) if t.section in registry.SECTIONS
                              else len(registry.SECTIONS), t.name))
    for task in tasks:
        rows += [([task.name, key], [_cell(run, task.name, key) for run in runs]) for key in task.headline_keys()]
    for group in registry.GROUPS.values():
        if _present(runs, group.name):
            rows.append(([group.name, group.label], [_cell(run, group.name, group.metric) for run in runs]))
    note = ("All values x100 (percentages, correlations) except judge scores (1-10); [low, high]: the bootstrap "
            "interval (95 % unless CRITIC_CI_LEVEL was set for the run, or, for an lm-eval run, when it was read).")
    missing = interval_note(*(r.results for r in runs))  # said once, here, not in every cell without one
    return Table("headline", "Every task's headline metrics", ["task", "metric"], [r.label for r in runs], rows,
                 f"{note} {missing}" if missing else note)


def _chance_tables(runs: list[Run], lines) -> list[Table]:
    """Each task's runs next to its canned critics and the floor (``critic_tasks.chance``); one table of the tasks
    that have no line, and why."""
    tables, missing, drawn_for = [], [], {}
    for line in lines:
        # a task whose runs asked different items (--limit) has a line per set of items, each naming its runs
        whose = f" ({', '.join(line.runs)})" if line.runs else ""
        if line.skipped:
            missing.append(([line.task + whose], [Cell(None)], line.skipped))
            continue
        task = registry.TASKS[line.task]
        keys = [k for k in task.headline_keys() if k in line.chance or k == "parse_rate"]
        rows = [([run.label, "model"], [_cell(run, line.task, k) for k in keys]) for run in runs
                if _present([run], line.task) and (not line.runs or run.label in line.runs)]
        canned_from = len(rows)
        rows += [([name, "canned critic"], [Cell(values.get(k)) for k in keys]) for name, values in line.values.items()]
        rows.append((["chance", "floor"], [Cell(line.chance.get(k)) for k in keys]))
        drawn = f" Judge that graded the canned replies: {line.judge}." if line.judge else ""
        set_by = "; ".join(f"{k}: {line.chance_by[k]}" for k in keys if k in line.chance_by)
        # what the rows are is said once, in the first chance table (issue 38); each table names its floor's critics
        note = ("" if tables else
                "What critics that read nothing score on each task's data, through the task's own scorer and "
                "metrics: constant, always-first, random (seeded), every label at once, an injection text, a refusal. "
                "'chance' is the floor a critic must beat: the best expected score of critics that read nothing "
                "(critic_tasks.chance: for a comparison a coin per pair, always tie, a fixed position, the longer or "
                "shorter response, the label prior; 0 for a correlation; for a correction the better of the "
                "unchanged responses and a constant answer). ")
        note += (f"Floor set by: {set_by}." if set_by else "") + drawn
        if line.items is not None:
            note += (f" Drawn on the {len(line.items)} documents the runs above asked (lm-eval's --limit, "
                     "OpenCompass's test_range), as their numbers are.")
        drawn_for[line.task] = drawn_for.get(line.task, 0) + 1
        key = f"chance_{line.task}" + (f"_{drawn_for[line.task]}" if drawn_for[line.task] > 1 else "")
        tables.append(Table(key, f"Chance line: {line.task}{whose}", ["critic", "kind"], keys, rows, note,
                            canned=set(range(canned_from, len(rows)))))
    if missing:
        tables.append(Table("chance_missing", "Tasks without a chance line", ["task", "why"], [],
                            [([task, why], []) for (task,), _, why in missing]))
    return tables


def build(runs: list[Run], leaderboards=(), chance_lines=(), extra_tables=()) -> Report:
    """``extra_tables``: tables built elsewhere, shown after the runs' own (`report --paired`: the paired
    comparison of two runs, ``compare.comparison_table``)."""
    heatmap: dict = {}
    tables = _overviews(runs)
    tables += _chance_tables(runs, chance_lines)
    tables += [_leaderboard_table(read_leaderboard(p), runs) for p in leaderboards]
    tables += _per_domain(runs, heatmap)
    tables += _breakdowns(runs)
    tables += _bias(runs)
    tables += _judges(runs)
    tables.append(_headlines(runs))
    tables += list(extra_tables)
    return Report(runs, tables, heatmap)


# ----------------------------------------------------------------------------- renderers


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(report: Report, title: str, images: dict[str, str] | None = None) -> str:
    lines = [f"# {title}", "", "Runs: " + "; ".join(f"{r.label} ({r.path})" for r in report.runs), ""]
    for t in report.tables:
        lines += [f"## {t.title}", ""]
        if t.note:
            lines += [f"_{t.note}_", ""]
        header = t.labels + t.columns
        lines.append("| " + " | ".join(map(_md_escape, header)) + " |")
        lines.append("|" + "|".join(["---"] * len(t.labels) + ["---:"] * len(t.columns)) + "|")
        for labels, cells in t.rows:
            lines.append("| " + " | ".join(map(_md_escape, labels + [c.text() or "n/a" for c in cells])) + " |")
        if images and t.key in images:
            lines += ["", f"![{t.title}]({images[t.key]})"]
        lines.append("")
    for key in ("heatmap", "heatmap_judge"):
        if images and key in images:
            lines += [f"## Per-domain heat map{' (judge scores)' if key.endswith('judge') else ''}", "",
                      f"![per-domain heat map]({images[key]})", ""]
    return "\n".join(lines).rstrip() + "\n"


def to_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["table", "row", "column", "value", "ci_low", "ci_high", "source"])
    for t in report.tables:
        for i, (labels, cells) in enumerate(t.rows):
            source = "published" if i in t.published else "canned" if i in t.canned else "run"
            row_label = " / ".join(labels[1:2] if t.key.startswith("leaderboard") else labels)
            for column, c in zip(t.columns, cells):
                writer.writerow([t.key, row_label, column, "" if c.value is None else repr(c.value),
                                 "" if c.ci is None else repr(c.ci[0]), "" if c.ci is None else repr(c.ci[1]), source])
    return out.getvalue()


CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
div.scroll { overflow-x: auto; }
th { background: #f2f2f2; }
td.label { overflow-wrap: anywhere; min-width: 8em; }
td.num { text-align: right; white-space: nowrap; }
td.num .ci { color: #666; font-size: 0.85em; display: block; }
tr.published td { background: #fff8e1; font-style: italic; }
p.note { color: #555; font-size: 0.85em; max-width: 70em; }
img { max-width: 100%; border: 1px solid #eee; }
"""


def to_html(report: Report, title: str, images: dict[str, bytes] | None = None) -> str:
    """One self-contained page: no script, no external reference, charts inline as data: URIs."""
    images = images or {}
    esc = html.escape

    def img(key: str, alt: str) -> str:
        data = base64.b64encode(images[key]).decode("ascii")
        return f'<p><img class="chart" alt="{esc(alt)}" src="data:image/png;base64,{data}"></p>'

    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
             f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>", f"<h1>{esc(title)}</h1>",
             "<p>Runs: " + "; ".join(f"<b>{esc(r.label)}</b> ({esc(str(r.path))})" for r in report.runs) + "</p>"]
    for t in report.tables:
        parts.append(f'<h2 id="{esc(t.key)}">{esc(t.title)}</h2>')
        if t.note:
            parts.append(f'<p class="note">{esc(t.note)}</p>')
        parts.append(f'<div class="scroll"><table class="results" id="table-{esc(t.key)}"><thead><tr>' +
                     "".join(f"<th>{esc(h)}</th>" for h in t.labels + t.columns) + "</tr></thead><tbody>")
        for i, (labels, cells) in enumerate(t.rows):
            # labels and headers wrap, an interval sits under its value: the overview fits 1,200 px, no sideways scroll
            tds = "".join(f'<td class="label">{esc(x)}</td>' for x in labels)
            for c in cells:
                if c.value is None:
                    tds += '<td class="num">n/a</td>'
                else:
                    ci = "" if c.ci is None else f' <span class="ci">[{c.ci[0]:.2f}, {c.ci[1]:.2f}]</span>'
                    ci += f' <span class="ci">({esc(c.note)})</span>' if c.note else ""
                    tds += f'<td class="num">{c.value:.2f}{ci}</td>'
            parts.append(f'<tr{" class=published" if i in t.published else ""}>{tds}</tr>')
        parts.append("</tbody></table></div>")
        if t.key in images:
            parts.append(img(t.key, f"{t.title}: bars with 95% intervals"))
    for key in ("heatmap", "heatmap_judge"):
        if key in images:
            title_ = f"Per-domain heat map{' (judge scores)' if key.endswith('judge') else ''}"
            parts += [f'<h2 id="{key}">{title_}</h2>', img(key, title_)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write(report: Report, folder: Path, title: str) -> list[Path]:
    """report.md, report.csv, report.html and the charts' PNG files in ``folder``."""
    from critic_tasks.reports import charts

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pngs = charts.render(report)
    written = []
    for key, data in pngs.items():
        path = folder / f"chart_{key}.png"
        path.write_bytes(data)
        written.append(path)
    md = to_markdown(report, title, {key: f"chart_{key}.png" for key in pngs})
    for name, text in (("report.md", md), ("report.csv", to_csv(report)), ("report.html", to_html(report, title, pngs))):
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    return written
