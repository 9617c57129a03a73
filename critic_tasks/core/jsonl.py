"""JSON-lines input read one way everywhere: blank lines skipped, each bad line one DataError naming ``file:line``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from critic_tasks.core.errors import DataError


def iter_jsonl(path: Path | str, hint: str = "") -> Iterator[tuple[int, str, dict]]:
    """``(n, where, row)`` for each non-blank line ``n`` (from 1) of ``path``, ``where`` being ``"file:n"``. A line that is not
    JSON, or not a JSON object, and a file that is not UTF-8 text or cannot be read, raise DataError (``hint``, e.g.
    what the file should be, is appended to the message about a malformed line)."""
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path}:{n}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataError(f"{where}: malformed JSON line ({err.msg}){hint}") from None
                if not isinstance(row, dict):
                    raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
                yield n, where, row
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason})") from None
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror})") from None
