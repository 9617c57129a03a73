# The candidate's side of a code check: load the model's program, then answer the trusted tester's requests (the
# values of names, calls, attributes, lengths, items, the next items of an iterator) with plain data (wire.py). The
# tests never run here and their source never comes here: nothing this process does (re-running itself with -O,
# sys.settrace, objects with their own __eq__, printing a marker) decides a verdict; it can only send values, which
# the tester compares. A test's lambda or generator given to the candidate stays on the tester's side: calling it
# (or pulling its items) asks the tester, which runs it there.
# The program is loaded as a module not named "__main__", as HumanEval's and MBPP's harnesses load it, so its main
# block (a script's ``sys.exit(main())``, an ``input()``, a ``unittest.main()``) never runs. A ``SystemExit`` while
# it loads (a bare ``unittest.main()`` or ``sys.exit()``) ends only its loading (those harnesses fail the item
# there): the tests, not the program's exit, decide, and they get what it defined until then.
# Read as text by programs.py, after wire.py; never imported by the package; tests run it.
import builtins as _builtins
import os as _os
import sys as _sys
import types as _types

CANDIDATE_MODULE = "solution"  # the program's __name__: not "__main__"


class _TesterObject:
    """The tester's object (a test's lambda, generator, or a builtin it passed): call it, iterate it."""

    def __init__(self, peer, number, tag):
        self._peer, self._number, self._tag = peer, number, tag
        self._items = WireItems(peer, number, lambda reply: _reply_value(peer, reply))  # noqa: F821  (wire.py)

    def __call__(self, *args, **kwargs):
        reply = self._peer.exchange({"op": "call", "target": self._number, "args": self._peer.encode([list(args), kwargs])})
        return _reply_value(self._peer, reply)

    def __iter__(self):
        return self

    def __next__(self):
        return self._items.next()


def _reply_value(peer, reply):
    if "raised" in reply:
        name, message = reply["raised"]
        kind = getattr(_builtins, str(name), None)
        raise (kind if isinstance(kind, type) and issubclass(kind, Exception) and kind is not StopIteration
               else RuntimeError)(str(message))
    return peer.decode(reply["value"])


def _serve(code):
    channel_in, channel_out = _os.fdopen(_os.dup(0), "rb"), _os.fdopen(_os.dup(1), "wb")
    devnull = _os.open(_os.devnull, _os.O_RDONLY)
    _os.dup2(devnull, 0)
    _os.dup2(2, 1)  # the program's own prints go to stderr, never onto the channel
    module = _types.ModuleType(CANDIDATE_MODULE)  # registered, so pickle and typing find its classes by name
    _sys.modules[CANDIDATE_MODULE] = module
    namespace = module.__dict__
    namespace["__builtins__"] = _builtins
    load_error = []

    def serve(request):
        op = request["op"]
        if load_error:
            return {"load_error": load_error}
        if op == "names":
            # a name bound to a builtin (strlen = len) is served as ours, like any function: the tests call it here
            # (a call, counted), where by name they would use their own len and never call the candidate
            return {"names": {n: peer.handle(namespace[n]) if wire_is_builtin(namespace[n])  # noqa: F821  (wire.py)
                              else peer.encode(namespace[n]) for n in request["names"] if n in namespace}}
        if op == "next":
            return wire_next_batch(peer, request["target"], request["count"])  # noqa: F821  (wire.py)
        target = peer.resolve(request["target"])
        if op == "call":
            received = []
            args, kwargs = peer.decode(request["args"], made=received)
            value = target(*args, **kwargs)
            # the arguments after the call too: a function may change a list or dict it was given, in place; each
            # container the tester sent crosses back as "your #n", so the tester updates its own object
            return {"value": peer.encode([value, args, kwargs], known={id(c): i for i, c in enumerate(received)})}
        if op == "getattr":
            return {"value": peer.encode(getattr(target, str(request["name"])))}
        if op == "setattr":
            setattr(target, str(request["name"]), peer.decode(request["value"]))
            return {"value": None}
        if op == "iter":
            return {"value": peer.encode(iter(target))}
        if op == "len":
            return {"value": len(target)}
        if op == "getitem":
            return {"value": peer.encode(target[peer.decode(request["key"])])}
        if op == "str":
            return {"value": peer.encode(str(target))}
        raise ValueError(f"unknown request {op!r}")

    peer = WirePeer(channel_in, channel_out, _TesterObject, serve)  # noqa: F821  (wire.py)
    try:
        exec(compile(code, "main.py", "exec"), namespace)
    except SystemExit:
        pass  # the program ended itself: the tests run against what it defined (an undefined name fails them)
    except BaseException as err:
        load_error.extend(wire_describe(err))  # noqa: F821
    while True:
        try:
            request = wire_receive(channel_in)  # noqa: F821
        except Exception:
            return  # the tester is done (or gone)
        if type(request) is dict and "op" in request:
            peer.answer(request)
