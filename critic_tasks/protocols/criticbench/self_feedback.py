"""SAvg (CriticBench's self-feedback correction column): the critic revises with *its own* feedback.

Two stages, both inside the harness, where the critic runs:

1. ``critic_self_feedback`` (``dimension: self_feedback``): the correction items of every domain (the objective
   files for math / code, the subjective ones for the text domains, exactly the documents the correction tasks
   read), each asking for a free-text critique of the response (the subjective feedback prompt). Not scored; its
   ``parse_rate`` is the share of non-empty critiques. Run with ``--log_samples``.
2. ``critic_correction_self`` / ``critic_correction_self_sub``: the correction items with each ``feedback``
   replaced by the critic's own, read from the stage-1 samples named by ``self_feedback`` (task option,
   ``--metadata``) or ``CRITIC_SELF_FEEDBACK``: a ``samples_critic_self_feedback*.jsonl`` file or a directory
   holding them (the newest file of each stage-1 task is read, as ``critic-eval judge`` does).

Stage 1's documents and the items' keys come from the loader (``data.stage1_docs``, ``data.item_key``); this module
reads the critic's feedback back. Items are matched by a key that does not depend on where the data lives (the
dataset file's path inside the dataset and the item's index) and checked against the question and response text;
an item without feedback, a file that is not stage-1 output, or one made from other data stops the run with one
``DataError`` naming the file and the item.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.settings import read_setting

DIMENSION = "self_feedback"
STAGE1_TASK = "critic_self_feedback"
SELF_FEEDBACK_ENV = "CRITIC_SELF_FEEDBACK"
SAMPLES_FILE = re.compile(rf"^samples_(?P<task>{STAGE1_TASK}(?:_[a-z_]+)?)_(?P<time>\d{{4}}-\d{{2}}-\d{{2}}T[\d\-.]+)\.jsonl$")


def resolve_path(value: str | os.PathLike | None = None) -> str | None:
    """``self_feedback`` as given, else ``CRITIC_SELF_FEEDBACK``; None when neither is set."""
    given = value not in (None, "")
    return str(value) if given else (read_setting(SELF_FEEDBACK_ENV) or None)


@dataclass(frozen=True)
class Feedback:
    text: str
    question: str
    generation: str
    where: str  # file:line


def _stage1_files(path: Path, setting: str) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataError(f"{setting}: no such file or directory")
    newest: dict[str, tuple[str, Path]] = {}
    for f in sorted(path.rglob("samples_*.jsonl")):
        m = SAMPLES_FILE.match(f.name)
        if m and (m["task"] not in newest or m["time"] > newest[m["task"]][0]):
            newest[m["task"]] = (m["time"], f)
    if not newest:
        raise DataError(f"{setting}: no stage-1 samples (samples_{STAGE1_TASK}*.jsonl) in this directory; run "
                        f"--tasks {STAGE1_TASK} with --log_samples --output_path there first")
    return [f for _, f in sorted(newest.values())]


def read_feedback(value: str) -> dict[str, Feedback]:
    """Item key -> the critic's feedback, from stage-1 samples (a file or a directory of them)."""
    setting = f"self_feedback={value}"
    out: dict[str, Feedback] = {}
    for f in _stage1_files(Path(value).expanduser(), setting):
        for _, where, sample in iter_jsonl(f, "; expected lm-eval --log_samples output"):
            doc = sample.get("doc") if isinstance(sample, dict) else None
            if not isinstance(doc, dict) or doc.get("dimension") != DIMENSION or "item_key" not in doc:
                raise DataError(f"{where}: not a sample of the stage-1 task {STAGE1_TASK} (its doc has no "
                                "'item_key'); self_feedback must name that task's --log_samples output")
            try:
                text = sample["resps"][0][0]
            except (KeyError, IndexError, TypeError):
                raise DataError(f"{where}: item {doc['item_key']} has no generation ('resps')") from None
            entry = Feedback(str(text or ""), doc.get("question", ""), doc.get("generation", ""), where)
            seen = out.get(doc["item_key"])
            if seen is not None and seen.text != entry.text:
                raise DataError(f"{where}: item {doc['item_key']} has other feedback than in {seen.where}; "
                                "point self_feedback at one stage-1 run")
            out[doc["item_key"]] = entry
    return out


def apply_self_feedback(docs: list[dict], keys: list[str], value: str | None,
                        task: str = "critic_correction_self") -> list[dict]:
    """Replace each correction document's annotated ``feedback`` with the critic's own (see the module doc), found
    by the document's key (``keys``, in the same order: ``data.item_key``).

    An item stage 1 did not cover keeps no feedback and carries the error in ``self_feedback_error``: the prompt
    for it raises that ``DataError`` (lm-eval builds every prompt of a run before generating anything), so a run
    with ``--limit`` needs feedback for exactly the items it asks; ``missing_feedback`` checks a prefix eagerly."""
    path = resolve_path(value)
    if path is None:
        raise ConfigError(
            f"{task} revises with the critic's own feedback from a stage-1 run: run the same model on --tasks "
            f"{STAGE1_TASK} with --log_samples --output_path DIR, then pass --metadata '{{\"self_feedback\": \"DIR\"}}' "
            f"(or set {SELF_FEEDBACK_ENV}); critic-eval runs stage 1 for you when neither is set")
    feedback = read_feedback(path)
    for doc, key in zip(docs, keys):
        entry = feedback.get(key)
        doc["feedback_source"] = "self"
        if entry is None:
            doc["feedback"] = ""
            doc["self_feedback_error"] = (
                f"self_feedback={path}: no feedback for item {key} ({item_label(doc)}); stage 1 "
                f"must cover every item this run of {task} asks (same split and domains, --limit at least this run's)")
            continue
        if entry.question != doc["question"] or entry.generation != doc["generation"]:
            raise DataError(f"{entry.where}: item {key} holds another question or response than "
                            f"{item_label(doc)}; stage 1 ran on different data")
        doc["feedback"] = entry.text
        doc["self_feedback_error"] = ""
    return docs


def missing_feedback(docs: list[dict]) -> str | None:
    """The error of the first document without the critic's own feedback, if any."""
    return next((d["self_feedback_error"] for d in docs if d.get("self_feedback_error")), None)
