"""ProcessBench (Zheng et al. 2024, arXiv:2412.06559): can a critic find the first wrong step of a math solution?

load (``data``: problems with their solutions split into steps, label = the earliest wrong step or -1) -> the critic
reads the tagged steps and answers one index in ``\\boxed{}`` (``prompts``) -> parse and record (``scoring``)
-> accuracy on the erroneous and on the correct solutions and their harmonic mean (F1) per subset,
averaged over subsets; the exact expectations of the chance critics (``chance``).
"""
