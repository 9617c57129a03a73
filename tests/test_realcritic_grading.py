"""RealCritic's reading rules (issue 43): under ``grading: authors`` (the default) the answer read from a reply and
its grade equal what the authors' parser.py, math_eval.py and grader.math_equal give (their code imported from
../shared/data/realcritic, ``realcritic_authors``), on replies of every shape and real items of the eight tasks;
the reader is linear in the reply; ``grading: strict`` keeps our stricter reading."""

from __future__ import annotations

import json
import time

import pytest
import realcritic_authors

from critic_tasks.core.errors import ConfigError
from critic_tasks.protocols.realcritic import authors_grading, data, scoring, stages

SHARED = realcritic_authors.SHARED
needs_authors = pytest.mark.skipif(not realcritic_authors.AVAILABLE or not (SHARED / "data" / "mix_data").is_dir(),
                                   reason=f"{SHARED} (the authors' code and data) is absent")
ITEMS_PER_TASK = 3


def _theirs(row: dict, task: str, reply: str) -> tuple[str | None, bool]:
    """Their pipeline on one reply: math_eval.py's reading (run_execute on the stripped reply, then a choice item's
    answer read again as a choice), evaluate.py's gold (parse_ground_truth) and grade (math_equal_process)."""
    theirs = realcritic_authors.load()
    code = reply.rstrip().strip()
    pred, _ = theirs.parser.run_execute(None, code, "critic_and_correct", task)
    if row["gt"] in ["A", "B", "C", "D", "E"] and pred not in ["A", "B", "C", "D", "E"]:
        pred = theirs.parser.choice_answer_clean(code)
    _, gold = theirs.parser.parse_ground_truth(dict(row), task)
    return pred, bool(theirs.grader.math_equal_process((0, pred, gold)))


def _shapes(row: dict) -> list[str]:
    """Replies of the shapes the authors' rules read and ours used to refuse, built on the item's gold and its
    solution's answer."""
    gt, pred = str(row["gt"]), str(row["pred"])
    shapes = [
        f"Step 1 ... so the answer is ({gt}).", f"The answer is {gt.lower()}.", f"Therefore the best answer is {gt}",
        f"\\boxed{{({gt.lower()}) 42}}", f"so \\boxed{{\\text{{({gt})}}}} it is", f"\\boxed{{{gt}}}",
        f"I agree.\n\\boxed{{{pred}}}", f"Final: {pred}", f"first \\boxed{{1}} then \\boxed{{{gt}", f"\\boxed {gt}$ ok",
        f"The final answer is ${gt}$. I hope it is correct.", f"答案是 {gt}\n\nmore", "", "error", "no answer here",
        "We get 12,345 apples and then 7 more", f"{gt} and 3.0 and 4.000", f"\\boxed{{{gt} \\text{{ cm}}}}",
        f"\\boxed{{{gt} meters}}", f"\\boxed{{x = {gt}}}", f"\\boxed{{\\dfrac{{{gt}}}{{1}}}}", "\\boxed{\\frac12}",
        "\\boxed{1/2}", "\\boxed{50\\%}", "\\boxed{(1,2)}", "\\boxed{\\left( 3, 4 \\right)}", "answer is C and B",
        "the choice is A\nthe choice is B\n\nthe answer is C", "\\boxed{E}", "\\boxed{c}", "\\boxed{two}",
    ]
    try:
        value = float(gt.replace(",", ""))
    except ValueError:
        return shapes
    return shapes + [f"\\boxed{{{value * (1 + 3e-5)!r}}}",  # within a relative 1e-4
                     f"\\boxed{{{value * (1 + 3e-3)!r}}}",  # outside it
                     f"\\boxed{{{value * 100!r}\\%}}", f"\\boxed{{{value / 100!r}}}",  # a percentage and its fraction
                     f"the answer is {value:,.2f}"]


@needs_authors
@pytest.mark.parametrize("task", data.TASKS)
def test_the_answer_and_its_grade_are_the_authors_on_replies_of_every_shape(task):
    rows = [json.loads(line) for line in (SHARED / data.task_file(task)).read_text().splitlines()][:ITEMS_PER_TASK]
    docs = stages.load_task_docs(stages.CROSS, SHARED, subset=task)[:ITEMS_PER_TASK]
    differ = []
    for row, doc in zip(rows, docs):
        assert doc["grading"] == "authors"
        for reply in _shapes(row):
            ours = scoring.record(doc, reply)
            their_answer, their_grade = _theirs(row, task, reply)
            if (ours.answer, ours.correct) != ((their_answer or None), their_grade):
                differ.append((doc["idx"], reply, ours.answer, ours.correct, their_answer, their_grade))
    assert differ == []


@needs_authors
def test_the_gold_is_read_as_the_authors_read_it_on_every_item():
    theirs = realcritic_authors.load()
    for task in data.TASKS:
        rows = [json.loads(line) for line in (SHARED / data.task_file(task)).read_text().splitlines()]
        docs = stages.load_task_docs(stages.CROSS, SHARED, subset=task)
        assert [d["authors_gold"] for d in docs] == [theirs.parser.parse_ground_truth(dict(r), task)[1] for r in rows]


@needs_authors
def test_the_unit_list_is_theirs_read_without_running_their_file():
    theirs = realcritic_authors.load()
    assert authors_grading.units(str(SHARED)) == tuple(theirs.parser.unit_texts)


ADVERSARIAL = {
    "opening boxes": "\\boxed{" * 150_000,
    "closing braces": "\\boxed{" + "}" * 1_000_000,
    "texts without a close": "\\boxed{" + "\\text{a" * 150_000 + "}",
    "digits": "\\boxed{" + "1" * 1_000_000 + "}",
    "digit runs and points": "the answer is " + "1111.0x" * 150_000,
    "units": "\\boxed{" + " m s a . cm kg sq m" * 50_000 + "}",
    "triggers": "answer is " * 100_000,
    "no answer": "x" * 1_000_000,
    "numbers": "1.5 " * 250_000,
    "array openings": "\\boxed{" + "\\begin{array}{" * 70_000 + "}",
}


@needs_authors
@pytest.mark.parametrize("shape", ADVERSARIAL)
def test_a_megabyte_reply_of_any_shape_is_read_in_under_a_second_and_graded_within_the_bound(shape):
    doc = stages.load_task_docs(stages.CROSS, SHARED, subset="olympiadbench")[0]
    reply = ADVERSARIAL[shape]
    start = time.perf_counter()
    scoring.read(doc, reply)
    assert time.perf_counter() - start < 1.0, shape
    # grading the answer read: the string and number rules at any length, sympy within its bound (a child process
    # killed after SYMBOLIC_SECONDS, restarted for the next question), only on answers of up to 1,000 characters
    scoring.shown_correct(doc)  # the shown solution's grade is the document's, made once
    start = time.perf_counter()
    scoring.record(doc, reply)
    assert time.perf_counter() - start < 1.0 + 2 * authors_grading.SYMBOLIC_SECONDS, shape


def test_strict_grading_is_the_variant_and_the_sample_defaults_to_it():
    docs = stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k")
    assert {d["grading"] for d in docs} == {"strict"}
    # strict: no box, no answer (the authors' rule reads the last number)
    assert scoring.record(docs[0], f"It is {docs[0]['gold']}.").answer is None
    with pytest.raises(ConfigError, match=r"grading='loose': expected one of authors, strict"):
        stages.load_task_docs(stages.CROSS, "sample", subset="gsm8k", grading="loose")


@needs_authors
def test_the_model_code_in_a_box_is_never_run(tmp_path):
    doc = stages.load_task_docs(stages.CROSS, SHARED, subset="college_math")[0]
    marker = tmp_path / "ran"
    reply = f"\\boxed{{__import__('pathlib').Path('{marker}').touch()}}"
    assert not scoring.record(doc, reply).correct and not marker.exists()
    assert not authors_grading.symbolic_equal(f"open('{marker}', 'w')", "1") and not marker.exists()


STRINGS = ["\\text{ cm}", "5\\text{ cm}", "\\text{a}\\text{b}", "x\\text{a", "\\begin{array}{cc} 1 & 2 \\end{array}",
           "\\begin{array}{", "1.000x", "12.0", "3.50", "10.00 and 2.0", "1.0.5", "\\mbox{m}5", "0.5%", "50\\%",
           "x = 5", "k=\\frac12", "\\dfrac{3}{4}", "\\sqrt2", "3/4", "\\sqrt{2}/2", "12/ 4", "(-\\infty,\\infty)",
           "\\emptyset", "infinity", "inf", "2 and 3", "j + 1", "i + j", "\\left( 1, 2 \\right)", "five", "\\$5",
           ".5", " 5 m ", "5 meters", "q . 7", "7 sq m", "2 hours", "\\frac{1}{2}\\text{ m}^2", "\u0661.0x",
           "\\frac1", "\\frac", "((1))", "{5}", "5^\\circ", "5^{\\circ}", "10 \\neq 3", "\\{1,2\\}", "\\!3", "3.\n"]


@needs_authors
def test_strip_string_is_theirs_on_tricky_strings_and_linear_on_long_ones():
    theirs = realcritic_authors.load().parser
    unit_list = authors_grading.units(str(SHARED))
    for text in STRINGS:
        for skip in (False, True):
            assert authors_grading.strip_string(text, skip, unit_list) == theirs.strip_string(text, skip), text
    for long in ("\\text{a" * 150_000, "\\begin{array}{" * 70_000, "1" * 1_000_000, "\\mbox{" * 150_000,
                 "1111.0" * 150_000 + "x"):
        start = time.perf_counter()
        authors_grading.strip_string(long, skip_unit=True)
        assert time.perf_counter() - start < 1.0, long[:20]


# ----------------------------------------------------------------------------- a real critic-eval run

RUN_LIMIT = 12


@pytest.mark.slow
@needs_authors
def test_a_critic_eval_run_gives_evaluate_py_numbers_per_task_and_broken_and_fixed(tmp_path, capsys, monkeypatch):
    """critic-eval on the eight tasks (their data, prompt and reading; --limit 12) with a critic replying in shapes
    of every kind; evaluate.py (their code) computes each task's acc and critic_information from the same replies,
    read by their parser.py and math_eval.py. Its previous_score is the shown solutions' grade as their own grader
    gives it here (the copy-back reply, read and graded by their code): the file's was made in their environment,
    and ours grades the shown solution by the rule that grades the critic (docs: Metrics)."""
    from helpers import scripted_cli_model

    from critic_tasks import cli

    theirs = realcritic_authors.load()
    rows = {task: [json.loads(line) for line in (SHARED / data.task_file(task)).read_text().splitlines()][:RUN_LIMIT]
            for task in data.TASKS}
    by_question = {(task, row["question"]): (task, n, row) for task, rs in rows.items() for n, row in enumerate(rs)}
    replies: dict[tuple[str, int], str] = {}

    def critic(prompt: str) -> str:
        task, n, row = next(v for (_, q), v in by_question.items() if q in prompt)
        shapes = _shapes(row)
        reply = shapes[(n * 7 + len(task)) % len(shapes)]
        replies[(task, n)] = reply
        return reply

    # the question identifies the item: no question repeats, nor holds another
    questions = [q for _, q in by_question]
    assert len(set(questions)) == len(questions) and not any(a != b and a in b for a in questions for b in questions)
    monkeypatch.setenv(data.DATA_DIR_ENV, str(SHARED))
    scripted_cli_model("critic_scripted_realcritic_authors", critic)
    out = tmp_path / "out"
    code = cli.main(["--model", "critic_scripted_realcritic_authors", "--tasks", "critic_realcritic",
                     "--limit", str(RUN_LIMIT), "--output_path", str(out), "--log_samples"])
    assert code == 0, capsys.readouterr().err[-3000:]
    (results_file,) = out.glob("*/results_*.json")
    results = json.loads(results_file.read_text())["results"]
    accuracies = []
    for task, task_rows in rows.items():
        samples = []
        for n, row in enumerate(task_rows):
            code_text = replies[(task, n)].rstrip().strip()
            pred, _ = theirs.parser.run_execute(None, code_text, "critic_and_correct", task)
            if row["gt"] in ["A", "B", "C", "D", "E"] and pred not in ["A", "B", "C", "D", "E"]:
                pred = theirs.parser.choice_answer_clean(code_text)
            copied = f"\\boxed{{{row['pred']}}}"
            shown, _ = theirs.parser.run_execute(None, copied, "critic_and_correct", task)
            if row["gt"] in ["A", "B", "C", "D", "E"] and shown not in ["A", "B", "C", "D", "E"]:
                shown = theirs.parser.choice_answer_clean(copied)
            _, gold = theirs.parser.parse_ground_truth(dict(row), task)
            previous = bool(theirs.grader.math_equal_process((0, shown, gold)))
            samples.append({"idx": row["idx"], "gt_cot": row["gt_cot"], "gt": row["gt"], "pred": [pred],
                            "previous_score": [previous]})
        _, expected = theirs.evaluate.evaluate(data_name=task, prompt_type="critic_and_correct", samples=samples)
        ours = results[stages.task_name(stages.CROSS, task)]
        info = expected["critic_information"]
        assert round(ours["accuracy,none"], 1) == pytest.approx(expected["acc"]), task
        assert ours.get("correct_to_incorrect,none", 0) == pytest.approx(info["correct_to_incorrect_ratio"]), task
        assert ours.get("incorrect_to_correct,none", 0) == pytest.approx(info["incorrect_to_correct_ratio"]), task
        assert ours["solution_accuracy,none"] == pytest.approx(100 * info["originally_correct"] / len(samples))
        assert ours["prompt,none"] == "authors" and ours["grading,none"] == "authors"
        accuracies.append(ours["accuracy,none"])
    assert results["critic_realcritic"]["accuracy,none"] == pytest.approx(sum(accuracies) / len(accuracies))
