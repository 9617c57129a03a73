"""The record of one ProcessBench item: the step index the critic named against the labelled earliest wrong step.

Registered in ``core.records.RECORD_TYPES`` under its ``kind`` when this module is imported, so that
``Record.from_dict`` reads it back from logged samples like the core kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

from critic_tasks.core import records as core_records
from critic_tasks.core.records import Record

NO_ERROR = -1  # the label (and the answer) of a solution whose every step is right


@dataclass(frozen=True)
class ProcessStepRecord(Record):
    """``pred``: the index the reply gave (None: no ``\\boxed{}`` or not an integer: unparsed, counted as a miss);
    ``label``: the earliest wrong step, -1 when the solution is right (None: unlabelled, not scored). With k sampled
    replies (the paper's majority voting) ``pred`` is the vote and ``samples`` is k."""

    kind = "process_step"
    item: str = ""
    pred: int | None = None
    parsed: bool = False
    label: int | None = None
    n_steps: int = 0
    unparsed_reason: str = ""  # "no_boxed" | "not_integer" | "" (parsed)
    samples: int = 1
    parsed_samples: int = 1
    identical: bool = False  # k > 1 samples, all one text: the backend did not sample (core.records.all_identical)

    @property
    def scored(self) -> bool:
        return self.label is not None

    @property
    def n_samples(self) -> int:
        return self.samples

    @property
    def erroneous(self) -> bool:
        """The solution has a wrong step (the accuracy on erroneous samples counts it)."""
        return self.label is not None and self.label != NO_ERROR

    @property
    def match(self) -> bool:
        """The authors' ``match``: the prediction equals the label (an unparsed reply never does)."""
        return self.pred is not None and self.pred == self.label

    @property
    def in_range(self) -> bool:
        """The answer names -1 or a step the solution has."""
        return self.pred is not None and NO_ERROR <= self.pred < self.n_steps


core_records.register_record(ProcessStepRecord)
