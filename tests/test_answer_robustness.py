"""Answers read from replies and golds in every shape the data uses, and replies that must never stop a task's
scoring (issue 34, classes 3 and 5). Expected values are written by hand; real golds are read from ../shared."""

from __future__ import annotations

import json
import re
import time
from fractions import Fraction

import pytest
from conftest import SHARED

from critic_tasks.core.answers import answers_match, extract_final_answer
from critic_tasks.core.records import digest
from critic_tasks.protocols.criticbench.correction.check import gold_answer

# ----------------------------------------------------------------------------- a unit is not part of the number


@pytest.mark.parametrize(("reply", "expected"), [
    ("Area: 72 cm^2", "72"),
    ("The area is 72 cm^2.", "72"),
    ("Area: 72 cm²", "72"),
    ("72 cm^2", "72"),
    ("The answer is sqrt(250) units.", "\\sqrt{250}"),
    ("sqrt(250) units", "\\sqrt{250}"),
    ("#### RESULT: -297 cm^2", "-297"),
    ("#### RESULT: 342 cubic inches", "342"),
    ("The answer is 96.098 g/mol", "96.098"),
    ("The answer is 2.5 hours.", "2.5"),
    ("so we get 10^5", "10^{5}"),
    ("The speed is 9.8 m/s^2 in the end, so it falls 44.1 m/s^2", "44.1"),
])
def test_units_after_a_number_do_not_change_the_number_read(reply, expected):
    assert extract_final_answer(reply) == expected


@pytest.mark.parametrize(("reply", "gold", "expected"), [
    ("Area: 72 cm^2", "72", True),
    ("The area is 72 cm^2.", "72", True),
    ("The answer is sqrt(250) units.", "5\\sqrt{10}", True),
    ("The answer is sqrt(250) units.", "250", False),
])
def test_a_reply_with_a_unit_is_checked_on_its_number(reply, gold, expected):
    assert answers_match(extract_final_answer(reply), gold) is expected


# ----------------------------------------------------------------------------- a LaTeX gold is read whole


@pytest.mark.parametrize(("gold", "expected"), [
    ("\\frac{3}{4}", "\\frac{3}{4}"),
    ("-\\frac{1}{2}", "-\\frac{1}{2}"),
    ("2\\sqrt{3}", "2\\sqrt{3}"),
    ("10^{5}", "10^{5}"),
    ("(2, 5)", "(2, 5)"),
    ("$\\frac{7}{2}$", "\\frac{7}{2}"),
    ("\\boxed{\\frac{7}{2}}", "\\frac{7}{2}"),
    ("72 cm^2", "72"),
    ("3.2", "3.2"),
    ("so 3 * 4 = 12 #### RESULT: 12", "12"),
])
def test_gold_answer_keeps_a_latex_gold_whole(gold, expected):
    assert gold_answer({"ground_truth_answer": gold}) == expected


@pytest.mark.parametrize(("gold", "reply", "expected"), [
    ("\\frac{3}{4}", "0.75", True),
    ("\\frac{3}{4}", "4", False),
    ("-\\frac{1}{2}", "-0.5", True),
    ("-\\frac{1}{2}", "2", False),
    ("2\\sqrt{3}", "\\sqrt{12}", True),
    ("2\\sqrt{3}", "3", False),
    ("10^{5}", "100000", True),
    ("10^{5}", "5", False),
])
def test_a_correction_reply_is_checked_against_the_whole_latex_gold(gold, reply, expected):
    from critic_tasks.protocols.criticbench.correction import check_corrections

    outcome = check_corrections("math_cot", [f"The answer is {reply}."], [{"ground_truth_answer": gold}])[0]
    assert outcome.passed is expected


# ----------------------------------------------------------------------------- real golds read as themselves

REALCRITIC = SHARED / "data" / "realcritic" / "data" / "mix_data"
FRACTION = re.compile(r"(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}")


def _real_golds(task: str, n: int) -> list[str]:
    path = REALCRITIC / task / "test.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not there")
    golds = [json.loads(line)["gt"] for line in path.read_text().splitlines() if line.strip()]
    # a word ("even") is no shape of CriticBench's math golds (numbers, GSM8K / MathQA), and the check refuses it
    return [g for g in golds if isinstance(g, str) and re.search(r"[\d\\]", g)][:n]


@pytest.mark.parametrize("task", ["math", "gsm8k"])
def test_real_golds_are_read_as_themselves_and_equal_their_plain_number(task):
    """MATH's LaTeX golds and GSM8K's numbers (RealCritic's copies): each is read by ``gold_answer`` as itself,
    equals itself, and equals its plain-number rendering where a hand rule gives one (an integer, a decimal,
    ``\\frac{a}{b}`` as a decimal)."""
    golds = _real_golds(task, 150)
    assert len(golds) >= 100
    rendered = 0
    for gold in golds:
        read = gold_answer({"ground_truth_answer": gold})
        assert read == gold.strip().strip("$").strip(), gold
        assert answers_match(gold, read), gold
        if re.fullmatch(r"-?\d+(?:\.\d+)?", gold):
            plain = str(Fraction(gold) + 0)
            plain = plain if "/" not in plain else f"{float(Fraction(gold)):.6f}"
        elif (m := FRACTION.fullmatch(gold)) and int(m.group(3)):
            plain = f"{m.group(1)}{int(m.group(2)) / int(m.group(3)):.6f}"
        else:
            continue
        rendered += 1
        assert answers_match(plain, read), (gold, plain)
    assert rendered >= 30


def test_released_criticeval_result_lines_read_as_their_number():
    """Every ``#### RESULT: x`` of the math_cot responses released with CriticEval (the dataset's answer shape)
    whose x is one number, with or without a unit ("342 cubic inches", "-297 cm^2", "1.88%"), read as that number."""
    folder = SHARED / "data" / "criticeval" / "example-predictions" / "deepseek-67b-chat-hf"
    values = set()
    for path in folder.glob("*math_cot*.json"):
        for item in json.loads(path.read_text()).values():
            values.update(v.strip() for v in re.findall(r"#### RESULT:[ \t]*([^\n]*)", item["origin_prompt"]))
    shaped = {v: m.group(1) + ("%" if v.endswith("%") else "")  # a percent sign is part of the answer
              for v in values if (m := re.fullmatch(r"(-?\d+(?:\.\d+)?)(?:%| [A-Za-z ]+| cm\^2)?", v))}
    assert len(shaped) >= 40
    for value, number in shaped.items():
        assert gold_answer({"ground_truth_answer": f"#### RESULT: {value}"}) == number, value
        assert answers_match(number, gold_answer({"ground_truth_answer": value})), value


# ----------------------------------------------------------------------------- replies that must not stop scoring

NESTED = "\\frac{" * 1000 + "1" + "}{2}" * 1000
ADVERSARIAL = {
    "1e400": "The answer is 1e400.",
    "10**400": "#### RESULT: " + "1" + "0" * 400,
    "9**9**9": "The answer is 9**9**9.",
    "tower": "The answer is $9^{9^{9}}$.",
    "nested frac": f"The answer is \\boxed{{{NESTED}}}.",
    "nested 30": "The answer is \\boxed{" + "\\frac{" * 30 + "1" + "}{2}" * 30 + "}.",
    "factorial": "The answer is 1000000!.",
    "surrogate": "The answer is \ud800 3.3.",
    "NUL": "The answer is \x003.3\x00.",
    "1 MB": "3 + " * 250_000 + "1 = ?",
}


@pytest.fixture(scope="module")
def lm_eval_path(monkeypatch_module):
    from critic_tasks import engine
    from critic_tasks.adapters.lm_eval import task_functions

    return engine, task_functions


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CRITICBENCH_DATA_DIR", "sample")
        yield mp


def test_adversarial_math_replies_score_wrong_quickly_through_a_whole_task(lm_eval_path):
    """Each shape, as the reply to the sample's math_cot item whose gold is 3.2, through lm-eval's path (the
    correction kind's filter, then process_results, then the pass-rate aggregation): every one counted, none passed,
    no exception, all within seconds."""
    engine, task_functions = lm_eval_path
    registry = engine.registry
    docs = engine.task_docs("critic_correction_math_cot")
    doc = next(d for d in docs if d["ground_truth_answer"] == "3.2")
    kind = registry.TASK_KINDS["correction"]
    start = time.monotonic()
    kept = task_functions.TaskFunctions(kind).score_filter().apply([[r] for r in ADVERSARIAL.values()], [doc] * len(ADVERSARIAL))
    rows = [task_functions.TaskFunctions(kind).process_results(doc, [k])["pass_rate"] for k in kept]
    elapsed = time.monotonic() - start
    assert [r["passed"] for r in rows] == [(False,)] * len(ADVERSARIAL)
    assert {r["checks"][0]["status"] for r in rows} <= {"wrong_answer", "unparsed"}
    assert task_functions.TaskFunctions.aggregate(rows) == 0
    assert elapsed < 20, elapsed


def test_comparison_replies_that_echo_the_options_or_hold_odd_characters_are_unparsed(lm_eval_path):
    engine, task_functions = lm_eval_path
    registry = engine.registry
    doc = engine.task_docs("critic_comparison_math_cot")[0]
    for reply in ["Decision: A/B/C.", "决策：A/B/C", "\ud800", "\x00Decision:\x00", "Decision: " + "A/" * 500_000]:
        row = task_functions.TaskFunctions(registry.TASK_KINDS["comparison"]).process_results(doc, [reply])["parse_rate"]
        assert row["parsed"] is False and row["verdict"] is None, reply[:40]


def test_overflowing_values_are_wrong_answers_never_an_overflow_error():
    assert answers_match("1e400", "3.2") is False
    assert answers_match("1" + "0" * 400, "3.2") is False
    assert answers_match("1e400", "1e400") is True


@pytest.mark.parametrize("reply", ["\\boxed{1e" + "9" * 5000 + "}", "\\boxed{1/" + "9" * 5000 + "}",
                                   "x = 5/" + "9" * 5000 + ".", "\\boxed{5e-" + "0" * 5000 + "}"])
def test_a_number_with_thousands_of_digits_anywhere_is_a_wrong_answer_never_a_crash(reply):
    """An exponent or a denominator past int()'s 4,300 digits raised ValueError from the reply's side: CriticBench's
    correction check crashed its whole batch, and RealCritic counted the item's gold as unreadable (red team)."""
    from critic_tasks.protocols.criticbench.correction.check import check_corrections
    from critic_tasks.protocols.realcritic import scoring as realcritic

    assert answers_match(extract_final_answer(reply), "5") is False
    outcome, = check_corrections("math_cot", [reply], [{"question": "What is 2+3?", "ground_truth_answer": "5"}],
                                 invalid="mark")
    assert outcome.status == "wrong_answer"
    doc = {"gold": "5", "multiple_choice": False}
    assert realcritic.grade(extract_final_answer(reply), doc) == (False, True)


def test_math_verify_is_bounded_off_the_main_thread():
    """A fraction nested 30 deep made math-verify parse for about 10 s (its SIGALRM timeout only works in the main
    thread); from a worker thread it now returns False within the bound."""
    import threading

    from critic_tasks.core import answers

    result = {}
    nested = "\\frac{" * 30 + "1" + "}{2}" * 30

    def check():
        start = time.monotonic()
        result["value"] = answers.answers_match(nested, "\\frac{3}{4}")
        result["seconds"] = time.monotonic() - start

    worker = threading.Thread(target=check)
    worker.start()
    worker.join(60)
    assert result["value"] is False and result["seconds"] < answers.MATH_VERIFY_SECONDS + 3


def test_a_bounded_step_in_the_worker_stops_and_leaves_mpmath_as_it_was(monkeypatch):
    """The worker bounds each value at a point (``_bounded``, SIGALRM in its main thread): an evaluation that runs
    on (a series evaluated where it diverges) gives None, and mpmath's global precision, which sympy sets and
    restores around its steps, is as it was even when the alarm lands in between. Outside the worker nothing is
    interrupted."""
    import mpmath

    from critic_tasks.core import answers

    def runs_on():
        mpmath.mp.prec = 300  # as sympy does just before a ``try: ... finally: restore``
        while True:
            time.sleep(0.01)

    before = mpmath.mp.prec
    monkeypatch.setattr(answers, "_IN_WORKER", True)
    start = time.monotonic()
    assert answers._bounded(0.2, runs_on) is None
    assert time.monotonic() - start < 2 and mpmath.mp.prec == before
    assert answers._bounded(0.2, lambda x: x + 1, 1) == 2
    monkeypatch.setattr(answers, "_IN_WORKER", False)
    assert answers._bounded(0.01, lambda: time.sleep(0.05) or "ran") == "ran"


def test_a_lone_surrogate_has_a_digest():
    assert digest("\ud800") != digest("\ud801") and len(digest("\ud800")) == 16


def test_a_numbered_verdict_line_with_thousands_of_digits_is_not_a_unit_never_a_crash():
    """MetaCritique's AIU reader took ``int()`` of a line's number: 5,000 digits raised ValueError (red team)."""
    from critic_tasks.core import parsing

    assert parsing.parse_numbered_verdicts("9" * 5000 + ". True\n1. False", 2) == parsing.parse_numbered_verdicts(
        "1. False", 2)
