"""The revision protocols' record (MultiCritique, RCO): what a critique did to the revisions of one initial response.

Registered in ``core.records.RECORD_TYPES`` under their ``kind`` (``register_record``), so that ``Record.from_dict`` reads
them back from logged samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from critic_tasks.core.records import Record, register_record


@register_record
@dataclass(frozen=True)
class RevisionRecord(Record):
    """What a critique did to the revisions of one initial response (MultiCritique, RCO): per reviser, whether its
    revision passed the item's check (None: no check, no revision, or the item is ``invalid``); the judge's 1-10
    quality score of the first reviser's revision (``rqs``); and its preference for that revision over the initial
    response, one value per judged order (1 win, 0.5 tie, 0 loss; None unreadable). ``judge_asked`` /
    ``judge_parsed`` count the judgments; ``reviser_failed`` the revisions whose call failed. ``rqs`` holds
    MultiCritique's R_sub too (a 1-10 grade, against the reference revision on the paper variant)."""

    kind: ClassVar[str] = "revision"
    item: str = ""
    group: str = ""
    checked: bool = False  # the item has a gold answer or a test
    revisers: tuple[str, ...] = field(default_factory=tuple)
    revisions: tuple[str | None, ...] = field(default_factory=tuple)
    passed: tuple[bool | None, ...] = field(default_factory=tuple)
    invalid: bool = False
    rqs: float | None = None
    prefs: tuple[float | None, ...] = field(default_factory=tuple)
    judge_asked: int = 0
    judge_parsed: int = 0
    reviser_failed: int = 0
    error: str | None = None
    is_deferred: bool = False
    # judgments counted the minimum (1, or the revision's loss): the judge gave no verdict of its own and repeated
    # one the critique or its revision states (issue 27); they are in judge_parsed
    judge_echoed: int = 0
    models: str = ""  # JSON: the revisers, the judge and the prompt versions (pipeline.models)
    variant: str = ""  # the prompt variant (protocols.variants)
    failure_rule: str = ""  # what a missing verdict or revision counts as (revision.data.FAILURE_RULES; "": exclude)
    # JSON: role -> where its prompt text came from ("released: <file>", "paraphrase", "ours"; prompts.sources)
    prompt_source: str = ""

    @property
    def scored(self) -> bool:
        return not self.is_deferred

    @property
    def deferred(self) -> bool:
        return self.is_deferred

    @property
    def failed(self) -> bool:
        """A reviser or judge call failed, or a judgment was unreadable: counted, and retried on the next run."""
        return self.reviser_failed > 0 or self.judge_parsed < self.judge_asked
