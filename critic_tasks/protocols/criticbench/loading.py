"""A task's documents: the dataset's items for one dimension, with the protocol's prompts when not ours."""

from __future__ import annotations

from critic_tasks.protocols.criticbench import data
from critic_tasks.protocols.criticbench.toolkit import attach_prompts, load_toolkit, resolve_protocol


def load_task_docs(dimension: str, split: str = "dev", domains=None, data_dir=None, fmt: str = "obj",
                   with_feedback: bool | None = None, protocol: str | None = None,
                   toolkit_dir: str | None = None) -> list[dict]:
    """Documents for lm-eval / OpenCompass / offline scoring. ``protocol``: ``ours`` (default; our prompts and
    parsing) or ``toolkit`` (the released toolkit's, read from ``toolkit_dir``); both fall back to their
    environment variables (``CRITICBENCH_PROTOCOL``, ``CRITICBENCH_TOOLKIT_DIR``)."""
    protocol = resolve_protocol(protocol)
    toolkit = load_toolkit(toolkit_dir) if protocol == "toolkit" else None  # a bad checkout fails before loading
    options = {"fmt": fmt} if dimension != "meta" else {}
    docs = data.load_docs(dimension, split, domains, data_dir, keep_raw=toolkit is not None, **options)
    if with_feedback is not None:
        for doc in docs:
            doc["with_feedback"] = with_feedback
    if toolkit is not None:
        attach_prompts(docs, toolkit, with_feedback is not False)
    return docs
