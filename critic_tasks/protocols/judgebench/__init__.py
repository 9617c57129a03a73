"""JudgeBench (Tan et al. 2024, arXiv:2410.12784): can a judge tell which of two answers is objectively right?

load (``data``: response pairs from GPT-4o or Claude-3.5-Sonnet, one right and one wrong, labelled ``A>B`` /
``B>A``) -> the critic compares the two in both orders and ends with an Arena-Hard verdict label (``prompts``) ->
parse and record (``scoring``) -> the authors' pair score (+1 per order agreeing with the label, -1 per order
contradicting it; correct if > 0), accuracy x100 per source (knowledge, reasoning, math, coding) and overall,
with the inconsistency rate and the parse rate beside it.
"""
