"""The documents our loader hands lm-eval: a list (``Task.eval_docs`` is typed ``datasets.Dataset | list[dict]``),
decoded from Arrow once instead of on every pass.

lm-eval walks a task's documents several times (building the requests, then scoring each reply; the test document
at task build), and ``datasets.Dataset.__iter__`` turns each row back into a dict on each walk: a one-row table slice
and a per-column decode, ~0.1 ms a row for our documents of 20-30 fields, about a second of a CriticBench dev run's
own time. The documents still pass through one Arrow table (``Dataset.from_list``: one type per column, a missing
field null in every row, as a ``datasets`` loader gives them), read back in one batch (``to_list``); ``Docs`` then
hands out a fresh copy of each row on every walk, as ``datasets`` does, and the table's ``features``, which lm-eval
reads for the column names. A table Arrow refuses (a field whose values mix types across documents) stops the run
with one line naming the file, the items and the field (``core.columns.check_one_type_per_field``), else with
Arrow's own error: well-formed documents are never walked for it.
"""

from __future__ import annotations

import datasets
import pyarrow

from critic_tasks.core.columns import check_one_type_per_field


class Docs(list):
    """Rows of one Arrow table, each walk (and each ``docs[i]``) a fresh dict: a caller may add keys to its
    document without another walk seeing them."""

    def __init__(self, rows: list[dict], features: datasets.Features):
        super().__init__(rows)
        self.features = features

    @classmethod
    def from_list(cls, docs: list[dict]) -> Docs:
        try:
            table = datasets.Dataset.from_list(docs)
        except pyarrow.ArrowException:  # one line naming file and field, not pyarrow's traceback
            check_one_type_per_field(docs)
            raise
        return cls(table.to_list(), table.features)

    def __iter__(self):
        for row in super().__iter__():
            yield dict(row)

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return [dict(row) for row in item] if isinstance(index, slice) else dict(item)
