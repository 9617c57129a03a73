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
from collections import defaultdict
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


# the blind features a critic can measure without reading: how many steps the solution has, and its characters
LENGTHS = {"steps": lambda d: int(d["n_steps"]),
           "characters": lambda d: sum(len(str(s)) for s in d.get("steps") or ())}


def _positional_answers(docs: Sequence[dict]) -> np.ndarray:
    """Each positional rule's answer to every item (rows: rules, columns: items): step k (the last step where the
    solution has fewer, k = 0 .. the most steps less one) and the j-th step from the end (the first where it has
    fewer, j likewise). A rule that answers outside the steps is never right, so these clipped rules lose nothing."""
    steps = np.asarray([d["n_steps"] for d in docs])
    reach = np.arange(int(steps.max()))[:, None]
    return np.concatenate([np.minimum(reach, steps - 1), np.maximum(steps - 1 - reach, 0)])


def _harmonic(a: float, b: float) -> float:
    return 2 * a * b / (a + b) if a + b > 0 else 0.0


def _best_on_hull(points: np.ndarray) -> float:
    """The largest harmonic mean of (a, b) over the convex hull of ``points`` (rows (a, b) in [0, 1]^2). The harmonic
    mean grows in both and is concave, so its maximum lies on the hull's upper boundary: on each of its edges the
    maximum is where a' b^2 + b' a^2 = 0 (the derivative along the edge), clamped to the edge."""
    order = np.lexsort((-points[:, 1], points[:, 0]))
    upper: list[tuple[float, float]] = []
    for a, b in points[order]:
        while len(upper) >= 2 and ((upper[-1][0] - upper[-2][0]) * (b - upper[-2][1])
                                   - (upper[-1][1] - upper[-2][1]) * (a - upper[-2][0])) >= 0:
            upper.pop()
        upper.append((float(a), float(b)))
    best = max(_harmonic(a, b) for a, b in upper)
    for (a0, b0), (a1, b1) in zip(upper, upper[1:]):
        da, db = a1 - a0, b1 - b0
        if da > 0 and db < 0:
            t = (math.sqrt(-db) * a0 - math.sqrt(da) * b0) / (math.sqrt(da) * db - math.sqrt(-db) * da)
            t = min(1.0, max(0.0, t))
            best = max(best, _harmonic(a0 + t * da, b0 + t * db))
    return best


def best_blind(docs: Sequence[dict]) -> dict[str, float]:
    """The best scores (x100) of a stated family of critics that read nothing of an item but its length: -1 on a
    share p(x) of the items, the others one positional rule (step k, k = 0, 1, ..., the last step where there are
    fewer; or the j-th step from the end, j = 0: the last, the first step where there are fewer), where x is a
    length of the solution (its number of steps, or its characters: ``LENGTHS``) and p any monotone function of it
    (non-decreasing or non-increasing, values in [0, 1]; the share drawn blind to the content, e.g. by a hash).
    Constant answers, the mixtures of -1 and one positional rule at any share (p constant, the issue-44 family) and
    every threshold on a length (-1 on the longer or on the shorter solutions) are members.

    Exact: with the rule fixed, the expected accuracies (error, correct) are linear in p, and a monotone p is a
    convex combination of the thresholds' indicators (its level sets: -1 on the items with x at least t, or at most
    t), so the accuracies the members reach are the convex hull of the thresholds' points, and F1 (their harmonic
    mean, increasing and concave) peaks on its upper boundary (``_best_on_hull``). With p constant this is the old
    closed form, 2 e / (1 + sqrt(e))^2 at p = sqrt(e) / (1 + sqrt(e)), e the share of erroneous items the best rule
    names. The F1 of expected accuracies bounds a randomised member's expected F1 from above (concavity) and is a
    deterministic member's F1, so a drawn blind critic stays below the line up to its sampling noise."""
    errors = [d for d in docs if d["label"] != NO_ERROR]
    if not errors or len(errors) == len(docs):
        return {}
    n_err, n_cor = len(errors), len(docs) - len(errors)
    labels = np.asarray([d["label"] for d in docs])
    hit = (_positional_answers(docs) == labels) & (labels != NO_ERROR)  # rule x item: names the erroneous step
    correct = (labels == NO_ERROR).astype(float)
    e = float(hit.sum(axis=1).max()) / n_err
    best = 0.0
    for length in LENGTHS.values():
        x = np.asarray([length(d) for d in docs], dtype=float)
        for direction in (1.0, -1.0):
            order = np.argsort(direction * x, kind="stable")
            xs = direction * x[order]
            ends = np.flatnonzero(np.append(xs[1:] != xs[:-1], True)) + 1  # where each run of equal lengths ends
            cut_correct = np.concatenate([[0.0], np.cumsum(correct[order])[ends - 1]]) / n_cor
            for rule_hits in np.unique(hit[:, order], axis=0):
                hits = np.concatenate([[0.0], np.cumsum(rule_hits)[ends - 1]])
                # -1 on the items before each cut: correct accuracy their correct share, error accuracy the hits after
                points = np.column_stack([(hits[-1] - hits) / n_err, cut_correct])
                best = max(best, _best_on_hull(points))
    return {"error_accuracy": 100.0 * e, "correct_accuracy": 100.0, "f1": 100.0 * best}


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
