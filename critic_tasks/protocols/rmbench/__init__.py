"""RM-Bench (Liu et al. 2025, arXiv:2410.16184) for generative judges: does a judge pick the better response whatever
the styles of the two?

load (``data``: each prompt's three chosen and three rejected responses in three styles -> 3 x 3 comparisons, each
in both orders) -> RewardBench's v1 judge prompt, read from the authors' file (``prompts``) -> the ``[[A]]`` /
``[[B]]`` reading, the pair rule, and the authors' ``compute_accuracy``: hard, normal, easy, per domain and the mean
of the domains (``scoring``); the style gap (easy - hard) beside it.
"""
