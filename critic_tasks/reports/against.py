"""A run placed beside a published judge: `critic-eval compare RUN --against judgebench:<judge>` (issue 43, point 4).

JudgeBench's authors released their judges' per-pair outputs (``outputs/dataset=judgebench,response_model=<the
split's model>,judge_name=<format>,judge_model=<judge>.jsonl`` in ScalerLab/JudgeBench: each pair with its two
judgments, forward then the responses swapped, each the judge's raw reply, or a reward model's two scores and the
decision they give). Those replies are scored here as the run's own replies are: each logged document of the run
(its pair and order) gets the record ``registry.PROTOCOLS["judgebench"].record`` makes of the released judge's
reply to that same pair and order (the re-scoring ``tests/test_judgebench.py`` proves equal to the authors' own
metrics), so the released judge becomes run A on exactly the run's items, and ``compare.compare_metric`` (the same
paired bootstrap, McNemar and permutation test as two runs get) gives B - A: the run minus the published judge.

RewardBench's and RewardBench 2's released per-item results (``eval-set-scores/<org>/<model>.json`` of the Hub
datasets ``allenai/reward-bench-results`` / ``allenai/reward-bench-2-results``, or a local file or copy) are placed
by their records (``protocols.rewardbench.released``, ``protocols.rewardbench2.released``: each pair's or prompt's
released result, a Ties answer's released score), matched to the run's documents by pair / prompt id; the items in
only one of the two are left out of the comparison and counted in one line.

The CriticEval toolkit's released predictions (``example-predictions/<model>/``, CriticBench's objective files) are
placed the same way by their records, re-scored by ``critic-eval score``'s reader (``criticbench.offline``), matched
to the run's documents by content (``compare.document_identity``).

Where the outputs are read: ``--against-dir`` (a checkout of ScalerLab/JudgeBench, or its ``outputs`` folder),
else the JudgeBench data setting when it names a checkout, else the cache, else the repository at the pinned
commit, each file checked against its sha256 (``protocols.authors.AuthorsFile``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.protocols.authors import AuthorsFile
from critic_tasks.protocols.judgebench import judges
from critic_tasks.reports.compare import (
    Comparison,
    ItemMismatch,
    Logged,
    comparable_metrics,
    compare_metric,
    document_identity,
    read_logged,
)

SOURCES = ("judgebench", "criticeval", "rewardbench", "rewardbench2")

# the repository, commit and data setting JudgeBench's templates are read at: the outputs are pinned with them
JUDGEBENCH_REPO, JUDGEBENCH_COMMIT, JUDGEBENCH_DATA_ENV = judges.AUTHORS_REPO, judges.AUTHORS_COMMIT, judges.DATA_ENV
OUTPUTS_FOLDER = "outputs"
OUTPUT_NAME = re.compile(r"dataset=judgebench,response_model=(?P<responses>[^,]+),judge_name=(?P<format>[^,]+),"
                         r"judge_model=(?P<judge>.+)\.jsonl$")
RESPONSE_MODELS = {"gpt": "gpt-4o-2024-05-13", "claude": "claude-3-5-sonnet-20240620"}  # each split's answers
REWARD_MODEL = "reward_model"  # a judgment of two scores: the decision is the higher one's (utils/judges.py)


@dataclass(frozen=True)
class ReleasedJudge:
    responses: str  # the response model whose pairs it judged (a split)
    format: str  # judge_name: arena_hard, reward_model, ...
    judge: str  # judge_model, as the file names it
    sha256: str = ""  # pinned for the files fetched from the repository

    @property
    def file(self) -> str:
        return f"dataset=judgebench,response_model={self.responses},judge_name={self.format},judge_model={self.judge}.jsonl"

    @property
    def name(self) -> str:
        return f"{self.judge} ({self.format})"


# the released outputs at JUDGEBENCH_COMMIT
RELEASED_JUDGES = (
    ReleasedJudge("gpt-4o-2024-05-13", "arena_hard", "o1-mini-2024-09-12",
                  "5fddc275bebd4d006228e8f86616ae6058118ab68ad03e57fd957c1878f2d4e6"),
    ReleasedJudge("claude-3-5-sonnet-20240620", "arena_hard", "claude-3-haiku-20240307",
                  "3d30281286053c875dd09cc2ee17de8c0900a99a001b2f03d571aade669414f4"),
    ReleasedJudge("gpt-4o-2024-05-13", "reward_model", "Skywork_Skywork-Reward-Gemma-2-27B",
                  "2662f59e121c8b1d2fd685bfee5fb5f26f480de73cd2ae16d59f27d0758e6d78"),
)


def parse_against(text: str) -> tuple[str, str]:
    """``SOURCE:NAME`` -> (source, name); one line for anything else."""
    source, sep, name = text.partition(":")
    if not sep or source not in SOURCES or not name:
        raise ConfigError(f"--against {text}: expected judgebench:<released judge> (e.g. judgebench:o1-mini), "
                          "criticeval:<released predictions folder or model>, or rewardbench:<model or file> / "
                          "rewardbench2:<model or file> (e.g. rewardbench:openai/gpt-4o-2024-05-13)")
    return source, name


# ----------------------------------------------------------------------------- JudgeBench's released judges


def _local_judges(folder: Path) -> list[tuple[ReleasedJudge, Path]]:
    """The released outputs a local folder holds (a checkout, or its outputs folder), with their paths."""
    outputs = folder / OUTPUTS_FOLDER if (folder / OUTPUTS_FOLDER).is_dir() else folder
    found = []
    for path in sorted(outputs.glob("dataset=judgebench,*.jsonl")):
        m = OUTPUT_NAME.match(path.name)
        if m:
            pinned = next((j for j in RELEASED_JUDGES if j.file == path.name), None)
            found.append((pinned or ReleasedJudge(m["responses"], m["format"], m["judge"]), path))
    return found


def choose_judge(name: str, responses: str, available: Sequence[ReleasedJudge], where: str) -> ReleasedJudge:
    """The released judge ``name`` names among those that judged ``responses``' pairs: its judge model exactly, else
    the one judge whose model or ``format/model`` contains it (case aside). One line when none or several do."""
    judged = [j for j in available if j.responses == responses]
    exact = [j for j in judged if name in (j.judge, f"{j.format}/{j.judge}")]
    wanted = name.lower()
    matches = exact or [j for j in judged if wanted in f"{j.format}/{j.judge}".lower()]
    listed = ", ".join(f"{j.format}/{j.judge}" for j in judged) or "none"
    if not matches:
        raise ConfigError(f"--against judgebench:{name}: no released judge of the {responses} pairs by that name "
                          f"in {where} (these judged them: {listed})")
    if len(matches) > 1:
        raise ConfigError(f"--against judgebench:{name}: names {len(matches)} released judges of the {responses} "
                          f"pairs ({', '.join(f'{j.format}/{j.judge}' for j in matches)}): name one")
    return matches[0]


def judge_outputs(name: str, responses: str, folder: Path | None) -> tuple[ReleasedJudge, str, str]:
    """(the judge, its outputs file's text, where it was read) for ``--against judgebench:<name>``."""
    if folder is not None:
        if not folder.is_dir():
            raise ConfigError(f"--against-dir {folder}: not a folder (a checkout of {JUDGEBENCH_REPO}, or its "
                              f"{OUTPUTS_FOLDER} folder)")
        local = _local_judges(folder)
        judge = choose_judge(name, responses, [j for j, _ in local], str(folder))
        path = dict((j, p) for j, p in local)[judge]
        return judge, path.read_text(encoding="utf-8"), str(path)
    judge = choose_judge(name, responses, RELEASED_JUDGES, f"{JUDGEBENCH_REPO} at {JUDGEBENCH_COMMIT[:10]}")
    spec = AuthorsFile(JUDGEBENCH_REPO, JUDGEBENCH_COMMIT, f"{OUTPUTS_FOLDER}/{judge.file}", judge.sha256,
                       JUDGEBENCH_DATA_ENV, what="a released judge's outputs",
                       instead="give --against-dir a checkout of the repository or its outputs folder")
    return judge, spec.text(), f"{JUDGEBENCH_REPO}/{spec.path}"


def _reply(judgment, where: str, fmt: str) -> str | None:
    """The text the released judge answered (its decision as a verdict line, for a reward model's two scores)."""
    if judgment is None:
        return None
    if not isinstance(judgment, dict) or not isinstance(judgment.get("judgment"), dict):
        raise DataError(f"{where}: a judgment without its 'judgment' object")
    if fmt == REWARD_MODEL:
        decision = judgment.get("decision")
        return f"My final verdict is: [[{decision}]]" if decision in ("A>B", "B>A") else None
    response = judgment["judgment"].get("response")
    return response if isinstance(response, str) else None


def released_replies(text: str, where: str, fmt: str) -> dict[tuple[str, str], str | None]:
    """(pair_id, order) -> the released judge's reply, from one outputs file (JSON lines: ``pair_id`` and
    ``judgments``, the forward order's then the reverse's)."""
    replies: dict[tuple[str, str], str | None] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{where}:{n}: not JSON ({err.msg})") from None
        judgments = row.get("judgments") if isinstance(row, dict) else None
        if not isinstance(judgments, list) or len(judgments) != 2 or "pair_id" not in row:
            raise DataError(f"{where}:{n}: expected pair_id and two judgments (forward, then reverse)")
        for order, judgment in zip(("forward", "reverse"), judgments):
            replies[(str(row["pair_id"]), order)] = _reply(judgment, f"{where}:{n}", fmt)
    return replies


def _logged_docs(path: Path) -> dict:
    """doc_id -> the logged document, from a samples file (the "none" filter's rows)."""
    from critic_tasks.core.jsonl import iter_jsonl

    return {sample["doc_id"]: sample.get("doc") for _, _, sample in iter_jsonl(path, "an lm-eval --log_samples file")
            if sample.get("filter", "none") == "none" and "doc_id" in sample}


def _protocol_tasks(run, protocol: str, source: str, what: str) -> list[str]:
    """The run's tasks of ``protocol``; none is one ConfigError naming what the run holds."""
    tasks = [t for t in run.results if t in registry.TASKS and registry.TASKS[t].kind_spec.protocol == protocol]
    if not tasks:
        held = ", ".join(t for t in run.results if t in registry.TASKS) or "none"
        raise ConfigError(f"--against {source}: the run holds no {what} task (it holds: {held})")
    return tasks


def _task_rows(run, task: str, source: str) -> tuple[Path, dict]:
    """(the samples file of ``task`` beside the run, its logged documents); none is one ConfigError."""
    from critic_tasks.reports.results import samples_file

    path = samples_file(run.path, task)
    if path is None:
        raise ConfigError(f"--against {source}: {task} has no per-item rows beside {run.path}: run it with "
                          "lm-eval --log_samples")
    return path, _logged_docs(path)


def _compared(task: str, names: Sequence[str], a: Logged, b: Logged, settings) -> list[Comparison]:
    """B - A of each of ``task``'s comparable metrics (those ``names`` keeps, when given) that both hold."""
    out = []
    for metric in comparable_metrics(task):
        if not names or f"{task}.{metric.key}" in names:
            found = compare_metric(task, metric, a, b, settings)
            if found is not None:
                out.append(found)
    return out


def judge_logged(task: str, docs: dict, replies: dict, judge: ReleasedJudge) -> Logged:
    """The released judge as a run of ``task`` on the run's own documents: each document's record made of the
    judge's reply to that pair and order, under every metric key that accepts it."""
    kind = registry.TASKS[task].kind_spec
    steps = registry.PROTOCOLS[kind.protocol]
    keys = [m for m in kind.metrics if not m.ci]
    logged = Logged({}, {})
    missing = []
    for doc_id, doc in docs.items():
        if not isinstance(doc, dict):
            raise DataError(f"{task}: doc_id {doc_id}: the samples row logged no document to find its pair by")
        found = (str(doc.get("pair_id")), doc.get("order"))
        if found not in replies:
            missing.append(found[0])
            continue
        record = steps.record({**doc, "judge": "arena_hard" if judge.format == REWARD_MODEL else judge.format},
                              replies[found])
        logged.identity[doc_id] = document_identity({"doc": doc})
        logged.records[doc_id] = {m.key: record for m in keys if m.accepts(record)}
    if missing:
        raise ItemMismatch(f"compare --against judgebench: {task}: {len(missing)} of the run's items are pairs "
                           f"{judge.name} has no released judgment of (e.g. pair {missing[0]}); a paired comparison "
                           "needs the same pairs")
    return logged


def check_names(names: Sequence[str], tasks: Iterable[str], source: str) -> None:
    """One line for a ``--metric`` that is no metric with an interval of the compared tasks."""
    known = {f"{t}.{m.key}" for t in tasks for m in comparable_metrics(t)}
    for name in names:
        if name not in known:
            listed = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "")
            raise ConfigError(f"--metric {name}: not a metric with an interval of the tasks compared against {source} "
                              f"(these are: {listed or 'none'})")


def compare_with_judge(run, name: str, folder: Path | None, names: Sequence[str] = (),
                       settings: BootstrapSettings | None = None) -> tuple[list[Comparison], str]:
    """(B - A of every JudgeBench metric with an interval the run reports, A the released judge ``name``, B the
    run; the judge's label)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    settings = settings_from_env() if settings is None else settings
    tasks = _protocol_tasks(run, "judgebench", "judgebench", "JudgeBench")
    check_names(names, tasks, f"judgebench:{name}")
    out, label = [], ""
    for task in tasks:
        path, docs = _task_rows(run, task, "judgebench")
        splits = {d.get("response_model") or RESPONSE_MODELS.get(str(d.get("split")), "")
                  for d in docs.values() if isinstance(d, dict)}
        if len(splits) != 1:
            raise DataError(f"{path}: the run's pairs name {len(splits)} response models; expected one split's")
        judge, text, where = judge_outputs(name, splits.pop(), folder)
        label = f"{judge.name}, JudgeBench's released outputs"
        released = judge_logged(task, docs, released_replies(text, where, judge.format), judge)
        own = read_logged(path, task)
        out += _compared(task, names, released, own, settings)
    return out, label


# ----------------------------------------------------------------------------- CriticEval's released predictions


def logged_against(task: str, path: Path, released: Iterable[tuple[dict, object]], source: str) -> tuple[Logged, Logged]:
    """(the released predictions as a run, the run) on the run's documents: each logged document matched by its
    content (``document_identity``) to a released item's record."""
    own = read_logged(path, task)
    by_identity = {json.dumps(document_identity({"doc": doc}), sort_keys=True): record for doc, record in released}
    kind = registry.TASKS[task].kind_spec
    keys = [m for m in kind.metrics if not m.ci]
    logged = Logged({}, {})
    missing = []
    for doc_id, identity in own.identity.items():
        record = by_identity.get(json.dumps(identity, sort_keys=True))
        if record is None:
            missing.append(doc_id)
            continue
        logged.identity[doc_id] = identity
        logged.records[doc_id] = {m.key: record for m in keys if m.accepts(record)}
    if missing:
        raise ItemMismatch(f"compare --against {source}: {task}: {len(missing)} of the run's items have no released "
                           f"prediction (e.g. doc_id {missing[0]}); a paired comparison needs the same items (the "
                           "same split and data)")
    return logged, own


def compare_with_predictions(run, released: Sequence[tuple[dict, object]], source: str, names: Sequence[str] = (),
                             settings: BootstrapSettings | None = None) -> list[Comparison]:
    """B - A of every metric with an interval of the run's tasks whose documents the released predictions cover
    (``released``: (document, record) pairs, as ``criticbench.offline.score_predictions`` scored them)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env
    from critic_tasks.reports.results import samples_file

    settings = settings_from_env() if settings is None else settings
    dimensions = {doc.get("dimension") for doc, _ in released}
    tasks = [t for t in run.results if t in registry.TASKS and samples_file(run.path, t) is not None
             and registry.TASKS[t].kind_spec.data_dimension in dimensions and registry.TASKS[t].kind_spec.fmt == "obj"]
    check_names(names, tasks, source)
    out = []
    for task in tasks:
        path = samples_file(run.path, task)
        theirs, own = logged_against(task, path, released, source)
        out += _compared(task, names, theirs, own, settings)
    if not out:
        raise ConfigError(f"--against {source}: no task of the run with per-item rows is among the released "
                          f"predictions' ({', '.join(sorted(str(d) for d in dimensions))})")
    return out




# ----------------------------------------------------------------------------- RewardBench's released results


def _released_module(source: str):
    if source == "rewardbench":
        from critic_tasks.protocols.rewardbench import released
    else:
        from critic_tasks.protocols.rewardbench2 import released
    return released


def read_released(source: str, name: str, folder: Path | None, flag: str = "--against-dir"):
    """The released results ``source:name`` names (``protocols.rewardbench[2].released``: a file, a model under
    ``folder``, else the Hub's results repository), read and checked."""
    module = _released_module(source)
    path, where = module.locate(name, folder, module.RESULTS_REPO, flag)
    return module.read(path, where, name)


def compare_with_released(run, source: str, name: str, folder: Path | None, names: Sequence[str] = (),
                          settings: BootstrapSettings | None = None) -> tuple[list[Comparison], str, list[str]]:
    """(B - A of every metric with an interval of the run's ``source`` task, A the released model ``name``, B the
    run, on the items both hold; the released model's label; one line per task counting the items in only one of
    the two, where there are any)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    settings = settings_from_env() if settings is None else settings
    tasks = _protocol_tasks(run, source, source, source)
    check_names(names, tasks, f"{source}:{name}")
    module = _released_module(source)
    released = read_released(source, name, folder)
    label = f"{released.model}, released results ({released.where})"
    out, notes = [], []
    for task in tasks:
        path, docs = _task_rows(run, task, source)
        if any(not isinstance(doc, dict) for doc in docs.values()):
            raise DataError(f"{path}: a samples row logged no document to match its item by id")
        matched = module.match(docs, released)
        if not matched.shared:
            raise ItemMismatch(f"compare --against {source}:{name}: {task}: none of the run's {matched.run_only} "
                               f"{matched.unit} is among the {len(released.items)} of {released.where} (matched by "
                               "id): not the same data")
        if matched.run_only or matched.released_only:
            notes.append(f"compare --against {source}:{name}: {task}: compared on the {matched.shared} "
                         f"{matched.unit} in both; left out: {matched.run_only} of the run's {matched.unit} (not in "
                         f"the released file), {matched.released_only} of the released file's (not asked in the run)")
        own = read_logged(path, task)
        keys = [m for m in registry.TASKS[task].kind_spec.metrics if not m.ci]
        own = Logged({d: own.identity[d] for d in matched.records}, {d: own.records[d] for d in matched.records})
        theirs = Logged(dict(own.identity), {d: {} if r is None else {m.key: r for m in keys if m.accepts(r)}
                                             for d, r in matched.records.items()})
        out += _compared(task, names, theirs, own, settings)
    return out, label, notes
