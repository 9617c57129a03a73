"""Whose prompt a run of a protocol that follows its authors asks with: theirs, or ours.

* ``authors`` (the default): the benchmark authors' own template (``protocols.authors``: read at run time from their
  repository at a pinned commit, or from a checkout the data setting names), rendered as their code renders it, so
  the number is the one their paper's table is made of.
* ``ours``: the house wording of the same fields, kept as an explicit variant. The bundled samples (data setting
  ``sample``) default to it, so the demo and the offline tests need no authors' file; ``prompt: authors`` there
  fetches the template like any other run.

Chosen per run: the task option / ``--metadata '{"prompt": "ours"}'``. The loader writes the choice into every
document (``KEY``), so the prompt and any re-scoring follow the choice the documents were made with, and each
record carries it into the results (the ``prompt`` key: ``recorded``), where reports mark numbers not made with the
authors' prompt.
"""

from __future__ import annotations

from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import ConfigError, DataError

KEY = "prompt"  # the task option, the document field and the results key
AUTHORS, OURS = "authors", "ours"
CHOICES = (AUTHORS, OURS)


def resolve(value: str | None, sample: bool) -> str:
    """The choice of a run: ``value`` (a task option or --metadata) if given, else ``ours`` on the bundled sample
    and ``authors`` everywhere else."""
    if value in (None, ""):
        return OURS if sample else AUTHORS
    if value not in CHOICES:
        raise ConfigError(f"{KEY}={value!r}: expected one of {', '.join(CHOICES)}")
    return str(value)


def of(doc: dict) -> str:
    """The choice a document was made with (its loader records it)."""
    choice = doc.get(KEY)
    if choice not in CHOICES:
        raise DataError(f"{item_label(doc) or 'a document'}: field {KEY!r} should be one of {', '.join(CHOICES)} "
                        f"(whose prompt the document is asked with), got {choice!r}: saved by an older critic-tasks? "
                        "load it again")
    return choice


def recorded(choices) -> str:
    """The results entry for the choices of a set of records: one name, or the names joined (``authors+ours``) when
    records of runs made both ways are scored together."""
    return "+".join(sorted({c for c in choices if c}))
