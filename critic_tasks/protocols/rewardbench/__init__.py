"""RewardBench (Lambert et al. 2024, arXiv:2403.13787) for generative judges: the authors' v1 pairwise prompts
(``authors_prompts``, read at run time from their ``generative.py``) and their ``[[A]]`` / ``[[B]]`` reading."""
