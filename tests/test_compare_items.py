"""`critic-eval compare` pairs items by what they are, and resamples them as each metric's own interval does (issue 44,
points 4 and 5).

- Identity: two runs made on two copies of the same data, in two folders, compare (the logged documents differ only
  in ``source_file``, the data file's path); a document whose content changed is still refused, in one line naming
  the field. The runs are lm-eval output folders written here in the schema lm-eval logs (``doc``, ``doc_hash``,
  ``resps``, ``filtered_resps``, ``filter``, ``metrics`` and the record under each metric key), their documents
  loaded by the protocols' own loaders from the two copies.
- Strata: ProcessBench's F1 is resampled within (subset, class); the paired interval is checked against a paired
  bootstrap written here in numpy, drawn within the same strata, one resample at a time.
"""

import hashlib
import json
import shutil

import numpy as np
import pytest
from helpers import one_line

from critic_tasks import cli, engine, registry
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.core.records import Record
from critic_tasks.reports.compare import compare_runs
from critic_tasks.reports.results import load_runs

B, SEED, LEVEL = 300, 11, 0.95
SETTINGS = BootstrapSettings(resamples=B, level=LEVEL, seed=SEED)
TIME = "2026-11-28T09-00-00.000000"
PROCESS_TASK = "critic_processbench_gsm8k"


@pytest.fixture(autouse=True)
def _settings(monkeypatch):
    for name, value in (("CRITIC_CI_RESAMPLES", B), ("CRITIC_CI_SEED", SEED), ("CRITIC_CI_LEVEL", LEVEL)):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("CRITIC_CI", raising=False)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()  # lm-eval's utils.hash_string


def _sample_row(task: str, doc_id: int, doc: dict, reply: str) -> dict:
    """One line of lm-eval's samples file: the logged document and its hash, the reply before and after the "none"
    filter, and under each metric key the row process_results returned (the record, where the key accepts it)."""
    kind = registry.TASKS[task].kind_spec
    record = kind.protocol_spec.record(doc, reply)
    fed = {m.key: record.as_dict() for m in kind.metrics if not m.ci and m.accepts(record)}
    prompt = engine.prompt(doc, task)
    return {"doc_id": doc_id, "doc": doc, "target": kind.protocol_spec.target(doc),
            "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": [], "do_sample": False}}},
            "resps": [[reply]], "filtered_resps": [reply], "filter": "none", "metrics": list(fed),
            "doc_hash": _hash(json.dumps(doc, indent=2, ensure_ascii=False)), "prompt_hash": _hash(prompt),
            "target_hash": _hash(kind.protocol_spec.target(doc)), **fed}


def _reported(task: str, rows: list[dict]) -> dict[str, float]:
    """What lm-eval's results file reports under each number key the rows carry: the key's metric over the records
    logged under it (``registry.metric_value``, as the tasks' aggregation computes it; 0 where it gives none)."""
    out = {}
    for metric in registry.TASKS[task].kind_spec.metrics:
        if metric.scale == "text" or not any(metric.key in r["metrics"] for r in rows):
            continue  # a number each (a text key, e.g. the prompt, left out)
        records = [Record.from_dict(r[metric.key]) for r in rows if metric.key in r]
        value = registry.metric_value(metric.family, metric.base, [x for x in records if metric.accepts(x)])
        out[metric.key] = 0.0 if value is None else float(value)
    return out


def _write_run(folder, task_rows: dict[str, list[dict]], model: str, values: dict | None = None, config=None):
    """An lm-eval output folder: ``results_<time>.json`` (``values``: task -> {key: value}; by default what the rows
    give, ``_reported``) and a samples file per task."""
    folder.mkdir(parents=True, exist_ok=True)
    results = {}
    for task, rows in task_rows.items():
        results[task] = {f"{k},none": v for k, v in {**_reported(task, rows), **(values or {}).get(task, {})}.items()}
    (folder / f"results_{TIME}.json").write_text(json.dumps({
        "results": results, "config": {"model_args": f"pretrained={model}", **(config or {})},
        "configs": {t: {"task": t, "metadata": {"version": 1.0}} for t in task_rows}}))
    for task, rows in task_rows.items():
        (folder / f"samples_{task}_{TIME}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _copies(tmp_path, protocol: str) -> tuple:
    """Two copies of a protocol's bundled sample, in two folders (two labs, two machines, a moved cache)."""
    source = registry.PROTOCOLS[protocol].sample_dir
    return tuple(shutil.copytree(source, tmp_path / where / "data") for where in ("lab-a", "lab-b"))


# ----------------------------------------------------------------------------- identity: the item, not its folder


def test_every_bundled_sample_loaded_from_two_folders_differs_only_where_compare_looks_away(tmp_path, monkeypatch):
    """Each protocol's documents, loaded by its own loader from two copies of its bundled data: the fields that
    differ are all fields compare leaves out of an item's identity (``PLACE_FIELDS``), so nothing else of a document
    records where it was read (our prompts: a copy of a sample holds no authors' templates, and no network here)."""
    from rewardbench_authors import authors_mirror

    from critic_tasks.protocols import authors
    from critic_tasks.reports.compare import PLACE_FIELDS, document_identity

    # RewardBench's and RM-Bench's samples are asked with the authors' prompts only: a mirror of ../shared has them
    monkeypatch.setenv(authors.MIRROR_ENV, str(authors_mirror(tmp_path / "mirror")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    authors._text.cache_clear()

    sample_dirs = {"criticbench": registry.PROTOCOLS["processbench"].sample_dir.parents[1] / "criticbench" / "sample_data"}
    checked, placed = [], 0
    for name, steps in registry.PROTOCOLS.items():
        source = steps.sample_dir or sample_dirs.get(name)
        if source is None or not source.is_dir():
            continue
        task = next(t for t, spec in registry.TASKS.items() if spec.kind_spec.protocol == name and spec.kind_spec.scored)
        copies = [shutil.copytree(source, tmp_path / name / where) for where in ("a", "b")]
        # our prompts and RealCritic's strict reading: a copy of a sample holds no authors' files
        docs_a, docs_b = (engine.task_docs(task, data_dir=str(c), prompt="ours", grading="strict") for c in copies)
        assert len(docs_a) == len(docs_b) > 0, task
        differing = {k for da, db in zip(docs_a, docs_b) for k in da.keys() | db.keys() if da.get(k) != db.get(k)}
        assert differing <= set(PLACE_FIELDS), (task, differing)
        assert all(document_identity({"doc": da}) == document_identity({"doc": db}) for da, db in zip(docs_a, docs_b))
        checked.append(name)
        placed += bool(differing)
    assert {"criticbench", "judgebench", "processbench", "realcritic"} <= set(checked)
    assert placed >= 3  # CriticBench, JudgeBench and ProcessBench record the file they read (RealCritic the line)


def _process_runs(tmp_path, replies_a, replies_b, data_a, data_b, label="run"):
    docs_a = engine.task_docs(PROCESS_TASK, data_dir=str(data_a), prompt="ours")  # our wording: no authors' file
    docs_b = engine.task_docs(PROCESS_TASK, data_dir=str(data_b), prompt="ours")
    rows_a = [_sample_row(PROCESS_TASK, i, d, replies_a(d)) for i, d in enumerate(docs_a)]
    rows_b = [_sample_row(PROCESS_TASK, i, d, replies_b(d)) for i, d in enumerate(docs_b)]
    a = _write_run(tmp_path / f"{label}-a", {PROCESS_TASK: rows_a}, "critic-a")
    b = _write_run(tmp_path / f"{label}-b", {PROCESS_TASK: rows_b}, "critic-b")
    return a, b, rows_a, rows_b


def _label_reply(doc):
    return f"The earliest wrong step is \\boxed{{{doc['label']}}}."


def _no_error_reply(doc):
    return "Every step is right: \\boxed{-1}."


def test_runs_on_copies_of_the_data_in_two_folders_compare(tmp_path, capsys):
    data_a, data_b = _copies(tmp_path, "processbench")
    a, b, rows_a, rows_b = _process_runs(tmp_path, _no_error_reply, _label_reply, data_a, data_b)
    assert rows_a[0]["doc"]["source_file"] != rows_b[0]["doc"]["source_file"]  # what used to refuse them
    assert rows_a[0]["doc_hash"] != rows_b[0]["doc_hash"]
    found = {c.key: c for c in compare_runs(*load_runs(a), *load_runs(b), settings=SETTINGS)}
    # the bundled gsm8k sample: 2 erroneous, 2 correct items; A answers -1 everywhere (F1 0), B every label (100)
    assert found["f1"].a == 0.0 and found["f1"].b == 100.0
    assert found["error_accuracy"].difference == 100.0
    assert cli.main(["compare", str(a), str(b)]) == 0
    assert "| critic_processbench_gsm8k.f1 | 0.00 | 100.00 | +100.00 |" in capsys.readouterr().out


def test_a_changed_document_is_refused_in_one_line_naming_its_field(tmp_path, capsys):
    data_a, data_b = _copies(tmp_path, "processbench")
    problem = json.loads((data_b / "gsm8k.json").read_text())
    problem[2]["steps"][0] = problem[2]["steps"][0] + " (edited)"
    (data_b / "gsm8k.json").write_text(json.dumps(problem))
    a, b, _, _ = _process_runs(tmp_path, _label_reply, _label_reply, data_a, data_b)
    assert cli.main(["compare", str(a), str(b)]) == 2
    line = one_line(capsys)
    assert f"{PROCESS_TASK}: 1 item differs" in line and "doc_id 2 differs in field 'steps'" in line
    assert "(edited)" in line.split("field 'steps'")[1]  # B's value, shown (shortened) beside A's


REALCRITIC_TASK = "critic_realcritic_gsm8k"


def _realcritic_file(path, blank_first: bool = False):
    """A RealCritic gsm8k file (the released rows' fields) of 8 items, the shown solution right on every third;
    ``blank_first``: a blank line above the first item."""
    rows = []
    for i in range(8):
        gold, pred = str(3 * i + 2), str(3 * i + 2 if i % 3 == 0 else 3 * i)
        rows.append({"idx": i, "question": f"What is {i} times 3, plus 2?", "gt": gold, "gt_cot": f"{3 * i} + 2",
                     "pred": pred, "reasoning": f"The answer is $\\boxed{{{pred}}}$.", "model": "sample-model",
                     "previous_score": [pred == gold]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(("\n" if blank_first else "") + "".join(json.dumps(r) + "\n" for r in rows))
    return path


def _realcritic_run(folder, data_dir, right):
    """An lm-eval run of RealCritic's gsm8k on the file in ``data_dir``: the critic's corrected answer the gold one
    where ``right(idx)``, else one off."""
    docs = engine.task_docs(REALCRITIC_TASK, data_dir=str(data_dir), prompt="ours", grading="strict")
    rows = [_sample_row(REALCRITIC_TASK, i, d, f"\\boxed{{{int(d['gold']) + (0 if right(d['idx']) else 1)}}}")
            for i, d in enumerate(docs)]
    return _write_run(folder, {REALCRITIC_TASK: rows}, folder.name), rows


def test_a_blank_line_in_the_data_file_moves_no_item(tmp_path, capsys):
    """Red team: the same RealCritic file with a blank line added above its first item was refused, every item
    "differs in field 'line' (1 in A, 2 in B)": the loader keeps each item's physical line. A line is where an item
    sits, not what it is (``PLACE_FIELDS``); the items still pair by doc_id (their place among the documents, which
    the blank line leaves), so the comparison is the one on an unchanged copy, value for value."""
    from critic_tasks.protocols.realcritic import data

    plain, blank = tmp_path / "plain", tmp_path / "blank"
    _realcritic_file(plain / data.task_file("gsm8k"))
    _realcritic_file(blank / data.task_file("gsm8k"), blank_first=True)
    a, _ = _realcritic_run(tmp_path / "a", plain, lambda idx: idx % 2 == 0)
    b_plain, rows_plain = _realcritic_run(tmp_path / "b-plain", plain, lambda idx: idx != 5)
    b_blank, rows_blank = _realcritic_run(tmp_path / "b-blank", blank, lambda idx: idx != 5)
    assert [r["doc"]["line"] for r in rows_blank] == [r["doc"]["line"] + 1 for r in rows_plain]  # what was refused

    def compared(b):
        return [(c.key, c.a, c.b, c.interval, c.p_value, c.units)
                for c in compare_runs(*load_runs(a), *load_runs(b), settings=SETTINGS)]

    found = compared(b_blank)
    assert found == compared(b_plain)
    (accuracy,) = [c for c in found if c[0] == "accuracy"]
    assert (accuracy[1], accuracy[2], accuracy[5]) == (50.0, 87.5, 8)  # A right on 4 of 8 items, B on 7
    assert cli.main(["compare", str(a), str(b_blank)]) == 0
    assert f"| {REALCRITIC_TASK}.accuracy | 50.00 | 87.50 | +37.50 |" in capsys.readouterr().out


def test_a_blank_line_in_a_revision_items_file_moves_no_item(tmp_path):
    """The revision protocols' own items files (--metadata items_file): each item's ``item_index`` is its line, and an
    item without an ``id`` was named by its line; with a blank line above the items both moved, and every item
    differed. Its place among the items names it now; a changed item still differs."""
    from critic_tasks.protocols.revision import data
    from critic_tasks.reports.compare import document_identity

    rows = "".join(json.dumps({"question": f"What is {i} + {i}?", "generation": f"It is {2 * i}.",
                               "ground_truth_answer": str(2 * i)}) + "\n" for i in range(4))
    plain, blank = tmp_path / "plain.jsonl", tmp_path / "blank.jsonl"
    plain.write_text(rows)
    blank.write_text("\n" + rows)
    docs_a, docs_b = (data.load_task_docs("utility", items_file=str(p)) for p in (plain, blank))
    assert [d["item_index"] for d in docs_b] == [d["item_index"] + 1 for d in docs_a]  # where each item sits
    assert [document_identity({"doc": d}) for d in docs_a] == [document_identity({"doc": d}) for d in docs_b]
    assert document_identity({"doc": docs_a[1]}) != document_identity({"doc": {**docs_a[1], "generation": "5."}})


# ----------------------------------------------------------------------------- strata: ProcessBench's subset x class


def _process_items(n: int, seed: int) -> list[dict]:
    """ProcessBench-shaped items (the released files' fields): about a third with every step right (label -1)."""
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        steps = [f"Step {k + 1} of item {i}." for k in range(int(rng.integers(2, 7)))]
        label = -1 if rng.random() < 0.35 else int(rng.integers(0, len(steps)))
        items.append({"id": f"gsm8k-{i}", "generator": "Qwen2-7B-Instruct", "problem": f"Problem {i}?",
                      "steps": steps, "label": label, "final_answer_correct": label == -1})
    return items


def _critic(skill: float, seed: int):
    """Names the labelled step with probability ``skill``, else a step drawn from -1 .. n_steps - 1."""
    rng = np.random.default_rng(seed)

    def reply(doc):
        if rng.random() < skill:
            return f"\\boxed{{{doc['label']}}}"
        return f"\\boxed{{{int(rng.integers(-1, doc['n_steps']))}}}"

    return reply


def _f1(pred: np.ndarray, label: np.ndarray) -> float | None:
    """run_eval.py's F1 written out: accuracy on the erroneous items, on the correct ones, their harmonic mean."""
    erroneous = label != -1
    if erroneous.all() or not erroneous.any():
        return None
    a1 = 100.0 * np.mean(pred[erroneous] == label[erroneous])
    a2 = 100.0 * np.mean(pred[~erroneous] == label[~erroneous])
    return 0.0 if a1 + a2 == 0 else 2 * a1 * a2 / (a1 + a2)


def _paired_draws(strata: list[str]) -> np.ndarray:
    """(B, n) positions: numpy.random.default_rng(SEED); each stratum, in sorted order, draws its own n_s units with
    replacement (``integers(0, n_s, (B, n_s))``), the blocks side by side."""
    rng = np.random.default_rng(SEED)
    labels = np.array(strata)
    blocks = []
    for stratum in sorted(set(strata)):
        positions = np.flatnonzero(labels == stratum)
        blocks.append(positions[rng.integers(0, len(positions), size=(B, len(positions)))])
    return np.concatenate(blocks, axis=1)


def _interval(diffs) -> tuple[float, float]:
    tail = 100 * (1 - LEVEL) / 2
    return float(np.percentile(diffs, tail)), float(np.percentile(diffs, 100 - tail))


def test_processbench_f1_is_resampled_within_subset_and_class_as_its_interval_is(tmp_path):
    items = _process_items(48, seed=5)
    for where in ("lab-a", "lab-b"):
        (tmp_path / where / "data").mkdir(parents=True)
        (tmp_path / where / "data" / "gsm8k.json").write_text(json.dumps(items))
    a, b, rows_a, rows_b = _process_runs(tmp_path, _critic(0.4, 1), _critic(0.6, 2), tmp_path / "lab-a" / "data",
                                         tmp_path / "lab-b" / "data")
    (got,) = compare_runs(*load_runs(a), *load_runs(b), [f"{PROCESS_TASK}.f1"], settings=SETTINGS)

    # the units in the order the draws index: documents, by their names' text ('doc 10' before 'doc 2')
    order = sorted(range(len(items)), key=lambda i: f"doc {i}")
    label = np.array([items[i]["label"] for i in order])
    pred_a = np.array([rows_a[i]["f1"]["pred"] if rows_a[i]["f1"]["pred"] is not None else -99 for i in order])
    pred_b = np.array([rows_b[i]["f1"]["pred"] if rows_b[i]["f1"]["pred"] is not None else -99 for i in order])
    strata = [f"gsm8k\x00{int(x != -1)}" for x in label]  # (subset, class)
    diffs = [_f1(pred_b[d], label[d]) - _f1(pred_a[d], label[d]) for d in _paired_draws(strata)]
    assert got.difference == pytest.approx(_f1(pred_b, label) - _f1(pred_a, label), abs=1e-9)
    assert got.units == len(items)
    assert got.interval == pytest.approx(_interval(diffs), abs=1e-9)
    # drawn without the strata (the bug: 'processbench' is no family's name), the same seed gives another interval
    plain = [_f1(pred_b[d], label[d]) - _f1(pred_a[d], label[d])
             for d in np.random.default_rng(SEED).integers(0, len(items), size=(B, len(items)))]
    assert _interval([x for x in plain if x is not None]) != pytest.approx(got.interval, abs=1e-6)


def test_every_family_with_an_interval_declares_its_strata_beside_it():
    """One function per family, declared in its protocol's scoring module next to its interval: ProcessBench's F1
    by (subset, class), its accuracies (one class each) plainly; a pass rate by domain; a pairwise accuracy plainly."""
    from critic_tasks.core.records import Record

    assert set(registry.STRATA) == set(registry.INTERVALS)
    f1_metric = registry.TASKS[PROCESS_TASK].kind_spec.metric("f1")
    record = Record.from_dict({"kind": "process_step", "domain": "gsm8k", "item": "3", "pred": 0, "parsed": True,
                               "label": 2, "n_steps": 4})
    assert registry.metric_stratum(f1_metric.family, "f1", record) == "gsm8k\x001"
    assert registry.metric_stratum(f1_metric.family, "error_accuracy", record) == ""
    correction = Record.from_dict({"kind": "correction", "domain": "math_cot", "passed": [True], "parsed": [True]})
    assert registry.metric_stratum("correction", "pass_rate", correction) == "math_cot"
    assert registry.metric_stratum("pairwise", "accuracy", correction) == ""


# ----------------------------------------------------------------------------- two runs that cannot be paired (issue 46)


def _one_subset_run(tmp_path, name, subset, config=None, metadata=None, docs=None):
    task = f"critic_processbench_{subset}"
    docs = engine.task_docs(task, data_dir="sample") if docs is None else docs
    folder = _write_run(tmp_path / name, {task: [_sample_row(task, i, d, _label_reply(d)) for i, d in enumerate(docs)]},
                        "critic", config=config)
    if metadata is not None:  # the task options lm-eval records in each task's config
        path = folder / f"results_{TIME}.json"
        data = json.loads(path.read_text())
        data["configs"][task]["metadata"].update(metadata)
        path.write_text(json.dumps(data))
    return folder


def test_runs_of_different_tasks_are_one_line_naming_each_sides_tasks(tmp_path, capsys):
    a = _one_subset_run(tmp_path, "a", "gsm8k")
    b = _one_subset_run(tmp_path, "b", "math")
    for command in (["compare", str(a), str(b)], ["report", str(a), str(b), "--paired"]):
        assert cli.main(command) == 2
        line = one_line(capsys)
        assert ("the runs hold different tasks (A: critic_processbench_gsm8k; B: critic_processbench_math)" in line
                and "--log_samples" not in line), line


def test_the_same_run_given_twice_is_one_line(tmp_path, capsys):
    a = _one_subset_run(tmp_path, "a", "gsm8k")
    for command in (["compare", str(a), str(a)], ["compare", str(a), str(a / f"results_{TIME}.json")],
                    ["report", str(a), str(a), "--paired"]):
        assert cli.main(command) == 2
        assert "A and B are the same run" in one_line(capsys)
    # two distinct runs with identical replies: the zero table, a determinism check
    b = _one_subset_run(tmp_path, "b", "gsm8k")
    assert cli.main(["compare", str(a), str(b)]) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| critic_")]
    assert rows and all("| +0.00 | [0.00, 0.00] | 1 |" in r for r in rows)


def test_items_that_differ_say_which_recorded_setting_differs(tmp_path, capsys):
    docs = engine.task_docs(PROCESS_TASK, data_dir="sample")
    a = _one_subset_run(tmp_path, "a", "gsm8k", config={"limit": 2}, docs=docs[:2])
    b = _one_subset_run(tmp_path, "b", "gsm8k")
    assert cli.main(["compare", str(a), str(b)]) == 2
    line = one_line(capsys)
    assert "2 items differ" in line and "the runs' settings differ: limit 2 in A, unset in B" in line
    c = _one_subset_run(tmp_path, "c", "gsm8k", metadata={"orders": "single"}, docs=docs[:3])
    assert cli.main(["compare", str(c), str(b)]) == 2
    assert "the runs' settings differ: orders single in A, unset in B" in one_line(capsys)


# ----------------------------------------------------------------------------- runs have names


def _named_run(tmp_path, name, model, metadata, limit=None):
    task = "critic_judgebench"
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"results_{TIME}.json").write_text(json.dumps({
        "results": {task: {"accuracy,none": 50.0}}, "date": 1795000000.0,
        "config": {"model_args": f"pretrained={model},dtype=float32", "limit": limit},
        "configs": {task: {"task": task, "metadata": {"version": 1.0, "pretrained": model, "dtype": "float32",
                                                      "data_dir": "/data/judgebench", **metadata}}}}))
    return folder


def test_runs_are_named_by_model_benchmark_options_and_date(tmp_path, capsys):
    from critic_tasks.reports.results import load_all

    gpt = _named_run(tmp_path, "qdpv68r5", "HuggingFaceTB/SmolLM2-135M-Instruct", {})
    claude = _named_run(tmp_path, "x7hs0a2b", "HuggingFaceTB/SmolLM2-135M-Instruct", {"split": "claude"})
    limited = _named_run(tmp_path, "k2", "/models/SmolLM2-135M/", {"split": "claude", "orders": "single"}, limit=4)
    assert [r.label for r in load_all([gpt, claude, limited])] == [
        "HuggingFaceTB/SmolLM2-135M-Instruct · judgebench · 11-28",
        "HuggingFaceTB/SmolLM2-135M-Instruct · judgebench claude · 11-28",
        "SmolLM2-135M · judgebench single claude · 11-28 · limit 4"]
    assert cli.main(["report", str(gpt), str(claude)]) == 0
    out = capsys.readouterr().out
    assert "HuggingFaceTB/SmolLM2-135M-Instruct · judgebench claude · 11-28" in out and "qdpv68r5" not in out.split(
        "Runs:")[1].split("(")[0]
    assert cli.main(["report", str(gpt), str(claude), "--label", "gpt split", "--label", "claude split"]) == 0
    assert "Runs: gpt split (" in capsys.readouterr().out
    assert cli.main(["report", str(gpt), str(claude), "--label", "one"]) == 2
    assert "--label given 1 time(s) for 2 run(s)" in one_line(capsys)
    assert cli.main(["summary", str(claude)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "HuggingFaceTB/SmolLM2-135M-Instruct · judgebench claude · 11-28:"
    assert cli.main(["summary", str(claude), "--label", "mine"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "mine:"


def test_the_pairs_a_limited_run_records_are_not_named_as_an_option(tmp_path):
    """critic-eval writes ``limit_pairs`` into a pairwise task's metadata under --limit (the pairs it asked): a
    newcomer's JudgeBench run was named '... judgebench limit_pairs=1 · 11-28 · limit 1'."""
    from critic_tasks.reports.results import load_all

    limited = _named_run(tmp_path, "k3", "/models/SmolLM2-135M/", {"split": "claude", "limit_pairs": 1}, limit=1)
    assert [r.label for r in load_all([limited])] == ["SmolLM2-135M · judgebench claude · 11-28 · limit 1"]


def test_the_two_stages_of_a_realcritic_self_critique_run_are_named_by_their_mode(tmp_path):
    """`critic-eval --tasks critic_realcritic_self_gsm8k --output_path out` writes stage 1 (direct CoT) and stage 2
    (self-critique) under out/; both were named '... · realcritic · 11-28 · limit 1', told apart only by folder."""
    from critic_tasks.reports.results import load_all

    def run(name: str, task: str):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"results_{TIME}.json").write_text(json.dumps({
            "results": {task: {"accuracy,none": 50.0}}, "config": {"model_args": "pretrained=m", "limit": 1},
            "configs": {task: {"task": task, "metadata": {"version": 1.0, "pretrained": "m"}}}}))
        return folder

    runs = [run("a", "critic_realcritic_direct_gsm8k"), run("b", "critic_realcritic_self_gsm8k"),
            run("c", "critic_realcritic_gsm8k")]
    assert [r.label for r in load_all(runs)] == ["m · realcritic direct · 11-28 · limit 1",
                                                 "m · realcritic self · 11-28 · limit 1", "m · realcritic · 11-28 · limit 1"]


def test_compare_names_both_runs_by_label(tmp_path, capsys):
    """Two runs of one model whose names meet (a name leaves out generation settings: a newcomer's max_gen_toks=32
    and 64 runs were both 'SmolLM2 · judgebench · 11-29 · limit 1') are told apart by their folders, as report does."""
    a = _one_subset_run(tmp_path, "a", "gsm8k")
    b = _one_subset_run(tmp_path, "b", "gsm8k")
    assert cli.main(["compare", str(a), str(b)]) == 0
    assert "(A: critic · processbench · 11-28 (a); B: critic · processbench · 11-28 (b))" in capsys.readouterr().out
    assert cli.main(["compare", str(a), str(b), "--label", "base", "--label", "tuned"]) == 0
    assert "(A: base; B: tuned)" in capsys.readouterr().out
    assert cli.main(["compare", str(a), str(b), "--label", "base"]) == 2
    assert "name both runs" in one_line(capsys)


def _rmbench_records(prompt: str, right: bool) -> list:
    from critic_tasks.protocols.rmbench.scoring import RMBenchRecord

    out = []
    for i in range(3):
        for j in range(3):
            for order, gold in (("forward", "A"), ("reverse", "B")):
                verdict = gold if right else {"A": "B", "B": "A"}[gold]
                out.append(RMBenchRecord(domain="chat", prompt_id=prompt, pair_id=f"{prompt}-{i}{j}",
                                         chosen_style=i, rejected_style=j, order=order, verdict=verdict, parsed=True,
                                         gold=gold, lengths=(10, 20)))
    return out


def test_rmbench_is_resampled_by_prompt_and_a_prompt_drawn_twice_counts_twice():
    """compare draws the unit each family declares beside its interval (registry.UNITS): an RM-Bench prompt with its
    3 x 3 comparisons in both orders for the prompt-level values (its bias lines: one comparison), a RewardBench pair.
    A prompt drawn twice enters the metric as two prompts (its prompt_id told apart): with one prompt all right and
    one all wrong, the draw (0, 0, 1) is 2/3 right, by hand; counted as one prompt it would be 1/2."""
    from critic_tasks.reports.compare import Recompute, Units, unit_of

    records = {"p0": _rmbench_records("p0", True), "p1": _rmbench_records("p1", False)}
    accuracy = registry.result_metric("critic_rmbench", "accuracy")
    units: dict[str, list] = {}
    for doc_id, record in enumerate(r for rs in records.values() for r in rs):
        units.setdefault(unit_of("rmbench", "accuracy", record, doc_id), []).append(record)
    assert sorted(units) == ["prompt p0", "prompt p1"] and all(len(v) == 18 for v in units.values())
    assert unit_of("rmbench", "first_position", records["p0"][0], 0) == "pair p0-00"
    names = sorted(units)
    drawn = Recompute(accuracy, Units(names, [units[n] for n in names], [units[n] for n in names], ["chat"] * 2))
    assert drawn.value(0, [0, 1]) == pytest.approx(50.0)
    assert drawn.value(0, [0, 0, 1]) == pytest.approx(200 / 3)
    from critic_tasks.protocols.rewardbench.scoring import RewardBenchRecord

    assert unit_of("rewardbench", "accuracy", RewardBenchRecord(domain="chat", pair_id="7"), 3) == "pair 7"
    assert unit_of("process", "f1", object(), 3) == "doc 3"  # no unit declared: the document


# ----------------------------------------------------------------------------- an OpenCompass run as either side


def _write_opencompass_run(root, task: str, rows: list[dict], model: str, chunks: int = 1):
    """An OpenCompass run folder as `critic-eval opencompass` leaves it (``<root>/<time>/``): the predictions (each
    item's prompt, reply and ``gold``, our datasets' reference: the document as JSON; split into ``chunks`` files
    ``<task>_0.json``, ... when over one, as a split run writes them), the evaluation result with our evaluator's
    per-item ``details`` (each the item's record, with its label and reply), and the summarizer's per-model file.
    Its items and replies are the given lm-eval rows'."""
    run = root / "20260101_000000"
    kind = registry.TASKS[task].kind_spec
    (run / "predictions" / model).mkdir(parents=True)
    (run / "results" / model).mkdir(parents=True)
    (run / "summary").mkdir()
    items = [{"origin_prompt": [{"role": "HUMAN", "prompt": "..."}], "prediction": r["resps"][0][0],
              "gold": json.dumps(r["doc"])} for r in rows]
    bounds = np.linspace(0, len(items), chunks + 1).astype(int)
    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        name = f"{task}.json" if chunks == 1 else f"{task}_{k}.json"
        part = {str(i): item for i, item in enumerate(items[lo:hi])}
        (run / "predictions" / model / name).write_text(json.dumps(part))
    # each value a list, one per replica of the item (OpenCompass's BaseEvaluator.evaluate), and its example_abbr
    details = [{"example_abbr": f"{task}_{r['doc_id']}",
                **{k: [v] for k, v in {"item": f"item {r['doc_id']}", "prediction": r["resps"][0][0],
                                       **next(r[m.key] for m in kind.metrics if m.key in r)}.items()}}
               for r in rows]
    reported = _reported(task, rows)
    (run / "results" / model / f"{task}.json").write_text(json.dumps({**reported, "details": details}))
    summary = run / "summary" / f"critic_results_{model}_20260101_000000.json"
    summary.write_text(json.dumps({"results": {task: {f"{k},none": v for k, v in reported.items()}}, "groups": {},
                                   "config": {"model": model, "harness": "opencompass"}}))
    return summary


def test_an_opencompass_run_compares_with_an_lm_eval_run_item_by_item(tmp_path, capsys):
    """Noticed at stop 48: `compare` read only lm-eval's --log_samples rows and refused an OpenCompass run. It now
    reads an OpenCompass run's own per-item files (its predictions' ``gold``, the document, and our evaluator's
    ``details``, the records) from the summary file's run folder, split predictions included: ProcessBench's F1
    between an lm-eval run and an OpenCompass run is the paired bootstrap written here in numpy within (subset,
    class), as between two lm-eval runs."""
    items = _process_items(40, seed=8)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "gsm8k.json").write_text(json.dumps(items))
    a, _, rows_a, rows_b = _process_runs(tmp_path, _critic(0.3, 3), _critic(0.7, 4), tmp_path / "data",
                                         tmp_path / "data")
    for chunks in (1, 3):
        b = _write_opencompass_run(tmp_path / f"oc-{chunks}", PROCESS_TASK, rows_b, "critic-b_hf", chunks)
        (got,) = compare_runs(*load_runs(a), *load_runs(b), [f"{PROCESS_TASK}.f1"], settings=SETTINGS)
        order = sorted(range(len(items)), key=lambda i: f"doc {i}")
        label = np.array([items[i]["label"] for i in order])
        pred_a, pred_b = (np.array([rows[i]["f1"]["pred"] if rows[i]["f1"]["pred"] is not None else -99
                                    for i in order]) for rows in (rows_a, rows_b))
        strata = [f"gsm8k\x00{int(x != -1)}" for x in label]
        diffs = [_f1(pred_b[d], label[d]) - _f1(pred_a[d], label[d]) for d in _paired_draws(strata)]
        assert got.difference == pytest.approx(_f1(pred_b, label) - _f1(pred_a, label), abs=1e-9)
        assert got.units == len(items) and got.interval == pytest.approx(_interval(diffs), abs=1e-9)
    # named by the model's abbr and the run's date, as an lm-eval run is by its model and date
    label = load_runs(b)[0].label
    assert label.startswith("critic-b_hf · ") and label.endswith(" · 01-01"), label
    # through the command, either side
    assert cli.main(["compare", str(b), str(a)]) == 0
    assert f"{PROCESS_TASK}" in capsys.readouterr().out
    # a changed document is refused as between two lm-eval runs, naming the field
    rows_changed = [dict(r, doc={**r["doc"], "problem": "Another problem?"}) if i == 5 else r
                    for i, r in enumerate(rows_b)]
    changed = _write_opencompass_run(tmp_path / "oc-changed", PROCESS_TASK, rows_changed, "critic-b_hf")
    assert cli.main(["compare", str(a), str(changed)]) == 2
    line = one_line(capsys)
    assert "1 item differs" in line and "doc_id 5 differs in field 'problem'" in line, line
    # two replicas of an item (a dataset config's n = 2): one line
    twice = _write_opencompass_run(tmp_path / "oc-twice", PROCESS_TASK, rows_b, "critic-b_hf")
    result = twice.parent.parent / "results" / "critic-b_hf" / f"{PROCESS_TASK}.json"
    held = json.loads(result.read_text())
    held["details"] = [{k: v if k == "example_abbr" else v * 2 for k, v in d.items()} for d in held["details"]]
    result.write_text(json.dumps(held))
    assert cli.main(["compare", str(a), str(twice)]) == 2
    line = one_line(capsys)
    assert "2 replicas of one item" in line and "details[0]" in line, line
    # a run without its per-item details (OpenCompass run with --dump-eval-details off): one line
    bare = _write_opencompass_run(tmp_path / "oc-bare", PROCESS_TASK, rows_b, "critic-b_hf")
    result = bare.parent.parent / "results" / "critic-b_hf" / f"{PROCESS_TASK}.json"
    result.write_text(json.dumps({"f1": 0.0}))
    assert cli.main(["compare", str(a), str(bare)]) == 2
    line = one_line(capsys)
    assert "no per-item 'details'" in line and "--dump-eval-details" in line, line
    # a summary whose run folder holds no per-item files of the task: one line naming where compare looks
    result.unlink()
    assert cli.main(["compare", str(a), str(bare)]) == 2
    line = one_line(capsys)
    assert "(OpenCompass) has no per-item files" in line and "results/<model>/<task>.json" in line, line


def test_what_a_scorer_writes_into_a_document_is_not_its_identity():
    """This session's CI: the parity runs' RealCritic documents differed in 'prior_correct' between an lm-eval run
    (logged after scoring, which keeps the shown solution's grade in the document) and an OpenCompass run (its
    reference is the document before scoring: null). The grade is computed from the item; a changed item is still
    told apart."""
    from critic_tasks.reports.compare import document_identity

    doc = {"idx": 3, "question": "2 + 2?", "solution": "4", "gold": "4", "prior_correct": None}
    assert document_identity({"doc": doc}) == document_identity({"doc": {**doc, "prior_correct": True}})
    assert document_identity({"doc": doc}) != document_identity({"doc": {**doc, "gold": "5"}})
