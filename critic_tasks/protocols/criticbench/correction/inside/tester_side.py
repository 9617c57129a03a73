# The trusted side of a code check: runs the item's unit tests (HumanEval's check, MBPP's asserts, test functions,
# unittest classes, loops, helpers, float tolerances, expected exceptions: the dataset's semantics) against stand-ins
# for the candidate's names. A call sends plain data to the candidate's process (candidate_side.py) and gets plain
# data back (wire.py), so every comparison here is between values this interpreter built, made by this interpreter,
# with asserts on. The tester counts its calls into the candidate: tests that made none pass nothing. This process
# runs in a sandbox of its own (own uid, work dir and PID namespace), its source on its command line, not in a file.
# Read as text by programs.py, after wire.py; never imported by the package; tests run it.
import builtins as _builtins
import ctypes as _ctypes
import importlib as _importlib
import os as _os
import sys as _sys

if _sys.flags.optimize or not __debug__:  # asserts must run; our command line never strips them
    raise SystemExit("critic tester: asserts are off (-O); refusing to test")
_ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no /proc/<pid>/mem, fd or environ to a same-uid peer


class CandidateError(Exception):
    """The candidate raised something the tests cannot see as a builtin exception (SystemExit, a custom class...)."""


class CandidateObject:
    """A value the candidate could not send as plain data (an instance of its own class, a generator, a function).
    It can be called, passed back, its attributes read and set, its length, items and str() asked for, and iterated
    (each item crosses as plain data; ``in`` compares those items here); it is never compared, hashed or tested for
    truth, since the answer would be the candidate's word (an always-equal ``__eq__``)."""

    __slots__ = ("_peer", "_number", "_tag", "_items")

    def __init__(self, peer, number, tag):
        items = WireItems(peer, number, lambda reply: peer.decode(reply["value"]))  # noqa: F821  (wire.py)
        for name, value in (("_peer", peer), ("_number", number), ("_tag", tag), ("_items", items)):
            object.__setattr__(self, name, value)

    def _ask(self, message):
        peer = object.__getattribute__(self, "_peer")
        return peer.decode(peer.exchange(dict(message, target=object.__getattribute__(self, "_number")))["value"])

    def __call__(self, *args, **kwargs):
        peer = object.__getattribute__(self, "_peer")
        peer.calls += 1
        sent = []  # the test's lists, dicts and sets in this call: the reply updates them in place
        reply = peer.exchange({"op": "call", "target": object.__getattribute__(self, "_number"),
                               "args": peer.encode([list(args), kwargs], numbered=sent)})
        after = peer.decode(reply["value"], sent=sent)
        if type(after) is not list or len(after) != 3:
            raise WireError("a call's reply is not [value, args, kwargs]")  # noqa: F821  (wire.py)
        return after[0]

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._ask({"op": "getattr", "name": name})

    def __setattr__(self, name, value):
        peer = object.__getattribute__(self, "_peer")
        self._ask({"op": "setattr", "name": str(name), "value": peer.encode(value)})

    def __len__(self):
        size = self._ask({"op": "len"})
        if type(size) is not int or size < 0:
            raise TypeError("the candidate's len() is not a non-negative int")
        return size

    def __getitem__(self, key):
        return self._ask({"op": "getitem", "key": object.__getattribute__(self, "_peer").encode(key)})

    def __str__(self):
        text = self._ask({"op": "str"})
        if type(text) is not str:
            raise TypeError("the candidate's str() is not a str")
        return text

    def __iter__(self):
        if object.__getattribute__(self, "_tag") == "iterator":
            return self
        return self._ask({"op": "iter"})

    def __next__(self):
        return object.__getattribute__(self, "_items").next()  # the candidate's items, each plain data

    def __repr__(self):
        return f"<candidate object #{object.__getattribute__(self, '_number')}>"

    def _not_plain(self, *args):
        raise TypeError(f"{self!r} is not plain data: it cannot be compared, hashed or tested for truth")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __bool__ = _not_plain
    __index__ = __int__ = __float__ = __complex__ = _not_plain


def _raise(name, message):
    kind = getattr(_builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and kind is not StopIteration:
        raise kind(message)
    raise CandidateError(f"{name}: {message}")


def _serve_callback(request):
    """What the candidate may ask of the tests: call what they gave it (a lambda, a key function), or pull the
    next items of an iterator they gave it. Nothing else here is reachable from its side."""
    op = request["op"]
    if op == "call":
        args, kwargs = _CHANNEL.decode(request["args"])
        return {"value": _CHANNEL.encode(_CHANNEL.resolve(request["target"])(*args, **kwargs))}
    if op == "next":
        return wire_next_batch(_CHANNEL, request["target"], request["count"])  # noqa: F821
    raise ValueError(f"the tests serve no {op!r} request")


def _run_testcase(case):
    """A unittest.TestCase (or a plain Test* class) of the tests, run here; any failure fails the item."""
    import unittest
    if isinstance(case, type) and issubclass(case, unittest.TestCase):
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
        if not suite.countTestCases():
            raise AssertionError(f"{case.__name__} has no test methods")
        result = unittest.TextTestRunner(stream=_sys.stderr, verbosity=0).run(suite)
        if not result.wasSuccessful() or result.unexpectedSuccesses:
            raise AssertionError(f"{case.__name__}: {len(result.failures)} failed, {len(result.errors)} errors")
        return
    for name in [n for n in dir(case) if n.startswith("test") and callable(getattr(case, n))]:
        getattr(case(), name)()


def _run_tests(prelude, helpers, tests, from_candidate, own_modules, done_marker):
    global _CHANNEL
    inp, out = _os.fdopen(_os.dup(0), "rb"), _os.fdopen(_os.dup(1), "wb")
    devnull = _os.open(_os.devnull, _os.O_RDONLY)
    _os.dup2(devnull, 0)
    _os.dup2(2, 1)  # the tests' own prints go to stderr
    class _Tester(WirePeer):  # noqa: F821  (wire.py, in front of this file when it runs; not when it is imported)
        calls = 0

        def exchange(self, message):
            reply = super().exchange(message)
            if "raised" in reply:
                name, message = reply["raised"]
                _raise(str(name), str(message))
            return reply

    _CHANNEL = _Tester(inp, out, CandidateObject, _serve_callback)
    reply = _CHANNEL.exchange({"op": "names", "names": from_candidate})
    if "load_error" in reply:
        name, message = reply["load_error"]
        raise CandidateError(f"the program did not load: {name}: {message}")
    namespace = {"__name__": "__main__", "__builtins__": _builtins, "__critic_testcase__": _run_testcase}
    exec(compile(prelude, "prelude.py", "exec"), namespace)
    for module in own_modules:  # stdlib modules the tests use without importing them: ours, not the candidate's
        try:
            namespace[module] = _importlib.import_module(module)
        except ImportError:
            pass
    # the question's own helpers (HumanEval's poly, encode_cyclic): from the item's text, never from the candidate
    exec(compile(helpers, "question.py", "exec"), namespace)
    for name, value in reply["names"].items():
        if name in from_candidate:
            namespace[name] = _CHANNEL.decode(value)
    exec(compile(tests, "tests.py", "exec"), namespace)
    if not _CHANNEL.calls:
        raise SystemExit("__critic_no_calls__: the tests made no call into the candidate's code")
    print(done_marker, file=_sys.stderr, flush=True)
