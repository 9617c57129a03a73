"""pass@k: the unbiased estimator of Chen et al. (2021) as one pure function, laid out like a HF ``evaluate`` metric."""

from __future__ import annotations

import math

_CITATION = """\
@article{chen2021codex,
  title={Evaluating Large Language Models Trained on Code},
  author={Mark Chen and Jerry Tworek and Heewoo Jun and Qiming Yuan and others},
  year={2021},
  eprint={2107.03374},
  archivePrefix={arXiv},
}
"""

_DESCRIPTION = """\
The probability that at least one of k samples, drawn without replacement from n generated samples of which c are
correct, is correct:

    pass@k = 1 - C(n - c, k) / C(n, k)

computed as the numerically stable product 1 - prod_{i = n - c + 1}^{n} (1 - k / i), which never forms the huge
binomial coefficients. Averaging it over problems gives the benchmark's pass@k.
"""

_KWARGS_DESCRIPTION = """\
Args:
    n: number of samples generated for the problem (n >= 1).
    c: number of those samples that are correct (0 <= c <= n).
    k: the k of pass@k (1 <= k <= n).
Returns:
    float in [0, 1].
Examples:
    >>> round(pass_at_k(n=10, c=3, k=1), 6)
    0.3
    >>> pass_at_k(n=5, c=0, k=2)
    0.0
    >>> pass_at_k(n=5, c=4, k=2)
    1.0
"""


def pass_at_k(n: int, c: int, k: int) -> float:
    if not (n >= 1 and 0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass_at_k needs n >= 1, 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:  # every k-subset contains a correct sample
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


pass_at_k.__doc__ = _DESCRIPTION + "\n" + _KWARGS_DESCRIPTION + "\nCite as:\n\n" + _CITATION
