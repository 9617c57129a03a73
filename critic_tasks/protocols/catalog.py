"""What each protocol does at each step, for the harness adapters: load documents, prompt the critic, show the
gold label, turn a reply into a record, and the metric families its registry metrics name.

The registry says which protocol a dimension belongs to (``Dimension.protocol``); adapters look its steps up here
instead of branching on protocol names, so a new protocol is one entry in this table plus its registry entries.
Judge-scored dimensions (``scorer`` judge / aiu_judge) have no per-reply ``record``: the adapter's judge filter
makes their records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from critic_tasks.core.records import Record
from critic_tasks.protocols.criticbench import data as cb_data
from critic_tasks.protocols.criticbench import loading as cb_loading
from critic_tasks.protocols.criticbench import prompts as cb_prompts
from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.critiquellm import data as cq_data
from critic_tasks.protocols.critiquellm import prompts as cq_prompts
from critic_tasks.protocols.critiquellm import scoring as cq_scoring
from critic_tasks.protocols.metacritique import data as mc_data
from critic_tasks.protocols.metacritique import prompts as mc_prompts
from critic_tasks.protocols.metacritique import scoring as mc_scoring
from critic_tasks.protocols.revision import data as rv_data
from critic_tasks.protocols.revision import prompts as rv_prompts
from critic_tasks.protocols.revision import scoring as rv_scoring


@dataclass(frozen=True)
class Steps:
    load_docs: Callable[..., list[dict]]
    options: tuple[str, ...]  # the task options / --metadata keys its loader takes
    prompt: Callable[[dict], str]
    target: Callable[[dict], str]
    record: Callable[[dict, object], Record] | None
    data_env: str  # the environment variable naming a local copy of the data
    source: str  # where the loader reads the data from (the Hub dataset or paper repository; lm-eval's dataset_path)


PROTOCOLS: dict[str, Steps] = {
    "criticbench": Steps(cb_loading.load_task_docs,
                         ("split", "domains", "data_dir", "fmt", "with_feedback", "protocol", "toolkit_dir",
                          "feedback_source", "self_feedback"),
                         cb_prompts.critic_prompt, cb_scoring.gold_text, cb_scoring.record,
                         cb_data.DATA_DIR_ENV, cb_data.HUB_REPO),
    "critiquellm": Steps(cq_data.load_task_docs, ("reference", "data_dir", "variant"), cq_prompts.critic_prompt,
                         cq_scoring.gold_text, cq_scoring.record, cq_data.DATA_DIR_ENV, cq_data.REPO),
    "metacritique": Steps(mc_data.load_task_docs, ("data_dir",), mc_prompts.critic_prompt, mc_prompts.gold_text, None,
                          mc_data.DATA_DIR_ENV, mc_data.REPO),
}
# The revision protocols (MultiCritique, RCO): the same items and critic prompt; the lm-eval filter makes records.
_REVISION = Steps(rv_data.load_task_docs, ("split", "domains", "data_dir", "items_file", "variant", "failure_rule"),
                  rv_prompts.critic_prompt,
                  rv_prompts.gold_text, None, rv_data.DATA_DIR_ENV,
                  cb_data.HUB_REPO)  # CriticBench's initial responses
PROTOCOLS.update({"multicritique": _REVISION, "rco": _REVISION})

FAMILIES: dict[str, Callable] = {**cb_scoring.FAMILIES, **cq_scoring.FAMILIES, **mc_scoring.FAMILIES,
                                 **rv_scoring.FAMILIES}
# family -> its bootstrap interval function (records, value, settings) -> (low, high) or None
INTERVALS: dict[str, Callable] = {**cb_scoring.INTERVALS, **cq_scoring.INTERVALS, **mc_scoring.INTERVALS,
                                  **rv_scoring.INTERVALS}


def dimension_metrics(dimension, records, intervals=None) -> dict[str, float]:
    """The registry's metric keys for ``dimension`` (a ``registry.Dimension``; those with a value), from the family a
    live run uses, as a run outside lm-eval reports them (OpenCompass's evaluator, ``critic-eval score / judge /
    rescore``).

    One run of the family over all records reports the breakdown keys (``spearman_low``, ...) itself; a live
    lm-eval run routes records key by key (``Metric.accepts``) and gets the same values. Interval keys
    (``spearman_ci_low``, ...) are computed on the records their metric accepts, as lm-eval routes them
    (``intervals``: a ``BootstrapSettings``, default from CRITIC_CI_*; disabled: no interval keys)."""
    from critic_tasks.core.metrics.bootstrap import settings_from_env

    records = list(records)
    values = FAMILIES[dimension.metrics[0].family](records)
    out = {m.key: values[m.key] for m in dimension.metrics if m.key in values}
    settings = settings_from_env() if intervals is None else intervals
    if settings.enabled:
        for m in dimension.metrics:
            if m.ci == "low" and m.key.removesuffix("_ci_low") in out:
                ci = INTERVALS[m.family]([r for r in records if m.accepts(r)], m.base, settings)
                if ci is not None:
                    out[m.key], out[m.key.removesuffix("_low") + "_high"] = ci
    return out
