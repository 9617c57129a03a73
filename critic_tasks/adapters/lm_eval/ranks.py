"""Data-parallel lm-eval runs (``accelerate launch -m lm_eval ...``, several ranks): the same numbers as one process.

lm-eval gives rank r the documents r, r + W, r + 2W, ... (W ranks); each rank generates, filters (our judge and
sandbox run there, on that rank's documents only) and calls ``process_results`` for its own documents; rank 0
then gathers every rank's per-document values, key by key, and aggregates. Three things in that path would change
our numbers, and are handled here:

* **Padding.** A rank with fewer requests repeats its last one until every rank has as many (lm-eval pads so that
  the ranks stay in step); the extra replies land on that last request. ``own_replies`` drops them before a filter
  that reads every reply (the sandbox checks, self-consistency), so no item is checked twice or gets extra samples.
* **Key sets.** Rank 0 gathers the metric keys *it* has and looks each up in every rank's values: a key that only
  some items feed (``spearman_low``: low-quality items) is missing on a rank without such an item, and the gather
  fails (KeyError), or drops the key. Under a process group, ``every_key`` gives every document every key, the
  keys it does not feed holding an empty slot.
* **Order.** The gathered values come rank by rank, not document by document; a bootstrap interval depends on the
  order of its rows. Each value carries its rank, and ``in_doc_order`` (the first step of every aggregation) puts
  the rows back in document order and drops the empty slots.

Outside a process group (one process: the usual run), nothing here runs: the hooks call these functions only under
one (``TaskFunctions.process_group``), or, for the aggregation, only on rows ``every_key`` wrapped.
"""

from __future__ import annotations

import logging

# the wrapping and the document order live in the core: reports read the rows back without this adapter
from critic_tasks.core.rank_rows import SLOT, every_key, in_doc_order, row_of  # noqa: F401

log = logging.getLogger("critic_tasks")


def own_replies(resps: list, repeats: int) -> list:
    """Each instance's replies less lm-eval's data-parallel padding: the first ``repeats`` (the task's ``repeats``).
    Padding only ever lengthens one instance (a rank's last request); where several have more replies than
    ``repeats``, the task samples more than the filter was told (a hand-written YAML): every reply is kept."""
    longer = sum(len(r) > repeats for r in resps)
    if longer > 1:
        log.warning("critic_tasks: %d items have more than %d replies (the filter's repeats); all are kept: give "
                    "the filter the task's repeats", longer, repeats)
        return [list(r) for r in resps]
    return [list(r)[:repeats] for r in resps]
