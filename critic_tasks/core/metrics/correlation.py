"""Human-agreement correlations of a critic's scores (CritiqueLLM, Ke et al. 2023), x100.

Three coefficients, each from ``scipy.stats`` (``pearsonr``, ``spearmanr``, ``kendalltau``; Kendall's tau-b):

* ``correlations(x, y)``: the three over two aligned lists; None for each when undefined (fewer than two items,
  or a constant side).
* text level (``text_level``): group the items by question (``groups``: one key per item), correlate critic and
  human scores over each question's responses, and average each coefficient over the questions. A question with
  fewer than two responses, or whose human scores are constant (the data leave the coefficients undefined), is
  skipped and counted (``skipped``). A question where the *critic* rates every response alike counts as 0 (it
  told the responses apart no better than chance) and is counted (``constant``): skipping it, as the released
  script's NaN rule does, let a critic abstain (one rating, or no readable rating) on exactly the questions it would
  get wrong and average only the rest, 0 -> 100. ``questions`` says how many were averaged (constant ones
  included). With none left, the values are 0 (never NaN), flagged by ``questions`` = 0.
* system level (``system_level``): the mean critic score and the mean human score of each generating model (the
  ``groups``), correlated across models. Undefined (fewer than two models, or constant means) reports 0 with
  ``defined`` = 0.

The paper's released script skips a question when its Spearman is NaN; the paper does not say why, and we skip
only what the data leave undefined (see above).

Cite as::

    @article{ke2023critiquellm,
      title={CritiqueLLM: Towards an Informative Critique Generation Model for Evaluation of Large Language Model Generation},
      author={Ke, Pei and Wen, Bosi and Feng, Zhuoer and Liu, Xiao and Lei, Xuanyu and Cheng, Jiale and Wang, Shengyuan and
              Zeng, Aohan and Dong, Yuxiao and Wang, Hongning and Tang, Jie and Huang, Minlie},
      journal={arXiv preprint arXiv:2311.18702},
      year={2023}
    }
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from typing import Hashable, Sequence

COEFFICIENTS = ("pearson", "spearman", "kendall")


def correlations(x: Sequence[float], y: Sequence[float]) -> dict[str, float] | None:
    """Pearson, Spearman and Kendall x100, or None when undefined (n < 2 or a constant side).

    Ranks (1, 2, 3) against (1, 3, 2): Pearson = Spearman = 0.5; of the 3 pairs of items 2 are concordant and 1
    discordant, so Kendall's tau = (2 - 1) / 3:

    >>> {k: round(v, 2) for k, v in correlations([1, 2, 3], [1, 3, 2]).items()}
    {'pearson': 50.0, 'spearman': 50.0, 'kendall': 33.33}
    >>> correlations([1, 1], [1, 2]) is None
    True
    """
    if len(x) != len(y):
        raise ValueError(f"{len(x)} vs {len(y)} values")
    if not all(math.isfinite(v) for v in (*x, *y)):
        raise ValueError("non-finite score in a correlation: scores must be finite (an unreadable score is unparsed)")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    from scipy import stats  # here, not at import: scipy.stats alone takes ~1 s to import, and a run that
    # reports no correlation (every CriticBench task) never needs it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {"pearson": stats.pearsonr(x, y)[0], "spearman": stats.spearmanr(x, y)[0], "kendall": stats.kendalltau(x, y)[0]}
    if any(math.isnan(v) for v in out.values()):
        return None
    return {k: 100.0 * float(v) for k, v in out.items()}


def per_group(pred: Sequence[float], human: Sequence[float], groups: Sequence[Hashable]) -> dict:
    """Group (question) -> its coefficients, or None where undefined, in first-seen order.

    >>> groups = per_group([1, 2, 5], [2, 1, 5], ["q1", "q1", "q2"])
    >>> {k: round(v, 9) for k, v in groups["q1"].items()}, groups["q2"]
    ({'pearson': -100.0, 'spearman': -100.0, 'kendall': -100.0}, None)
    """
    by_q: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by_q[g].append(i)
    return {g: correlations([pred[i] for i in idx], [human[i] for i in idx]) for g, idx in by_q.items()}


CONSTANT = "constant"  # per_question's mark of a question the critic rated alike throughout (counted as 0)


def per_question(pred: Sequence[float], human: Sequence[float], groups: Sequence[Hashable]) -> dict:
    """Question -> its coefficients; a question the critic rated alike throughout (two or more responses, human
    scores that differ) -> ``CONSTANT``, to count as 0; a question the data leave undefined -> None.

    >>> per_question([4, 4, 1, 2, 3], [1, 2, 2, 1, 5], ["q1", "q1", "q2", "q2", "q3"])["q1"]
    'constant'
    """
    by_q: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by_q[g].append(i)
    out = {}
    for g, idx in by_q.items():
        x, y = [pred[i] for i in idx], [human[i] for i in idx]
        if len(idx) >= 2 and len(set(y)) >= 2 and len(set(x)) < 2:
            out[g] = CONSTANT
        else:
            out[g] = correlations(x, y)
    return out


def question_values(per_q: dict, coefficient: str) -> list[float]:
    """One coefficient of every averaged question, in ``per_q``'s order: a constant critic's 0 included."""
    return [0.0 if c == CONSTANT else c[coefficient] for c in per_q.values() if c is not None]


def text_level(pred: Sequence[float], human: Sequence[float], groups: Sequence[Hashable]) -> dict[str, float]:
    """Mean over questions of the per-question coefficients; ``questions`` averaged, of which ``constant`` (the
    critic rated alike: 0), ``skipped`` questions (undefined by the data).

    q1 as in ``correlations`` (50, 50, 33.33), q2 reversed (-100 each), q3 has one response (skipped), q4 rated
    alike by the critic (0 each):

    >>> values = text_level([1, 2, 3, 1, 2, 4, 6, 6], [1, 3, 2, 2, 1, 4, 1, 2], ["q1"] * 3 + ["q2"] * 2 + ["q3"] + ["q4"] * 2)
    >>> {k: round(v, 2) for k, v in values.items()}
    {'pearson': -16.67, 'spearman': -16.67, 'kendall': -22.22, 'questions': 3.0, 'constant': 1.0, 'skipped': 1.0}
    """
    per_q = per_question(pred, human, groups)
    out = {}
    for k in COEFFICIENTS:
        values = question_values(per_q, k)
        out[k] = sum(values) / len(values) if values else 0.0
    used = sum(c is not None for c in per_q.values())
    out.update(questions=float(used), constant=float(sum(c == CONSTANT for c in per_q.values())),
               skipped=float(len(per_q) - used))
    return out


def system_level(pred: Sequence[float], human: Sequence[float], groups: Sequence[Hashable]) -> dict[str, float]:
    """Coefficients across groups (models) of their mean scores; ``models`` counted, ``defined`` 1 or 0.

    Model means: critic (1.5, 3.5, 5.0), humans (2.0, 3.0, 2.5); ranks (1, 2, 3) against (1, 3, 2) as in
    ``correlations``; Pearson: deviations (-11/6, 1/6, 5/3) and (-1/2, 1/2, 0), 1 / sqrt(37/6 * 1/2) = 0.5695:

    >>> values = system_level([1, 2, 3, 4, 5], [2, 2, 3, 3, 2.5], ["m1", "m1", "m2", "m2", "m3"])
    >>> {k: round(v, 2) for k, v in values.items()}
    {'pearson': 56.95, 'spearman': 50.0, 'kendall': 33.33, 'models': 3.0, 'defined': 1.0}
    """
    by_m: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by_m[g].append(i)
    means_pred = [sum(pred[i] for i in idx) / len(idx) for idx in by_m.values()]
    means_human = [sum(human[i] for i in idx) / len(idx) for idx in by_m.values()]
    c = correlations(means_pred, means_human)
    out = dict(c) if c else {k: 0.0 for k in COEFFICIENTS}
    out.update(models=float(len(by_m)), defined=float(c is not None))
    return out
