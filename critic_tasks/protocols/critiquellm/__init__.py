"""CritiqueLLM (Ke et al. 2023, arXiv:2311.18702): do a critic's scores agree with humans?

load (``data``: AlignBench samples with human scores) -> the critic rates one response 1-10 with ``[[x]]``, or
picks the better of two in both orders (``prompts``) -> parse and record (``scoring``) -> text-level and
system-level Pearson / Spearman / Kendall, per-category breakdown, pairwise agreement (``core.metrics``).
"""
