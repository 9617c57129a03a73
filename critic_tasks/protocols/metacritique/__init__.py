"""MetaCritique (Sun et al. 2024, *The Critique of Critique*, arXiv:2401.04518): is a critique factual, and does it
cover what matters?

load (``data``) -> the critic writes a critique (``prompts``) -> a judge extracts its atomic information units,
checks each for factuality (precision) and checks each reference unit for entailment (recall) (``judge``,
``judge_prompts``) -> P/R/F1 macro and micro (``scoring``; ``core.metrics.prf``). ``annotations`` aggregates the
released human labels (``critic-eval metacritique-score``); ``calibration`` checks a judge against them.
"""
