"""Per-document rows of a data-parallel run, tagged with their rank, and put back in document order.

Harness-free: under several ranks the lm-eval hooks wrap each ``process_results`` value with its rank
(``every_key``), and whoever reads the rows back (lm-eval's aggregations, ``reports.results`` reading a
``--log_samples`` file) unwraps them (``row_of``) and restores document order (``in_doc_order``). Why the ranks need
this: ``adapters/lm_eval/ranks.py``.
"""

from __future__ import annotations

SLOT = "critic_rank"  # the key that marks a value wrapped by every_key


def every_key(metrics: dict, keys, group: tuple[int, int]) -> dict:
    """``process_results``' values under a process group (``group``: this rank and the world size): every key of
    ``keys``, each value wrapped with this rank (``None`` in the slot of a key this document does not feed)."""
    rank, world = group
    return {key: {SLOT: rank, "world": world, "row": metrics.get(key)} for key in keys}


def row_of(value):
    """The row a ``process_results`` value holds: itself, or, wrapped by ``every_key``, the row in its slot."""
    return value.get("row") if isinstance(value, dict) and SLOT in value else value


def in_doc_order(rows: list) -> list:
    """The rows of a metric key as one process would hand them to the aggregation: in document order, the empty
    slots left out. Rank r's j-th value is document r + j * W. Rows not wrapped by ``every_key`` pass unchanged."""
    if not rows or not (isinstance(rows[0], dict) and SLOT in rows[0]):
        return rows
    seen: dict[int, int] = {}
    placed = []
    for slot in rows:
        rank, world = slot[SLOT], slot["world"]
        j = seen[rank] = seen.get(rank, -1) + 1
        placed.append((rank + j * world, slot["row"]))
    placed.sort(key=lambda pair: pair[0])
    return [row for _, row in placed if row is not None]
