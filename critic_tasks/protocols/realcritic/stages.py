"""RealCritic's chained modes: self-critique and multi-round (iterative) critique, each made of lm-eval runs whose
logged samples become the next run's solutions.

* Self-critique (``critic_realcritic_self_<task>``): stage 1 is the direct-CoT task ``critic_realcritic_direct_<task>``
  (the critic solves the question itself, its answer in ``\\boxed{}``); stage 2 shows the critic *its own* reply as the
  solution to critique and correct. The loader option ``self_solution`` (``--metadata``) names stage 1's samples.
* Multi-round (``rounds``: N): round 1 critiques the given solution (the released one, or the critic's own under
  self-critique); round k critiques round k-1's reply, named by the option ``previous_round``; ``round`` is k.

A prior reply becomes the document's solution whole (the critique and its corrected answer); its ``\\boxed{}`` answer,
read as every reply is, becomes ``solution_answer``, graded when scored as a shown solution is
(``scoring.shown_correct``): the broken and fixed rates are then measured against it, and ``solution_accuracy`` is
its accuracy (under self-critique, the direct-CoT baseline). A prior reply with no readable answer is a wrong
solution, counted, never dropped.

Items are matched by task and ``idx`` and checked against the question text. An item the prior run did not cover
(every item, when ``self_solution`` is not given) keeps its error in ``stage_error`` and the prompt raises it:
lm-eval builds only the prompts a run asks, so a run with ``--limit`` needs prior replies for exactly its items. A
file that is not the prior task's samples, a reply missing its generation, or one made from other data is one
``DataError`` naming the file, its line and the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.protocols.realcritic import data, prompts, scoring

CROSS = data.DIMENSION  # critique the given solution
DIRECT = data.DIRECT_DIMENSION  # stage 1 of self-critique: solve the question, no solution shown
SELF = data.SELF_DIMENSION  # stage 2: critique and correct the critic's own direct-CoT reply
SELF_KEY = "self_solution"  # the option naming stage 1's samples
PREVIOUS_KEY = "previous_round"  # the option naming round k-1's samples
ROUND_KEY = "round"  # which round this run is (1 without a previous round)
ROUNDS_KEY = "rounds"  # how many rounds critic-eval chains
SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
_PREFIX = {CROSS: "critic_realcritic_", DIRECT: "critic_realcritic_direct_", SELF: "critic_realcritic_self_"}


def task_name(dimension: str, task: str) -> str:
    """The registered task of a mode and a RealCritic task: ``critic_realcritic_self_arc_challenge``."""
    return _PREFIX[dimension] + task.replace("-", "_")


@dataclass(frozen=True)
class PriorReply:
    text: str
    question: str
    where: str  # file:line


def _samples_files(path: Path, setting: str, wanted: str) -> list[Path]:
    """A file as given; in a directory (searched below), the newest ``samples_<wanted>_<time>.jsonl``."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataError(f"{setting}: no such file or directory")
    found = [(m["time"], f) for f in path.rglob("samples_*.jsonl")
             if (m := SAMPLES_FILE.match(f.name)) and m["task"] == wanted]
    if not found:
        raise DataError(f"{setting}: no samples of {wanted} (samples_{wanted}_<time>.jsonl) in this directory; run "
                        f"--tasks {wanted} with --log_samples --output_path there first")
    return [max(found)[1]]


def read_replies(value: str, key: str, dimension: str, task: str) -> dict[int, PriorReply]:
    """Item ``idx`` -> the prior run's reply, from its samples (``value``: a file or a directory of them) of the task
    ``task_name(dimension, task)``."""
    setting, wanted = f"{key}={value}", task_name(dimension, task)
    out: dict[int, PriorReply] = {}
    for f in _samples_files(Path(value).expanduser(), setting, wanted):
        for _, where, sample in iter_jsonl(f, "; expected lm-eval --log_samples output"):
            doc = sample.get("doc")
            if (not isinstance(doc, dict) or doc.get("dimension") != dimension or doc.get("task") != task
                    or not isinstance(doc.get("idx"), int)):
                raise DataError(f"{where}: not a sample of {wanted} (its doc should have dimension {dimension!r}, "
                                f"task {task!r} and an integer idx); {key} must name that task's --log_samples output")
            try:
                text = sample["resps"][0][0]
            except (KeyError, IndexError, TypeError):
                raise DataError(f"{where}: item {task}[{doc['idx']}] has no generation ('resps')") from None
            # whatever the model wrote: a non-text reply is an empty solution (its answer unread, counted wrong)
            entry = PriorReply(text if isinstance(text, str) else "", str(doc.get("question", "")), where)
            seen = out.get(doc["idx"])
            if seen is not None and seen.text != entry.text:
                raise DataError(f"{where}: item {task}[{doc['idx']}] has another reply than {seen.where}; "
                                f"point {key} at one run")
            out[doc["idx"]] = entry
    return out


def apply_replies(docs: list[dict], value: str, key: str, dimension: str, source: str) -> list[dict]:
    """Each document's solution replaced by the prior run's reply to it (see the module doc); ``source`` says whose
    (``solution_model``)."""
    if not docs:
        return docs
    task = docs[0]["task"]
    replies = read_replies(value, key, dimension, task)
    for doc in docs:
        entry = replies.get(doc["idx"])
        if entry is None:
            doc["stage_error"] = (f"{key}={value}: no reply for item {task}[{doc['idx']}] (line {doc['line']} of the "
                                  f"task file); the earlier run must cover every item this run asks (same task, "
                                  "--limit at least this run's)")
            continue
        if entry.question != doc["question"]:
            raise DataError(f"{entry.where}: item {task}[{doc['idx']}] holds another question than line {doc['line']} "
                            "of the task file; the earlier run read other data")
        # its answer as read from the reply; graded when scored (scoring.shown_correct), as a released solution is
        answer, _ = scoring.read(doc, entry.text)
        doc.update(solution=entry.text, solution_answer=answer or "", solution_read=True, prior_correct=None,
                   solution_model=source, stage_error="")
    return docs


def _given(value) -> bool:
    return value not in (None, "")


def _round_number(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit() \
            or int(value) < 1:
        raise ConfigError(f"realcritic: {key}={value!r}: expected a whole number of rounds, 1 or more")
    return int(value)


def chain(docs: list[dict], dimension: str, self_solution=None, previous_round=None, round=None, rounds=None
          ) -> list[dict]:
    """Documents of one task as its mode and round ask (options as ``--metadata`` gives them; see the module doc)."""
    if dimension == SELF and _given(self_solution):
        apply_replies(docs, str(self_solution), SELF_KEY, DIRECT, "the critic (its own direct-CoT reply)")
    elif dimension == SELF:  # the data is still checked (a preflight loads these documents before stage 1 has run)
        missing = (f"{task_name(SELF, docs[0]['task'])} critiques the critic's own solutions from a stage-1 run: run "
                   f"the same model on --tasks {task_name(DIRECT, docs[0]['task'])} with --log_samples --output_path "
                   f"DIR, then pass --metadata '{{\"{SELF_KEY}\": \"DIR\"}}'; critic-eval runs stage 1 for you when it "
                   "is not given")
        for doc in docs:
            doc["stage_error"] = missing
    if dimension == DIRECT:  # ``rounds`` is run-wide (stage 1 of a multi-round self-critique sees it): one pass
        if _given(previous_round):
            raise ConfigError(f"{task_name(DIRECT, docs[0]['task'])} solves each question once: it has no rounds")
        rounds = round = None
    total = _round_number(rounds, ROUNDS_KEY) if _given(rounds) else 1
    this = _round_number(round, ROUND_KEY) if _given(round) else (2 if _given(previous_round) else 1)
    if this > total and _given(rounds):
        raise ConfigError(f"realcritic: {ROUND_KEY}={this} is past {ROUNDS_KEY}={total}")
    if this == 1 and _given(previous_round):
        raise ConfigError(f"realcritic: {PREVIOUS_KEY} is given for round 1, which critiques the given solutions")
    if this > 1 and not _given(previous_round):
        raise ConfigError(f"realcritic: round {this} of {total} critiques round {this - 1}'s replies: critic-eval "
                          f"runs the rounds in turn; with plain lm_eval pass that run's --log_samples output as "
                          f"--metadata '{{\"{PREVIOUS_KEY}\": \"DIR\", \"{ROUND_KEY}\": {this}}}'")
    if this > 1:
        apply_replies(docs, str(previous_round), PREVIOUS_KEY, dimension, f"the critic (round {this - 1})")
    for doc in docs:
        doc.update(dimension=dimension, round=this)
        doc.setdefault("stage_error", "")
    return docs


def load_task_docs(dimension: str = CROSS, data_dir=None, subset: str | None = None, **options) -> list[dict]:
    """RealCritic's loader (``registry.Protocol.load_docs``): one task's documents (``data.load_task_docs``) in the
    mode ``dimension`` names, "realcritic" (critique the given solution), "realcritic_direct" (solve it) or
    "realcritic_self" (critique the critic's own), chained as ``options`` ask (``self_solution``,
    ``previous_round``, ``round``, ``rounds``: see ``chain``), each carrying its reading rule (``grading``:
    ``scoring.apply_grading``) and its prompt (``prompt``: ``prompts.apply``)."""
    mode = dimension if dimension in (DIRECT, SELF) else CROSS
    docs = data.load_task_docs(CROSS if mode != CROSS else dimension, data_dir, subset)
    scoring.apply_grading(docs, options.get(scoring.GRADING_KEY), data_dir)
    docs = chain(docs, mode, **{k: options.get(k) for k in (SELF_KEY, PREVIOUS_KEY, ROUND_KEY, ROUNDS_KEY)})
    return prompts.apply(docs, options.get(prompts.PROMPT_KEY), data_dir)
