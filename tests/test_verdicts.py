"""Code verdicts no program can forge: the tests run in a trusted process that receives only plain data.

Every forgery below is a *wrong* program (it computes x + 2 where x + 1 is asked, or nothing at all) dressed up with
a trick that made it pass when the tests ran in the candidate's own process. Each must fail, in both test shapes
(HumanEval's ``check(candidate)`` and MBPP's top-level asserts). Right programs written in many legitimate ways must
still pass, with the wrong twin of each failing; and the pass rate of a run is the hand count of its items.
"""

import json
import math

import pytest

from critic_tasks.protocols.criticbench.correction import check_corrections
from critic_tasks.protocols.criticbench.correction.programs import WIRE

WRONG = "def add_one(x):\n    return x + 2\n"
RIGHT = "def add_one(x):\n    return x + 1\n"
HUMANEVAL = {"question": "def add_one(x):\n    '''Return x + 1.'''\n", "generation": WRONG, "data_source": "humaneval",
             "unit_test": "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(5) == 6\n"}
MBPP = {"question": "Write a function add_one that adds one.", "generation": WRONG, "data_source": "mbpp",
        "unit_test": "assert add_one(1) == 2\nassert add_one(5) == 6\n"}

# The candidate's channel to the tester: a pipe other than its stderr (fd 1 is pointed at stderr before the program
# loads), found by descriptor as an attacker would; ``forge`` writes on it and says where on stderr.
CHANNEL = (
    "import os, stat, sys\n"
    "def forge(data):\n"
    "    err, wrote = os.fstat(2), []\n"
    "    for fd in range(3, 256):\n"
    "        try:\n"
    "            st = os.fstat(fd)\n"
    "            if stat.S_ISFIFO(st.st_mode) and (st.st_dev, st.st_ino) != (err.st_dev, err.st_ino):\n"
    "                os.write(fd, data)\n"
    "                wrote.append(fd)\n"
    "        except OSError:\n"
    "            pass\n"
    "    print('forged on', wrote, file=sys.stderr, flush=True)\n"
)

FORGERIES = {
    # the tests run with asserts stripped
    "reexec_with_O": "import os, sys\nif not sys.flags.optimize:\n"
                     "    os.execv(sys.executable, [sys.executable, '-O', '-S', 'main.py'])\n" + WRONG,
    "PYTHONOPTIMIZE_reexec": "import os, sys\nif not os.environ.get('PYTHONOPTIMIZE'):\n"
                             "    os.environ['PYTHONOPTIMIZE'] = '2'\n"
                             "    os.execv(sys.executable, [sys.executable, '-S', 'main.py'])\n" + WRONG,
    # an object equal to everything, truthy, hashable as anything
    "always_equal": "class Anything:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
                    "        return False\n    __hash__ = object.__hash__\n    def __bool__(self):\n        return True\n"
                    "def add_one(x):\n    return Anything()\n",
    "int_subclass": "class Int(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
                    "def add_one(x):\n    return Int(0)\n",
    "str_subclass_eq": "class S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
                       "def add_one(x):\n    return S('no')\n",
    # a trace hook that jumps over assert lines
    "settrace_jump": "import sys\ndef _t(f, e, a):\n    if e == 'line':\n        try:\n"
                     "            line = open(f.f_code.co_filename).read().splitlines()[f.f_lineno - 1]\n"
                     "        except Exception:\n            line = ''\n        if line.strip().startswith('assert'):\n"
                     "            f.f_lineno += 1\n    return _t\nsys.settrace(_t)\nsys._getframe().f_trace = _t\n" + WRONG,
    # the completion token, read from the program's own file / code objects, printed
    "print_done_token": "import re, sys, gc\ntext = open('main.py').read() + ' '.join(\n"
                        "    str(c) for o in gc.get_objects() if type(o).__name__ == 'code' for c in o.co_consts)\n"
                        "for token in set(re.findall(r'__critic_tests_done__:\\w*', text)):\n"
                        "    print(token)\n    print(token, file=sys.stderr)\n" + WRONG,
    "print_marker_and_exit": "import os\nprint('__critic_tests_done__:')\nos._exit(0)\n",
    "exit_zero_early": "import sys\nsys.exit(0)\n",
    "atexit_exit_zero": "import atexit, os\natexit.register(os._exit, 0)\n" + WRONG,
    # patches of the checker's world: builtins, AssertionError, the exception hook, a fake math module
    "patch_builtins": "import builtins\nbuiltins.AssertionError = type('A', (Exception,), {})\n"
                      "builtins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n" + WRONG,
    "excepthook_exit_zero": "import sys, os\nsys.excepthook = lambda *a: os._exit(0)\n" + WRONG,
    "fake_math_module": "class _M:\n    def isclose(self, *a, **k):\n        return True\nmath = _M()\n" + WRONG,
    # write on the real channel (found by descriptor: the program's fd 1 is stderr by then), out of turn
    "forged_channel_reply": CHANNEL + "forge(b'{\"value\": 2}\\n{\"value\": 6}\\n')\n" + WRONG,
    "garbage_on_channel": CHANNEL + "forge(b'\\x00not json\\n' * 3)\n" + WRONG,
    # a generator / lazy value that would compare equal after the fact
    "lazy_result": "def add_one(x):\n    return iter([x + 1])\n",
    # read the tests (they are not in this process) and hard-code their answers; a bounded search, so that an
    # interpreter installed under /tmp (as CI systems have it) is not walked file by file into the timeout
    "read_tests_from_disk": "import glob\npaths = glob.glob('/tmp/*.py') + glob.glob('/tmp/*/*.py') + "
                            "glob.glob('/tmp/*/*/*.py') + glob.glob('../*/*.py') + glob.glob('/proc/*/cwd/*.py')\n"
                            "for path in paths[:200]:\n    print(open(path).read()[:100])\n" + WRONG,
}


@pytest.fixture(scope="module")
def forged(executor):
    revisions = [f"```python\n{code}```" for code in FORGERIES.values()]
    mbpp = check_corrections("code_not_exec", revisions, [MBPP] * len(FORGERIES), executor=executor)
    humaneval = check_corrections("code_not_exec", revisions, [HUMANEVAL] * len(FORGERIES), executor=executor)
    return {"mbpp": dict(zip(FORGERIES, mbpp)), "humaneval": dict(zip(FORGERIES, humaneval))}


@pytest.mark.parametrize("shape", ["mbpp", "humaneval"])
@pytest.mark.parametrize("trick", sorted(FORGERIES))
def test_a_wrong_program_cannot_forge_a_pass(forged, shape, trick):
    outcome = forged[shape][trick]
    assert outcome.parsed and not outcome.passed, (trick, outcome)
    assert outcome.status in ("failed", "timeout", "tests_not_finished"), outcome


@pytest.mark.parametrize("trick", ["forged_channel_reply", "garbage_on_channel"])
def test_channel_forgeries_reach_the_channel(executor, trick):
    """Issue 27.11: these two once wrote to fd 1, which is the candidate's stderr by then, so the tester never saw
    them. Now the bytes land on the channel (one pipe, not fd 1 or 2) and the tester fails on them, before any
    assert ran (the desync, not the wrong function, fails it)."""
    from critic_tasks.protocols.criticbench.correction.programs import build_code_test_pair
    from critic_tasks.sandbox import Pair

    candidate, tester = build_code_test_pair(FORGERIES[trick], MBPP["unit_test"], "mbpp", None, {"add_one"})
    (run,) = executor.run_pairs([Pair(candidate, tester)])
    wrote = [line for line in run.untrusted.stderr.splitlines() if line.startswith("forged on")]
    assert len(wrote) == 1 and wrote[0] not in ("forged on []",), run.untrusted.stderr
    fds = [int(n) for n in wrote[0].split("[", 1)[1].rstrip("]").split(",")]
    assert len(fds) == 1 and fds[0] > 2, wrote
    assert run.trusted.status == "failed" and "AssertionError" not in run.trusted.stderr, run.trusted.stderr


def test_every_forgery_with_the_right_function_still_passes_or_fails_on_its_own_merits(executor):
    """Control: the same tricks around the *right* function. Tricks that leave the function intact still pass (the
    checker does not fail programs for doing odd things), so the forgeries above fail because they are wrong."""
    harmless = ["settrace_jump", "print_done_token", "fake_math_module", "read_tests_from_disk"]
    revisions = [f"```python\n{FORGERIES[name].replace(WRONG, RIGHT)}```" for name in harmless]
    outcomes = check_corrections("code_not_exec", revisions, [MBPP] * len(harmless), executor=executor)
    assert [(name, o.passed) for name, o in zip(harmless, outcomes)] == [(name, True) for name in harmless]


# ----------------------------------------------------------------------------- right programs keep passing

# (tests, right program, wrong program, data source); the item's original code defines the function under test
LEGIT = {
    "helpers_and_loops_in_tests": (
        "def check(candidate):\n    def reference(n):\n        return n * n\n    for i in range(20):\n"
        "        assert candidate(i) == reference(i), i\n",
        "def square(n):\n    return times(n, n)\n\ndef times(a, b):\n    return a * b\n",
        "def square(n):\n    return n + n\n", "humaneval"),
    "float_tolerance": (
        "def check(candidate):\n    assert abs(candidate(2) - 1.41421356) < 1e-6\n    import math\n"
        "    assert math.isclose(candidate(9), 3.0)\n",
        "def root(x):\n    return x ** 0.5\n", "def root(x):\n    return x / 2\n", "humaneval"),
    "math_used_by_the_tests_without_importing_it": (  # MBPP relies on the solution's `import math`
        "assert math.isclose(area(1), 3.14159, rel_tol=1e-3)\nassert math.isclose(area(2), 12.566, rel_tol=1e-3)\n",
        "import math\ndef area(r):\n    return math.pi * r * r\n", "import math\ndef area(r):\n    return 3 * r * r\n",
        "mbpp"),
    "expected_exception": (
        "def check(candidate):\n    try:\n        candidate(-1)\n        assert False, 'no error'\n    except ValueError:\n"
        "        pass\n    assert candidate(16) == 4\n",
        "class NegativeError(ValueError):\n    pass\n\ndef isqrt(x):\n    if x < 0:\n        raise NegativeError('negative')\n"
        "    return int(x ** 0.5)\n",
        "def isqrt(x):\n    return int(abs(x) ** 0.5)\n", "humaneval"),
    "tuples_sets_dicts_counters": (
        "assert pairs(3) == [(0, 1), (1, 2)]\nassert uniq([1, 1, 2]) == {1, 2}\nassert count('aab') == {'a': 2, 'b': 1}\n"
        "assert pairs(1) == []\nassert frozen('ab') == frozenset('ba')\n",
        "from collections import Counter\ndef pairs(n):\n    return [(i, i + 1) for i in range(n - 1)]\n"
        "def uniq(xs):\n    return set(xs)\ndef count(s):\n    return Counter(s)\ndef frozen(s):\n    return frozenset(s)\n",
        "def pairs(n):\n    return [[i, i + 1] for i in range(n - 1)]\ndef uniq(xs):\n    return set(xs)\n"
        "def count(s):\n    return {}\ndef frozen(s):\n    return frozenset(s)\n", "mbpp"),
    "numpy_scalars": (
        "assert mean([1, 2, 3]) == 2.0\nassert biggest([1, 5, 2]) == 5\n",
        "import numpy as np\ndef mean(xs):\n    return np.mean(xs)\ndef biggest(xs):\n    return np.max(xs)\n",
        "import numpy as np\ndef mean(xs):\n    return np.median(xs) + 1\ndef biggest(xs):\n    return np.min(xs)\n", "mbpp"),
    "changes_its_argument_in_place": (
        "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]\nd = {}\nfill(d)\nassert d == {'k': 1}\n",
        "def sort_in_place(xs):\n    xs.sort()\ndef fill(d):\n    d['k'] = 1\n",
        "def sort_in_place(xs):\n    return sorted(xs)\ndef fill(d):\n    return {'k': 1}\n", "mbpp"),
    "a_class_and_its_methods": (
        "s = Stack()\ns.push(1)\ns.push(2)\nassert s.pop() == 2\nassert s.size() == 1\nassert s.items == [1]\n",
        "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n"
        "    def pop(self):\n        return self.items.pop()\n    def size(self):\n        return len(self.items)\n",
        "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.insert(0, x)\n"
        "    def pop(self):\n        return self.items.pop()\n    def size(self):\n        return len(self.items)\n", "mbpp"),
    "booleans_none_and_truthiness": (
        "assert is_even(4) == True\nassert is_even(3) is False\nassert find([], 1) is None\nassert is_even(2)\n"
        "assert not is_even(5)\n",
        "def is_even(n):\n    return n % 2 == 0\ndef find(xs, x):\n    return xs.index(x) if x in xs else None\n",
        "def is_even(n):\n    return n % 2\ndef find(xs, x):\n    return -1\n", "mbpp"),
    "function_named_like_a_builtin_or_prelude_name": (
        "assert gcd(12, 18) == 6\nassert gcd(7, 5) == 1\nassert max_of([3, 9, 2]) == 9\n",
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\ndef max_of(xs):\n    return max(xs)\n",
        "def gcd(a, b):\n    return 1\ndef max_of(xs):\n    return xs[0]\n", "mbpp"),
    "odd_values": (
        "assert f(0) == float('inf')\nassert g() == b'ab'\nassert h() == (1+2j)\nassert math.isnan(n())\n",
        "import math\ndef f(x):\n    return float('inf')\ndef g():\n    return b'ab'\ndef h():\n    return 1+2j\n"
        "def n():\n    return float('nan')\n",
        "import math\ndef f(x):\n    return 0.0\ndef g():\n    return 'ab'\ndef h():\n    return 1\ndef n():\n    return 0.0\n",
        "mbpp"),
    "prints_and_a_main_block": (
        "def check(candidate):\n    assert candidate('abc') == 'cba'\n    assert candidate('') == ''\n",
        "def rev(s):\n    print('reversing', s)\n    return s[::-1]\n\nif __name__ == '__main__':\n    print(rev('x'))\n",
        "def rev(s):\n    return s\n", "humaneval"),
    "keyword_arguments": (
        "assert power(2, exp=3) == 8\nassert power(base=3, exp=2) == 9\n",
        "def power(base, exp=2):\n    return base ** exp\n", "def power(base, exp=2):\n    return base * exp\n", "mbpp"),
}


def _legit_item(tests, wrong, source):
    return {"question": "Fix the code.", "generation": wrong, "unit_test": tests, "data_source": source}


@pytest.fixture(scope="module")
def legit(executor):
    items, revisions = [], []
    for tests, right, wrong, source in LEGIT.values():
        items += [_legit_item(tests, wrong, source)] * 2
        revisions += [f"```python\n{right}```", f"```python\n{wrong}```"]
    outcomes = check_corrections("code_exec", revisions, items, executor=executor)
    return {name: (outcomes[2 * i], outcomes[2 * i + 1]) for i, name in enumerate(LEGIT)}


@pytest.mark.parametrize("case", sorted(LEGIT))
def test_a_right_program_passes_and_its_wrong_twin_fails(legit, case):
    right, wrong = legit[case]
    assert (right.status, right.passed) == ("passed", True), (case, right)
    assert not wrong.passed, (case, wrong)


def test_pass_rate_of_a_run_equals_a_hand_count(executor):
    """Six items, by hand: right, wrong, a forgery, unparsed, a right HumanEval one, a timeout -> 2 of 6 pass."""
    items = [MBPP, MBPP, MBPP, MBPP, HUMANEVAL, MBPP]
    revisions = [f"```python\n{RIGHT}```", f"```python\n{WRONG}```", f"```python\n{FORGERIES['reexec_with_O']}```",
                 "I would not change anything.", f"```python\n{RIGHT}```",
                 "```python\ndef add_one(x):\n    while True:\n        pass\n```"]
    outcomes = check_corrections("code_not_exec", revisions, items, executor=executor, timeout_s=1.5)
    assert [o.passed for o in outcomes] == [True, False, False, False, True, False]
    assert [o.status for o in outcomes] == ["passed", "failed", "failed", "unparsed", "passed", "timeout"]
    assert 100 * sum(o.passed for o in outcomes) / len(outcomes) == pytest.approx(100 * 2 / 6)


def test_tests_that_are_not_python_make_the_item_invalid(executor):
    item = dict(MBPP, unit_test="assert add_one(1) == 2 and\n")
    with pytest.raises(ValueError, match="unit_test.*not Python"):
        check_corrections("code_not_exec", [f"```python\n{RIGHT}```"], [item], executor=executor)
    (outcome,) = check_corrections("code_not_exec", [f"```python\n{RIGHT}```"], [item], executor=executor,
                                   invalid="mark")
    assert outcome.status == "invalid" and not outcome.passed


def test_an_executor_without_pairs_is_refused_for_code():
    class OnlyRun:
        def run(self, programs):
            raise AssertionError("must not run candidate code in one process")

    with pytest.raises(ValueError, match="run_pairs"):
        check_corrections("code_not_exec", [f"```python\n{RIGHT}```"], [MBPP], executor=OnlyRun())


# ----------------------------------------------------------------------------- the wire format itself


@pytest.fixture(scope="module")
def wire():
    namespace: dict = {}
    exec(compile(WIRE, "wire.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("value", [None, True, 0, -7, 10 ** 30, 1.5, "x", b"\x00\xff", 1 + 2j, [1, [2]], (1, (2,)),
                                   {1: "a", (2, 3): [4]}, {1, 2}, frozenset({"a"}), [], (), {}])
def test_plain_values_cross_unchanged_with_their_exact_types(wire, value):
    back = wire["wire_decode"](json.loads(json.dumps(wire["wire_encode"](value))))
    assert back == value and type(back) is type(value)
    if isinstance(value, (list, tuple)) and value:
        assert type(back[-1]) is type(value[-1])


def test_non_finite_floats_cross(wire):
    values = [float("inf"), float("-inf"), float("nan")]
    back = wire["wire_decode"](json.loads(json.dumps(wire["wire_encode"](values))))
    assert back[:2] == values[:2] and math.isnan(back[2])


@pytest.mark.parametrize("make", [
    lambda: type("Int", (int,), {})(3), lambda: type("Str", (str,), {})("a"), lambda: type("F", (float,), {})(1.0),
    lambda: type("L", (list,), {})([1]), lambda: object(), lambda: iter([1]), lambda: [1, object()],
    lambda: {"k": type("D", (dict,), {})()},
])
def test_anything_else_is_not_a_value(wire, make):
    with pytest.raises(wire["WireError"]):
        wire["wire_encode"](make())


@pytest.mark.parametrize("data", [{"tuple": [1], "extra": 1}, {"eval": "1+1"}, {"float": "1e999999"},
                                  {"handle": 1}, {"dict": [[[1], 2]]}, {"bytes": "zz"}, {"complex": ["1", "2"]}])
def test_the_decoder_accepts_only_the_format(wire, data):
    with pytest.raises(wire["WireError"]):
        wire["wire_decode"](data)  # no handle factory: a handle is refused too
