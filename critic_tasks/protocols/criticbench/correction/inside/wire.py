# The plain-data wire format between a candidate program and its trusted tester (see tester_side.py): one JSON
# line per message. Only values that cannot carry behaviour cross it: None, bool, int, float, str, bytes, bytearray,
# complex, and lists, tuples, dicts, sets and frozensets of them, each of *exactly* that type (a subclass of int, a custom
# class, an object with its own __eq__ is not a value). A few trusted types cross as tagged data and are rebuilt as
# the *receiver's own* type from that data, so whatever methods the sender's object had never cross: a namedtuple,
# Fraction, Decimal, range, dict views, OrderedDict / Counter / defaultdict / deque, numpy arrays and scalars, and
# ints too long for str() (sent in hex). A list, dict, set or bytearray met twice in one message crosses once and
# then as an alias, so the same list passed twice is one list on the other side. Anything else stays on its owner's side
# behind a handle: an iterator is pulled item by item (each item plain data), a function can be called, and the
# test's own lambdas are called back on the tester's side; nothing else can be done with a handle here (tester_side.py
# says what the tests may do with the candidate's).
# Read as text by programs.py and placed in front of both sides' code; never imported by the package; tests run it.
import builtins as _wire_builtins
import json as _json
import math as _math
import sys as _wire_sys

WIRE_LIMIT = 16 << 20  # bytes in one message; a longer line is a protocol failure
_BIG_INT_BITS = 12000  # ~3,600 digits: a longer int crosses in hex (str() and JSON stop at 4,300 digits)
# builtins that cross by name: each side uses its *own* object of that name (a test's `key=len`, `map(int, ...)`)
WIRE_BUILTINS = ("abs", "all", "any", "bin", "bool", "bytes", "chr", "complex", "dict", "divmod", "enumerate", "filter",
                 "float", "frozenset", "hex", "int", "isinstance", "len", "list", "map", "max", "min", "oct", "ord",
                 "pow", "range", "repr", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip")
_BUILTIN_NAMES = {id(getattr(_wire_builtins, _n)): _n for _n in WIRE_BUILTINS}


def wire_is_builtin(value):
    """Whether ``value`` is one of the builtins that cross by name."""
    return id(value) in _BUILTIN_NAMES
_ARRAY_KINDS = "biufcU"  # numpy dtypes whose items are plain values (no object arrays)
_namedtuples = {}


class WireError(Exception):
    """A message that is not plain data of the wire format."""


def _is_iterator(value):
    kind = type(value)
    return hasattr(kind, "__next__") and hasattr(kind, "__iter__")


def _rich(value, enc, other=None):
    """The tagged form of a trusted type (rebuilt by the receiver from data alone), or None."""
    kind = type(value)
    if kind is range:
        return {"range": [value.start, value.stop, value.step]}
    if kind in (type({}.keys()), type({}.values()), type({}.items())):
        return {kind.__name__: [enc(v) for v in value]}
    if isinstance(value, tuple) and type(getattr(kind, "_fields", None)) is tuple:  # a namedtuple (typing's too)
        body = [kind.__name__, enc(list(kind._fields)), [enc(v) for v in tuple.__getitem__(value, slice(None))]]
        extra = {n for k in kind.__mro__ if k not in (tuple, object) for n in vars(k) if not n.startswith("_")}
        if other is not None and extra - set(kind._fields):  # its own methods or properties: asked of the sender
            body.append(other(value))
        return {"namedtuple": body}
    collections = _wire_sys.modules.get("collections")
    if collections is not None:
        if isinstance(value, collections.Counter):
            return {"counter": [[enc(k), enc(v)] for k, v in dict.items(value)]}
        if isinstance(value, collections.OrderedDict):
            return {"odict": [[enc(k), enc(v)] for k, v in dict.items(value)]}
        if isinstance(value, collections.defaultdict):
            factory = _BUILTIN_NAMES.get(id(value.default_factory))
            return {"defaultdict": [factory, [[enc(k), enc(v)] for k, v in dict.items(value)]]}
        if isinstance(value, collections.deque):
            return {"deque": [[enc(v) for v in collections.deque.__iter__(value)], value.maxlen]}
    fractions, decimal = _wire_sys.modules.get("fractions"), _wire_sys.modules.get("decimal")
    if fractions is not None and isinstance(value, fractions.Fraction):
        return {"fraction": [enc(value.numerator), enc(value.denominator)]}
    if decimal is not None and isinstance(value, decimal.Decimal):
        return {"decimal": decimal.Decimal.__str__(value)}
    numpy = _wire_sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)):
        dtype = value.dtype
        if dtype.kind in _ARRAY_KINDS and not dtype.hasobject:
            if isinstance(value, numpy.generic):
                return {"npscalar": [dtype.str, enc(value.item())]}
            array = numpy.asarray(value)  # the base class: a subclass's own tolist never runs
            return {"ndarray": [dtype.str, list(array.shape), [enc(v) for v in numpy.ndarray.tolist(array.ravel())]]}
    return None


def wire_encode(value, other=None, _depth=0, known=None, numbered=None):
    """``value`` as JSON-ready data; ``other(value)`` encodes what is not plain (None: raise WireError).

    ``known``: {id: number} of containers the receiver sent us (its numbering): each crosses as "your container
    #number, now holding this", so the receiver updates its own object in place (a list changed by a call, or
    returned). ``numbered``: a list that receives every list/dict/set encoded, in the numbering's order."""
    numbers, active, held = {}, set(), [] if numbered is None else numbered
    known = known or {}

    def enc(v, depth=0):
        kind = type(v)
        if depth > 100:
            raise WireError("nested more than 100 levels")
        if v is None or kind is bool or kind is str:
            return v
        if kind is int:
            return v if v.bit_length() <= _BIG_INT_BITS else {"int": hex(v)}
        if kind is float:
            return v if _math.isfinite(v) else {"float": repr(v)}
        # the mutable containers, numbered in pre-order: a second meeting is an alias
        if kind is list or kind is dict or kind is set or kind is bytearray:
            key = id(v)
            if key in numbers:
                if key in active:
                    raise WireError("a container that contains itself")
                return {"alias": numbers[key]}
            numbers[key] = len(numbers)
            held.append(v)
            active.add(key)
            try:
                if kind is list:
                    out = [enc(x, depth + 1) for x in v]
                elif kind is dict:
                    out = {"dict": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]}
                elif kind is bytearray:
                    out = {"bytearray": v.hex()}
                else:
                    out = {"set": [enc(x, depth + 1) for x in v]}
            finally:
                active.discard(key)
            return {"same": [known[key], out]} if key in known else out
        if kind is tuple:
            return {"tuple": [enc(x, depth + 1) for x in v]}
        if kind is frozenset:
            return {"frozenset": [enc(x, depth + 1) for x in v]}
        if kind is bytes:
            return {"bytes": v.hex()}
        if kind is complex:
            return {"complex": [enc(v.real), enc(v.imag)]}
        rich = _rich(v, lambda x: enc(x, depth + 1), other)
        if rich is not None:
            return rich
        if other is not None:
            return other(v)
        raise WireError(f"a {kind.__name__} is not plain data")

    return enc(value, _depth)


def _items(body):
    if type(body) is not list:
        raise WireError(f"not a list: {str(body)[:80]}")
    return body


def _ints(body, count):
    if type(body) is not list or len(body) != count or any(type(v) is not int for v in body):
        raise WireError(f"not {count} ints: {str(body)[:80]}")
    return body


def _namedtuple(name, fields, remote=False):
    key = (name, tuple(fields), remote)
    if key not in _namedtuples:
        if not (type(name) is str and len(fields) <= 255 and all(type(f) is str for f in fields)):
            raise WireError("bad namedtuple")
        import collections
        made = collections.namedtuple(name, fields)  # validates the names (identifiers, no keywords)
        if remote:  # equality, order, hashing and fields stay the tuple's own; other attributes are asked for
            made = type(name, (made,), {"__getattr__": _remote_attribute})
        _namedtuples[key] = made
    return _namedtuples[key]


def _remote_attribute(self, name):
    if name.startswith("__") or name == "_remote":
        raise AttributeError(name)
    return getattr(object.__getattribute__(self, "_remote"), name)


def wire_decode(data, handle=None, own=None, sent=None, made=None):
    """The value ``data`` encodes; ``handle(number, tag)`` makes a stand-in for the sender's object (tag "handle" or
    "iterator"), ``own(number)`` returns the receiver's own object the sender held. Without them, no handle passes.
    ``sent``: the containers we numbered when we sent them (``wire_encode``'s ``numbered``), which a "same" updates
    in place; ``made``: a list that receives every container decoded, in the numbering's order."""
    made, done = [] if made is None else made, set()

    def register(container):
        made.append(container)
        return len(made) - 1

    def dec(d, depth=0):
        kind = type(d)
        if depth > 102:
            raise WireError("nested too deeply")
        if d is None or kind is bool or kind is int or kind is float or kind is str:
            return d
        if kind is list:
            out = []
            number = register(out)
            out.extend(dec(v, depth + 1) for v in d)
            done.add(number)
            return out
        if kind is not dict or len(d) != 1:
            raise WireError(f"not a wire value: {str(d)[:80]}")
        ((tag, body),) = d.items()
        sub = lambda v: dec(v, depth + 1)  # noqa: E731
        try:
            if tag == "tuple":
                return tuple(sub(v) for v in _items(body))
            if tag == "dict":
                out = {}
                number = register(out)
                for pair in _items(body):
                    key, value = _items(pair)
                    out[sub(key)] = sub(value)
                done.add(number)
                return out
            if tag == "set":
                out = set()
                number = register(out)
                out.update(sub(v) for v in _items(body))
                done.add(number)
                return out
            if tag == "frozenset":
                return frozenset(sub(v) for v in _items(body))
            if tag == "alias" and type(body) is int and body in done:
                return made[body]
            if tag == "same" and sent is not None:
                number, inner = _items(body)
                if type(number) is not int or not 0 <= number < len(sent):
                    raise WireError("no such container")
                target = sent[number]
                index = register(target)
                if type(target) is list and type(inner) is list:
                    target[:] = [sub(v) for v in inner]
                elif type(target) is bytearray and type(inner) is dict and list(inner) == ["bytearray"]:
                    target[:] = bytes.fromhex(str(inner["bytearray"]))
                elif type(target) in (dict, set) and type(inner) is dict and list(inner) == [type(target).__name__]:
                    if type(target) is dict:
                        new = {}
                        for pair in _items(inner["dict"]):
                            key, value = _items(pair)
                            new[sub(key)] = sub(value)
                    else:
                        new = {sub(v) for v in _items(inner["set"])}
                    target.clear()
                    target.update(new)
                else:
                    raise WireError("a container changed its type")
                done.add(index)
                return target
            if tag == "bytes" and type(body) is str:
                return bytes.fromhex(body)
            if tag == "bytearray" and type(body) is str:
                out = bytearray.fromhex(body)
                done.add(register(out))
                return out
            if tag == "float" and body in ("nan", "inf", "-inf"):
                return float(body)
            if tag == "complex":
                real, imag = (dec(v) for v in _items(body))
                if type(real) is float and type(imag) is float:
                    return complex(real, imag)
            if tag == "int" and type(body) is str and body.lstrip("-")[:2] == "0x":
                return int(body, 16)
            if tag == "range":
                return range(*_ints(body, 3))
            if tag == "dict_keys":
                return {sub(v): None for v in _items(body)}.keys()
            if tag == "dict_values":
                return dict(enumerate(sub(v) for v in _items(body))).values()
            if tag == "dict_items":
                return dict(sub(v) for v in _items(body)).items()
            if tag == "namedtuple":
                name, fields, values = _items(body)[:3]
                fields, values = sub(fields), [sub(v) for v in _items(values)]
                if type(fields) is not list or len(fields) != len(values):
                    raise WireError("bad namedtuple")
                if len(body) == 4:  # its own methods and properties: asked of the sender's object
                    remote = sub(body[3])
                    out = _namedtuple(name, fields, remote=True)._make(values)
                    object.__setattr__(out, "_remote", remote)
                    return out
                return _namedtuple(name, fields)._make(values)
            if tag in ("counter", "odict"):
                import collections
                pairs = [(sub(k), sub(v)) for k, v in map(_items, _items(body))]
                out = collections.Counter() if tag == "counter" else collections.OrderedDict()
                out.update(dict(pairs) if tag == "counter" else pairs)  # Counter.update(pairs) would count them
                return out
            if tag == "defaultdict":
                import collections
                factory, pairs = _items(body)
                if factory is not None and factory not in WIRE_BUILTINS:
                    raise WireError("bad defaultdict factory")
                out = collections.defaultdict(None if factory is None else getattr(_wire_builtins, factory))
                out.update((sub(k), sub(v)) for k, v in map(_items, _items(pairs)))
                return out
            if tag == "deque":
                import collections
                items, maxlen = _items(body)
                if maxlen is not None and type(maxlen) is not int:
                    raise WireError("bad deque")
                return collections.deque((sub(v) for v in _items(items)), maxlen)
            if tag == "fraction":
                import fractions
                numerator, denominator = (sub(v) for v in _items(body))
                if type(numerator) is int and type(denominator) is int and denominator:
                    return fractions.Fraction(numerator, denominator)
            if tag == "decimal" and type(body) is str and len(body) < 10000:
                import decimal
                return decimal.Decimal(body)
            if tag in ("ndarray", "npscalar"):
                import numpy
                dtype = numpy.dtype(_items(body)[0])
                if dtype.kind not in _ARRAY_KINDS or dtype.hasobject:
                    raise WireError(f"a numpy {dtype} is not plain data")
                if tag == "npscalar":
                    return dtype.type(sub(body[1]))
                _, shape, flat = body
                values = [sub(v) for v in _items(flat)]
                shape = _ints(shape, len(_items(shape)))
                if _math.prod(shape) != len(values):
                    raise WireError("bad ndarray")
                return numpy.array(values, dtype=dtype).reshape(shape)
            if tag == "builtin" and body in WIRE_BUILTINS:
                return getattr(_wire_builtins, body)
            if tag in ("handle", "iterator") and handle is not None and type(body) is int:
                return handle(body, tag)
            if tag == "yours" and own is not None and type(body) is int:
                return own(body)
        except WireError:
            raise
        except (TypeError, ValueError, ImportError, OverflowError, MemoryError) as err:  # shapes, keys, bad hex
            raise WireError(f"bad {tag}: {err}") from None
        raise WireError(f"not a wire value: {str(d)[:80]}")

    return dec(data)


def wire_describe(err):
    """[the nearest builtin exception class's name, the message]: the other side re-raises that class."""
    name = next((c.__name__ for c in type(err).__mro__ if getattr(_wire_builtins, c.__name__, None) is c), "Exception")
    try:
        message = str(err)[:500]
    except BaseException:
        message = "?"
    return [name, message]


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
    except (ValueError, RecursionError) as err:
        raise WireError(f"not JSON: {err}") from None


def _json_error(name):
    raise ValueError(f"{name} is not plain JSON")


class WirePeer:
    """One end of the channel. ``exchange`` sends a request and, until its reply comes, answers the other side's
    requests with ``serve`` (a call back into a test's lambda, the next items of an iterator it was given)."""

    def __init__(self, inp, out, stand_in, serve):
        self.inp, self.out, self.stand_in, self.serve = inp, out, stand_in, serve
        self.objects = []  # ours, held by the other side by number

    def resolve(self, number):
        if type(number) is not int or not 0 <= number < len(self.objects):
            raise LookupError(f"no object #{number}")
        return self.objects[number]

    def other(self, value):
        if type(value) is self.stand_in:
            return {"yours": object.__getattribute__(value, "_number")}
        name = _BUILTIN_NAMES.get(id(value))
        if name is not None:
            return {"builtin": name}
        return self.handle(value)

    def handle(self, value):
        """``value`` kept here, sent as a handle: the other side calls it, reads it or pulls its items from us."""
        self.objects.append(value)
        return {"iterator" if _is_iterator(value) else "handle": len(self.objects) - 1}

    def encode(self, value, known=None, numbered=None):
        return wire_encode(value, self.other, known=known, numbered=numbered)

    def decode(self, data, sent=None, made=None):
        return wire_decode(data, lambda number, tag: self.stand_in(self, number, tag), self.resolve, sent, made)

    def exchange(self, request):
        wire_send(self.out, request)
        while True:
            message = wire_receive(self.inp)
            if type(message) is not dict:
                raise WireError("a message is not an object")
            if "op" not in message:
                return message
            self.answer(message)

    def answer(self, request):
        try:
            reply = self.serve(request)
        except BaseException as err:  # the caller gets it as the nearest builtin exception
            reply = {"raised": wire_describe(err)}
        try:
            wire_send(self.out, reply)
        except Exception as err:  # not JSON-encodable
            wire_send(self.out, {"raised": ["ValueError", f"could not send the value: {err}"]})

    def pull(self, number, count):
        """[items], stopped: up to ``count`` next items of our iterator #number (an error after some items is kept
        for the next pull, so the items before it still arrive)."""
        target = self.resolve(number)
        pending = getattr(self, "_pending", {})
        self._pending = pending
        if number in pending:
            raise pending.pop(number)
        items = []
        for _ in range(max(1, min(int(count), 4096))):
            try:
                items.append(next(target))
            except StopIteration:
                return items, True
            except BaseException as err:
                if not items:
                    raise
                pending[number] = err
                break
        return items, False


class WireItems:
    """The items of the other side's iterator #number, pulled in batches (1, 2, 4, ... 4,096 items a request): the
    one loop both sides' stand-ins iterate with. ``value_of(reply)``: the items in a "next" reply, read with that
    side's handling of a reply that raised."""

    def __init__(self, peer, number, value_of):
        self.peer, self.number, self.value_of, self.buffer, self.chunk = peer, number, value_of, [], 1

    def next(self):
        if not self.buffer:
            if self.chunk is None:
                raise StopIteration
            reply = self.peer.exchange({"op": "next", "target": self.number, "count": self.chunk})
            items = self.value_of(reply)
            if type(items) is not list:
                raise WireError("next items are not a list")
            self.buffer.extend(reversed(items))
            self.chunk = None if reply.get("stop") is True else min(self.chunk * 2, 4096)
            if not self.buffer:
                raise StopIteration
        return self.buffer.pop()


def wire_next_batch(peer, number, count):
    """The reply to a "next" request: plain items and whether the iterator ended."""
    items, stopped = peer.pull(number, count)
    return {"value": peer.encode(items), "stop": stopped}
