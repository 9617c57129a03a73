"""The record of one RealCritic item: the corrected answer the critic gave, graded against the gold.

``domain`` is the task (``arc-challenge``, ``gsm8k``, ...). ``prior_correct`` is the released file's
``previous_score``: whether the solution shown to the critic was right. Registered in ``core.records.RECORD_TYPES``
under its ``kind`` when this module is imported, so that ``Record.from_dict`` reads it back from logged samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from critic_tasks.core import records as core_records
from critic_tasks.core.records import Record


@dataclass(frozen=True)
class RealCriticRecord(Record):
    """``answer``: the corrected final answer read from the reply (None: none read); ``correct``: it equals the
    gold (an unread answer is wrong, never dropped); ``unparsed_reason``: ``no_boxed`` (no ``\\boxed{}``),
    ``empty`` (an empty box), ``no_option`` (a multiple-choice box naming no option letter), ``ambiguous`` (a box
    naming two different letters), or "" when read; ``gold_readable``: math-verify could read the gold (False: it
    was matched by its text only)."""

    kind = "realcritic"
    item_id: str = ""
    answer: str | None = None
    parsed: bool = False
    correct: bool = False
    prior_correct: bool = False
    unparsed_reason: str = ""
    gold_readable: bool = True


core_records.register_record(RealCriticRecord)
