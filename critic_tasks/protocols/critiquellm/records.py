"""CritiqueLLM's records: a rating of one AlignBench response, one order of a pairwise preference.

Registered in ``core.records.RECORD_TYPES`` under their ``kind`` (``register_record``), so that ``Record.from_dict`` reads
them back from logged samples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from critic_tasks.core.records import Record, register_record


@register_record
@dataclass(frozen=True)
class RatingRecord(Record):
    """A critic's rating of one response against the human score (CritiqueLLM pointwise). With k sampled
    critiques (self-consistency), ``pred`` is the mean of the parsed ratings and ``samples`` is k."""

    kind: ClassVar[str] = "rating"
    pred: float = 0.0  # the parsed rating (or the mean of the parsed samples); the failure value when none parsed
    parsed: bool = False
    gold: float | None = None
    question: str = ""  # text-level correlations group the responses to one question
    model: str = ""  # system-level correlations group by the model that wrote the response
    category: str = ""
    samples: int = 1
    parsed_samples: int = 1
    identical: bool = False  # k > 1 samples, all the same text: the backend did not sample (``all_identical``)
    variant: str = ""  # the prompt variant the critic was asked with (protocols.variants)

    @property
    def scored(self) -> bool:
        return self.gold is not None

    @property
    def n_samples(self) -> int:
        return self.samples


@register_record
@dataclass(frozen=True)
class PreferenceRecord(Record):
    """One order of a pairwise preference (CritiqueLLM pairwise): the verdict A/B/C given for that order."""

    kind: ClassVar[str] = "preference"
    pair_id: str = ""
    order: str = "forward"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = None  # the human preference for the *forward* order
    category: str = ""
    variant: str = ""  # the prompt variant the critic was asked with
    # characters of the responses this order shows as A and B (the judge-bias line length_bias; None: not kept)
    lengths: tuple[int, int] | None = None

    @property
    def scored(self) -> bool:
        return self.gold is not None
