"""The record of one order of one JudgeBench pair: the verdict the critic gave against the pair's label.

Verdicts use the house's comparison alphabet (``core.metrics.pairwise``): ``A`` (the answer shown as A is better:
Arena-Hard's ``A>>B`` / ``A>B``), ``B`` (``B>A`` / ``B>>A``), ``C`` (a tie, ``A=B``); None when the reply has no
verdict. ``gold`` is the label of the *forward* order (the pair as the file stores it). Registered in
``core.records.RECORD_TYPES`` under its ``kind`` when this module is imported, so that ``Record.from_dict`` reads
it back from logged samples like the core kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

from critic_tasks.core import records as core_records
from critic_tasks.core.records import Record

ORDERS = ("forward", "reverse")


@dataclass(frozen=True)
class JudgeBenchRecord(Record):
    """``domain`` and ``source``: knowledge | reasoning | math | coding; ``unparsed_reason``: ``no_verdict`` (no
    ``[[...]]`` label), ``ambiguous`` (two different labels), ``unknown_label`` (a bracketed label the prompt does
    not offer), or "" when parsed."""

    kind = "judgebench"
    pair_id: str = ""
    order: str = "forward"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None
    source: str = ""
    unparsed_reason: str = ""
    # characters of the answers this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None


core_records.register_record(JudgeBenchRecord)
