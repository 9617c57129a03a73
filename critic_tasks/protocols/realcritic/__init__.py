"""RealCritic (Tang et al. 2025, arXiv:2501.14492): is a critique good enough to fix the solution it critiques?

load (``data``: eight tasks, each item a question, its gold answer and one model's solution with the answer it
reached and whether that answer was right) -> the critic critiques the solution and writes a corrected final answer
in ``\\boxed{}`` (``prompts``, one turn: the paper's critic-and-correct, cross-critique setting) -> parse and grade
the corrected answer against the gold (``scoring``: math-verify through ``core.answers``; the option letter for the
multiple-choice tasks) -> accuracy x100 per task and their average, with how often a correct solution was broken
and a wrong one fixed, and the parse rate beside it.
"""
