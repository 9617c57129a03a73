"""The metric families every protocol's registry metrics name (``FAMILIES``) and their bootstrap intervals
(``INTERVALS``).

Each protocol's steps (load documents, prompt the critic, show the gold label, turn a reply into a record) are
declared with it in the registry (``registry.Protocol``); a dimension's metric keys computed outside lm-eval are
``engine.kind_metrics``.
"""

from __future__ import annotations

from typing import Callable

from critic_tasks.protocols.criticbench import scoring as cb_scoring
from critic_tasks.protocols.critiquellm import scoring as cq_scoring
from critic_tasks.protocols.metacritique import scoring as mc_scoring
from critic_tasks.protocols.revision import scoring as rv_scoring

FAMILIES: dict[str, Callable] = {**cb_scoring.FAMILIES, **cq_scoring.FAMILIES, **mc_scoring.FAMILIES,
                                 **rv_scoring.FAMILIES}
# family -> its bootstrap interval function (records, value, settings) -> (low, high) or None
INTERVALS: dict[str, Callable] = {**cb_scoring.INTERVALS, **cq_scoring.INTERVALS, **mc_scoring.INTERVALS,
                                  **rv_scoring.INTERVALS}

