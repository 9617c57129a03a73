"""The ``datasets.Dataset`` our loader hands lm-eval: the same rows, read back from Arrow once instead of on every pass.

lm-eval walks a task's documents several times (building the requests, then scoring each reply; the test document
at task build), and ``datasets.Dataset.__iter__`` turns each row back into a dict on each walk: a one-row table
slice and a per-column decode, ~0.1 ms a row for our documents of 20-30 fields, about a second of a CriticBench dev
run's own time. ``DocsDataset`` decodes every row in one batch the first time it is walked (the same formatter, so
the same values) and hands out a fresh copy of each row on every walk after. Anything other than a plain walk of
the whole table (a format set, an index mapping from ``select`` / ``shuffle``, nested or non-scalar features) goes
through ``datasets``' own iteration, unchanged.
"""

from __future__ import annotations

import datasets


class DocsDataset(datasets.Dataset):
    """A ``datasets.Dataset`` whose plain iteration reuses one batch decode of its rows."""

    def __iter__(self):
        rows = self._decoded_rows()
        if rows is None:
            yield from super().__iter__()
            return
        for row in rows:
            yield dict(row)  # a fresh dict per walk, as datasets gives: a caller may add keys to its document

    def _decoded_rows(self) -> list[dict] | None:
        if (self._indices is not None or self._format_type is not None or self._format_columns is not None
                or not all(isinstance(f, datasets.Value) for f in self._info.features.values())):
            return None
        cached = self.__dict__.get("_critic_rows")
        if cached is None or cached[0] is not self._data:  # decoded from this very table, or decoded again
            columns = self[:]  # one formatted batch: {column: values}, the per-row decode's values
            cached = (self._data, [dict(zip(columns, values)) for values in zip(*columns.values())])
            self.__dict__["_critic_rows"] = cached
        return cached[1]
