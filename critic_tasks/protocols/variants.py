"""Prompt variants: which version of a protocol's prompts (and the reading of replies that goes with them) a run uses.

* ``paper`` (the default): the setting of the paper the protocol names (CritiqueLLM: explanation first, the rating
  last, with the paper's 1-10 rubric; MultiCritique: CriticEval's feedback and correction prompts, R_sub judged
  against the human reference revision; RCO: per-task judges, explanation first, math with the reference answer).
* ``short``: the verdict marker on the first line, for short generation budgets (what these protocols asked before
  the paper variant existed).

Chosen per run: the task option / ``--metadata '{"variant": "short"}'``, else ``CRITIC_PROMPT_VARIANT``, else
``paper``. The loader writes the variant into every document, so prompts, parsing and re-scoring of saved samples
all follow the variant the run was made with, and the results record it (the ``variant`` key).
"""

from __future__ import annotations

from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.settings import read_setting

VARIANT_ENV = "CRITIC_PROMPT_VARIANT"
PAPER, SHORT = "paper", "short"
VARIANTS = (PAPER, SHORT)
DEFAULT = PAPER


def resolve(value: str | None = None) -> str:
    """The variant of a run: ``value`` (a task option or --metadata), else the environment, else the default."""
    given = value not in (None, "")
    chosen = str(value) if given else read_setting(VARIANT_ENV)
    if chosen not in VARIANTS:
        setting = "variant" if given else VARIANT_ENV  # name the setting the user actually gave
        raise ConfigError(f"{setting}={chosen!r}: expected one of {', '.join(VARIANTS)}")
    return chosen


def of(doc: dict) -> str:
    """The variant a document was made with (its loader records it)."""
    variant = doc.get("variant")
    if variant not in VARIANTS:
        raise DataError(f"{item_label(doc) or 'a document'}: no prompt variant recorded (expected one of "
                        f"{', '.join(VARIANTS)}): saved by an older critic-tasks; generate it again")
    return variant


def recorded(variants) -> str:
    """The results entry for the variants of a set of records: one name, or the names joined when a run mixed them
    (records re-scored together from runs of different variants)."""
    return "+".join(sorted({v for v in variants if v}))
