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
