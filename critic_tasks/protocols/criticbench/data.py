"""Load CriticBench files into flat, harness-neutral documents.

Source of truth is the Hub dataset ``opencompass/CriticBench`` in its own file
layout (the dataset card on the Hub lists the files; the README's task table says which fields each task reads):

    {fmt}_{split}_data/{d}_feedback_correction.json
    {fmt}_{split}_data/correction_part/{d}_feedback.json
    {fmt}_{split}_data/{d}_comp_feedback.json
    obj_{split}_data/meta_feedback_single/meta_feedback_singlewise_{d}.json

``CRITICBENCH_DATA_DIR`` (or ``data_dir=``) points at a local copy with the same
layout instead; ``data_dir="sample"`` selects the small sample shipped in the
package. Documents keep the dataset's field names; the nested ``obj``/``sub``
and ``metadata`` dicts are lifted to the top level, as the toolkit's own loader
does. Every problem with a file becomes one ``DataError`` naming file and field.

A task's documents (``load_task_docs``): the dataset's items for one dimension, with the protocol's prompts when not
ours. The default (our prompts, the annotated feedback) reads the data files only; the released toolkit's prompts
(``toolkit.py``) and SAvg's self-feedback (``self_feedback.py``) are reached on their own paths, decided here where
their settings are read. SAvg's stage-1 documents are the correction items (``stage1_docs``), keyed by
``item_key``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

from critic_tasks.core import hub
from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.settings import read_setting, resolve_dir
from critic_tasks.protocols import remote
from critic_tasks.protocols.criticbench import self_feedback as savg
from critic_tasks.protocols.criticbench.prompts import DOMAINS, OBJECTIVE_CORRECTION_DOMAINS, TEXT_DOMAINS
from critic_tasks.protocols.criticbench.toolkit import attach_prompts, load_toolkit

HUB_REPO = "opencompass/CriticBench"
DATA_DIR_ENV = "CRITICBENCH_DATA_DIR"
SAMPLE_DIR = Path(__file__).parent / "sample_data"
SPLITS = ("dev", "test")
QUALITIES = ("low", "med", "high", "super-high")
# The main files' responses are low, med or high; only correction_part adds super-high (correct) responses, so
# correction (main files only) and meta-feedback report these three.
MAIN_QUALITIES = QUALITIES[:3]
DIFFICULTIES = ("easy", "hard")  # a pair is easy when its qualities are exactly {low, high}
VERDICTS = ("A", "B", "C")
PROTOCOL_ENV = "CRITICBENCH_PROTOCOL"
PROTOCOLS = ("ours", "toolkit")  # our prompts and parsing, or the released toolkit's (protocols.criticbench.toolkit)
FEEDBACK_SOURCES = ("annotated", "self")  # correction revises with the dataset's feedback, or the critic's own (SAvg)


# ----------------------------------------------------------------------------- files


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """Local root to read from (``sample``: the bundled sample), or ``None`` for the Hub."""
    return resolve_dir(data_dir, DATA_DIR_ENV, default="hub", named={"sample": SAMPLE_DIR})


def read_file(relpath: str, data_dir: str | os.PathLike | None = None) -> tuple[list[dict], str]:
    """Read one JSON-array file; returns (items, name used in error messages)."""
    root = resolve_data_dir(data_dir)
    if root is None:
        path = _download(relpath)
    else:
        path = root / relpath
        if not path.is_file():
            raise DataError(f"{path}: file not found (expected the opencompass/CriticBench layout)")
    items = remote.read_json(path)
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON array of objects, got {type(items).__name__}")
    if not items:  # every file of the dataset holds items: an empty one would drop its domain without a word
        raise DataError(f"{path}: an empty list (expected the items of this file; a truncated copy of the dataset?)")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise DataError(f"{path}[{i}]: expected an object, got {type(item).__name__}")
    return items, str(path)


def _download(relpath: str) -> Path:
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(HUB_REPO, relpath, repo_type="dataset"))
    except Exception as err:  # network, offline mode, missing file: one message for all
        raise DataError(
            f"hf://datasets/{HUB_REPO}/{relpath}: could not be read from the Hub ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}). Set {DATA_DIR_ENV} to a local copy of the "
            f"dataset, or to 'sample' for the bundled sample."
        ) from None


def check_hub(timeout: float = 5.0) -> None:
    """Can the dataset be read from the Hub now? Offline (``HF_HUB_OFFLINE``): its files must be in the local Hub
    cache; online: the Hub must answer one call for the dataset within ``timeout``. A DataError in one line if not."""
    from huggingface_hub import constants

    advice = f"set {DATA_DIR_ENV} to a local copy of the dataset, or to 'sample' for the bundled sample"
    answer = hub.probe(HUB_REPO, "obj_dev_data/chat_feedback_correction.json", timeout, repo_type="dataset",
                       cache_first=False)
    if answer.state == "offline":
        raise DataError(f"HF_HUB_OFFLINE is set and {HUB_REPO} is not in the local Hub cache "
                        f"({constants.HF_HUB_CACHE}); {advice}")
    if answer.state != "ok":
        raise DataError(f"the Hub ({constants.ENDPOINT}) cannot be reached for {HUB_REPO} ({answer.detail}); "
                        f"{advice}")


def resolve_domains(domains: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """``None`` / ``"all"`` -> every domain (``prompts.DOMAINS``); otherwise validate the names given."""
    if domains is None or domains == "all":
        return tuple(DOMAINS)  # prompts.DOMAIN_NAMES
    names = domains.split(",") if isinstance(domains, str) else list(domains)
    unknown = [n for n in names if n not in DOMAINS]
    if unknown:
        raise ConfigError(f"unknown CriticBench domain(s) {unknown}; known: {', '.join(DOMAINS)}")
    return tuple(names)


# ----------------------------------------------------------------------------- fields


class _Item:
    """Field access on one raw item that turns problems into DataError."""

    def __init__(self, item: dict, where: str):
        self.item, self.where = item, where

    def get(self, path: str, required: bool = True, default: Any = None) -> Any:
        value: Any = self.item
        for key in path.split("."):
            if not isinstance(value, dict) or key not in value or value[key] is None:
                if required:
                    raise DataError(f"{self.where}: missing field '{path}'")
                return default
            value = value[key]
        return value

    def text(self, path: str, required: bool = True) -> str:
        value = self.get(path, required, default="")
        if isinstance(value, dict):  # exec_rest / ground_truth_answer may be dicts
            return _dict_text(value, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise DataError(f"{self.where}: field '{path}' should be text, got {type(value).__name__}")
        return value

    def number(self, path: str, required: bool, low: float = -math.inf, high: float = math.inf) -> float | None:
        """A finite number in [low, high] (a numeric string is accepted; a bool, "nan" or 99 on a 1-7 scale is not)."""
        value = self.get(path, required)
        if value is None or (isinstance(value, str) and not value.strip() and not required):
            return None
        try:
            if isinstance(value, bool):
                raise TypeError
            number = float(value)
        except (TypeError, ValueError):
            raise DataError(f"{self.where}: field '{path}' should be a number, got {value!r}") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise DataError(f"{self.where}: field '{path}' is {value!r}; expected a number from {low:g} to {high:g}")
        return number

    def choice(self, path: str, allowed: Iterable[str], required: bool = True) -> str | None:
        value = self.get(path, required)
        if value is None:
            return None
        if value not in allowed:
            raise DataError(f"{self.where}: field '{path}' is {value!r}; expected one of {list(allowed)}")
        return value


def _dict_text(value: dict, path: str) -> str:
    # ground_truth_answer may be {"Answer"|"Rationale"|"rationale": ...}; exec_rest is shown as its repr.
    for key in ("Answer", "Rationale", "rationale"):
        if path.endswith("ground_truth_answer") and key in value:
            return str(value[key])
    return str(value)


def _labels_required(split: str) -> bool:
    # The test split withholds human labels; dev must have them.
    return split == "dev"


def _common(it: _Item, domain: str) -> dict:
    spec = DOMAINS[domain]
    return {
        "question": it.text("question"),
        "article": it.text("article", required=spec.has_article),
        "unit_test": it.text("unit_test", required=spec.has_unit_test),
        "data_source": it.text("data_source", required=False),
    }


def _raw(item: dict, keep: bool) -> dict:
    """The item as the file has it (JSON text: its nested fields mix types Arrow cannot hold), for protocols that
    render prompts from the raw fields (the toolkit protocol)."""
    return {"raw_item": json.dumps(item, ensure_ascii=False)} if keep else {}


def _meta_doc(domain: str, split: str, where: str, index: int, dimension: str, fmt: str = "obj") -> dict:
    return {"domain": domain, "split": split, "dimension": dimension, "fmt": fmt, "source_file": where,
            "item_index": index}


# ----------------------------------------------------------------------------- dimensions


def feedback_file(fmt: str, split: str, domain: str, part: str = "main") -> str:
    if part == "correction_part":
        return f"{fmt}_{split}_data/correction_part/{domain}_feedback.json"
    return f"{fmt}_{split}_data/{domain}_feedback_correction.json"


def load_feedback(split="dev", domains=None, data_dir=None, fmt="obj", parts=("main", "correction_part"),
                  keep_raw=False) -> list[dict]:
    """Single-response items: the feedback dimension (and correction's inputs).

    Pools each domain's main file with its ``correction_part`` file (correct or
    very-high-quality responses), as the paper's Table 2 does.
    """
    _check_split(split)
    labelled = _labels_required(split)
    docs = []
    for domain in resolve_domains(domains):
        spec = DOMAINS[domain]
        for part in parts:
            if part == "correction_part" and not spec.has_correction_part:
                continue
            items, name = read_file(feedback_file(fmt, split, domain, part), data_dir)
            for i, raw in enumerate(items):
                it = _Item(raw, f"{name}[{i}]")
                docs.append({
                    **_meta_doc(domain, split, name, i, "feedback", fmt),
                    "part": part,
                    **_common(it, domain),
                    "generation": it.text("generation"),
                    "exec_rest": it.text("exec_rest", required=spec.has_exec_result and part == "main"),
                    # the human critique: the subjective judge's reference (and correction's input)
                    "feedback": it.text("feedback", required=fmt == "sub" and labelled),
                    "feedback_score": it.number("feedback_score", required=labelled, low=1, high=7),
                    "quality": it.choice("metadata.quality", QUALITIES),
                    "llm_name": it.text("metadata.llm_name", required=False),
                    "correction": it.text("correction", required=False),
                    "ground_truth_answer": it.text("ground_truth_answer", required=False),
                    **_raw(raw, keep_raw),
                })
    return docs


def load_comparison(split="dev", domains=None, data_dir=None, fmt="obj", both_orders=None, keep_raw=False
                    ) -> list[dict]:
    """Pair items; with ``both_orders`` (default for the objective format) each pair yields a
    forward and a swapped document; the subjective comparison is asked once, as in the paper.

    ``preference`` always holds the gold verdict for the *forward* order (its
    last character, as the toolkit reads it); scoring swaps it for the reverse.
    """
    _check_split(split)
    both_orders = fmt == "obj" if both_orders is None else both_orders
    labelled = _labels_required(split) and fmt == "obj"
    docs = []
    for domain in resolve_domains(domains):
        spec = DOMAINS[domain]
        items, name = read_file(f"{fmt}_{split}_data/{domain}_comp_feedback.json", data_dir)
        for i, raw in enumerate(items):
            it = _Item(raw, f"{name}[{i}]")
            pref = it.get(f"{fmt}.preference", required=labelled) if fmt == "obj" else None
            if pref is not None:
                pref = str(pref).strip().rstrip(".")[-1:]
                if pref not in VERDICTS:
                    raise DataError(f"{it.where}: field 'obj.preference' should end in A, B or C, got {raw[fmt]['preference']!r}")
            qa, qb = it.choice("metadata.quality_a_sub", QUALITIES), it.choice("metadata.quality_b_sub", QUALITIES)
            base = {
                **_meta_doc(domain, split, name, i, "comparison", fmt),
                "pair_id": f"{domain}/{i}",
                **_common(it, domain),
                "preference": pref,
                "quality_a_sub": qa,
                "quality_b_sub": qb,
                "difficulty": DIFFICULTIES[0] if {qa, qb} == {"low", "high"} else DIFFICULTIES[1],
                "sub_feedback": it.text("sub.feedback", required=_labels_required(split)) if fmt == "sub" else "",
                **_raw(raw, keep_raw),
            }
            a, b = it.text(f"{fmt}.generation_a"), it.text(f"{fmt}.generation_b")
            ea = it.text(f"{fmt}.exec_rest_a", required=spec.has_exec_result)
            eb = it.text(f"{fmt}.exec_rest_b", required=spec.has_exec_result)
            docs.append({**base, "order": "forward", "generation_a": a, "generation_b": b,
                         "exec_rest_a": ea, "exec_rest_b": eb})
            if both_orders:
                docs.append({**base, "order": "reverse", "generation_a": b, "generation_b": a,
                             "exec_rest_a": eb, "exec_rest_b": ea})
    return docs


def load_meta(split="dev", domains=None, data_dir=None, keep_raw=False) -> list[dict]:
    """Critique items of the meta-feedback dimension (objective only)."""
    _check_split(split)
    labelled = _labels_required(split)
    docs = []
    for domain in resolve_domains(domains):
        spec = DOMAINS[domain]
        items, name = read_file(
            f"obj_{split}_data/meta_feedback_single/meta_feedback_singlewise_{domain}.json", data_dir
        )
        for i, raw in enumerate(items):
            it = _Item(raw, f"{name}[{i}]")
            docs.append({
                **_meta_doc(domain, split, name, i, "meta"),
                **_common(it, domain),
                "generation": it.text("generation"),
                "exec_rest": it.text("exec_rest", required=False) if spec.has_exec_result else "",
                "ground_truth_feedback": it.text("ground_truth_feedback"),
                "evaluated_feedback": it.text("evaluated_feedback"),
                "meta_feedback_score": it.number("meta_feedback_score", required=labelled, low=1, high=7),
                "raw_quality": it.choice("raw_quality", MAIN_QUALITIES),
                **_raw(raw, keep_raw),
            })
    return docs


def load_correction(split="dev", domains=None, data_dir=None, fmt="obj", keep_raw=False) -> list[dict]:
    """Items to revise: the main feedback file's responses, with the annotated feedback.

    By default the objective format covers the four domains checked by answer or
    execution, the subjective one the five text domains (judged), as in the paper.
    """
    if domains is None or domains == "all":
        domains = OBJECTIVE_CORRECTION_DOMAINS if fmt == "obj" else TEXT_DOMAINS
    docs = load_feedback(split, domains, data_dir, fmt=fmt, parts=("main",), keep_raw=keep_raw)
    for doc in docs:
        doc["dimension"] = "correction"
        spec = DOMAINS[doc["domain"]]
        if fmt == "obj" and spec.objective_correction:
            if spec.needs_gold_answer and not doc["ground_truth_answer"]:
                raise DataError(f"{item_label(doc)}: missing field 'ground_truth_answer'")
            if spec.correction_check == "unit_test" and not doc["unit_test"]:
                raise DataError(f"{item_label(doc)}: missing field 'unit_test'")
        if fmt == "sub" and _labels_required(split) and not doc["correction"]:
            raise DataError(f"{item_label(doc)}: missing field 'correction'")
    return docs


LOADERS = {"feedback": load_feedback, "comparison": load_comparison, "meta": load_meta, "correction": load_correction}


def load_docs(dimension: str, split: str = "dev", domains=None, data_dir=None, **kwargs) -> list[dict]:
    if dimension not in LOADERS:
        raise ConfigError(f"unknown dimension {dimension!r}; known: {', '.join(LOADERS)}")
    return LOADERS[dimension](split=split, domains=domains, data_dir=data_dir, **kwargs)


def item_key(doc: dict) -> str:
    """``obj_dev_data/math_cot_feedback_correction.json[3]``: the item's file inside the dataset, and its index."""
    fmt = doc.get("correction_fmt") or doc.get("fmt", "obj")
    return f"{feedback_file(fmt, doc['split'], doc['domain'])}[{doc['item_index']}]"


def stage1_docs(split: str = "dev", domains=None, data_dir=None) -> list[dict]:
    """The correction items of ``domains`` (math / code from the objective files, the text domains from the
    subjective ones), as stage-1 documents: the critic writes feedback on each."""
    wanted = resolve_domains(domains)
    docs = []
    for fmt, allowed in (("obj", OBJECTIVE_CORRECTION_DOMAINS), ("sub", TEXT_DOMAINS)):
        chosen = [d for d in wanted if d in allowed]
        if chosen:
            docs += load_correction(split, chosen, data_dir, fmt=fmt)
    for doc in docs:
        doc.update(correction_fmt=doc["fmt"], item_key=item_key(doc), dimension=savg.DIMENSION, fmt="obj")
    return docs


# ----------------------------------------------------------------------------- a task's documents


# dimensions of their own loaders, besides the dataset's (LOADERS): SAvg's stage 1
STAGE_LOADERS = {savg.DIMENSION: stage1_docs}


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
    root = resolve_data_dir(data_dir)  # where the files are (the data setting), then how they are asked
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
    docs = load_docs(dimension, split, domains, root, keep_raw=toolkit is not None, **options)
    if feedback_source == "self":
        task = "critic_correction_self" + ("_sub" if fmt == "sub" else "")
        savg.apply_self_feedback(docs, [item_key(d) for d in docs], self_feedback, task)
    if with_feedback is not None:
        for doc in docs:
            doc["with_feedback"] = with_feedback
    if toolkit is not None:
        attach_prompts(docs, toolkit, with_feedback is not False)
    return docs


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; CriticBench has {', '.join(SPLITS)}")
