"""One type per document field: a loader's documents become an Arrow table (lm-eval's ``datasets.Dataset``), whose
columns hold one type each. A field whose values mix types across documents (a data file whose ``id`` is 7 on one
row and "a7" on the next) would stop the run with pyarrow's ``ArrowInvalid`` traceback; ``check_one_type_per_field``
stops it first with one line naming the file, the two items and the field."""

from __future__ import annotations

from typing import Any, Sequence

from critic_tasks.core.errors import DataError


def _kind(value: Any) -> str | None:
    """The Arrow-relevant kind of a value; None for a missing one (Arrow holds a null in any column). Integers and
    floats share a column (Arrow widens to float64); a bool does not share one with a number."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        kinds = {_kind(v) for v in value} - {None}
        return f"list of {'/'.join(sorted(kinds))}" if len(kinds) == 1 else ("list" if not kinds else "mixed list")
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def item_label(doc: dict) -> str:
    """How every message and per-item detail names a document: ``file[index]`` (its data file and its place
    there), else its id."""
    if doc.get("source_file"):
        return f"{doc['source_file']}[{doc.get('item_index', '?')}]"
    return str(doc.get("id", doc.get("pair_id", "")))


def _where(doc: dict, index: int) -> str:
    if doc.get("source_file") and "item_index" not in doc:
        return f"{doc['source_file']}[{index}]"
    return item_label(doc) if doc.get("source_file") else f"document {index}"


def check_one_type_per_field(docs: Sequence[dict]) -> None:
    """Raise a one-line DataError at the first field whose values mix types (or a list mixing element types)."""
    first: dict[str, tuple[str, int]] = {}  # field -> (kind, index of the document that set it)
    for i, doc in enumerate(docs):
        for key, value in doc.items():
            kind = _kind(value)
            if kind is None:
                continue
            if kind == "mixed list":
                raise DataError(f"{_where(doc, i)}: field '{key}' mixes types within its list; one type per field "
                                "(the documents become one Arrow table)")
            seen = first.setdefault(key, (kind, i))
            if seen[0] == kind:
                continue
            if seen[0].startswith("list") and kind.startswith("list") and "list" in (seen[0], kind):
                if seen[0] == "list":  # an empty list fits any list column: the first typed one sets it
                    first[key] = (kind, i)
                continue
            raise DataError(f"{_where(doc, i)}: field '{key}' is {kind} but {seen[0]} at "
                            f"{_where(docs[seen[1]], seen[1])}; one type per field (the documents become one Arrow "
                            f"table): make every item's '{key}' the same type")
