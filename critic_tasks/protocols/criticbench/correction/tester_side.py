# The trusted side of a code check: runs the item's unit tests (HumanEval's check, MBPP's asserts, loops, helpers,
# float tolerances, expected exceptions: the dataset's semantics) against stand-ins for the candidate's names. A
# call sends plain data to the candidate's process (candidate_side.py) and gets plain data back (wire.py), so every
# comparison here is between values of builtin types, made by this interpreter, with asserts on. This process runs
# in a sandbox of its own (own uid, work dir and PID namespace), its source on its command line, not in a file.
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
    """A value the candidate could not send as plain data (an instance of its own class, a generator, a function):
    it can be called, passed back, and its attributes read; it cannot be compared, hashed, iterated or tested."""

    __slots__ = ("_number",)

    def __init__(self, number):
        object.__setattr__(self, "_number", number)

    def __call__(self, *args, **kwargs):
        return _CHANNEL.call(self._number, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _CHANNEL.ask({"op": "getattr", "target": self._number, "name": name})

    def __repr__(self):
        return f"<candidate object #{self._number}>"

    def _not_plain(self, *args):
        raise TypeError(f"{self!r} is not plain data: it cannot be compared, hashed, iterated or tested for truth")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __bool__ = __len__ = __iter__ = _not_plain
    __contains__ = __index__ = __int__ = __float__ = __complex__ = __getitem__ = _not_plain


def _send_value(value):
    if type(value) is CandidateObject:
        return {"handle": object.__getattribute__(value, "_number")}
    raise TypeError(f"a {type(value).__name__} cannot be passed to the candidate (only plain data and its objects)")


def _raise(name, message):
    kind = getattr(_builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and kind is not StopIteration:
        raise kind(message)
    raise CandidateError(f"{name}: {message}")


class _Channel:
    def __init__(self):
        self.inp, self.out = _os.fdopen(_os.dup(0), "rb"), _os.fdopen(_os.dup(1), "wb")
        devnull = _os.open(_os.devnull, _os.O_RDONLY)
        _os.dup2(devnull, 0)
        _os.dup2(2, 1)  # the tests' own prints go to stderr

    def exchange(self, message):
        wire_send(self.out, message)  # noqa: F821  (wire.py)
        reply = wire_receive(self.inp)  # noqa: F821
        if type(reply) is not dict:
            raise WireError("a reply is not an object")  # noqa: F821
        if "raised" in reply:
            name, message = reply["raised"]
            _raise(str(name), str(message))
        return reply

    def ask(self, message):
        return wire_decode(self.exchange(message)["value"], CandidateObject)  # noqa: F821

    def call(self, number, args, kwargs):
        reply = self.exchange({"op": "call", "target": number, "args": [wire_encode(a, _send_value) for a in args],  # noqa: F821
                               "kwargs": [[str(k), wire_encode(v, _send_value)] for k, v in kwargs.items()]})  # noqa: F821
        value = wire_decode(reply["value"], CandidateObject)  # noqa: F821
        for arg, after in zip(args, reply.get("args", [])):  # what the call did to the containers it was given
            after = wire_decode(after, CandidateObject)  # noqa: F821
            if type(arg) is list and type(after) is list:
                arg[:] = after
            elif type(arg) in (dict, set) and type(after) is type(arg):
                arg.clear()
                arg.update(after)
        return value


def _run_tests(prelude, tests, from_candidate, own_modules, done_marker):
    global _CHANNEL
    _CHANNEL = _Channel()
    reply = _CHANNEL.exchange({"op": "names", "names": from_candidate})
    if "load_error" in reply:
        name, message = reply["load_error"]
        raise CandidateError(f"the program did not load: {name}: {message}")
    namespace = {"__name__": "__main__", "__builtins__": _builtins}
    exec(compile(prelude, "prelude.py", "exec"), namespace)
    for module in own_modules:  # stdlib modules the tests use without importing them: ours, not the candidate's
        try:
            namespace[module] = _importlib.import_module(module)
        except ImportError:
            pass
    for name, value in reply["names"].items():
        if name in from_candidate:
            namespace[name] = wire_decode(value, CandidateObject)  # noqa: F821
    exec(compile(tests, "tests.py", "exec"), namespace)
    print(done_marker, file=_sys.stderr, flush=True)
