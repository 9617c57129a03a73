"""Check every setting a run will need before any model is loaded or called.

A bad judge setting, an unknown executor or a missing data directory used to surface only after all generation,
in a filter, as a traceback. ``check_tasks`` runs when the critic tasks are built (and, under ``critic-eval``,
before lm-eval even loads the model) and raises one ``ConfigError`` / ``DataError`` naming the setting.
"""

from __future__ import annotations

import difflib
import math
import os
from typing import Iterable

from critic_tasks import registry
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.metrics.bootstrap import settings_from_env
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import variants
from critic_tasks.protocols.criticbench.data import (
    DATA_DIR_ENV,
    check_hub,
    load_task_docs,
    resolve_data_dir,
    resolve_protocol,
)
from critic_tasks.protocols.criticbench.self_feedback import missing_feedback
from critic_tasks.protocols.criticbench.self_feedback import resolve_path as resolve_self_feedback
from critic_tasks.protocols.criticbench.toolkit import load_toolkit

VARIANT_PROTOCOLS = {"critiquellm", "multicritique", "rco"}  # the protocols with prompt variants (protocols.variants)


def check_tasks(tasks: Iterable[registry.Task], data_dir: str | None = None, protocol: str | None = None,
                toolkit_dir: str | None = None, self_feedback: str | None = None, limit: float | None = None) -> None:
    """``limit``: lm-eval's ``--limit`` (the items of each task a run asks; SAvg's feedback is checked for those)."""
    tasks = list(tasks)
    if tasks:
        settings_from_env()  # CRITIC_CI_* (bootstrap intervals)
    protocols = {t.kind_spec.protocol for t in tasks}
    on_criticbench = _on_criticbench(protocols)
    if on_criticbench:
        resolve_data_dir(data_dir)
        if "criticbench" in protocols and resolve_protocol(protocol) == "toolkit":
            load_toolkit(toolkit_dir)
    for name in sorted(protocols - on_criticbench):  # a local data folder that is not there stops the run now
        _local_root(registry.PROTOCOLS[name], data_dir)
    for name in sorted({t.scorer for t in tasks}):  # the judge, revisers, sandbox, CRITIC_REVISION_FAILURE_RULE
        registry.SCORERS[name].check_settings()
    if protocols & VARIANT_PROTOCOLS:
        variants.resolve()  # CRITIC_PROMPT_VARIANT (a --metadata variant is checked when the tasks are built)
    if resolve_self_feedback(self_feedback):  # SAvg: every item must find the critic's own feedback, checked now
        for t in (t for t in tasks if t.self_feedback):
            docs = load_task_docs(t.kind_spec.data_dimension, t.split, list(t.domains), data_dir, fmt=t.kind_spec.fmt,
                                  protocol=protocol, toolkit_dir=toolkit_dir, feedback_source=t.feedback_source,
                                  self_feedback=self_feedback)
            n = len(docs) if limit is None else math.ceil(len(docs) * limit) if limit < 1 else int(limit)
            error = missing_feedback(docs[:n])
            if error:
                raise DataError(error)


def check_local_data(tasks: Iterable[registry.Task], data_dir: str | None = None, metadata: dict | None = None
                     ) -> None:
    """A local CriticBench copy (``CRITICBENCH_DATA_DIR`` or the ``data_dir`` metadata, ``sample`` included) holds
    every file the ``tasks`` read, each item with the fields they need: the tasks' documents are loaded, as the run
    will load them, and the first problem is raised (one ``DataError`` naming the file and field). So do local
    copies of JudgeBench, ProcessBench, RealCritic, RewardBench, RewardBench 2 and RM-Bench (their own
    ``*_DATA_DIR``; their loaders also check the task options' values and read the authors' prompt files, so a bad
    ``--metadata`` value or a prompt file that cannot be had stops the run here). The Hub's copy is not loaded here
    (``check_hub_data`` asks whether it can be reached). Only before a run (``critic-eval`` and ``critic-eval
    preflight``), not when lm-eval builds each task."""
    tasks = list(tasks)
    others = _checked_sources(tasks)  # the other benchmarks' loaders: the same promise for their local copies
    _load_documents([t for t in others if _local_root(registry.PROTOCOLS[t.kind_spec.protocol], data_dir)], data_dir,
                    metadata)
    if resolve_data_dir(data_dir) is None:
        return
    seen = set()
    for t in tasks:
        spec = t.kind_spec
        if spec.protocol != "criticbench":
            continue
        key = (spec.data_dimension, t.split, tuple(t.domains), spec.fmt)
        if key in seen:
            continue
        seen.add(key)
        # a SAvg task's own feedback is checked by check_tasks; its items are the correction items
        load_task_docs(spec.data_dimension, t.split, list(t.domains), data_dir, fmt=spec.fmt, protocol="ours")


def _local_root(steps: registry.Protocol, data_dir):
    """The local copy a protocol's tasks read (``data_dir``, else its own setting; ``sample``: its fixtures), or None
    for the published copy: resolved by its loader's own function where it has one (the same words in its
    messages), else as every loader resolves (``core.settings.resolve_dir``)."""
    module = _source_modules().get(steps.name)
    if module is not None:
        return module.resolve_data_dir(data_dir)
    return resolve_dir(data_dir, steps.data_env, named={"sample": steps.sample_dir} if steps.sample_dir else None)


def _load_documents(tasks: Iterable[registry.Task], data_dir, metadata: dict | None = None) -> None:
    """Each task's documents, loaded as the run will load them (its loader, its task options, ``data_dir``); the
    first problem is the loader's one DataError naming the file and field. Tasks reading the same files (the
    per-category JudgeBench tasks) are loaded once. ``metadata``: the run's ``--metadata`` (JudgeBench's ``split``
    reaches the loader as in the run; the task's own options win, as lm-eval's dataset_kwargs do)."""
    seen = set()
    for t in tasks:
        steps = registry.PROTOCOLS[t.kind_spec.protocol]
        given = {k: v for k, v in (metadata or {}).items() if k in steps.options and k != "data_dir"}
        options = {**given, **steps.task_options(t)}
        key = (steps.name, t.kind_spec.data_dimension, tuple(sorted(options.items())))
        if key not in seen:
            seen.add(key)
            steps.load_docs(t.kind_spec.data_dimension, data_dir=data_dir, **options)


def _source_modules() -> dict:
    """The data modules of the protocols whose data a preflight checks beyond CriticBench's: each has
    ``resolve_data_dir(data_dir)`` (its local copy, or None) and ``check_published(timeout)`` (online: its published
    copy answers one call within a few seconds)."""
    from critic_tasks.protocols.judgebench import data as judgebench
    from critic_tasks.protocols.processbench import data as processbench
    from critic_tasks.protocols.realcritic import data as realcritic
    from critic_tasks.protocols.rewardbench import data as rewardbench
    from critic_tasks.protocols.rewardbench2 import data as rewardbench2
    from critic_tasks.protocols.rmbench import data as rmbench

    return {"judgebench": judgebench, "processbench": processbench, "realcritic": realcritic,
            "rewardbench": rewardbench, "rewardbench2": rewardbench2, "rmbench": rmbench}


def checks_source(protocol: str) -> bool:
    """Whether ``check_local_data`` / ``check_hub_data`` check this protocol's data (beyond CriticBench's)."""
    return protocol in _source_modules()


def _checked_sources(tasks: Iterable[registry.Task]) -> list[registry.Task]:
    return [t for t in tasks if checks_source(t.kind_spec.protocol)]


def _on_criticbench(protocols: Iterable[str]) -> set[str]:
    """The protocols reading CriticBench's files (criticbench itself, and the revision protocols' items)."""
    return {p for p in protocols if registry.PROTOCOLS[p].data_env == DATA_DIR_ENV}


def check_hub_data(tasks: Iterable[registry.Task], data_dir: str | None = None, items_file: str | None = None,
                   metadata: dict | None = None) -> None:
    """CriticBench from the Hub (no local copy set) for ``tasks``: the Hub answers now, or, offline, its cache holds
    the files; else lm-eval would load the model first, then retry the Hub for a minute. A revision task given the
    user's own ``items_file`` reads that file, not CriticBench: nothing to reach for it."""
    tasks = list(tasks)
    protocols = (t.kind_spec.protocol for t in tasks
                 if not (items_file and "items_file" in registry.PROTOCOLS[t.kind_spec.protocol].options))
    if _on_criticbench(protocols) and resolve_data_dir(data_dir) is None:
        check_hub()
    # the other benchmarks from their published copies: offline, loaded from the cache as the run
    # will (nothing is downloaded offline, so this is quick); online, one call each
    published = [t for t in _checked_sources(tasks) if _local_root(registry.PROTOCOLS[t.kind_spec.protocol], data_dir)
                 is None]
    if published and hub_offline():
        _load_documents(published, data_dir, metadata)
    for protocol in sorted({t.kind_spec.protocol for t in published} if not hub_offline() else ()):
        _source_modules()[protocol].check_published()


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE``, as huggingface_hub reads it (the switch our every loader obeys)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def known_names() -> list[str]:
    """Every name of ours a run may ask for: groups, tags, tasks."""
    return [*registry.GROUPS, *registry.tags(), *registry.TASKS]


def unknown_task(name: str, what: str = "unknown critic task", hint: str = "`critic-eval tasks` lists them"
                 ) -> ConfigError:
    """The one line for a task name of ours that does not exist, with the nearest names (a typo, caught before any
    model loads)."""
    close = difflib.get_close_matches(name, known_names(), n=3)
    return ConfigError(f"{what} {name!r}" + (f"; did you mean {', '.join(close)}?" if close else "") + f" ({hint})")


def expand(names: Iterable[str]) -> list[registry.Task]:
    """Our tasks among lm-eval task names (groups and tags expanded); other names are lm-eval's business, except a
    ``critic_`` name we do not know: a typo of ours, stopped here in one line before any model loads."""
    tags, out = registry.tags(), []
    known = known_names()
    for name in names:
        if name.startswith("critic") and name not in known and not os.path.exists(name):
            raise unknown_task(name)
        if name in registry.GROUPS:
            out += [registry.TASKS[m] for m in registry.GROUPS[name].members]
        elif name in tags:
            out += [registry.TASKS[m] for m in tags[name]]
        elif name in registry.TASKS:
            out.append(registry.TASKS[name])
    return out
