"""ProcessBench's chance lines: the exact expected scores of three critics that read nothing.

* ``always_no_error``: answers -1 throughout: every correct item right, every erroneous one wrong (F1 0).
* ``always_first_step``: answers 0 throughout: right on the erroneous items whose first step is already wrong.
* ``always_last_step``: answers n-1 throughout (what a reply boxing every index is read as: the last box counts):
  right on the erroneous items whose only wrong step is the last.
* ``uniform_step``: per item, one of -1, 0, ..., n-1 (n the item's steps), each with probability 1 / (n + 1).

The accuracies are means of independent per-item hits, so their expectations are means of the hit probabilities.
F1 is not linear: its expectation is a sum over the joint distribution of the two hit counts. Each count is a sum
of independent Bernoulli variables with unequal probabilities (a Poisson binomial), whose distribution is built
exactly by convolving the items one at a time; the two classes are independent, so

    E[F1] = sum_k sum_l P(K_err = k) P(K_cor = l) * H(100 k / n_err, 100 l / n_cor),   H = harmonic mean (0 at 0, 0)

``average_f1``'s expectation is the mean of the subsets' expected F1 (linearity). ``floor_line`` is the floor of a
task's headline metrics in ``critic_tasks.chance``'s shape; ``canned_replies`` the replies of its canned critics in
ProcessBench's answer form, for running them through the scorer.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from critic_tasks.protocols.processbench.scoring import NO_ERROR

CRITICS = ("always_no_error", "always_first_step", "always_last_step", "uniform_step")


def _hit_probabilities(critic: str, doc: dict) -> float:
    label, n_steps = doc["label"], doc["n_steps"]
    if critic == "always_no_error":
        return float(label == NO_ERROR)
    if critic == "always_first_step":
        return float(label == 0)
    if critic == "always_last_step":
        return float(label == n_steps - 1)
    if critic == "uniform_step":
        return 1.0 / (n_steps + 1)
    raise ValueError(f"unknown chance critic {critic!r}; expected one of {', '.join(CRITICS)}")


def poisson_binomial(probabilities: Sequence[float]) -> np.ndarray:
    """P(K = k), k = 0..n, for K the number of successes of independent trials with these probabilities.

    >>> poisson_binomial([0.5, 0.5]).tolist()
    [0.25, 0.5, 0.25]
    """
    pmf = np.ones(1)
    for p in probabilities:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def expected_f1(error_probabilities: Sequence[float], correct_probabilities: Sequence[float]) -> float:
    """E[F1] x100 for independent per-item hits with these probabilities (erroneous items, correct items)."""
    n_err, n_cor = len(error_probabilities), len(correct_probabilities)
    p_err, p_cor = poisson_binomial(error_probabilities), poisson_binomial(correct_probabilities)
    a1 = 100.0 * np.arange(n_err + 1)[:, None] / n_err
    a2 = 100.0 * np.arange(n_cor + 1)[None, :] / n_cor
    total = a1 + a2
    h = np.divide(2.0 * a1 * a2, total, out=np.zeros_like(total), where=total > 0)
    return float(p_err @ h @ p_cor)


def expected_subset(critic: str, docs: Sequence[dict]) -> dict[str, float]:
    """``error_accuracy``, ``correct_accuracy`` and ``f1`` the critic is expected to score on these documents (one
    subset; a class without items leaves its accuracy and F1 out)."""
    errors = [_hit_probabilities(critic, d) for d in docs if d["label"] != NO_ERROR]
    corrects = [_hit_probabilities(critic, d) for d in docs if d["label"] == NO_ERROR]
    out = {}
    if errors:
        out["error_accuracy"] = 100.0 * sum(errors) / len(errors)
    if corrects:
        out["correct_accuracy"] = 100.0 * sum(corrects) / len(corrects)
    if errors and corrects:
        out["f1"] = expected_f1(errors, corrects)
    return out


def expected_chance(docs: Sequence[dict]) -> dict[str, dict[str, float]]:
    """critic -> metric -> exact expected value on ``docs`` (documents of ``data.load_task_docs``, any subsets):
    ``error_accuracy`` / ``correct_accuracy`` / ``f1`` over all the documents given (as the metrics pool the records
    they get: pass one subset's documents for a subset's line) and ``average_f1``, the mean of the subsets' F1."""
    by_subset: dict[str, list[dict]] = defaultdict(list)
    for doc in docs:
        by_subset[doc["subset"]].append(doc)
    out = {}
    for critic in CRITICS:
        values = expected_subset(critic, docs)
        subset_f1 = [v["f1"] for v in (expected_subset(critic, ds) for ds in by_subset.values()) if "f1" in v]
        if subset_f1:
            values["average_f1"] = sum(subset_f1) / len(subset_f1)
        out[critic] = values
    return out


# ----------------------------------------------------------------------------- the best blind critic, exactly

BLIND = "best_blind_mixture"  # the family's best member, in the floors (``best_blind``)


def best_blind(docs: Sequence[dict]) -> dict[str, float]:
    """The best scores (x100) of a stated family of critics that read nothing of an item: a share p of the items
    (any share, chosen blind to the content, e.g. by a hash) answered -1, the others by one positional rule: step k
    (k = 0, 1, ...) or the j-th step from the end (j = 0: the last). Constant answers (p = 0 or 1) and the mixtures
    of -1 and one constant step are members.

    With e the share of erroneous items the best rule names (``error_accuracy``'s floor, at p = 0), the expected
    accuracies are (1 - p) e and p, and their harmonic mean 2 p (1 - p) e / (p + (1 - p) e) is largest at
    p = sqrt(e) / (1 + sqrt(e)), where it is 2 e / (1 + sqrt(e))^2: the F1 floor, exactly (not at an endpoint: either
    constant alone scores 0). The F1 of expected accuracies bounds such a critic's expected F1 from above (the
    harmonic mean is concave), so a drawn blind critic stays below the line up to its sampling noise."""
    errors = [d for d in docs if d["label"] != NO_ERROR]
    if not errors or len(errors) == len(docs):
        return {}
    from_start = Counter(d["label"] for d in errors)
    from_end = Counter(d["n_steps"] - 1 - d["label"] for d in errors)
    e = max(max(from_start.values()), max(from_end.values())) / len(errors)
    return {"error_accuracy": 100.0 * e, "correct_accuracy": 100.0, "f1": 100.0 * 2 * e / (1 + math.sqrt(e)) ** 2}


def floor_line(docs: Sequence[dict], headline: Sequence[str]) -> tuple[dict, dict, dict]:
    """What ``critic_tasks.chance._chance`` returns for a task: (headline metric -> the best expected value of the
    chance critics and of the best blind mixture (``best_blind``), metric -> the critic that sets it,
    critic -> its expected values). ``parse_rate`` has no floor.

    The first of ``CRITICS`` wins a tie (F1 is 0 for both constant critics)."""
    floors = expected_chance(docs)
    by_subset: dict[str, list[dict]] = defaultdict(list)
    for doc in docs:
        by_subset[doc["subset"]].append(doc)
    blind = best_blind(docs)
    subset_f1 = [v["f1"] for v in (best_blind(ds) for ds in by_subset.values()) if "f1" in v]
    if subset_f1:
        blind["average_f1"] = sum(subset_f1) / len(subset_f1)
    floors[BLIND] = blind
    chance: dict[str, float] = {}
    by: dict[str, str] = {}
    for key in headline:
        candidates = {critic: values[key] for critic, values in floors.items() if key in values}
        if candidates:
            best = max(candidates, key=candidates.__getitem__)
            chance[key], by[key] = candidates[best], best
    return chance, by, floors


def canned_replies(docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    """``critic_tasks.chance``'s canned critics in ProcessBench's answer form, one reply per document: ``constant``
    always -1 (``always_no_error``), ``always_first`` step 0 (``always_first_step``), ``random`` a uniform step
    over -1..n-1 drawn from ``rng`` (``uniform_step``), ``every_label`` every index -1..n-1 boxed in one reply (the
    last box is read: the last step, ``always_last_step``)."""
    return {"constant": [f"\\boxed{{{NO_ERROR}}}" for _ in docs],
            "always_first": ["\\boxed{0}" for _ in docs],
            "random": [f"\\boxed{{{rng.randrange(NO_ERROR, d['n_steps'])}}}" for d in docs],
            "every_label": [" ".join(f"\\boxed{{{i}}}" for i in range(NO_ERROR, d["n_steps"])) for d in docs]}


# ``critic_tasks.chance``'s three steps for a protocol (``registry.Protocol.chance``)


def labelled(kind, docs: Sequence[dict]) -> bool:
    return any(d.get("label") is not None for d in docs)


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return canned_replies(docs, rng)


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    return floor_line(docs, kind.headline)
