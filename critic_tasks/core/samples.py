"""Did the backend sample? The k replies of one item, compared.

A sampled task (CritiqueLLM's self-consistency, the correction's pass@k) asks each item k times. A backend that does
not vary them (a server that honours one fixed seed, a model served greedily whatever the request says) returns one
reply k times, and the metric silently rests on one sample. The records keep whether an item's k replies were all one
text (``identical``): the self-consistency record from the texts themselves, the correction record from a short
digest of each reply kept in its check outcome (the record keeps no reply text). The results count those items
(``identical_samples``) and the run says so in one warning line.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Iterable, Sequence

log = logging.getLogger("critic_tasks")


def digest(text: str | None) -> str:
    """A short fingerprint of one reply ('' for a failed call: there is no text to compare)."""
    return "" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def all_identical(keys: Sequence) -> bool:
    """k > 1 replies (or their digests), every one present and all the same. A failed call (None, or an empty
    digest) leaves the question open: such an item is not counted."""
    return len(keys) > 1 and all(k not in (None, "") for k in keys) and len(set(keys)) == 1


def warn_identical(records: Iterable) -> None:
    """One warning line when items of a sampled task got k identical replies (records with ``identical``)."""
    sampled = [r for r in records if r.n_samples > 1]
    same = sum(bool(getattr(r, "identical", False)) for r in sampled)
    if same:
        log.warning("critic_tasks: %d of %d items got %d identical samples: the backend returned one reply k times "
                    "(it did not sample; check do_sample / temperature and a fixed seed); pass@k and self-consistency "
                    "rest on fewer samples than asked", same, len(sampled), sampled[0].n_samples)
