"""Model reply -> the Python program in it (a revision, a solution), or None."""

from __future__ import annotations

import ast
import re
import textwrap

_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(```|\Z)", re.S)
_PY_LANGS = {"python", "py", "python3", "py3"}


def _is_program(code: str) -> bool:
    """Parses as Python and does something besides bare expressions (so prose like ``1.71`` is not code)."""
    try:
        tree = ast.parse(code)
    except Exception:  # SyntaxError, ValueError (NUL bytes), RecursionError (absurd nesting)
        return False
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def extract_code(text: str | None) -> str | None:
    """The first ```python (or ```py) block; an unlabelled block only if it is Python; else the whole text if it is."""
    if not text:
        return None
    text = text.replace("\r\n", "\n")
    for m in _FENCE.finditer(text):
        lang, body, closed = m.group(1).lower(), textwrap.dedent(m.group(2)).strip("\n"), bool(m.group(3))
        if lang in _PY_LANGS and body.strip() and (closed or _is_program(body)):  # cut-off block: only if it parses
            return body
        if lang == "" and _is_program(body):
            return body
    if "```" not in text and _is_program(textwrap.dedent(text)):
        return textwrap.dedent(text).strip("\n")
    return None
