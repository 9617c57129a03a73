"""Precision / recall / F1 of critiques over atomic information units (MetaCritique, Sun et al. 2024), x100.

Each critique c has precision labels p_c (one per AIU of the critique: is it factual?) and recall labels r_c (one
per AIU of the item's reference critique: is it entailed by the critique?).

    precision(c) = |{true in p_c}| / |p_c|        recall(c) = |{true in r_c}| / |r_c|
    F1(x, y)     = 2xy / (x + y), and 0 when x = 0 or y = 0

    macro (critique level): P = mean_c precision(c), R = mean_c recall(c), F1 = mean_c F1(precision(c), recall(c))
    micro (AIU level):      P = sum_c |{true in p_c}| / sum_c |p_c|, R likewise, F1 = F1(P, R)

These are the paper's Meta-P / Meta-R / Meta-F1 (Table 6 reports both levels). The paper leaves a critique with no
AIU open (its own script divides by zero); our rule: an empty label list scores 0 (no unit, nothing credited), it
still counts as a critique in the macro means, adds no unit to the micro pools, and is counted in
``empty_precision`` / ``empty_recall``. A micro pool with no unit at all is 0 too.

Cite as::

    @article{sun2024metacritique,
      title={The Critique of Critique},
      author={Sun, Shichao and Li, Junlong and Yuan, Weizhe and Yuan, Ruifeng and Li, Wenjie and Liu, Pengfei},
      journal={arXiv preprint arXiv:2401.04518},
      year={2024}
    }
"""

from __future__ import annotations

from typing import Sequence


def f1(p: float, r: float) -> float:
    """Harmonic mean; 0 when either side is 0 (the paper's rule).

    >>> round(f1(0.5, 1.0), 4), f1(0.0, 1.0)
    (0.6667, 0.0)
    """
    return 0.0 if p == 0 or r == 0 else 2 * p * r / (p + r)


def _share(labels: Sequence[bool]) -> float:
    return sum(map(bool, labels)) / len(labels) if labels else 0.0


def precision_recall_f1(precision_labels: Sequence[Sequence[bool]],
                        recall_labels: Sequence[Sequence[bool]]) -> dict[str, float]:
    """Macro and micro P/R/F1 x100 over aligned per-critique label lists, with the counts behind them.

    Returns ``precision``, ``recall``, ``f1`` (macro), ``precision_micro``, ``recall_micro``, ``f1_micro``,
    ``critiques``, ``empty_precision``, ``empty_recall``, ``precision_units``, ``recall_units``.

    Critique 1: precision 1/2, recall 1/1; critique 2: precision 1/1, recall 0/2. Macro: P = 75, R = 50, F1 =
    mean(2/3, 0); micro: P = 2/3, R = 1/3, F1 = 2 * (2/3) * (1/3) / 1 = 4/9:

    >>> values = precision_recall_f1([[True, False], [True]], [[True], [False, False]])
    >>> {k: round(v, 2) for k, v in values.items() if k in ("precision", "recall", "f1")}
    {'precision': 75.0, 'recall': 50.0, 'f1': 33.33}
    >>> {k: round(v, 2) for k, v in values.items() if k.endswith("_micro")}
    {'precision_micro': 66.67, 'recall_micro': 33.33, 'f1_micro': 44.44}
    """
    if len(precision_labels) != len(recall_labels):
        raise ValueError(f"{len(precision_labels)} precision label lists vs {len(recall_labels)} recall label lists")
    n = len(precision_labels)
    ps = [_share(p) for p in precision_labels]
    rs = [_share(r) for r in recall_labels]
    p_units = sum(len(p) for p in precision_labels)
    r_units = sum(len(r) for r in recall_labels)
    p_micro = sum(sum(map(bool, p)) for p in precision_labels) / p_units if p_units else 0.0
    r_micro = sum(sum(map(bool, r)) for r in recall_labels) / r_units if r_units else 0.0
    mean = (lambda xs: sum(xs) / len(xs)) if n else (lambda xs: 0.0)
    return {
        "precision": 100 * mean(ps), "recall": 100 * mean(rs), "f1": 100 * mean(list(map(f1, ps, rs))),
        "precision_micro": 100 * p_micro, "recall_micro": 100 * r_micro, "f1_micro": 100 * f1(p_micro, r_micro),
        "critiques": float(n), "empty_precision": float(sum(not p for p in precision_labels)),
        "empty_recall": float(sum(not r for r in recall_labels)),
        "precision_units": float(p_units), "recall_units": float(r_units),
    }
