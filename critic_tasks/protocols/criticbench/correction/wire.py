# The plain-data wire format between a candidate program and its trusted tester (see tester_side.py): one JSON
# line per message. Only values that cannot carry behaviour cross it: None, bool, int, float, str, bytes, complex,
# and lists, tuples, dicts, sets and frozensets of them, each of *exactly* that type (a subclass of int, a custom
# class, an object with its own __eq__ is not a value). Anything else stays on the candidate's side behind a
# handle: the tester can pass it back, call it or read its attributes, never compare it.
# Read as text by programs.py and placed in front of both sides' code; never imported by the package; tests run it.
import json as _json
import math as _math

WIRE_LIMIT = 16 << 20  # bytes in one message; a longer line is a protocol failure


class WireError(Exception):
    """A message that is not plain data of the wire format."""


def wire_encode(value, other=None, _depth=0):
    """``value`` as JSON-ready data; ``other(value)`` encodes what is not plain (None: raise WireError)."""
    kind = type(value)
    if _depth > 100:
        raise WireError("nested more than 100 levels")
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        return value if _math.isfinite(value) else {"float": repr(value)}
    if kind is list:
        return [wire_encode(v, other, _depth + 1) for v in value]
    if kind is tuple:
        return {"tuple": [wire_encode(v, other, _depth + 1) for v in value]}
    if kind is dict:
        return {"dict": [[wire_encode(k, other, _depth + 1), wire_encode(v, other, _depth + 1)]
                         for k, v in value.items()]}
    if kind is set or kind is frozenset:
        return {kind.__name__: [wire_encode(v, other, _depth + 1) for v in value]}
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [wire_encode(value.real), wire_encode(value.imag)]}
    if other is None:
        raise WireError(f"a {kind.__name__} is not plain data")
    return other(value)


def wire_decode(data, handle=None):
    """The value ``data`` encodes (exact builtin types only); ``handle(number)`` makes a handle's stand-in."""
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is float or kind is str:
        return data
    if kind is list:
        return [wire_decode(v, handle) for v in data]
    if kind is not dict or len(data) != 1:
        raise WireError(f"not a wire value: {str(data)[:80]}")
    ((tag, body),) = data.items()
    try:
        if tag == "tuple":
            return tuple(wire_decode(v, handle) for v in body)
        if tag == "dict":
            return {wire_decode(k, handle): wire_decode(v, handle) for k, v in body}
        if tag in ("set", "frozenset"):
            return (set if tag == "set" else frozenset)(wire_decode(v, handle) for v in body)
        if tag == "bytes":
            return bytes.fromhex(body)
        if tag == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "complex":
            real, imag = (wire_decode(v) for v in body)
            if type(real) is float and type(imag) is float:
                return complex(real, imag)
        if tag == "handle" and handle is not None and type(body) is int:
            return handle(body)
    except (TypeError, ValueError) as err:  # unhashable keys, bad hex, wrong shapes
        raise WireError(f"bad {tag}: {err}") from None
    raise WireError(f"not a wire value: {str(data)[:80]}")


def wire_send(stream, message):
    stream.write(_json.dumps(message, allow_nan=False, separators=(",", ":")).encode() + b"\n")
    stream.flush()


def wire_receive(stream):
    """The next message; WireError at the end of the stream or on a line that is too long or not JSON."""
    line = stream.readline(WIRE_LIMIT + 1)
    if not line.endswith(b"\n"):
        raise WireError("the other side closed the channel" if len(line) <= WIRE_LIMIT else "message too long")
    try:
        return _json.loads(line, parse_constant=lambda name: _json_error(name))
    except ValueError as err:
        raise WireError(f"not JSON: {err}") from None


def _json_error(name):
    raise ValueError(f"{name} is not plain JSON")
