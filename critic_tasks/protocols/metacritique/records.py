"""MetaCritique's record: a judge's verdicts on one critique's atomic information units.

Registered in ``core.records.RECORD_TYPES`` under their ``kind`` (``register_record``), so that ``Record.from_dict`` reads
them back from logged samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from critic_tasks.core.records import Record, register_record


@register_record
@dataclass(frozen=True)
class AIURecord(Record):
    """A judge's MetaCritique verdicts on one critique: one per extracted AIU (precision: factual?) and one per
    reference AIU (recall: entailed?), each True/False or None when the judge's reply gave none for that unit.

    ``n_aius`` is None when the AIUs could not be extracted (call failed, or the reply listed none and did not say
    "None"); such a critique is a counted failure (``error`` says why), not scored."""

    kind: ClassVar[str] = "aiu"
    item: str = ""
    aius: tuple[str, ...] = field(default_factory=tuple)
    n_aius: int | None = None
    precision: tuple[bool | None, ...] = field(default_factory=tuple)
    recall: tuple[bool | None, ...] = field(default_factory=tuple)
    error: str | None = None
    cached: bool = False
    is_deferred: bool = False
    extraction_text: str | None = None  # the judge's reply to the extraction step, for inspection
    echoed: int = 0  # verdicts counted False: the judge's line for the unit only repeated the critique's (issue 27)
    # what the judge's server said answered its calls for this critique (``model``, ``system_fingerprint``: one
    # value, or the sorted distinct values where its calls differ; None: it said nothing); no metric reads it
    judge_served: dict | None = field(default=None, compare=False)

    @property
    def scored(self) -> bool:
        if self.is_deferred or self.n_aius is None:
            return False
        precision_ok = self.n_aius == 0 or any(v is not None for v in self.precision)
        return precision_ok and any(v is not None for v in self.recall)

    @property
    def deferred(self) -> bool:
        return self.is_deferred
