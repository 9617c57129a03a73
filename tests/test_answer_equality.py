"""Equality of a final answer with its gold (issue 27, point 4): a table of (gold, reply, expected), every
expectation written by hand, in the shapes GSM8K (plain numbers) and MATH (LaTeX) golds take.

Rules the table pins: integer golds compared exactly (the released toolkit's ``==`` of ``eval``-ed values), a
tolerance only for non-integer numeric golds, LaTeX golds compared as expressions and never reduced to one of their
numbers, and a reply holding several different answers never passes.
"""

from __future__ import annotations

import pytest

from critic_tasks.core.answers import answers_match

TABLE = [
    # --- GSM8K: integer golds, compared exactly
    ("18", "18", True),
    ("18", "18.0", True),
    ("18", "18.00", True),
    ("18", "$18", True),
    ("18", "\\$18.00", True),
    ("18", "18 dollars", True),
    ("18", "18 eggs.", True),
    ("18", "+18", True),
    ("18", "018", True),
    ("18", "19", False),
    ("18", "-18", False),
    ("18", "18.5", False),
    ("18", "18.001", False),
    ("18", "17.9999", False),
    # a reply no int() can read (5,000 digits) or no float holds is a wrong answer, never a crash
    ("7", "7" * 5000, False),
    ("5", "1e399", False),
    ("1250000", "1250000", True),
    ("1250000", "1,250,000", True),
    ("1250000", "1250000.0", True),
    ("1250000", "1.25e6", True),
    ("1250000", "1250100", False),   # within the old 1e-4 tolerance: a wrong answer
    ("1250000", "1250001", False),
    ("1250000", "1,250,100", False),
    ("1,250,000", "1250000", True),
    ("3", "2.9999999999999996", True),  # a program's float round-off printed in full
    ("3", "3.0001", False),
    ("-7", "-7", True),
    ("-7", "\u22127", True),  # a Unicode minus
    ("-7", "7", False),
    ("0", "0", True),
    ("0", "0.0", True),
    ("0", "1e-9", False),
    ("25", "25%", True),
    ("5", "5x", False),
    ("5", "5 pi", False),
    ("5", "3 or 5", False),   # several answers
    ("5", "5 or 3", False),
    ("2", "2 and 3", False),
    ("5", "5, 6", False),
    ("5", "\\frac{10}{2}", True),
    ("5", "x = 5", True),
    ("1250000", "\\frac{2500001}{2}", False),
    # --- non-integer numeric golds: a relative tolerance of 1e-4
    ("3.2", "3.2", True),
    ("3.2", "3.20", True),
    ("3.2", "3.2000001", True),
    ("3.2", "3.21", False),
    ("3.2", "32", False),
    ("0.75", "3/4", True),
    ("0.75", "\\frac{3}{4}", True),
    ("0.75", "0.76", False),
    ("7.5", "\\frac{15}{2}", True),
    ("7.5", "7.5 hours", True),
    ("7.5", "7", False),
    ("2.5", "5/2", True),
    # --- MATH: LaTeX golds compared as expressions
    ("\\frac{3}{4}", "0.75", True),
    ("\\frac{3}{4}", "3/4", True),
    ("\\frac{3}{4}", "\\dfrac{3}{4}", True),
    ("\\frac{3}{4}", "\\frac34", True),
    ("\\frac{3}{4}", "4", False),   # the old last-number fallback took the 4
    ("\\frac{3}{4}", "3", False),
    ("\\frac{3}{4}", "4 or 0.75", False),
    ("2\\sqrt{3}", "2\\sqrt{3}", True),
    ("2\\sqrt{3}", "\\sqrt{12}", True),
    ("2\\sqrt{3}", "2\\sqrt3", True),
    ("2\\sqrt{3}", "3", False),
    ("2\\sqrt{3}", "2", False),
    ("(2, 5)", "(2,5)", True),
    ("(2, 5)", "5", False),
    ("(2, 5)", "2", False),
    ("(2, 5)", "(5, 2)", False),
    ("10^{5}", "100000", True),
    ("10^{5}", "100,000", True),
    ("10^{5}", "5", False),
    ("10^{5}", "10", False),
    ("1:729", "1:729", True),
    ("1:729", "1 : 729", True),
    ("1:729", "729", False),
    ("1:729", "1", False),
    ("2, 5", "5, 2", True),
    ("2, 5", "5", False),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", True),
    ("\\frac{\\sqrt{3}}{2}", "2", False),
    ("\\frac{\\sqrt{3}}{2}", "3", False),
    ("x^2+1", "1+x^2", True),
    ("x^2+1", "2", False),
    ("[-2, 3)", "[-2,3)", True),
    ("[-2, 3)", "(-2,3)", False),
    ("[-2, 3)", "3", False),
    ("\\pi", "\\pi", True),
    ("\\pi", "3", False),
    ("\\text{(C)}", "\\text{(C)}", True),
    ("\\$1.50", "1.5", True),
    ("\\$1.50", "1.05", False),
    ("\\infty", "\\infty", True),
]


def test_the_table_is_large_and_two_sided():
    assert len(TABLE) >= 60
    assert sum(expected for *_, expected in TABLE) >= 25 and sum(not e for *_, e in TABLE) >= 25


@pytest.mark.parametrize(("gold", "reply", "expected"), TABLE)
def test_answer_equality(gold, reply, expected):
    assert answers_match(reply, gold) is expected
