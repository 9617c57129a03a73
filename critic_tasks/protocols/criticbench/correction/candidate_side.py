# The candidate's side of a code check: load the model's program, then answer the trusted tester's requests (the
# values of names, calls, attributes) with plain data (wire.py). The tests never run here and their source never
# comes here: nothing this process does (re-running itself with -O, sys.settrace, objects with their own __eq__,
# printing a marker) decides a verdict; it can only send values, which the tester compares.
# Read as text by programs.py, after wire.py; never imported by the package; tests run it.
import builtins as _builtins
import os as _os


def _plain_view(value):
    """A plain value that compares exactly as ``value`` does (numpy scalars; dict types that compare as dicts), or
    None. Fidelity only: whatever this returns is sent as data, so it cannot forge a comparison on the other side."""
    kind = type(value)
    if kind.__module__ == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
        item = value.item()
        return item if type(item) in (bool, int, float, complex, str, bytes) else None
    if kind.__module__ == "collections" and kind.__name__ in ("OrderedDict", "defaultdict", "Counter"):
        return dict(value)
    return None


def _describe(err):
    """[the nearest builtin exception class's name, the message]: the tester re-raises that class."""
    name = next((c.__name__ for c in type(err).__mro__ if getattr(_builtins, c.__name__, None) is c), "Exception")
    try:
        message = str(err)[:500]
    except BaseException:
        message = "?"
    return [name, message]


def _serve(code):
    channel_in, channel_out = _os.fdopen(_os.dup(0), "rb"), _os.fdopen(_os.dup(1), "wb")
    devnull = _os.open(_os.devnull, _os.O_RDONLY)
    _os.dup2(devnull, 0)
    _os.dup2(2, 1)  # the program's own prints go to stderr, never onto the channel
    handles = []

    def keep(value):
        view = _plain_view(value)
        if view is not None:
            return wire_encode(view, keep)  # noqa: F821  (wire.py)
        handles.append(value)
        return {"handle": len(handles) - 1}

    def resolve(number):
        if not 0 <= number < len(handles):
            raise LookupError(f"no candidate object #{number}")
        return handles[number]

    namespace = {"__name__": "__main__", "__builtins__": _builtins}
    try:
        exec(compile(code, "main.py", "exec"), namespace)
        load_error = None
    except BaseException as err:  # SystemExit too: the program ended before the tests could call it
        load_error = _describe(err)
    while True:
        try:
            request = wire_receive(channel_in)  # noqa: F821
        except Exception:
            return  # the tester is done (or gone)
        try:
            op = request["op"]
            if load_error is not None:
                reply = {"load_error": load_error}
            elif op == "names":
                reply = {"names": {n: wire_encode(namespace[n], keep) for n in request["names"] if n in namespace}}  # noqa: F821
            elif op == "getattr":
                reply = {"value": wire_encode(getattr(resolve(request["target"]), request["name"]), keep)}  # noqa: F821
            elif op == "call":
                args = [wire_decode(a, resolve) for a in request["args"]]  # noqa: F821
                kwargs = {k: wire_decode(v, resolve) for k, v in request["kwargs"]}  # noqa: F821
                value = resolve(request["target"])(*args, **kwargs)
                # the arguments after the call: a function may change a list or dict it was given, in place
                reply = {"value": wire_encode(value, keep), "args": [wire_encode(a, keep) for a in args]}  # noqa: F821
            else:
                raise ValueError(f"unknown request {op!r}")
            message = reply
        except BaseException as err:
            message = {"raised": _describe(err)}
        try:
            wire_send(channel_out, message)  # noqa: F821
        except Exception as err:  # not JSON-encodable (an int of 5000 digits, ...)
            wire_send(channel_out, {"raised": ["ValueError", f"could not send the value: {err}"]})  # noqa: F821
