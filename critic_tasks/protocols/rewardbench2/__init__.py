"""RewardBench 2 (Malik et al. 2025, arXiv:2506.01937) for generative judges: the authors' v2 prompts (four-way
choice, 1-10 ratings; ``authors_prompts``, read at run time from their ``generative_v2.py``), their reading of the
replies and their scoring (``run_generative_v2.py``; the Ties subset as ``utils.py``'s ``process_single_model``)."""
