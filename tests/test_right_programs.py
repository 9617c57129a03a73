"""Right programs keep passing across the two-sandbox wire, and their wrong twins keep failing.

A corpus of our own: each case is an item's tests in a shape the datasets use (MBPP's module-level asserts,
HumanEval's ``check(candidate)``, test functions nothing calls, ``unittest.TestCase`` classes, ``check_solution``-like
functions) and a right program that passes them when everything runs in one process, with a wrong twin that fails
them there. Each shape of issue 27's list has cases: generators and ``filter``/``map`` results consumed by the tests,
namedtuples compared with tuples, Fractions compared with floats, numpy arrays, ints beyond the 4,300-digit str limit,
lambdas / builtins / ranges / generators passed by the tests, the same list passed twice, ``len()`` and items of the
candidate's own object; and the question's own helpers (HumanEval/32, /38, /50 shapes), which the tester defines from
the item's text so a revision that redefines them cannot move the verdict.

Expectations are by construction (written by hand: right passes, wrong fails); a control runs every case in one
plain process to show the corpus itself is right.
"""

import json

import pytest

from critic_tasks.protocols.criticbench.correction import check_corrections
from critic_tasks.protocols.criticbench.correction.programs import (
    PRELUDE,
    TESTS_DONE_MARKER,
    find_entry_point,
    plan_tests,
    question_helpers,
)
from critic_tasks.sandbox import Program

Q = "Fix the code."  # an MBPP-like prose question: the item's functions come from its original code


def case(tests, right, wrong, source="mbpp", question=Q):
    return {"tests": tests, "right": right, "wrong": wrong, "source": source, "question": question}


POLY_Q = ('import math\n\n\ndef poly(xs: list, x: float):\n    """Evaluate a polynomial at x."""\n'
          '    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\n'
          'def find_zero(xs: list):\n    """Return a zero of the polynomial xs (even length, largest coefficient non-zero)."""\n')
POLY_T = ("METADATA = {}\n\n\ndef check(candidate):\n    import math\n"
          "    for xs in ([1, 2], [-6, 11, -6, 1], [2, -3, 0, 1], [-1, 0, 0, 1]):\n"
          "        solution = candidate(xs)\n        assert math.fabs(poly(xs, solution)) < 1e-4\n")
POLY_RIGHT = ("def find_zero(xs):\n    lo, hi = -1.0, 1.0\n    while poly(xs, lo) * poly(xs, hi) > 0:\n        lo *= 2.0\n"
              "        hi *= 2.0\n"
              "    while hi - lo > 1e-10:\n        mid = (lo + hi) / 2\n        if poly(xs, mid) * poly(xs, lo) > 0:\n"
              "            lo = mid\n        else:\n            hi = mid\n    return lo\n")
CYCLIC_Q = ('def encode_cyclic(s: str):\n    """Rotate each full group of three characters left by one."""\n'
            '    groups = [s[3 * i:min(3 * i + 3, len(s))] for i in range((len(s) + 2) // 3)]\n'
            '    groups = [(g[1:] + g[0]) if len(g) == 3 else g for g in groups]\n    return "".join(groups)\n\n\n'
            'def decode_cyclic(s: str):\n    """Invert encode_cyclic."""\n')
CYCLIC_T = ("METADATA = {}\n\n\ndef check(candidate):\n    from random import Random\n    import string\n    rng = Random(7)\n"
            "    for _ in range(50):\n"
            "        text = ''.join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 20)))\n"
            "        assert candidate(encode_cyclic(text)) == text\n")
SHIFT_Q = ('def encode_shift(s: str):\n    """Shift every letter by 5."""\n'
           '    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])\n\n\n'
           'def decode_shift(s: str):\n    """Invert encode_shift."""\n')
SHIFT_T = ("def check(candidate):\n    import copy\n    for text in ('hello', 'abcxyz', 'zebra', ''):\n"
           "        assert candidate(copy.deepcopy(encode_shift(text))) == text\n")
ADD_UP_TESTS = "assert add_up([1, 2, 3]) == 6\nassert add_up([]) == 0\n"
ADD_UP_RIGHT = "def add_up(xs):\n    return sum(xs)\n"
ADD_UP_WRONG = "def add_up(xs):\n    return sum(xs[1:])\n"
SCRIPT_MAIN = ("\n\ndef main():\n    xs = [int(x) for x in input().split()]\n    print(add_up(xs))\n    return 0\n\n\n"
               "if __name__ == '__main__':\n    sys.exit(main())\n")
# HumanEval/89 as CriticEval's code_exec items show it: the generation repeats the tests as a unittest class and ends
# with unittest.main() (dev/code_exec/27); a revision keeps that shape
ENCRYPT_Q = 'def encrypt(s):\n    """Rotate each letter down by four places."""\n'
ENCRYPT_CHECK = ("def check(candidate):\n    assert candidate('hi') == 'lm'\n    assert candidate('asdfghjkl') == 'ewhjklnop'\n"
                 "    assert candidate('a') == 'e'\n")
ENCRYPT_RIGHT = "import unittest\n\n\ndef encrypt(s):\n    return ''.join(chr((ord(c) - 97 + 4) % 26 + 97) for c in s)\n"
ENCRYPT_WRONG = "import unittest\n\n\ndef encrypt(s):\n    return ''.join(chr((ord(c) - 65 + 4) % 26 + 65) for c in s)\n"
ENCRYPT_UNITTEST = ("\n\nclass TestEncrypt(unittest.TestCase):\n    def test_encrypt(self):\n"
                    "        self.assertEqual(encrypt('hi'), 'lm')\n        self.assertEqual(encrypt('a'), 'e')\n")
GUARDED_UNITTEST_MAIN = "\n\nif __name__ == '__main__':\n    unittest.main()\n"

CASES = {
    # ---- generators, filter, map and other lazy results, consumed by the tests
    "generator_list": case("assert list(evens(7)) == [0, 2, 4, 6]\nassert list(evens(0)) == []\n",
                           "def evens(n):\n    for i in range(n):\n        if i % 2 == 0:\n            yield i\n",
                           "def evens(n):\n    for i in range(n):\n        if i % 2:\n            yield i\n"),
    "generator_set": case("assert set(chars('abca')) == {'a', 'b', 'c'}\n",
                          "def chars(s):\n    return (c for c in s)\n", "def chars(s):\n    return (c.upper() for c in s)\n"),
    "filter_list": case("assert list(positives([1, -2, 3])) == [1, 3]\n",
                        "def positives(xs):\n    return filter(lambda x: x > 0, xs)\n",
                        "def positives(xs):\n    return filter(lambda x: x < 0, xs)\n"),
    "map_list": case("assert list(squares([1, 2, 3])) == [1, 4, 9]\n",
                     "def squares(xs):\n    return map(lambda x: x * x, xs)\n",
                     "def squares(xs):\n    return map(lambda x: x + x, xs)\n"),
    "map_tuple": case("assert tuple(to_ints(['1', '20'])) == (1, 20)\n",
                      "def to_ints(xs):\n    return map(int, xs)\n", "def to_ints(xs):\n    return map(len, xs)\n"),
    "zip_result": case("assert list(pair_up([1, 2], 'ab')) == [(1, 'a'), (2, 'b')]\n",
                       "def pair_up(a, b):\n    return zip(a, b)\n", "def pair_up(a, b):\n    return zip(b, a)\n"),
    "enumerate_result": case("assert dict(index(['x', 'y'])) == {0: 'x', 1: 'y'}\n",
                             "def index(xs):\n    return enumerate(xs)\n", "def index(xs):\n    return enumerate(xs, 1)\n"),
    "reversed_result": case("assert ''.join(backwards('abc')) == 'cba'\n",
                            "def backwards(s):\n    return reversed(s)\n", "def backwards(s):\n    return iter(s)\n"),
    "sorted_generator": case("assert sorted(odd_squares(6)) == [1, 9, 25]\n",
                             "def odd_squares(n):\n    return (i * i for i in range(n) if i % 2)\n",
                             "def odd_squares(n):\n    return (i * i for i in range(n) if i % 2 == 0)\n"),
    "sum_of_generator": case("assert sum(halves([2, 4])) == 3\n",
                             "def halves(xs):\n    return (x // 2 for x in xs)\n", "def halves(xs):\n    return (x for x in xs)\n"),
    "infinite_generator_next": case(
        "g = naturals()\nassert next(g) == 1\nassert next(g) == 2\nassert next(g) == 3\n",
        "def naturals():\n    n = 1\n    while True:\n        yield n\n        n += 1\n",
        "def naturals():\n    n = 0\n    while True:\n        yield n\n        n += 2\n"),
    "islice_of_infinite": case(
        "import itertools\nassert list(itertools.islice(fib(), 7)) == [0, 1, 1, 2, 3, 5, 8]\n",
        "def fib():\n    a, b = 0, 1\n    while True:\n        yield a\n        a, b = b, a + b\n",
        "def fib():\n    a, b = 1, 1\n    while True:\n        yield a\n        a, b = b, a + b\n"),
    "generator_in_a_for_loop": case(
        "total = 0\nfor x in countdown(4):\n    total += x\nassert total == 10\n",
        "def countdown(n):\n    while n > 0:\n        yield n\n        n -= 1\n",
        "def countdown(n):\n    while n > 1:\n        yield n\n        n -= 1\n"),
    "all_over_a_generator": case("assert all(is_ok(3))\nassert not all(is_ok(0))\n",
                                 "def is_ok(n):\n    return (i < n for i in range(3))\n",
                                 "def is_ok(n):\n    return (True for i in range(3))\n"),
    "generator_of_tuples": case("assert list(pairs('ab')) == [('a', 0), ('b', 1)]\n",
                                "def pairs(s):\n    for i, c in enumerate(s):\n        yield c, i\n",
                                "def pairs(s):\n    for i, c in enumerate(s):\n        yield i, c\n"),
    "itertools_combinations": case("assert len(list(choose2([1, 2, 3]))) == 3\nassert (1, 3) in list(choose2([1, 2, 3]))\n",
                                   "import itertools\ndef choose2(xs):\n    return itertools.combinations(xs, 2)\n",
                                   "import itertools\ndef choose2(xs):\n    return itertools.permutations(xs, 2)\n"),
    "big_generator": case("assert sum(upto(100000)) == 4999950000\n",
                          "def upto(n):\n    return iter(range(n))\n", "def upto(n):\n    return iter(range(1, n - 1))\n"),
    "map_in_humaneval_check": case("def check(candidate):\n    assert list(candidate([3, 4])) == [6, 8]\n",
                                   "def double_all(xs):\n    return map(lambda x: 2 * x, xs)\n",
                                   "def double_all(xs):\n    return map(lambda x: 2 + x, xs)\n", "humaneval"),
    "generator_error_after_items": case(
        "g = take(['1', 'x'])\nassert next(g) == 1\ntry:\n    next(g)\n    assert False\nexcept ValueError:\n    pass\n",
        "def take(xs):\n    for x in xs:\n        yield int(x)\n",
        "def take(xs):\n    for x in xs:\n        yield len(x)\n"),
    # ---- namedtuples, Fractions, Decimals, other trusted types
    "namedtuple_vs_tuple": case("assert point(1, 2) == (1, 2)\n",
                                "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef point(a, b):\n"
                                "    return P(a, b)\n",
                                "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef point(a, b):\n"
                                "    return P(b, a)\n"),
    "namedtuple_fields": case("p = point(3, 4)\nassert p.x == 3 and p.y == 4\nassert p._asdict() == {'x': 3, 'y': 4}\n",
                              "from collections import namedtuple\nP = namedtuple('P', ['x', 'y'])\ndef point(a, b):\n"
                              "    return P(a, b)\n",
                              "from collections import namedtuple\nP = namedtuple('P', ['y', 'x'])\ndef point(a, b):\n"
                              "    return P(a, b)\n"),
    "typing_namedtuple": case("assert span(2, 5) == (2, 5)\nassert span(2, 5).length == 3\n",
                              "from typing import NamedTuple\nclass Span(NamedTuple):\n    start: int\n    end: int\n"
                              "    @property\n    def length(self):\n        return self.end - self.start\n"
                              "def span(a, b):\n    return Span(a, b)\n",
                              "from typing import NamedTuple\nclass Span(NamedTuple):\n    start: int\n    end: int\n"
                              "    @property\n    def length(self):\n        return self.end - self.start\n"
                              "def span(a, b):\n    return Span(b, a)\n"),
    "list_of_namedtuples": case("assert people() == [('ann', 30), ('bob', 25)]\n",
                                "from collections import namedtuple\nPerson = namedtuple('Person', 'name age')\n"
                                "def people():\n    return [Person('ann', 30), Person('bob', 25)]\n",
                                "from collections import namedtuple\nPerson = namedtuple('Person', 'name age')\n"
                                "def people():\n    return [Person('ann', 31), Person('bob', 25)]\n"),
    "fraction_vs_float": case("assert ratio(1, 2) == 0.5\nassert ratio(2, 8) == 0.25\n",
                              "from fractions import Fraction\ndef ratio(a, b):\n    return Fraction(a, b)\n",
                              "from fractions import Fraction\ndef ratio(a, b):\n    return Fraction(b, a)\n"),
    "fraction_vs_fraction": case("from fractions import Fraction\nassert add(Fraction(1, 3), Fraction(1, 6)) == Fraction(1, 2)\n",
                                 "def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a - b\n"),
    "decimal_result": case("from decimal import Decimal\nassert money(1, 10) == Decimal('1.10')\n",
                           "from decimal import Decimal\ndef money(units, cents):\n"
                           "    return Decimal(units) + Decimal(cents) / 100\n",
                           "from decimal import Decimal\ndef money(units, cents):\n"
                           "    return Decimal(units) + Decimal(cents) / 10\n"),
    "ordered_dict": case("from collections import OrderedDict\nassert first_seen('bab') == OrderedDict([('b', 0), ('a', 1)])\n",
                         "from collections import OrderedDict\ndef first_seen(s):\n    out = OrderedDict()\n"
                         "    for i, c in enumerate(s):\n"
                         "        out.setdefault(c, i)\n    return out\n",
                         "from collections import OrderedDict\ndef first_seen(s):\n    out = OrderedDict()\n"
                         "    for c in sorted(set(s)):\n"
                         "        out[c] = s.index(c)\n    return out\n"),
    "defaultdict_missing_key": case("d = groups(['ab', 'c', 'de'])\nassert d[2] == ['ab', 'de']\nassert d[5] == []\n",
                                    "from collections import defaultdict\ndef groups(words):\n    d = defaultdict(list)\n"
                                    "    for w in words:\n        d[len(w)].append(w)\n    return d\n",
                                    "from collections import defaultdict\ndef groups(words):\n    d = defaultdict(list)\n"
                                    "    for w in words:\n        d[len(w)].insert(0, w)\n    return d\n"),
    "deque_result": case("from collections import deque\nassert last_two([1, 2, 3]) == deque([2, 3])\n"
                         "assert list(last_two([5])) == [5]\n",
                         "from collections import deque\ndef last_two(xs):\n    return deque(xs, maxlen=2)\n",
                         "from collections import deque\ndef last_two(xs):\n    return deque(xs[:2], maxlen=2)\n"),
    "dict_keys_vs_set": case("assert names({'a': 1, 'b': 2}) == {'a', 'b'}\nassert sorted(names({'z': 0})) == ['z']\n",
                             "def names(d):\n    return d.keys()\n", "def names(d):\n    return d.values()\n"),
    "dict_items_sorted": case("assert sorted(entries({'b': 2, 'a': 1})) == [('a', 1), ('b', 2)]\n",
                              "def entries(d):\n"
                              "    return d.items()\n", "def entries(d):\n    return {v: k for k, v in d.items()}.items()\n"),
    "dict_values_list": case("assert list(vals({'a': 1, 'b': 2})) == [1, 2]\n",
                             "def vals(d):\n    return d.values()\n", "def vals(d):\n    return d.keys()\n"),
    "counter_most_common": case("assert tally('aabc').most_common(1) == [('a', 2)]\nassert tally('xyy')['y'] == 2\n",
                                "from collections import Counter\ndef tally(s):\n    return Counter(s)\n",
                                "from collections import Counter\ndef tally(s):\n    return Counter(set(s))\n"),
    "range_returned": case("assert steps(3) == range(0, 6, 2)\nassert list(steps(2)) == [0, 2]\n",
                           "def steps(n):\n    return range(0, 2 * n, 2)\n", "def steps(n):\n    return range(0, n, 2)\n"),
    # ---- numpy
    "numpy_array_all": case("import numpy as np\nassert (scale(np.array([1, 2])) == np.array([3, 6])).all()\n",
                            "def scale(a):\n    return a * 3\n", "def scale(a):\n    return a + 3\n"),
    "numpy_array_equal": case("import numpy as np\nassert np.array_equal(eye2(), np.eye(2))\n",
                              "import numpy as np\ndef eye2():\n    return np.eye(2)\n",
                              "import numpy as np\ndef eye2():\n    return np.ones((2, 2))\n"),
    "numpy_allclose": case("import numpy as np\nassert np.allclose(norm([3.0, 4.0]), [0.6, 0.8])\n",
                           "import numpy as np\ndef norm(v):\n    v = np.array(v)\n    return v / np.linalg.norm(v)\n",
                           "import numpy as np\ndef norm(v):\n    v = np.array(v)\n    return v / v.sum()\n"),
    "numpy_tolist_shape": case("m = grid(2, 3)\nassert m.shape == (2, 3)\nassert m.tolist() == [[0, 1, 2], [3, 4, 5]]\n",
                               "import numpy as np\ndef grid(r, c):\n    return np.arange(r * c).reshape(r, c)\n",
                               "import numpy as np\ndef grid(r, c):\n    return np.arange(r * c).reshape(c, r).T\n"),
    "numpy_scalar_arguments": case("import numpy as np\nassert halve(np.int64(8)) == 4\nassert halve(np.float64(3.0)) == 1.5\n",
                                   "def halve(x):\n    return x / 2\n", "def halve(x):\n    return x // 2\n"),
    "numpy_bool_mask": case("import numpy as np\nassert list(mask(np.array([1, 5, 2]), 2)) == [False, True, False]\n",
                            "def mask(a, t):\n    return a > t\n", "def mask(a, t):\n    return a >= t\n"),
    # ---- big ints
    "factorial_2000": case("import math\nassert fact(2000) == math.factorial(2000)\n",
                           "def fact(n):\n    out = 1\n    for i in range(2, n + 1):\n        out *= i\n    return out\n",
                           "def fact(n):\n    out = 1\n    for i in range(2, n):\n        out *= i\n    return out\n"),
    "power_of_two_argument": case("assert bits(2 ** 20000) == 20001\n",
                                  "def bits(n):\n    return n.bit_length()\n", "def bits(n):\n    return n.bit_length() - 1\n"),
    "big_int_list": case("assert powers(3, [0, 2]) == [1, 9]\nassert powers(10, [1, 5000]) == [10, 10 ** 5000]\n",
                         "def powers(b, ns):\n    return [b ** n for n in ns]\n",
                         "def powers(b, ns):\n    return [b ** n if n < 100 else 10 ** 4999 for n in ns]\n"),
    "negative_big_int": case("assert neg(10 ** 5000) == -(10 ** 5000)\n",
                             "def neg(x):\n    return -x\n", "def neg(x):\n    return x\n"),
    # ---- functions, lambdas, builtins, ranges and generators passed by the tests
    "lambda_argument": case("assert apply(lambda x: x * 10, 4) == 40\n",
                            "def apply(f, x):\n    return f(x)\n", "def apply(f, x):\n    return x\n"),
    "key_lambda": case("assert sort_by(['bb', 'a', 'ccc'], lambda s: len(s)) == ['a', 'bb', 'ccc']\n",
                       "def sort_by(xs, key):\n    return sorted(xs, key=key)\n",
                       "def sort_by(xs, key):\n    return sorted(xs, key=key, reverse=True)\n"),
    "builtin_argument": case("assert convert(['1', '2'], int) == [1, 2]\nassert convert([1], str) == ['1']\n",
                             "def convert(xs, kind):\n"
                             "    return [kind(x) for x in xs]\n", "def convert(xs, kind):\n    return list(xs)\n"),
    "type_check_with_passed_type": case("assert count_of([1, 'a', 2.0, 3], int) == 2\n",
                                        "def count_of(xs, t):\n    return sum(1 for x in xs if isinstance(x, t))\n",
                                        "def count_of(xs, t):\n    return len(xs) - 1\n"),
    "key_len_builtin": case("assert longest(['a', 'abc', 'ab'], key=len) == 'abc'\n",
                            "def longest(xs, key):\n"
                            "    return max(xs, key=key)\n", "def longest(xs, key):\n    return min(xs, key=key)\n"),
    "range_argument": case("assert total(range(5)) == 10\nassert total(range(0)) == 0\n",
                           "def total(r):\n    return sum(r)\n", "def total(r):\n    return len(r)\n"),
    "range_attributes": case("assert last(range(3, 10, 2)) == 9\n",
                             "def last(r):\n    return r[-1]\n", "def last(r):\n    return r.stop\n"),
    "generator_argument": case("assert total(x * x for x in range(4)) == 14\n",
                               "def total(xs):\n    return sum(xs)\n", "def total(xs):\n    return sum(1 for _ in xs)\n"),
    "lambda_calls_back_into_the_candidate": case("assert apply_twice(lambda v: inc(v), 1) == 3\n",
                                                 "def apply_twice(f, x):\n    return f(f(x))\n\ndef inc(v):\n    return v + 1\n",
                                                 "def apply_twice(f, x):\n    return f(x)\n\ndef inc(v):\n    return v + 1\n"),
    "predicate_filter": case("assert keep([1, 2, 3, 4], lambda x: x % 2 == 0) == [2, 4]\n",
                             "def keep(xs, pred):\n    return [x for x in xs if pred(x)]\n",
                             "def keep(xs, pred):\n    return [x for x in xs if not pred(x)]\n"),
    "fraction_argument": case("from fractions import Fraction\nassert double(Fraction(1, 3)) == Fraction(2, 3)\n",
                              "def double(x):\n    return x * 2\n", "def double(x):\n    return x + 2\n"),
    "namedtuple_argument": case("from collections import namedtuple\nP = namedtuple('P', 'x y')\nassert flip(P(1, 2)) == (2, 1)\n",
                                "def flip(p):\n    return (p.y, p.x)\n", "def flip(p):\n    return (p.x, p.y)\n"),
    "numpy_array_argument": case("import numpy as np\nassert total(np.array([[1, 2], [3, 4]])) == 10\n",
                                 "def total(a):\n    return int(a.sum())\n", "def total(a):\n    return int(a[0].sum())\n"),
    # ---- aliasing and arguments changed in place
    "same_list_twice": case("xs = [1, 2]\nassert grow(xs, xs) == 4\nassert xs == [1, 2, 1, 2]\n",
                            "def grow(a, b):\n    a.extend(list(b))\n    return len(b)\n",
                            "def grow(a, b):\n    a.extend(b[:])\n    return 2 * len(a) // 3\n"),
    "same_list_twice_sees_change": case("xs = [0]\nassert push_then_len(xs, xs) == 2\n",
                                        "def push_then_len(a, b):\n    a.append(1)\n    return len(b)\n",
                                        "def push_then_len(a, b):\n    b = list(b)\n    a.append(1)\n    return len(b)\n"),
    "nested_list_in_place": case("grid = [[3, 1], [2, 0]]\nrow = grid[0]\nsort_rows(grid)\nassert row == [1, 3]\n"
                                 "assert grid == [[1, 3], [0, 2]]\n",
                                 "def sort_rows(g):\n    for r in g:\n        r.sort()\n",
                                 "def sort_rows(g):\n    g[:] = [sorted(r) for r in g]\n"),
    "dict_in_place": case("d = {'a': 1}\nadd_key(d, 'b')\nassert d == {'a': 1, 'b': 0}\n",
                          "def add_key(d, k):\n    d[k] = 0\n", "def add_key(d, k):\n    d = dict(d)\n    d[k] = 0\n"),
    "set_in_place": case("s = {1}\nabsorb(s, [2, 3])\nassert s == {1, 2, 3}\n",
                         "def absorb(s, xs):\n    s.update(xs)\n", "def absorb(s, xs):\n    s = s | set(xs)\n"),
    "list_in_place_kwarg": case("xs = [2, 1]\nsort_it(items=xs)\nassert xs == [1, 2]\n",
                                "def sort_it(items):\n    items.sort()\n", "def sort_it(items):\n    items = sorted(items)\n"),
    "returns_its_argument": case("xs = [1]\nys = append_one(xs)\nassert ys == [1, 1] and xs == [1, 1]\n",
                                 "def append_one(xs):\n    xs.append(1)\n    return xs\n",
                                 "def append_one(xs):\n    return xs + [1]\n"),
    # ---- the candidate's own objects: len, items, iteration, str, attributes
    "len_of_candidate_object": case("s = Stack()\ns.push(1)\ns.push(2)\nassert len(s) == 2\n",
                                    "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
                                    "        self.items.append(x)\n    def __len__(self):\n        return len(self.items)\n",
                                    "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
                                    "        self.items = [x]\n    def __len__(self):\n        return len(self.items)\n"),
    "getitem_of_candidate_object": case("v = Vec([4, 5, 6])\nassert v[1] == 5 and v[-1] == 6\n",
                                        "class Vec:\n    def __init__(self, xs):\n        self.xs = list(xs)\n"
                                        "    def __getitem__(self, i):\n        return self.xs[i]\n",
                                        "class Vec:\n    def __init__(self, xs):\n        self.xs = sorted(xs, reverse=True)\n"
                                        "    def __getitem__(self, i):\n        return self.xs[i]\n"),
    "iterate_candidate_object": case("b = Bag([3, 1])\nassert sorted(b) == [1, 3]\nassert 3 in b\nassert 7 not in b\n",
                                     "class Bag:\n    def __init__(self, xs):\n        self.xs = xs\n    def __iter__(self):\n"
                                     "        return iter(self.xs)\n",
                                     "class Bag:\n    def __init__(self, xs):\n        self.xs = xs\n    def __iter__(self):\n"
                                     "        return iter([x + 1 for x in self.xs])\n"),
    "str_of_candidate_object": case("assert str(Money(5)) == '$5'\nassert f'{Money(2)}' == '$2'\n",
                                    "class Money:\n    def __init__(self, n):\n        self.n = n\n    def __str__(self):\n"
                                    "        return f'${self.n}'\n",
                                    "class Money:\n    def __init__(self, n):\n        self.n = n\n    def __str__(self):\n"
                                    "        return f'{self.n}$'\n"),
    "set_attribute_on_candidate_object": case("c = Counter2()\nc.step = 5\nc.tick()\nassert c.value == 5\n",
                                              "class Counter2:\n    def __init__(self):\n        self.value, self.step = 0, 1\n"
                                              "    def tick(self):\n        self.value += self.step\n",
                                              "class Counter2:\n    def __init__(self):\n        self.value, self.step = 0, 1\n"
                                              "    def tick(self):\n        self.value += 1\n"),
    "linked_list_nodes": case("n = build([1, 2, 3])\nassert n.val == 1 and n.next.val == 2 and n.next.next.next is None\n",
                              "class Node:\n    def __init__(self, val, next=None):\n        self.val, self.next = val, next\n"
                              "def build(xs):\n    head = None\n    for x in reversed(xs):\n        head = Node(x, head)\n"
                              "    return head\n",
                              "class Node:\n    def __init__(self, val, next=None):\n        self.val, self.next = val, next\n"
                              "def build(xs):\n    head = None\n    for x in xs:\n        head = Node(x, head)\n    return head\n"),
    "closure_returned": case("add3 = adder(3)\nassert add3(4) == 7\nassert adder(0)(0) == 0\n",
                             "def adder(n):\n    return lambda x: x + n\n", "def adder(n):\n    return lambda x: x * n\n"),
    "class_with_classmethod": case("assert Temp.from_f(212).c == 100\n",
                                   "class Temp:\n    def __init__(self, c):\n        self.c = c\n    @classmethod\n"
                                   "    def from_f(cls, f):\n        return cls(round((f - 32) * 5 / 9))\n",
                                   "class Temp:\n    def __init__(self, c):\n        self.c = c\n    @classmethod\n"
                                   "    def from_f(cls, f):\n        return cls(f - 32)\n"),
    "stateful_calls": case("nxt = make_counter()\nassert [nxt(), nxt(), nxt()] == [1, 2, 3]\n",
                           "def make_counter():\n    n = 0\n    def nxt():\n        nonlocal n\n        n += 1\n"
                           "        return n\n    return nxt\n",
                           "def make_counter():\n    def nxt():\n        return 1\n    return nxt\n"),
    # ---- test shapes: HumanEval check, uncalled test functions, unittest, check_solution, string literals
    "humaneval_check_with_metadata": case(
        "METADATA = {'author': 'x'}\n\n\ndef check(candidate):\n    assert candidate('abc') == 'cba'\n"
        "    assert candidate('') == ''\n",
        "def rev(s):\n    return s[::-1]\n", "def rev(s):\n    return s\n", "humaneval"),
    "uncalled_test_functions": case(
        "def test_small():\n    assert cube(2) == 8\n\n\ndef test_negative():\n    assert cube(-3) == -27\n",
        "def cube(x):\n    return x ** 3\n", "def cube(x):\n    return x * 3 if x < 0 else x ** 3\n"),
    "unittest_testcase": case(
        "import unittest\n\n\nclass TestTitle(unittest.TestCase):\n    def test_words(self):\n"
        "        self.assertEqual(title('a b'), 'A B')\n\n    def test_empty(self):\n        self.assertEqual(title(''), '')\n\n\n"
        "if __name__ == '__main__':\n    unittest.main()\n",
        "def title(s):\n    return ' '.join(w.capitalize() for w in s.split(' '))\n",
        "def title(s):\n    return s.upper()[:1] + s[1:]\n"),
    "unittest_assert_raises": case(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_error(self):\n        with self.assertRaises(ValueError):\n"
        "            parse('x')\n        self.assertEqual(parse('7'), 7)\n",
        "def parse(s):\n    return int(s)\n", "def parse(s):\n    return int(s) if s.isdigit() else 0\n"),
    "check_solution_function": case(
        "def check_solution(f):\n    assert f([3, 1, 2]) == 3\n    assert f([1, 5, 2]) == 5\n",
        "def biggest(xs):\n    return max(xs)\n", "def biggest(xs):\n    return xs[0]\n"),
    "check_in_a_string_literal": case(
        'DOC = """\ncheck(anything) would be the call\n"""\n\n\ndef check(candidate):\n    assert candidate(2) == 4\n',
        "def double(x):\n    return 2 * x\n", "def double(x):\n    return x + 1 if x != 2 else 5\n", "humaneval"),
    "pytest_style_class": case(
        "class TestVowels:\n    def test_count(self):\n        assert vowels('banana') == 3\n",
        "def vowels(s):\n    return sum(c in 'aeiou' for c in s)\n", "def vowels(s):\n    return s.count('a') + 1\n"),
    # ---- the question's own helpers (HumanEval/32, /38, /50): defined by the tester from the item's text
    "helper_poly_target_only": case(POLY_T, POLY_RIGHT, "def find_zero(xs):\n    return 0.0\n", "humaneval", POLY_Q),
    "helper_poly_copied": case(POLY_T, POLY_Q.split("def find_zero")[0] + POLY_RIGHT,
                               "import math\ndef poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n"
                               "    return 1.0\n", "humaneval", POLY_Q),
    "helper_cyclic_target_only": case(CYCLIC_T, "def decode_cyclic(s):\n"
                                      "    groups = [s[3 * i:min(3 * i + 3, len(s))] for i in range((len(s) + 2) // 3)]\n"
                                      "    return ''.join((g[-1] + g[:-1]) if len(g) == 3 else g for g in groups)\n",
                                      "def decode_cyclic(s):\n    return s\n", "humaneval", CYCLIC_Q),
    "helper_cyclic_uses_helper": case(CYCLIC_T, "def decode_cyclic(s):\n    return encode_cyclic(encode_cyclic(s))\n",
                                      "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return encode_cyclic(s)\n",
                                      "humaneval", CYCLIC_Q),
    "helper_shift": case(SHIFT_T, "def decode_shift(s):\n"
                         "    return ''.join(chr(((ord(c) - 5 - ord('a')) % 26) + ord('a')) for c in s)\n",
                         "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n", "humaneval", SHIFT_Q),
    # ---- the usual shapes
    "strings": case("assert shout('hi') == 'HI!'\n", "def shout(s):\n    return s.upper() + '!'\n",
                    "def shout(s):\n    return s.upper()\n"),
    "float_tolerance": case("assert abs(mean([1, 2, 4]) - 2.3333333) < 1e-6\n",
                            "def mean(xs):\n    return sum(xs) / len(xs)\n", "def mean(xs):\n    return sum(xs) // len(xs)\n"),
    "math_isclose_without_import": case("assert math.isclose(circ(1), 6.2831853, rel_tol=1e-6)\n",
                                        "import math\ndef circ(r):\n    return 2 * math.pi * r\n",
                                        "import math\ndef circ(r):\n    return math.pi * r\n"),
    "set_result": case("assert common([1, 2, 3], [2, 3, 4]) == {2, 3}\n",
                       "def common(a, b):\n    return set(a) & set(b)\n", "def common(a, b):\n    return set(a) | set(b)\n"),
    "dict_result": case("assert freq('aab') == {'a': 2, 'b': 1}\n",
                        "def freq(s):\n    out = {}\n    for c in s:\n        out[c] = out.get(c, 0) + 1\n    return out\n",
                        "def freq(s):\n    return {c: 1 for c in s}\n"),
    "tuple_result": case("assert min_max([3, 1, 2]) == (1, 3)\n",
                         "def min_max(xs):\n    return min(xs), max(xs)\n", "def min_max(xs):\n    return [min(xs), max(xs)]\n"),
    "none_and_bool": case("assert find([1, 2], 3) is None\nassert has([1], 1) is True\n",
                          "def find(xs, x):\n    return xs.index(x) if x in xs else None\ndef has(xs, x):\n    return x in xs\n",
                          "def find(xs, x):\n    return -1\ndef has(xs, x):\n    return 1\n"),
    "bytes_result": case("assert encode('hi') == b'hi'\n", "def encode(s):\n    return s.encode()\n",
                         "def encode(s):\n    return s\n"),
    "complex_result": case("assert root_minus_one() == 1j\n", "def root_minus_one():\n    return complex(0, 1)\n",
                           "def root_minus_one():\n    return complex(1, 0)\n"),
    "nested_structures": case("assert tree(2) == {'v': 2, 'kids': [{'v': 1, 'kids': []}]}\n",
                              "def tree(n):\n    return {'v': n, 'kids': [tree(n - 1)] if n > 1 else []}\n",
                              "def tree(n):\n    return {'v': n, 'kids': []}\n"),
    "keyword_and_default_arguments": case("assert power(2) == 4\nassert power(2, exp=5) == 32\n",
                                          "def power(base, exp=2):\n    return base ** exp\n",
                                          "def power(base, exp=2):\n    return base * exp\n"),
    "star_args": case("assert total(1, 2, 3) == 6\nassert total() == 0\n",
                      "def total(*xs):\n    return sum(xs)\n", "def total(*xs):\n    return len(xs)\n"),
    "expected_exception_in_test": case("try:\n    safe_div(1, 0)\n    raise AssertionError('no error')\n"
                                       "except ZeroDivisionError:\n    pass\n"
                                       "assert safe_div(6, 3) == 2\n",
                                       "def safe_div(a, b):\n    return a / b\n",
                                       "def safe_div(a, b):\n    return a / b if b else 0\n"),
    "recursion_with_memo": case("assert fib(80) == 23416728348467685\n",
                                "from functools import lru_cache\n@lru_cache(None)\ndef fib(n):\n"
                                "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
                                "def fib(n):\n    a, b = 1, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"),
    "big_list_result": case("r = squares(50000)\nassert len(r) == 50000 and r[-1] == 49999 ** 2\n",
                            "def squares(n):\n    return [i * i for i in range(n)]\n",
                            "def squares(n):\n    return [i * i for i in range(1, n + 1)]\n"),
    "result_as_dict_key": case("seen = {key('ab'): 1}\nassert seen[('a', 'b')] == 1\n",
                               "def key(s):\n    return tuple(s)\n", "def key(s):\n    return tuple(reversed(s))\n"),
    "prints_while_working": case("assert loud(3) == 9\n", "def loud(x):\n    print('working on', x)\n    return x * x\n",
                                 "def loud(x):\n    print(x * x)\n    return x\n"),
    "loop_over_cases_in_check": case("def check(candidate):\n    for n, want in [(0, 1), (1, 1), (5, 120)]:\n"
                                     "        assert candidate(n) == want, n\n",
                                     "def fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\n",
                                     "def fact(n):\n    return n if n > 1 else 1 if n else 0\n", "humaneval"),
    "frozenset_argument": case("assert size(frozenset({1, 2})) == 2\n", "def size(s):\n    return len(s)\n",
                               "def size(s):\n    return max(s) + 1\n"),
    "bool_equals_int": case("assert parity(3) == 1\nassert parity(4) == 0\n", "def parity(n):\n    return n % 2 == 1\n",
                            "def parity(n):\n    return n % 2 == 0\n"),
    # ---- programs written as scripts: their main block never runs (as in HumanEval's and MBPP's harnesses), and a
    # program that ends itself (sys.exit, a bare unittest.main()) keeps what it defined before
    "main_block_sys_exit_main": case(
        ADD_UP_TESTS, f"{ADD_UP_RIGHT}{SCRIPT_MAIN}", f"{ADD_UP_WRONG}{SCRIPT_MAIN}"),
    "main_block_reads_input": case(
        "assert double(4) == 8\nassert double(0) == 0\n",
        "def double(n):\n    return 2 * n\n\n\nif __name__ == '__main__':\n    n = int(input())\n    print(double(n))\n",
        "def double(n):\n    return n * n\n\n\nif __name__ == '__main__':\n    n = int(input())\n    print(double(n))\n"),
    "main_block_raise_system_exit": case(
        ADD_UP_TESTS, f"{ADD_UP_RIGHT}\nif __name__ == '__main__':\n    raise SystemExit(add_up([1, 2]) != 3)\n",
        f"{ADD_UP_WRONG}\nif __name__ == '__main__':\n    raise SystemExit(0)\n"),
    "main_block_unittest_main": case(
        ENCRYPT_CHECK, f"{ENCRYPT_RIGHT}{ENCRYPT_UNITTEST}{GUARDED_UNITTEST_MAIN}",
        f"{ENCRYPT_WRONG}{ENCRYPT_UNITTEST}{GUARDED_UNITTEST_MAIN}", "humaneval", ENCRYPT_Q),
    "bare_unittest_main": case(
        ENCRYPT_CHECK, f"{ENCRYPT_RIGHT}{ENCRYPT_UNITTEST}\nunittest.main()\n",
        f"{ENCRYPT_WRONG}{ENCRYPT_UNITTEST}\nunittest.main()\n", "humaneval", ENCRYPT_Q),
    "bare_unittest_main_mbpp_asserts": case(
        "assert encrypt('hi') == 'lm'\nassert encrypt('a') == 'e'\n",
        f"{ENCRYPT_RIGHT}{ENCRYPT_UNITTEST}\nunittest.main(verbosity=2)\n",
        f"{ENCRYPT_WRONG}{ENCRYPT_UNITTEST}\nunittest.main(verbosity=2)\n"),
    "bare_sys_exit_after_the_definitions": case(
        ADD_UP_TESTS, f"import sys\n{ADD_UP_RIGHT}\nsys.exit(0)\n", f"import sys\n{ADD_UP_WRONG}\nsys.exit(0)\n"),
    # ---- a function that *is* a builtin: the tests still call the candidate's (its value, not the tester's own)
    "builtin_alias_len": case("assert strlen('') == 0\nassert strlen('abc') == 3\n", "strlen = len\n",
                              "strlen = lambda s: len(s) + 1\n"),
    "builtin_alias_ord": case("assert ascii_value('A') == 65\nassert ascii_value('R') == 82\n", "ascii_value = ord\n",
                              "ascii_value = lambda c: ord(c.lower())\n"),
    "builtin_alias_sorted": case("assert sort_list([3, 1, 2]) == [1, 2, 3]\n", "sort_list = sorted\n",
                                 "def sort_list(xs):\n    return sorted(xs, reverse=True)\n"),
    "builtin_alias_in_check": case("def check(candidate):\n    assert candidate('') == 0\n    assert candidate('abcd') == 4\n",
                                   "strlen = len\n", "strlen = lambda string: len(string) // 2\n", "humaneval",
                                   'def strlen(string: str) -> int:\n    """ Return length of given string\n    """\n'),
    # ---- bytearrays, returned, given, changed in place
    "bytearray_result": case("assert to_bytes('ab') == b'ab'\nassert to_bytes('') == bytearray()\n",
                             "def to_bytes(s):\n    return bytearray(s, 'utf-8')\n",
                             "def to_bytes(s):\n    return bytearray(s[::-1], 'utf-8')\n"),
    "bytearray_in_a_list": case("assert split_bytes(b'ab') == [bytearray(b'a'), bytearray(b'b')]\n",
                                "def split_bytes(b):\n    return [bytearray([c]) for c in b]\n",
                                "def split_bytes(b):\n    return [bytearray([c]) for c in reversed(b)]\n"),
    "bytearray_argument": case("assert zeros(bytearray(b'\\x00a\\x00')) == 2\n", "def zeros(b):\n    return b.count(0)\n",
                               "def zeros(b):\n    return b.count(97)\n"),
    "bytearray_changed_in_place": case("b = bytearray(b'abc')\nflip(b)\nassert b == b'cba'\n",
                                       "def flip(b):\n    b.reverse()\n", "def flip(b):\n    b = b[::-1]\n"),
}


ONE_PROCESS_FOOLED = {"helper_poly_copied", "helper_cyclic_uses_helper", "helper_shift"}


def _item(c):
    return {"question": c["question"], "generation": c["wrong"], "unit_test": c["tests"], "data_source": c["source"]}


@pytest.fixture(scope="module")
def verdicts(executor):
    items, revisions = [], []
    for c in CASES.values():
        items += [_item(c)] * 2
        revisions += [f"```python\n{c['right']}```", f"```python\n{c['wrong']}```"]
    outcomes = check_corrections("code_exec", revisions, items, executor=executor)
    return {name: (outcomes[2 * i], outcomes[2 * i + 1]) for i, name in enumerate(CASES)}


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 80


def test_no_false_fail_and_no_false_pass_on_the_whole_corpus(verdicts):
    false_fails = sorted(n for n, (right, _) in verdicts.items() if not right.passed)
    false_passes = sorted(n for n, (_, wrong) in verdicts.items() if wrong.passed)
    assert (false_fails, false_passes) == ([], [])


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_right_program_passes_and_its_wrong_twin_fails(verdicts, name):
    right, wrong = verdicts[name]
    assert (right.status, right.passed) == ("passed", True), (name, right)
    assert not wrong.passed and wrong.status == "failed", (name, wrong)


def _one_process(c, code, entry):
    """The item as one program (the question's helpers, the code, the tests and their calls), as a harness
    without a wire would run it: the control that the corpus itself is right. The code is loaded as HumanEval's
    harness loads it, under a name that is not ``__main__`` (its main block does not run), and a ``SystemExit``
    while it loads ends only its loading."""
    tests, _ = plan_tests(c["tests"], c["source"], entry)
    helpers, _ = question_helpers(c["question"], entry)
    runner = ("import unittest, sys\ndef __critic_testcase__(case):\n    if issubclass(case, unittest.TestCase):\n"
              "        suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)\n"
              "        assert unittest.TextTestRunner(stream=sys.stderr).run(suite).wasSuccessful()\n    else:\n"
              "        [getattr(case(), n)() for n in dir(case) if n.startswith('test')]\n")
    load = (f"__name__ = 'solution'\ntry:\n    exec(compile({code!r}, 'solution.py', 'exec'), globals())\n"
            "except SystemExit:\n    pass\n__name__ = '__main__'\n")
    return "\n".join([PRELUDE, runner, helpers, load, tests, f"print({TESTS_DONE_MARKER!r})"])


def test_control_every_case_is_right_and_wrong_in_one_process(executor):
    programs = []
    for c in CASES.values():
        entry = find_entry_point(c["right"], c["question"], c["wrong"])
        programs += [Program(_one_process(c, c["right"], entry)), Program(_one_process(c, c["wrong"], entry))]
    results = executor.run(programs)
    got = {name: (results[2 * i].stdout.strip().endswith(TESTS_DONE_MARKER) and results[2 * i].status == "passed",
                  results[2 * i + 1].status == "passed" and TESTS_DONE_MARKER in results[2 * i + 1].stdout)
           for i, name in enumerate(CASES)}
    # the wrong twins that redefine the question's helper pass in one process: the attack the tester's own helpers stop
    expected = {n: (True, n in ONE_PROCESS_FOOLED) for n in CASES}
    wrong = {n: (v, results[2 * i].stderr[-300:], results[2 * i + 1].stderr[-300:])
             for i, (n, v) in enumerate(got.items()) if v != expected[n]}
    assert wrong == {}


# ----------------------------------------------------------------------------- the new shapes cannot be forged

# Each is a wrong program (the tests ask for x + 1) dressed up for one of the shapes above: whatever crosses is
# rebuilt from data as the tester's own type, so its methods never vote.
ADD_TESTS = "assert add_one(1) == 2\nassert add_one(5) == 6\n"
SHAPE_FORGERIES = {
    "namedtuple_with_always_equal": "from collections import namedtuple\nclass P(namedtuple('P', 'v')):\n"
                                    "    def __eq__(self, other):\n        return True\n    __hash__ = tuple.__hash__\n"
                                    "def add_one(x):\n    return P(0)\n",
    "fake_namedtuple_fields": "class T(tuple):\n    _fields = ('v',)\n    def __eq__(self, other):\n        return True\n"
                              "    __hash__ = tuple.__hash__\ndef add_one(x):\n    return T((0,))\n",
    "fraction_with_always_equal": "from fractions import Fraction\nclass F(Fraction):\n    def __eq__(self, other):\n"
                                  "        return True\n    __hash__ = Fraction.__hash__\ndef add_one(x):\n    return F(0)\n",
    "ndarray_with_always_equal": "import numpy as np\nclass A(np.ndarray):\n    def __eq__(self, other):\n        return True\n"
                                 "def add_one(x):\n    return np.zeros(1).view(A)\n",
    "object_array": "import numpy as np\nclass Any:\n    def __eq__(self, other):\n        return True\n"
                    "def add_one(x):\n    a = np.empty((), dtype=object)\n    a[()] = Any()\n    return a\n",
    "counter_with_always_equal": "from collections import Counter\nclass C(Counter):\n    def __eq__(self, other):\n"
                                 "        return True\ndef add_one(x):\n    return C()\n",
    "iterator_of_always_equal": "class Any:\n    def __eq__(self, other):\n        return True\n"
                                "def add_one(x):\n    return iter([Any()])\n",
    "generator_never_ends": "def add_one(x):\n    while True:\n        yield x + 1\n",
    "len_says_anything": "class L:\n    def __len__(self):\n        return 2\n    def __eq__(self, other):\n        return True\n"
                         "def add_one(x):\n    return L()\n",
    "str_subclass_from_str": "class S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
                             "class O:\n    def __str__(self):\n        return S('2')\ndef add_one(x):\n    return O()\n",
    "decimal_subclass": "from decimal import Decimal\nclass D(Decimal):\n    def __eq__(self, other):\n        return True\n"
                        "    __hash__ = Decimal.__hash__\ndef add_one(x):\n    return D(0)\n",
}
# shapes whose own tests read the candidate's object through len(), str() or iteration
SHAPE_TESTS = {"len_says_anything": "assert len(add_one(1)) == 2 and add_one(1) == 2\n",
               "str_subclass_from_str": "assert str(add_one(1)) == '2' and add_one(5) == 6\n"}


@pytest.fixture(scope="module")
def shape_forgeries(executor):
    names = sorted(SHAPE_FORGERIES)
    items = [{"question": Q, "generation": "def add_one(x):\n    return x\n", "data_source": "mbpp",
              "unit_test": SHAPE_TESTS.get(n, ADD_TESTS)} for n in names]
    outcomes = check_corrections("code_not_exec", [f"```python\n{SHAPE_FORGERIES[n]}```" for n in names], items,
                                 executor=executor, timeout_s=3)
    return dict(zip(names, outcomes))


@pytest.mark.parametrize("name", sorted(SHAPE_FORGERIES))
def test_a_wrong_program_in_a_new_shape_cannot_forge_a_pass(shape_forgeries, name):
    outcome = shape_forgeries[name]
    assert not outcome.passed and outcome.status in ("failed", "timeout"), (name, outcome)


# Wrong programs (the tests ask for x + 1) whose script parts try to speak for the tests: the main block never runs,
# and whatever runs at load (a marker printed, the process ended) is the candidate's, never the verdict.
SCRIPT_FORGERIES = {
    "main_block_prints_passed_and_exits_0": "import os, sys\ndef add_one(x):\n    return x\n\n"
                                            "if __name__ == '__main__':\n    print('PASSED')\n"
                                            f"    print({TESTS_DONE_MARKER!r}, file=sys.stderr)\n    os._exit(0)\n",
    "main_block_patches_the_function": "def add_one(x):\n    return x\n\nif __name__ == '__main__':\n"
                                       "    add_one = lambda x: x + 1\n",
    "load_prints_marker_and_exits_0": f"import os, sys\ndef add_one(x):\n    return x\n\nprint({TESTS_DONE_MARKER!r})\n"
                                      f"print({TESTS_DONE_MARKER!r}, file=sys.stderr)\nos._exit(0)\n",
    "load_exits_before_the_function": "import sys\nsys.exit(0)\n\ndef add_one(x):\n    return x + 1\n",
    "load_raises_system_exit_0": "def add_one(x):\n    return x\n\nraise SystemExit(0)\n",
    "load_runs_own_unittest_main": "import unittest\n\ndef add_one(x):\n    return x\n\n"
                                   "class T(unittest.TestCase):\n    def test_it(self):\n"
                                   "        self.assertEqual(add_one(1), 1)\n\nunittest.main()\n",
    "not_main_branch_exits": "import os\ndef add_one(x):\n    return x\n\nif __name__ != '__main__':\n    os._exit(0)\n",
}


@pytest.fixture(scope="module")
def script_forgeries(executor):
    names = sorted(SCRIPT_FORGERIES)
    items = [{"question": Q, "generation": "def add_one(x):\n    return x\n", "data_source": "mbpp",
              "unit_test": ADD_TESTS} for _ in names]
    outcomes = check_corrections("code_exec", [f"```python\n{SCRIPT_FORGERIES[n]}```" for n in names], items,
                                 executor=executor, timeout_s=3)
    return dict(zip(names, outcomes))


@pytest.mark.parametrize("name", sorted(SCRIPT_FORGERIES))
def test_a_wrong_program_cannot_forge_a_pass_from_its_script_parts(script_forgeries, name):
    outcome = script_forgeries[name]
    assert (outcome.status, outcome.passed) == ("failed", False), (name, outcome)


# ----------------------------------------------------------------------------- bytearrays on the wire itself


def test_a_bytearray_crosses_as_a_bytearray_aliased_and_updated_in_place():
    from critic_tasks.protocols.criticbench.correction.programs import WIRE

    wire: dict = {}
    exec(compile(WIRE, "wire.py", "exec"), wire)
    encode, decode, error = wire["wire_encode"], wire["wire_decode"], wire["WireError"]
    shared = bytearray(b"\x00\xffa")
    back = decode(json.loads(json.dumps(encode([shared, shared, b"b"]))))
    assert back == [bytearray(b"\x00\xffa")] * 2 + [b"b"] and type(back[0]) is bytearray and back[0] is back[1]
    assert type(back[2]) is bytes
    sent: list = []  # the tester's bytearray, numbered as it is sent; the reply says "yours #0, now holding this"
    mine = bytearray(b"abc")
    encode([mine], numbered=sent)
    reply = {"same": [1, {"bytearray": b"cba".hex()}]}  # #0 is the list, #1 the bytearray in it
    assert decode(reply, sent=sent) is mine and mine == bytearray(b"cba")
    with pytest.raises(error):
        encode(type("B", (bytearray,), {})(b"a"))  # a subclass may carry its own __eq__: not a value
    with pytest.raises(error):
        decode({"bytearray": "zz"})


# ----------------------------------------------------------------------------- tests that never run, helpers


def test_tests_that_make_no_call_into_the_candidate_are_a_failure(executor):
    """Tests that ran to their end without calling the revised code: counted as ``no_calls``, never a pass."""
    right = "def add_one(x):\n    return x + 1\n"
    items = [{"question": Q, "generation": right, "data_source": "mbpp", "unit_test": t} for t in (
        "assert 1 + 1 == 2\n",  # asserts about nothing
        "def check(candidate):\n    assert True\n",  # HumanEval's shape, never calling its argument
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_nothing(self):\n        self.assertTrue(True)\n",
        "assert add_one(1) == 2\n",  # control: a real call
    )]
    outcomes = check_corrections("code_not_exec", [f"```python\n{right}```"] * 4, items, executor=executor)
    assert [(o.status, o.passed) for o in outcomes] == [("no_calls", False)] * 3 + [("passed", True)]


@pytest.mark.parametrize("tests,calls", [
    ("def test_a():\n    assert f(1) == 1\n\n\ndef test_b(x=2):\n    assert f(x) == 2\n", ["test_a()", "test_b()"]),
    ("def check_solution(fn):\n    assert fn(1) == 1\n", ["check_solution(f)"]),
    ("def helper(x):\n    return x\n\n\ndef test_a():\n    assert f(1) == helper(1)\n", ["test_a()"]),  # helper is called
    ("def check(candidate):\n    assert candidate(1) == 1\n\n\ncheck(f)\n", []),  # already called
    ('S = """\ncheck(f)\n"""\n\n\ndef check(candidate):\n    assert candidate(1) == 1\n', ["check(f)"]),  # string literal
    ("import unittest\n\n\nclass TestF(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(f(1), 1)\n",
     ["__critic_testcase__(TestF)"]),
])
def test_every_test_shape_is_called_once(tests, calls):
    planned, _ = plan_tests(tests, "mbpp", "f")
    assert planned.startswith(tests.rstrip())
    assert planned[len(tests.rstrip()):].split() == calls


def test_a_test_function_nothing_can_call_makes_the_item_invalid(executor):
    item = {"question": Q, "generation": "def f(x):\n    return x\n", "data_source": "mbpp",
            "unit_test": "def test_pair(a, b):\n    assert f(a) == b\n"}
    with pytest.raises(ValueError, match="unit_test.*test_pair.*2 arguments"):
        check_corrections("code_not_exec", ["```python\ndef f(x):\n    return x\n```"], [item], executor=executor)
    (outcome,) = check_corrections("code_not_exec", ["```python\ndef f(x):\n    return x\n```"], [item],
                                   executor=executor, invalid="mark")
    assert (outcome.status, outcome.passed) == ("invalid", False)


def test_unittest_main_in_the_tests_does_not_end_the_run():
    planned, _ = plan_tests("import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n\n\n"
                            "if __name__ == '__main__':\n    unittest.main()\n", "mbpp", "f")
    assert "unittest.main" not in planned and "    pass\n" in planned and planned.rstrip().endswith("__critic_testcase__(T)")


def test_question_helpers_are_the_questions_complete_definitions():
    source, names = question_helpers(POLY_Q, "find_zero")
    assert names == {"poly"}
    assert source.startswith("import math\n") and "def poly(xs: list, x: float):" in source and "find_zero" not in source
    assert question_helpers("Write a function that adds one.", "add_one") == ("", set())
    assert question_helpers("def f(x):\n    '''Doc only.'''\n", "g") == ("", set())  # the function to write


# ----------------------------------------------------------------------------- the released DeepSeek-67B corrections


def _released_code_items(predictions_dir):
    """Every code correction released with CriticEval (dev and test, code_exec and code_not_exec): 164 items, each
    with its revision and its original (buggy) generation, rebuilt from the prompts as tests/test_correction.py does."""
    from test_correction import _code_item

    rows = []
    for split in ("dev", "test"):
        for domain in ("code_exec", "code_not_exec"):
            data = json.loads((predictions_dir / f"{split}_{domain}_correction_obj.json").read_text())
            for i in range(len(data)):
                prompt = data[str(i)]["origin_prompt"]
                prompt = prompt[0]["prompt"] if isinstance(prompt, list) else prompt
                rows.append((f"{split}/{domain}/{i}", domain, _code_item(prompt), data[str(i)]["prediction"]))
    return rows


def _whole_question_program(item, code):
    """HumanEval's own harness: the question (its helpers and the stub), the code, the tests and their calls, in one
    process; our prelude in front, as every program gets it."""
    entry = find_entry_point(code, item["question"], item["generation"], item.get("exec_rest"))
    tests, _ = plan_tests(item["unit_test"], item["data_source"], entry)
    question = item["question"] if item["data_source"] == "humaneval" else ""
    return "\n".join([PRELUDE, question, "    pass" if question.rstrip().endswith('"""') else "", code, tests,
                      f"print({TESTS_DONE_MARKER!r})"])


def _wire_and_one_process(executor, rows):
    from critic_tasks.protocols.criticbench.correction.check import extract_code

    verdicts = {}
    for domain in ("code_exec", "code_not_exec"):
        chosen = [r for r in rows if r[1] == domain]
        for kind in ("revision", "generation"):
            texts = [r[3] if kind == "revision" else f"```python\n{r[2]['generation']}\n```" for r in chosen]
            wire = check_corrections(domain, texts, [r[2] for r in chosen], executor=executor)
            codes = [extract_code(t) or "raise SystemExit('no code')" for t in texts]  # unparsed: fails both ways
            alone = executor.run([Program(_whole_question_program(r[2], c), timeout_s=4.0) for r, c in zip(chosen, codes)])
            for r, w, a in zip(chosen, wire, alone):
                verdicts[f"{kind}:{r[0]}"] = (w.passed, a.status == "passed" and TESTS_DONE_MARKER in a.stdout)
    return verdicts


# HumanEval/32, /38, /50: items whose question defines the helpers the tests call
HELPER_ITEMS = {"dev/code_exec/6", "dev/code_exec/19", "dev/code_exec/36", "dev/code_exec/38", "dev/code_not_exec/21",
                "test/code_exec/1", "test/code_exec/26", "test/code_not_exec/20", "test/code_not_exec/28"}


def test_released_helper_items_pass_as_in_humanevals_own_harness(predictions_dir, executor):
    """The nine released corrections of HumanEval/32, /38 and /50 (and their original generations): the wire's
    verdict equals a run of question + code + tests in one process, where main failed the revisions that call the
    question's helper without copying it (NameError: poly / encode_shift) or were checked on the helper."""
    rows = [r for r in _released_code_items(predictions_dir) if r[0] in HELPER_ITEMS]
    assert len(rows) == 9
    verdicts = _wire_and_one_process(executor, rows)
    assert {k: v for k, v in verdicts.items() if v[0] != v[1]} == {}
    # by hand, reading the nine revisions: seven are right; test/code_not_exec/20 bisects [-1, 1] without widening
    # it (it never ends on most inputs) and test/code_not_exec/28 returns -xs[0]/xs[1], a zero of the linear part only
    assert sorted(k for k, v in verdicts.items() if k.startswith("revision") and v[0]) == [
        "revision:dev/code_exec/19", "revision:dev/code_exec/36", "revision:dev/code_exec/38", "revision:dev/code_exec/6",
        "revision:dev/code_not_exec/21", "revision:test/code_exec/1", "revision:test/code_exec/26"]


@pytest.mark.slow
def test_every_released_code_correction_gets_the_one_process_verdict(predictions_dir, executor):
    """All 164 released code corrections and their 164 original generations: the wire's verdict equals a run of
    question + code + tests in one process, item by item."""
    rows = _released_code_items(predictions_dir)
    assert len(rows) == 164
    verdicts = _wire_and_one_process(executor, rows)
    assert {k: v for k, v in verdicts.items() if v[0] != v[1]} == {}


def test_a_revision_that_redefines_the_questions_poly_fails(predictions_dir, executor):
    """HumanEval/32 as released: a revision whose own poly returns 0 makes any find_zero look right to tests that
    call poly; the tester's poly is the question's, so it fails (main passed it)."""
    (row,) = [r for r in _released_code_items(predictions_dir) if r[0] == "dev/code_not_exec/21"]
    item = row[2]
    assert "def poly(" in item["question"] and "poly(" in item["unit_test"]
    cheat = "def poly(xs, x):\n    return 0\n\n\ndef find_zero(xs):\n    return 12345.0\n"
    outcomes = check_corrections("code_not_exec", [f"```python\n{cheat}```", row[3]], [item, item], executor=executor)
    assert [(o.status, o.passed) for o in outcomes] == [("failed", False), ("passed", True)]


def test_a_released_generation_with_its_unittest_main_passes_once_its_bug_is_fixed(predictions_dir, executor):
    """dev/code_exec/27 (HumanEval/89) as released: the generation repeats the tests as a unittest class and ends with
    ``if __name__ == '__main__': unittest.main()``; its one bug is the upper-case alphabet. Fixed by hand (the
    lower-case one) it passes, with its main block and with a bare ``unittest.main()`` in its place; as released, and
    fixed wrongly (a rotation by two), it fails."""
    (row,) = [r for r in _released_code_items(predictions_dir) if r[0] == "dev/code_exec/27"]
    item, generation = row[2], row[2]["generation"]
    buggy = "chr((ord(c) - 65 + 2 * 2) % 26 + 65)"
    guard = "if __name__ == '__main__':\n    unittest.main()"
    assert generation.count(buggy) == 1 and generation.rstrip().endswith(guard)
    fixed = generation.replace(buggy, "chr((ord(c) - 97 + 2 * 2) % 26 + 97)")
    codes = [fixed, fixed.replace(guard, "unittest.main()"), generation,
             generation.replace(buggy, "chr((ord(c) - 97 + 2) % 26 + 97)")]
    outcomes = check_corrections("code_exec", [f"```python\n{code}\n```" for code in codes], [item] * 4,
                                 executor=executor)
    assert [(o.status, o.passed) for o in outcomes] == [("passed", True)] * 2 + [("failed", False)] * 2
