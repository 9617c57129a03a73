"""critic-eval report on hand-made results files: exact table values and intervals, the published leaderboard's rows
clearly marked, CSV, a self-contained HTML page with the charts inline, one-line errors."""

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest

from critic_tasks import cli

LEADERBOARD = Path(__file__).resolve().parents[2] / "shared" / "data" / "criticeval" / "leaderboard"


def _m(value, low=None, high=None, key=""):
    row = {f"{key},none": value}
    if low is not None:
        row[f"{key}_ci_low,none"], row[f"{key}_ci_high,none"] = low, high
    return row


def _task(**metrics):
    out = {}
    for key, v in metrics.items():
        out.update(_m(*(v if isinstance(v, tuple) else (v,)), key=key))
    return out


def _run(shift):
    """Four dimensions with intervals, the group overall, two per-domain feedback tasks, a quality breakdown, and a
    judge-scored task."""
    fb, cmp, meta, cor = 40 + shift, 30 + shift, 20 + shift, 50 + shift
    return {
        "critic_feedback": _task(spearman=(fb, fb - 5, fb + 5), score=((fb + 100) / 2, (fb + 95) / 2, (fb + 105) / 2),
                                 parse_rate=99.0, spearman_low=(10.0, 1.0, 20.0)),
        "critic_comparison": _task(accuracy=(cmp, cmp - 4, cmp + 4), accuracy_loose=(cmp + 5, cmp + 1, cmp + 9),
                                   consistency=60.0, score=(cmp, cmp - 4, cmp + 4), parse_rate=100.0),
        "critic_meta": _task(spearman=(meta, meta - 6, meta + 6), score=((meta + 100) / 2, (meta + 94) / 2, (meta + 106) / 2)),
        "critic_correction": _task(pass_rate=(cor, cor - 6, cor + 7), score=(cor, cor - 6, cor + 7), parse_rate=90.0),
        "critic": _task(score=((fb + 100) / 2 + cmp + (meta + 100) / 2 + cor) / 4),
        "critic_feedback_chat": _task(spearman=(33.0 + shift, 20.0, 45.0)),
        "critic_feedback_qa": _task(spearman=(44.0, 30.0, 55.0)),
        "critic_feedback_sub": _task(judge_score=(6.5 + shift / 10, 6.1 + shift / 10, 6.9 + shift / 10), judge_parse_rate=100.0),
    }


@pytest.fixture
def runs(tmp_path):
    out = tmp_path / "out"
    for name, shift in (("org/model-a", 0), ("org/model-b", 8)):
        folder = out / name.replace("/", "__")
        folder.mkdir(parents=True)
        (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps({"results": _run(shift), "model_name": name}))
    return out


def _table(markdown: str, title: str) -> list[list[str]]:
    block = markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split(" | ")] for row in rows[2:]]


def test_overview_side_by_side_with_intervals(runs, tmp_path, capsys):
    assert cli.main(["report", str(runs)]) == 0  # an output dir with two models: two runs
    md = capsys.readouterr().out
    rows = _table(md, "Overview: critic")
    # the group's interval by hand: half-widths combined, sqrt(sum h^2) / 4 on each side
    lo = math.sqrt(2.5**2 + 4**2 + 3**2 + 6**2) / 4
    hi = math.sqrt(2.5**2 + 4**2 + 3**2 + 7**2) / 4
    overall_a = (70 + 30 + 60 + 50) / 4
    assert rows[0] == ["org/model-a · criticbench · 01-01", "40.00 [35.00, 45.00]", "30.00 [26.00, 34.00]", "20.00 [14.00, 26.00]",
                       "50.00 [44.00, 57.00]", f"{overall_a:.2f} [{overall_a - lo:.2f}, {overall_a + hi:.2f}]"]
    assert rows[1][0] == "org/model-b · criticbench · 01-01" and rows[1][1] == "48.00 [43.00, 53.00]"
    assert _table(md, "Overview: critic_sub") == [["org/model-a · criticbench · 01-01", "6.50 [6.10, 6.90]", "n/a", "n/a", "n/a"],
                                                   ["org/model-b · criticbench · 01-01", "7.30 [6.90, 7.70]", "n/a", "n/a", "n/a"]]
    assert _table(md, "Per domain: critic_feedback (spearman)") == [
        ["chat", "33.00 [20.00, 45.00]", "41.00 [20.00, 45.00]"], ["qa", "44.00 [30.00, 55.00]", "44.00 [30.00, 55.00]"]]
    assert _table(md, "Per quality: critic_feedback") == [["spearman_low", "10.00 [1.00, 20.00]", "10.00 [1.00, 20.00]"]]
    headline = _table(md, "Every task's headline metrics")
    assert ["critic_comparison", "consistency", "60.00", "60.00"] in headline  # no interval in the file: none shown


def test_leaderboard_rows_marked_and_the_run_placed_by_overall(runs, tmp_path, capsys):
    board = LEADERBOARD / "scores_obj.csv"
    if not board.is_file():
        pytest.skip(f"no published leaderboard at {board}")
    assert cli.main(["report", str(runs), "--leaderboard", str(board)]) == 0
    rows = _table(capsys.readouterr().out, "Among the published CriticEval leaderboard (objective)")
    with open(board, newline="") as fh:
        published = list(csv.DictReader(fh))
    assert len(rows) == len(published) + 2
    marked = [r for r in rows if r[2] == "published (test split, toolkit protocol)"]
    assert {r[1] for r in marked} == {p["Model"] for p in published}
    gpt4 = next(r for r in rows if r[1] == "GPT-4-turbo")
    assert gpt4[3:] == ["", "63.54", "69.67", "57.33", "62.90", "72.55"]  # the note column: empty, reproduced
    # our run: the leaderboard's columns are feedback spearman, correction pass rate, comparison accuracy_loose, meta
    # spearman, overall; its rank is one more than the published rows with a higher overall (model-b is above a)
    b = next(r for r in rows if r[1] == "org/model-b · criticbench · 01-01")
    overall_b = (74 + 38 + 64 + 58) / 4
    assert b[2] == "this report (dev split, protocol not recorded)"
    assert b[4:7] == ["48.00 [43.00, 53.00]", "58.00 [52.00, 65.00]", "43.00 [39.00, 47.00]"]
    assert b[8].startswith(f"{overall_b:.2f} [")
    assert int(b[0]) == 1 + sum(float(p["overall"]) > overall_b for p in published)


@pytest.mark.parametrize("name, critique_only, no_formula", [
    # 28 of the 36 objective rows follow the formula; 5 critique-only models (correction = meta = 0) use the plain
    # mean of raw feedback and comparison; 3 rows match no formula
    ("scores_obj.csv", {"Auto-J-13B", "UltraCM-13B", "UltraRM-13B", "Ziya-7B", "SteamSHP"},
     {"Qwen-14B-Chat", "InternLM2-7B-Chat", "Vicuna-7B-v1.3"}),
    # subjective: the plain mean of the three; two scorers without correction use the mean of the rest
    ("scores_sub.csv", {"Auto-J-13B", "UltraCM-13B"}, {"Llama2-70B-Chat", "Llama2-13B-Chat"}),
])
def test_leaderboard_rows_whose_overall_the_formula_does_not_reproduce_are_marked(runs, capsys, name, critique_only,
                                                                                  no_formula):
    board = LEADERBOARD / name
    if not board.is_file():
        pytest.skip(f"no published leaderboard at {board}")
    assert cli.main(["report", str(runs), "--leaderboard", str(board)]) == 0
    out = capsys.readouterr().out
    kind = "objective" if "obj" in name else "subjective"
    notes = {r[1]: r[3] for r in _table(out, f"Among the published CriticEval leaderboard ({kind})")
             if r[2].startswith("published")}
    # independently: the toolkit's formula (compute_overall.py) by hand, to the published 2 decimals
    with open(board, newline="") as fh:
        published = list(csv.DictReader(fh))
    for row in published:
        f, c, p = (float(row[k]) for k in ("feedback", "correction", "comparison"))
        formula = ((f + 100) / 2 + c + p + (float(row["meta_feedback"]) + 100) / 2) / 4 if kind == "objective" \
            else (f + c + p) / 3
        reproduced = abs(formula - float(row["overall"])) <= 0.01
        assert (notes[row["Model"]] == "") == reproduced, row["Model"]
    assert {m for m, n in notes.items() if "critique-only" in n} == critique_only
    assert {m for m, n in notes.items() if "matches no formula" in n} == no_formula
    assert sum(n == "" for n in notes.values()) == len(published) - len(critique_only) - len(no_formula)
    assert notes["Qwen-14B-Chat" if kind == "objective" else "Llama2-70B-Chat"].startswith(
        "overall matches no formula: the formula gives 41.58" if kind == "objective" else
        "overall matches no formula: the formula gives 5.06")
    assert f"{len(critique_only) + len(no_formula)} published overalls are not the formula's" in out


def test_files_csv_and_self_contained_html(runs, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli.main(["report", str(runs / "org__model-a"), str(runs / "org__model-b"), "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["chart_heatmap.png", "chart_overview_critic.png", "chart_overview_critic_sub.png", "report.csv",
                     "report.html", "report.md"]
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(io.StringIO((out / "report.csv").read_text())))
    cell = next(r for r in rows if r["table"] == "overview_critic" and r["row"] == "org/model-b · criticbench · 01-01"
                and r["column"] == "feedback spearman")
    assert (float(cell["value"]), float(cell["ci_low"]), float(cell["ci_high"])) == (48.0, 43.0, 53.0)
    page = (out / "report.html").read_text()
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:;' in page
    assert page.count('src="data:image/png;base64,') == 3  # two overviews' bars, one heat map
    # nothing to fetch: every src/href is a data: URI or an in-page anchor, no URL anywhere, no script
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page)
    assert refs and all(r.startswith("data:") for r in refs)
    assert not re.search(r"https?://|<script|@import|url\(", page)
    assert '<table class="results" id="table-overview_critic">' in page
    assert "report.md" in names and "![Overview: critic](chart_overview_critic.png)" in (out / "report.md").read_text()


def test_bad_inputs_are_one_line(runs, tmp_path, capsys):
    bad = tmp_path / "board.csv"
    bad.write_text("name,score\nx,1\n")
    assert cli.main(["report", str(runs), "--leaderboard", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (f"critic-eval: data error: {bad}: not a CriticEval leaderboard CSV "
                                               "(expected Model,feedback,correction,comparison,[meta_feedback,]overall,...; "
                                               "found name,score)")
    assert cli.main(["report", str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.strip() == f"critic-eval: {tmp_path / 'missing.json'}: no such results file"
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"results": {"gsm8k": {"acc,none": 0.5}}}))
    assert cli.main(["report", str(other)]) == 2
    assert "no critic task in these results" in capsys.readouterr().err


def test_summary_table_shows_the_intervals(runs, capsys):
    assert cli.main(["summary", str(runs / "org__model-a")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "org/model-a · criticbench · 01-01:"  # the run's name, then its table
    assert lines[2].split()[:5] == ["critic_feedback", "spearman", "40.00", "[35.00,", "45.00]"]
    overall = (70 + 30 + 60 + 50) / 4
    lo, hi = math.sqrt(2.5**2 + 4**2 + 3**2 + 6**2) / 4, math.sqrt(2.5**2 + 4**2 + 3**2 + 7**2) / 4
    assert next(line for line in lines if line.startswith("critic ")).split()[1:] == [
        "overall", f"{overall:.2f}", f"[{overall - lo:.2f},", f"{overall + hi:.2f}]"]


def test_report_and_gate_read_a_real_lm_eval_output_dir(tmp_path, monkeypatch, capsys):
    """lm-eval's own files (dummy model: every reply unparsed, so every score is the midpoint and Spearman 0)."""
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    out = tmp_path / "out"
    assert cli.main(["--model", "dummy", "--tasks", "critic_feedback_chat,critic_comparison_chat",
                     "--output_path", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["report", str(out), "-o", str(tmp_path / "report")]) == 0
    md = capsys.readouterr().out
    assert ["critic_feedback_chat", "spearman", "0.00 [0.00, 0.00]"] in _table(md, "Every task's headline metrics")
    assert (tmp_path / "report" / "report.html").is_file()
    assert cli.main(["check", str(out), "--min", "critic_feedback_chat.parse_rate=0",
                     "--max", "critic_comparison_chat.accuracy=0"]) == 0
    assert cli.main(["check", str(out), "--min", "critic_feedback_chat.spearman=10"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == ("FAIL critic_feedback_chat.spearman = 0.00 (95% CI [0.00, 0.00]) is "
                                                         "below the minimum 10 by 10.00")


def test_savg_stage1_run_inside_an_output_dir_is_not_a_run_of_its_own(tmp_path):
    from critic_tasks.reports.results import load_runs, read_results

    def write(folder, task, value, stamp):
        folder.mkdir(parents=True)
        (folder / f"results_{stamp}.json").write_text(json.dumps({"results": {task: {"pass_rate,none": value}}}))

    write(tmp_path / "out" / "self_feedback" / "2026-11-22T10-00-00" / "m", "critic_self_feedback", 100.0, "a")
    write(tmp_path / "out" / "m", "critic_correction_self", 40.0, "b")
    runs = load_runs(tmp_path / "out")
    assert len(runs) == 1
    assert read_results(tmp_path / "out")["critic_correction_self"]["pass_rate,none"] == 40.0


def test_report_charts_without_matplotlib_are_one_line_naming_the_extra(monkeypatch, capsys, tmp_path):
    """matplotlib comes with the `report` extra only: `report -o` without it says so in one line, before reading
    any run; without -o (Markdown only) it is not needed."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert cli.main(["report", str(tmp_path / "no_run.json"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["critic-eval: critic-eval report -o draws its charts with matplotlib, not installed here: pip install "
                   "'critic-tasks[report]' (without -o: the Markdown tables, no charts)"]
    assert not (tmp_path / "out").exists()
