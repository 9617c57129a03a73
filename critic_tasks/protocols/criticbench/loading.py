"""A task's documents: the dataset's items for one dimension, with the protocol's prompts when not ours.

The default (our prompts, the annotated feedback) reads the data files only; the released toolkit's prompts
(``toolkit.py``) and SAvg's stage-1 documents and self-feedback (``self_feedback.py``) are reached on their own
paths, decided here where their settings are read."""

from __future__ import annotations

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.settings import read_setting
from critic_tasks.protocols.criticbench import data
from critic_tasks.protocols.criticbench import self_feedback as savg
from critic_tasks.protocols.criticbench.toolkit import attach_prompts, load_toolkit

PROTOCOL_ENV = "CRITICBENCH_PROTOCOL"
PROTOCOLS = ("ours", "toolkit")  # our prompts and parsing, or the released toolkit's (protocols.criticbench.toolkit)
FEEDBACK_SOURCES = ("annotated", "self")  # correction revises with the dataset's feedback, or the critic's own (SAvg)
# dimensions of their own loaders, besides the dataset's (data.LOADERS): SAvg's stage 1
STAGE_LOADERS = {savg.DIMENSION: savg.stage1_docs}


def resolve_protocol(protocol: str | None = None) -> str:
    """``protocol`` as given, else ``CRITICBENCH_PROTOCOL`` (default ``ours``); a ConfigError naming either."""
    given = protocol not in (None, "")
    value = (protocol if given else read_setting(PROTOCOL_ENV)).strip()
    if value not in PROTOCOLS:
        setting = "protocol" if given else PROTOCOL_ENV
        raise ConfigError(f"{setting}={value}: unknown protocol; choose one of {', '.join(PROTOCOLS)}")
    return value


def load_task_docs(dimension: str, split: str = "dev", domains=None, data_dir=None, fmt: str = "obj",
                   with_feedback: bool | None = None, protocol: str | None = None,
                   toolkit_dir: str | None = None, feedback_source: str = "annotated",
                   self_feedback: str | None = None) -> list[dict]:
    """Documents for lm-eval / OpenCompass / offline scoring. ``protocol``: ``ours`` (default; our prompts and
    parsing) or ``toolkit`` (the released toolkit's, read from ``toolkit_dir``); both fall back to their
    environment variables (``CRITICBENCH_PROTOCOL``, ``CRITICBENCH_TOOLKIT_DIR``). ``feedback_source="self"``
    (SAvg): correction items carry the critic's own feedback, read from the stage-1 samples ``self_feedback``
    names (else ``CRITIC_SELF_FEEDBACK``); ``dimension="self_feedback"`` gives stage 1's documents."""
    root = data.resolve_data_dir(data_dir)  # where the files are (the data setting), then how they are asked
    protocol = resolve_protocol(protocol)
    if feedback_source not in FEEDBACK_SOURCES:
        raise ConfigError(f"feedback_source={feedback_source}: expected one of {', '.join(FEEDBACK_SOURCES)}")
    if protocol == "toolkit" and (dimension in STAGE_LOADERS or feedback_source == "self"):
        raise ConfigError("the self-feedback tasks (SAvg) use our prompts only: unset CRITICBENCH_PROTOCOL=toolkit "
                          "(or the 'protocol' metadata) for them")
    if dimension in STAGE_LOADERS:
        return STAGE_LOADERS[dimension](split, domains, root)
    toolkit = load_toolkit(toolkit_dir) if protocol == "toolkit" else None  # a bad checkout fails before loading
    options = {"fmt": fmt} if dimension != "meta" else {}
    docs = data.load_docs(dimension, split, domains, root, keep_raw=toolkit is not None, **options)
    if feedback_source == "self":
        savg.apply_self_feedback(docs, self_feedback, "critic_correction_self" + ("_sub" if fmt == "sub" else ""))
    if with_feedback is not None:
        for doc in docs:
            doc["with_feedback"] = with_feedback
    if toolkit is not None:
        attach_prompts(docs, toolkit, with_feedback is not False)
    return docs
