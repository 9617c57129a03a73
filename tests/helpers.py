"""Test helpers shared by several test modules (one copy each)."""

from __future__ import annotations

from itertools import combinations


def summarize(grades) -> dict:
    """Hand-counted summary of a list of ``Grade``s: plain mean of the usable scores and the failures."""
    scores = [g.score for g in grades if g.score is not None]
    failed = [i for i, g in enumerate(grades) if g.score is None]
    return {"judge_score": sum(scores) / len(scores) if scores else None,
            "judge_parse_rate": 100.0 * len(scores) / len(grades) if grades else None,
            "n_failed": len(failed), "failed_indices": failed,
            "n_call_errors": sum(g.text is None for g in grades), "n_cached": sum(g.cached for g in grades)}


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k by enumeration: the share of k-subsets of n samples (the first c correct) holding a correct one."""
    subsets = list(combinations(range(n), k))
    return sum(any(i < c for i in subset) for subset in subsets) / len(subsets)


def scripted_lm(reply, tokenizer=None):
    """An lm-eval model whose answer to each prompt is ``reply(prompt)``; ``.prompts`` records what it was asked.

    With ``tokenizer`` (a transformers tokenizer), it renders chat prompts as lm-eval's ``hf`` model does
    (``--apply_chat_template``): the tokenizer's own chat template, with the generation prompt."""
    from lm_eval.api.model import LM

    class ScriptedLM(LM):
        def __init__(self):
            super().__init__()
            self.prompts: list[str] = []

        if tokenizer is not None:
            tokenizer_name = getattr(tokenizer, "name_or_path", "scripted")

            def apply_chat_template(self, chat_history, add_generation_prompt=True):
                return tokenizer.apply_chat_template(chat_history, tokenize=False,
                                                     add_generation_prompt=add_generation_prompt)

            def chat_template(self, chat_template=False):
                return tokenizer.chat_template

        def generate_until(self, requests, disable_tqdm=False):
            self.prompts += [r.args[0] for r in requests]
            return [reply(r.args[0]) for r in requests]

        def loglikelihood(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

    return ScriptedLM()
