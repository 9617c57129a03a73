"""The leaderboard-compatible protocol: the released CriticEval toolkit's prompts, parsing and comparison rule.

The published CriticEval leaderboard was computed with the toolkit's own prompts, its parser and its comparison rule.
With ``CRITICBENCH_PROTOCOL=toolkit`` (or ``--metadata '{"protocol": "toolkit"}'``) and ``CRITICBENCH_TOOLKIT_DIR``
(or ``toolkit_dir``) pointing at the user's checkout of open-compass/CriticEval, prompts are composed from *that
checkout's* ``inference/utils/prompts.py`` and ``formats.py`` exactly as its data loader does: the item's ``obj`` /
``sub`` fields lifted to the top level (a comparison's ``exec_rest_a``/``_b`` dicts reduced to their ``detail``),
both orders for comparison (the reverse swaps the responses, and for code_exec their execution results), then
prefix + the domain's format filled with the fields + post. Nothing of the toolkit's text is copied here.

Parsing follows the toolkit's rules (a score: the first ``Decision: x`` / ``Score: x`` line, else the last token that
evaluates to a non-zero number; a verdict: the first character after ``Decision:``, else of the reply), and the
comparison ``score`` is its rule (``accuracy_loose``). Remaining differences, on purpose: tokens are evaluated as
arithmetic only (no ``eval``); an unparsed reply takes the scale midpoint in the correlation (the toolkit kept ``''``
in the list, which made numpy rank the whole list as strings); correction revisions are checked by our answer
extraction and sandbox (the toolkit's ``exec`` ran them unsandboxed and accepted any clean run).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import math
import operator
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.settings import read_setting
from critic_tasks.protocols.criticbench.prompts import DOMAINS

TOOLKIT_DIR_ENV = "CRITICBENCH_TOOLKIT_DIR"
MODES = {"feedback": "feedback", "comparison": "comp_feedback", "meta": "meta_feedback", "correction": "correction"}


@dataclass(frozen=True)
class Toolkit:
    root: Path
    prompts: dict
    mappings: dict
    no_feedback: tuple[dict, dict] | None  # (prompts, formats) of the toolkit's "empty feedback" correction

    def compose(self, dimension: str, fmt: str, domain: str, item: dict, reverse: bool = False,
                with_feedback: bool = True) -> str:
        """The prompt the toolkit's loader builds for ``item`` (a raw dataset item)."""
        mode = MODES[dimension]
        fields = dict(item)
        for key, value in (item.get(fmt) or {}).items() if isinstance(item.get(fmt), dict) else ():
            fields[key] = value["detail"] if key in ("exec_rest_a", "exec_rest_b") and isinstance(value, dict) else value
        if mode == "comp_feedback" and reverse:
            fields["generation_a"], fields["generation_b"] = fields["generation_b"], fields["generation_a"]
            if DOMAINS[domain].has_exec_result:
                fields["exec_rest_a"], fields["exec_rest_b"] = fields["exec_rest_b"], fields["exec_rest_a"]
        if mode == "correction" and not with_feedback:
            if self.no_feedback is None:
                raise ConfigError(f"{self.root}: this toolkit checkout has no empty-feedback correction prompts")
            table, formats = self.no_feedback
        else:
            table = self.prompts[mode][fmt] if mode in ("feedback", "comp_feedback") else self.prompts[mode]
            formats = self.mappings[mode]
        try:
            content = formats[domain].format(**fields)
        except KeyError as err:
            raise ConfigError(f"{self.root}: the toolkit's {mode} format for {domain} needs field {err}") from None
        return table[domain]["prefix_prompt"] + content + table[domain]["post_prompt"]


def _module(path: Path, setting: str):
    if not path.is_file():
        raise ConfigError(f"{setting}: {path} not found (expected a checkout of open-compass/CriticEval)")
    spec = importlib.util.spec_from_file_location(f"criticeval_toolkit_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise ConfigError(f"{setting}: {path} could not be read ({type(err).__name__}: {err})") from None
    return module


def load_toolkit(toolkit_dir: str | None = None) -> Toolkit:
    """The prompts and formats of a CriticEval checkout (``toolkit_dir``, else ``CRITICBENCH_TOOLKIT_DIR``)."""
    given = toolkit_dir not in (None, "")
    value = toolkit_dir if given else read_setting(TOOLKIT_DIR_ENV)
    if not value:
        raise ConfigError(f"the toolkit protocol needs a checkout of open-compass/CriticEval: set {TOOLKIT_DIR_ENV} "
                          "(or --metadata '{\"toolkit_dir\": ...}')")
    setting = f"toolkit_dir={value}" if given else f"{TOOLKIT_DIR_ENV}={value}"
    where = _Checkout.of(value, setting)
    return replace(_load_toolkit(where), root=where.root)  # the caller's own spelling, in its messages


@dataclass(frozen=True)
class _Checkout:
    """A checkout as a setting names it. The caches below are keyed on its resolved path only, so one folder is read
    once however it is reached (``toolkit_dir`` or the environment variable, as given or resolved: the revision
    documents carry the resolved path). A failed read is not cached: its message names the setting at hand."""
    resolved: Path
    root: Path = field(compare=False)
    setting: str = field(compare=False)

    @classmethod
    def of(cls, value: Path | str, setting: str) -> "_Checkout":
        root = Path(value).expanduser()
        return cls(root.resolve(), root, setting)


@functools.lru_cache(maxsize=4)
def _load_toolkit(where: _Checkout) -> Toolkit:
    root, setting = where.root, where.setting
    if not root.is_dir():
        raise ConfigError(f"{setting}: not a directory")
    utils = root / "inference" / "utils"
    prompts, formats = _module(utils / "prompts.py", setting), _module(utils / "formats.py", setting)
    if not isinstance(getattr(prompts, "prompts", None), dict) or not isinstance(getattr(formats, "mappings", None), dict):
        raise ConfigError(f"{setting}: {utils} has no 'prompts' / 'mappings' tables")
    no_feedback = None
    if hasattr(prompts, "_correction_no_feedback_prompts") and hasattr(formats, "correction_no_feedback_format_mapping"):
        no_feedback = (prompts._correction_no_feedback_prompts, formats.correction_no_feedback_format_mapping)
    return Toolkit(root, prompts.prompts, formats.mappings, no_feedback)


# CriticEval's subjective correction judge (``critic_bench/evaluators/correction_evaluator.py``, EvaluateNLCorrection):
# one template per text domain, ``<domain>_correction_prompt``, filled with .format(a=article, q=question,
# r=response, f=feedback, c_a=reference correction, c_b=correction to grade). MultiCritique's R_sub uses it.
CORRECTION_JUDGE_FILE = Path("critic_bench") / "evaluators" / "prompts" / "correction_prompts.py"
CORRECTION_JUDGE_DOMAINS = ("translate", "chat", "qa", "harmlessness", "summary")


def correction_judges(root: Path | str, setting: str) -> dict[str, str]:
    """The released correction judge's template of each text domain, read from the checkout at ``root``."""
    return dict(_correction_judges(_Checkout.of(root, setting)))


@functools.lru_cache(maxsize=4)
def _correction_judges(where: _Checkout) -> dict[str, str]:
    path, setting = where.root / CORRECTION_JUDGE_FILE, where.setting
    if not path.is_file():
        raise ConfigError(f"{setting}: {path} not found (expected a checkout of open-compass/CriticEval)")
    # read, not run: the file is a list of string assignments, so its text is taken without executing the checkout
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError) as err:
        raise ConfigError(f"{setting}: {path} could not be read ({type(err).__name__}: {err})") from None
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.endswith("_correction_prompt") and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                found[name.removesuffix("_correction_prompt")] = node.value.value
    missing = [d for d in CORRECTION_JUDGE_DOMAINS if d not in found]
    if missing:
        raise ConfigError(f"{setting}: {path} has no {', '.join(d + '_correction_prompt' for d in missing)}")
    return found


def fill(template: str, fields: dict, where: str) -> str:
    """``template`` with its ``{name}`` fields filled from ``fields`` in one pass (``str.format``, as the toolkit
    fills it): a value is inserted as text and never read for fields again, so a critique or revision that
    contains ``{c_b}`` or ``{q}`` reaches the judge as written."""
    try:
        return template.format_map(fields)
    except (KeyError, IndexError, ValueError) as err:
        raise ConfigError(f"{where}: the released template needs field {err}") from None


def attach_prompts(docs: list[dict], toolkit: Toolkit, with_feedback: bool = True) -> list[dict]:
    """Stamp each document (loaded with ``keep_raw``) with the toolkit's prompt for it."""
    for doc in docs:
        raw = json.loads(doc["raw_item"])
        reverse = doc.get("order") == "reverse"
        doc["prompt"] = toolkit.compose(doc["dimension"], doc.get("fmt", "obj"), doc["domain"], raw, reverse,
                                        with_feedback)
        doc["protocol"] = "toolkit"
    return docs


# ----------------------------------------------------------------------------- the toolkit's parsing rules

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


_MAX_INT_BITS = 14_300  # about 4,300 decimal digits, Python's own limit on reading one: far past any float score


def _int_bits(left, right, op) -> int:
    """A bound on the size of ``left op right`` in bits when both are ints (0 otherwise), before computing it: the
    product of a power, the sum of a product, one more than the larger otherwise."""
    if type(left) is not int or type(right) is not int:
        return 0
    if isinstance(op, ast.Pow):
        return left.bit_length() * max(right, 0) if abs(left) > 1 else 1
    if isinstance(op, ast.Mult):
        return left.bit_length() + right.bit_length()
    return max(left.bit_length(), right.bit_length()) + 1


def _arithmetic(token: str):
    """What ``eval(token)`` gives for a plain number or arithmetic on numbers, without eval; None otherwise."""
    try:
        node = ast.parse(token, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # MemoryError: the parser's stack, too deep
        return None

    def value(n):
        if isinstance(n, ast.Constant) and type(n.value) in (int, float):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = value(n.operand)
            return -v if isinstance(n.op, ast.USub) else +v
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            left, right = value(n.left), value(n.right)
            if isinstance(n.op, ast.Pow) and abs(right) > 64:
                raise ValueError("exponent too large")  # eval would hang; such a token is no score anyway
            if _int_bits(left, right, n.op) > _MAX_INT_BITS:
                raise ValueError("integer too large")  # a power of a power ((10**64)**64)**64...: eval takes hours
            return _OPS[type(n.op)](left, right)
        raise ValueError("not arithmetic")

    try:
        return value(node)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError, RecursionError):
        return None


# What a whitespace token must look like (before a ``#``, where Python's comment starts) for ``eval`` to give a plain
# number: signs and opening brackets, a Python int or float literal, closing brackets, and more of the same after
# an operator. Necessary, not sufficient (brackets are not counted here): a token this does not match is a syntax
# error, a name, a string, a call or a complex number to Python, none a score, and is skipped without a parse.
_DIGITS = r"[0-9](?:_?[0-9])*"
_LITERAL = (r"0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"  # first: "0x1" is not "0" and more
            rf"|(?:(?:{_DIGITS})?\.{_DIGITS}|{_DIGITS}\.?)(?:[eE][-+]?{_DIGITS})?")
_OPERAND = rf"[-+(]*(?:{_LITERAL})\)*"
# (?=(...))\1 is an atomic group (the grammar has one way to read a token, so nothing is lost; without it a long token
# that fails at its end was retried from every operator, slowly); ASCII: Python's literals are ASCII digits
_ARITHMETIC_TOKEN = re.compile(rf"(?=({_OPERAND}(?:(?:\*\*|//|[-+*/%]){_OPERAND})*))\1", re.ASCII)
_SIGNED_LITERAL = re.compile(rf"([-+]*)({_LITERAL})", re.ASCII)


def _token_value(token: str):
    """``_arithmetic(token)``, without a parse where none is needed: a token that cannot be arithmetic is None at
    once, a signed literal is read by ``int(x, 0)`` / ``float`` (Python's own literal rules), the rest parsed."""
    head, hash_mark, comment = token.partition("#")
    if not _ARITHMETIC_TOKEN.fullmatch(head):
        return None
    if hash_mark and ("\x00" in comment or not comment.isascii()):
        return _arithmetic(token)  # a comment Python may refuse (NUL, a lone surrogate): it decides
    plain = _SIGNED_LITERAL.fullmatch(head)
    if plain is None:
        return _arithmetic(head)
    signs, literal = plain.groups()
    try:
        value = int(literal, 0)  # Python's int literal: prefixes, underscores, no leading zeros
    except ValueError:
        if literal[:2].lower() in ("0x", "0o", "0b"):
            return _arithmetic(head)
        if not any(c in literal for c in ".eE"):
            return None  # "012" (leading zeros) or beyond int()'s digit limit: the parser refuses both as well
        value = float(literal)
    return -value if signs.count("-") % 2 else value


def _last_number(text: str):
    """The toolkit's fallback: the last whitespace token that evaluates to a non-zero int or float. Linear in the
    reply: a token is parsed only if it looks like arithmetic, and each distinct one once."""
    seen: dict[str, object] = {}
    for token in reversed(text.replace("\n", " ").replace("=", "= ").split()):
        if token not in seen:
            seen[token] = _token_value(token)
        value = seen[token]
        if value and type(value) in (int, float):
            return value
    return None


def marked_line(text: str, marker: str) -> str | None:
    """What the toolkit's ``re.findall(f".*({marker}: .+)", text)[0]`` is (None where it finds nothing): on the first
    line (``.`` stops only at ``\\n``) holding ``<marker>: `` with something after it, the line from the last such
    ``<marker>: `` on (``.*`` is greedy). Line by line with ``rfind``: the regex retried ``.*`` from every position of
    a line without the marker, quadratic in a long line."""
    opening = f"{marker}: "
    for line in text.split("\n"):
        at = line.rfind(opening, 0, len(line) - 1)  # "something after": the opening ends before the line's end
        if at >= 0:
            return line[at:]
    return None


def parse_score(text: str | None, marker: str = "Decision") -> float | None:
    """The toolkit's score: the first ``<marker>: x`` line (x as a number, or its first word), else the fallback."""
    text = text or ""
    found = marked_line(text, marker)
    if found is not None:
        rest = found.replace(f"{marker}:", "").strip()
        for candidate in (rest, rest.split()[0] if rest.split() else ""):
            try:
                value = float(candidate)
            except ValueError:
                continue
            # the toolkit's float() takes "nan" / "inf", and one NaN makes the whole Spearman undefined; a critic
            # could then trade a losing correlation for the 0 an undefined one was reported as: unparsed here
            return value if math.isfinite(value) else None
    value = _last_number(text)
    try:
        return None if value is None or not math.isfinite(value) else float(value)
    except OverflowError:  # an int beyond any float ("0x" and a megabyte of "f"): no score, as inf and nan are not
        return None


def parse_verdict(text: str | None) -> str | None:
    """The toolkit's verdict: the first character after the first ``Decision:``, else of the reply without dots."""
    text = text or ""
    found = marked_line(text, "Decision")
    option = found.replace("Decision:", "").strip() if found is not None else text.replace(".", "").strip()
    return option[:1] if option[:1] in ("A", "B", "C") else None
