"""Correction checks: extraction (hand-made strings and every real correction prediction released with CriticEval),
answer matching, program building against real unit tests, the batched check, and pass@k."""

import json
import math

import pytest
from helpers import brute_force_pass_at_k
from toolkit_reference import toolkit_math_result as toolkit_parse_math_result
from toolkit_reference import toolkit_parse_code

from critic_tasks.core.answers import answers_match, extract_final_answer
from critic_tasks.core.metrics.pass_at_k import pass_at_k
from critic_tasks.protocols.criticbench.correction import check_corrections, gold_answer
from critic_tasks.protocols.criticbench.correction.check import extract_code
from critic_tasks.protocols.criticbench.correction.programs import (
    PRELUDE,
    RESULT_MARKER,
    TESTS_DONE_MARKER,
    build_code_test_pair,
    build_math_pot_program,
    find_entry_point,
    item_functions,
)
from critic_tasks.sandbox import ExecResult, Pair, Program

# ----------------------------------------------------------------------------- code extraction


@pytest.mark.parametrize("text,expected", [
    ("Revised:\n```python\ndef f(x):\n    return x + 1\n```\nDone.", "def f(x):\n    return x + 1"),
    ("```py\nx = 1\n```", "x = 1"),
    ("```Python3\nx = 2\n```", "x = 2"),
    ("```\ndef g():\n    return 2\n```", "def g():\n    return 2"),  # unlabelled but Python
    ("```\nThis is just prose, not code.\n```", None),
    ("```bash\nrm -rf /\n```\n```python\ny = 3\n```", "y = 3"),  # first *python* block
    ("```python\ndef a():\n    return 1\n```\n```python\ndef b():\n    return 2\n```", "def a():\n    return 1"),
    ("```python\n    def f():\n        return 1\n```", "def f():\n    return 1"),  # indented block, dedented
    ("```python\ndef cut_off():\n    return 1\n", "def cut_off():\n    return 1"),  # unclosed but complete
    ("```python\ndef cut_off(:\n", None),  # unclosed and broken
    ("def whole(x):\n    return x\n", "def whole(x):\n    return x"),  # no fence, whole text is code
    ("The answer is 1.71", None),
    ("1.71", None),  # a bare expression is not a program
    ("", None),
    (None, None),
])
def test_extract_code(text, expected):
    assert extract_code(text) == expected


# ----------------------------------------------------------------------------- final answers

MCQ = "a shop sells 3 pens for 12 . what is the price of one pen ? a ) 2 , b ) 4 , c ) 6 , d ) 8 , e ) 10"
AQUA = "What is 2 + 2? Answer Choices: (A) 3 (B) 4 (C) 5 (D) 6 (E) 7"


@pytest.mark.parametrize("text,question,expected", [
    ("so x = 4.\n#### RESULT: 16", None, "16"),
    ("#### RESULT: 72 cubic inches", None, "72"),
    ("`#### RESULT: (6.06 g/mol / 58.08 g/mol) * 100 = 10.46%`", None, "10.46%"),
    ("#### Step 3: compute\n#### RESULT: 100.09", None, "100.09"),  # markdown headings are not the marker
    ("therefore\n#### 42", None, "42"),
    ("#### RESULT: t", None, "t"),  # an explicit (wrong) answer is still an answer
    ("We get $\\boxed{\\frac{3}{4}}$.", None, "\\frac{3}{4}"),
    ("So the final answer is 2.5 hours.", None, "2.5"),
    ("The correct answer is 120 bags, not 240.", None, "120"),
    ("The answer is 0.", None, "0"),
    ("It took 5 days, then 7 more: 12 in all", None, "12"),  # last number
    ("2 moles of H2O react with 2 moles of CO2 to form H2CO3.", None, "2"),  # digits in formulas are not numbers
    ("about 1,234,567 people", None, "1234567"),
    ("1 : 729", None, "1 : 729"),
    ("the answer is b", MCQ, "4"),
    ("Answer: (D) 8", MCQ, "8"),
    ("I pick option c because ...", MCQ, "6"),
    ("The answer is (B).", AQUA, "4"),
    ("no digits at all", None, None),
    ("", None, None),
])
def test_extract_final_answer(text, question, expected):
    assert extract_final_answer(text, question) == expected


@pytest.mark.parametrize("pred,gold,expected", [
    ("5", "5.0", True), ("5.0", "5", True), ("3/4", "0.75", True), ("0.75", "\\frac{3}{4}", True),
    ("0", "0", True), ("0.0", "0", True),  # a gold 0 can be matched (the toolkit never could)
    ("1", "0", False), ("-2", "2", False),
    ("1728", "1728", True), ("52.215", "52.22", True),  # within the relative tolerance of 1e-4
    ("52.1", "52.22", False), ("10.46%", "10.46", True), ("1 : 729", "1:729", True),
    ("7.9", "7", False), ("7", "7.9", False),  # no int truncation
    (None, "3", False), ("", "3", False), ("no number", "3", False),
])
def test_answers_match(pred, gold, expected):
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize("gold", ["", "   ", "no answer given", None])
def test_unparseable_gold_raises(gold):
    with pytest.raises(ValueError, match="ground_truth_answer"):
        answers_match("5", gold)
    with pytest.raises(ValueError, match="ground_truth_answer"):
        gold_answer({"question": "q", "ground_truth_answer": gold})


def test_gold_answer_forms():
    assert gold_answer({"ground_truth_answer": "step ... #### RESULT: 0"}) == "0"
    assert gold_answer({"ground_truth_answer": {"Answer": "12"}}) == "12"
    assert gold_answer({"ground_truth_answer": {"Rationale": "so 3 * 4 = 12 . answer : c"}, "question": MCQ}) == "6"
    assert gold_answer({"ground_truth_answer": 7.5}) == "7.5"


# ----------------------------------------------------------------------------- real model outputs


def _load(predictions_dir, domain):
    data = json.loads((predictions_dir / f"dev_{domain}_correction_obj.json").read_text())
    return [data[str(i)] for i in range(len(data))]


def _section(prompt, start, *ends):
    rest = prompt.split(start, 1)[1]
    for end in ends:
        if end in rest:
            return rest.split(end, 1)[0].strip("\n")
    return rest


def _code_item(prompt):
    item = {"question": _section(prompt, "### Code Question Context:\n", "### Unit Test:"),
            "unit_test": _section(prompt, "### Unit Test:\n", "### Code:"),
            "generation": _section(prompt, "### Code:\n", "### Execution Result:", "### Feedback:")}
    item["data_source"] = "humaneval" if "def check(" in item["unit_test"] else "mbpp"
    if "### Execution Result:" in prompt:
        item["exec_rest"] = _section(prompt, "### Execution Result:\n", "### Feedback:")
    return item


@pytest.mark.parametrize("domain", ["math_cot", "math_pot", "code_exec", "code_not_exec"])
def test_extraction_rate_on_real_predictions(predictions_dir, domain):
    records = _load(predictions_dir, domain)
    preds = [r["prediction"] for r in records]
    if domain == "math_cot":
        questions = [_section(r["origin_prompt"], "### Math Question:\n", "### Rationale:") for r in records]
        ours = [extract_final_answer(p, q) is not None for p, q in zip(preds, questions)]
        baseline = [toolkit_parse_math_result(p) != "" for p in preds]
    else:
        ours = [extract_code(p) is not None for p in preds]
        baseline = [bool(toolkit_parse_code(p).strip()) for p in preds]
    print(f"\n{domain}: extracted {sum(ours)}/{len(preds)} (toolkit {sum(baseline)}/{len(preds)})")
    # Where the toolkit reads a number and we do not, the reply was cut off mid-sentence (its last number is a step
    # of the work): it ends on a letter or an open operator, with no answer marker in it.
    refused = [p for p, o, b in zip(preds, ours, baseline) if b and not o]
    for text in refused:
        assert "RESULT" not in text and text.rstrip()[-1] not in ".!?%$)]}", text[-80:]
    assert len(refused) <= 6
    assert sum(ours) + len(refused) >= sum(baseline)
    assert len(preds) == {"math_cot": 50, "math_pot": 50, "code_exec": 63, "code_not_exec": 41}[domain]


def test_real_code_not_exec_corrections_run(predictions_dir, executor):
    records = _load(predictions_dir, "code_not_exec")
    items = [_code_item(r["origin_prompt"]) for r in records]
    results = check_corrections("code_not_exec", [r["prediction"] for r in records], items, executor=executor)
    assert len(results) == len(items) and all(r.parsed for r in results)
    passed = sum(r.passed for r in results)
    print(f"\ncode_not_exec: {passed}/{len(results)} revisions pass their unit tests")
    assert 0 < passed < len(results)
    assert {r.status for r in results} <= {"passed", "failed", "timeout"}


# ----------------------------------------------------------------------------- programs against real unit tests


def test_prelude_binds_the_toolkit_names_and_loads_modules_lazily(executor):
    """The prelude every program starts with (a real file, linted): eager names, lazy modules, no sympy."""
    probe = PRELUDE + (
        "\nimport sys\nbefore = 'fractions' in sys.modules\n"
        "print(sqrt(16), gcd(12, 18), Counter('aab')['a'], List.__name__, re.sub('a', 'b', 'aa'),"
        " fractions.Fraction(1, 3), before, 'sympy' in sys.modules)\n")
    (result,) = executor.run([Program(probe)])
    assert (result.status, result.stdout) == ("passed", "4.0 6 2 List bb 1/3 False False\n"), result.stderr


def test_humaneval_program_with_real_check(predictions_dir, executor):
    item = _code_item(_load(predictions_dir, "code_not_exec")[0]["origin_prompt"])  # triangle_area
    assert item["data_source"] == "humaneval" and "def check(candidate)" in item["unit_test"]
    correct = ("def helper():\n    return 0\n\n"  # the first def is *not* the entry point
               "def triangle_area(a, b, c):\n    if a + b <= c or a + c <= b or b + c <= a:\n        return -1\n"
               "    s = (a + b + c) / 2\n    return round((s * (s - a) * (s - b) * (s - c)) ** 0.5, 2)\n")
    entry = find_entry_point(correct, item["question"], item["generation"])
    assert entry == "triangle_area"
    functions = item_functions(item["question"], item["generation"])
    pairs = [build_code_test_pair(code, item["unit_test"], "humaneval", entry, functions, "tok")
             for code in (correct, item["generation"], "def triangle_area(a, b, c):\n    return -1\n")]
    # the tester calls check on the entry point, then proves the tests ran to their end; the candidate never
    # receives the tests, and the tester never receives the candidate's code
    candidate, tester = pairs[0]
    assert "check(triangle_area)" in tester and "assert candidate(3, 4, 5) == 6.00" in tester
    assert "check(" not in candidate and "s = (a + b + c) / 2" in candidate and "s = (a + b + c) / 2" not in tester
    assert f"{TESTS_DONE_MARKER}tok" in tester and TESTS_DONE_MARKER not in candidate
    good, original, wrong = (r.trusted for r in executor.run_pairs([Pair(*p) for p in pairs]))
    assert good.status == "passed" and f"{TESTS_DONE_MARKER}tok" in good.stderr, good.stderr
    assert original.status == "failed" and "Traceback" in original.stderr  # the buggy original generation
    assert wrong.status == "failed" and "AssertionError" in wrong.stderr


def test_mbpp_program_with_real_asserts(predictions_dir, executor):
    records = _load(predictions_dir, "code_not_exec")
    item = next(i for i in map(_code_item, (r["origin_prompt"] for r in records)) if "tn_gp(" in i["unit_test"])
    assert item["data_source"] == "mbpp" and item["unit_test"].lstrip().startswith("assert")
    correct = "def tn_gp(a, n, r):\n    return a * r ** (n - 1)\n"
    functions = item_functions(item["question"], item["generation"])
    good_pair = build_code_test_pair(correct, item["unit_test"], "mbpp", None, functions)
    assert "check(" not in good_pair[1]
    good, original = (r.trusted for r in executor.run_pairs([
        Pair(*good_pair), Pair(*build_code_test_pair(item["generation"], item["unit_test"], "mbpp", None, functions))]))
    assert good.status == "passed", good.stderr
    assert original.status == "failed"


def test_uncalled_check_is_called_whatever_the_source():
    unit_test = "def check(candidate):\n    assert candidate(2) == 4\n"
    _, tester = build_code_test_pair("def sq(x):\n    return x + 2\n", unit_test, data_source=None, done_token="t")
    assert "check(sq)" in tester and tester.index("check(sq)") < tester.index(f"{TESTS_DONE_MARKER}t")
    _, tester = build_code_test_pair("x = 1\n", unit_test, data_source="humaneval")
    assert "check(__no_function_defined__)" in tester  # fails at run time instead of passing vacuously


def test_math_pot_program_prints_marked_value(executor):
    code = ("from __future__ import annotations\n"
            "class Solution:\n    def solution(self):\n        return np.sqrt(16) / 2\n")
    program = build_math_pot_program(code)
    assert program.startswith("from __future__ import annotations")  # future imports stay first
    (result,) = executor.run([Program(program)])
    assert result.status == "passed", result.stderr
    assert result.stdout.rsplit(RESULT_MARKER, 1)[1].strip() == "2.0"


# ----------------------------------------------------------------------------- check_corrections


class RecordingExecutor:
    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def run(self, programs):
        self.calls.append(len(programs))
        return self.inner.run(programs)


def test_check_math_cot():
    items = [{"question": "q", "ground_truth_answer": "#### RESULT: 0"},
             {"question": "q", "ground_truth_answer": "12"},
             {"question": MCQ, "ground_truth_answer": {"Rationale": "12 / 3 = 4 . answer : b"}},
             {"question": "q", "ground_truth_answer": "3/4"}]
    revisions = ["so the total is 0\n#### RESULT: 0", "The answer is 13.", "the answer is b", "no idea"]
    results = check_corrections("math_cot", revisions, items)
    assert [(r.parsed, r.passed, r.status) for r in results] == [
        (True, True, "passed"), (True, False, "wrong_answer"), (True, True, "passed"), (False, False, "unparsed")]


def test_invalid_gold_raises_or_is_marked():
    items = [{"question": "q", "ground_truth_answer": "12"}, {"question": "q", "ground_truth_answer": "unknown"}]
    with pytest.raises(ValueError, match=r"item 1: .*ground_truth_answer"):
        check_corrections("math_cot", ["12", "12"], items)
    results = check_corrections("math_cot", ["12", "12"], items, invalid="mark")
    assert results[0].passed and results[1].status == "invalid" and not results[1].passed
    with pytest.raises(ValueError, match="unit_test"):
        check_corrections("code_exec", ["```python\ndef f():\n    pass\n```"],
                          [{"unit_test": "", "data_source": "mbpp"}])


def test_check_math_pot_in_one_batch(executor):
    def sol(expr):
        return f"```python\nclass Solution:\n    def solution(self):\n        return {expr}\n```"

    items = [{"question": "q", "ground_truth_answer": g} for g in ("3/4", "0", "10", "10", "5", "5")]
    revisions = [sol("3 / 4"), sol("1 - 1"), sol("9"), "I cannot write code for this.",
                 "```python\nclass Solution:\n    def solution(self):\n        raise RuntimeError('x')\n```",
                 "```python\nimport sys\nclass Solution:\n    def solution(self):\n        sys.exit(0)\n```"]
    recording = RecordingExecutor(executor)
    results = check_corrections("math_pot", revisions, items, executor=recording)
    assert recording.calls == [5]  # one batched run, the unparsed revision never reaches the sandbox
    assert [r.status for r in results] == ["passed", "passed", "wrong_answer", "unparsed", "failed", "no_result"]
    assert [r.passed for r in results] == [True, True, False, False, False, False]


def test_check_code_domains(executor):
    unit_test = "def check(candidate):\n    assert candidate(3) == 9\n    assert candidate(-2) == 4\n"
    mbpp_test = "assert cube(2) == 8\nassert cube(3) == 27\n"
    items = [{"question": "def square(x):\n    '''x squared'''\n", "unit_test": unit_test, "data_source": "humaneval"},
             {"question": "def square(x):\n    '''x squared'''\n", "unit_test": unit_test, "data_source": "humaneval"},
             {"question": "Write a function cube.", "unit_test": mbpp_test, "data_source": "mbpp"},
             {"question": "Write a function cube.", "unit_test": mbpp_test, "data_source": "mbpp"},
             {"question": "Write a function cube.", "unit_test": mbpp_test, "data_source": "mbpp"}]
    revisions = ["```python\ndef square(x):\n    return x * x\n```",
                 "```python\ndef square(x):\n    return x * 3\n```",
                 "```python\ndef cube(x):\n    return x ** 3\n```",
                 "```python\ndef cube(x):\n    while True:\n        pass\n```",
                 "Sorry, no code."]
    results = check_corrections("code_not_exec", revisions, items, executor=executor, timeout_s=1.5)
    assert [(r.parsed, r.passed, r.status) for r in results] == [
        (True, True, "passed"), (True, False, "failed"), (True, True, "passed"), (True, False, "timeout"),
        (False, False, "unparsed")]


def test_check_corrections_argument_errors():
    with pytest.raises(ValueError, match="domain"):
        check_corrections("translate", [], [])
    with pytest.raises(ValueError, match="revisions"):
        check_corrections("math_cot", ["1"], [])


# ----------------------------------------------------------------------------- pass@k


@pytest.mark.parametrize("cheat", [
    "import os\nos._exit(0)\n",
    "import atexit, os\natexit.register(os._exit, 0)\ndef second_largest(xs):\n    return 0\n",
    "import sys\nsys.exit(0)\n",
])
def test_exit_status_zero_alone_is_not_a_pass(executor, cheat):
    """A revision that exits 0 before (or instead of) the tests must not pass: the tests must run to their end."""
    item = {"question": "Return the second largest number.", "generation": "def second_largest(xs): ...",
            "unit_test": "assert second_largest([4, 1, 7, 3]) == 4\nassert second_largest([10, 9]) == 9",
            "data_source": "mbpp"}
    honest = "def second_largest(xs):\n    return sorted(set(xs))[-2]\n"
    results = check_corrections("code_not_exec", [f"```python\n{cheat}```", f"```python\n{honest}```"],
                                [item, item], executor=executor)
    assert [r.passed for r in results] == [False, True]
    assert results[0].status in ("failed", "tests_not_finished")  # the tester, not the program, decides
    assert results[1].isolation == executor.isolation


def test_revisions_cut_off_by_the_budget_are_marked_truncated(executor):
    item = {"question": "Return the second largest number.", "generation": "def second_largest(xs): ...",
            "unit_test": "assert second_largest([4, 1, 7, 3]) == 4", "data_source": "mbpp"}
    cut = "Here is the fix:\n```python\ndef second_largest(xs):\n    return sorted(set(xs))["
    whole = "```python\ndef second_largest(xs):\n    return sorted(set(xs))[-2]\n```\nDone."
    results = check_corrections("code_not_exec", [cut, whole], [item, item], executor=executor)
    assert [(r.truncated, r.passed) for r in results] == [(True, False), (False, True)]


@pytest.mark.parametrize("exec_rest", ["NameError: name 'check' is not defined\ncheck(check)", "check(candidate)", ""])
def test_recorded_check_call_is_used_only_when_it_names_a_function_of_the_item(exec_rest):
    question = "def _helper(x):\n    return x\n\n\ndef add(a, b):\n    \"\"\"Add two numbers.\"\"\"\n"
    revision = "def add(a, b):\n    return a + b\n"
    assert find_entry_point(revision, question, revision, exec_rest) == "add"


def test_recorded_check_call_naming_a_defined_function_wins():
    question = "def first(x):\n    pass\n\n\ndef second(x):\n    pass\n"
    assert find_entry_point("def first(x):\n    return x\n", question, None, "check(first)") == "first"
    assert find_entry_point("def first(x):\n    return x\n", question, None, "check(unrelated)") == "second"


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_matches_brute_force(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert math.isclose(pass_at_k(n, c, k), brute_force_pass_at_k(n, c, k), abs_tol=1e-12), (n, c, k)


def test_pass_at_k_edges_and_large_n():
    assert pass_at_k(1, 1, 1) == 1.0 and pass_at_k(1, 0, 1) == 0.0
    assert math.isclose(pass_at_k(200, 13, 1), 13 / 200)
    assert 0.0 < pass_at_k(10_000, 1, 100) < 1.0  # stable where C(n, k) would overflow a float
    for bad in [(0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)]:
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_exec_result_passed_property():
    assert ExecResult("passed", 0, "", "", 0.1).passed and not ExecResult("failed", 1, "", "", 0.1).passed


def test_math_rationales_cut_off_mid_sentence_are_truncated_and_unanswered():
    item = {"question": "Tom has 5 apples and buys 7 more. How many apples does he have?", "ground_truth_answer": "12"}
    replies = ["Tom starts with 5 apples. He buys 7 more, so 5 + 7 = 12, and then he gives",  # cut off: no answer
               "Tom starts with 5 apples and buys 7 more: 12 in all",  # finished without punctuation
               "5 + 7 = 12 apples.\n#### RESULT: 12",
               "So he has 12 apples"]
    results = check_corrections("math_cot", replies, [item] * 4)
    assert [(r.truncated, r.status) for r in results] == [
        (True, "unparsed"), (False, "passed"), (False, "passed"), (False, "passed")]


def test_detail_is_a_bounded_excerpt_of_program_output(executor):
    """Issue 27.1: a math_pot program's whole printed value went into ``detail`` and so into the saved samples (a
    door for whatever it read). Now 200 characters and a count of the rest; the full value is still compared."""
    long_value = "7" * 5000
    revision = f"```python\nclass Solution:\n    def solution(self):\n        return '{long_value}'\n```"
    failing = "```python\nclass Solution:\n    def solution(self):\n        raise ValueError('x' * 5000)\n```"
    wrong, failed = check_corrections("math_pot", [revision, failing], [{"question": "q", "ground_truth_answer": "7"}] * 2,
                                      executor=executor)
    assert wrong.status == "wrong_answer" and wrong.detail == "7" * 200 + "... [4800 more characters]"
    assert failed.status == "failed" and len(failed.detail) <= 200 + len("... [99999 more characters]")
    assert failed.detail.startswith("ValueError: xxx")
