"""CriticBench's canned critics and floors (``critic_tasks.chance``): ratings 1-7 (feedback ``Decision: x``,
meta-feedback ``Score: x``), verdicts on a pair asked in both orders (``Decision: A``), and corrections run through
the sandbox (the response unchanged, a constant program of the same shape, a random answer, every gold answer).
The judge-scored kinds' canned critiques are the orchestration's own (any judge-scored task's)."""

from __future__ import annotations

import ast
import random
from typing import Sequence

from critic_tasks.core import blind_critics
from critic_tasks.core.metrics import pairwise
from critic_tasks.protocols.criticbench.scoring import LIKERT_HIGH, LIKERT_LOW

LABELS = {"feedback": "feedback_score", "meta": "meta_feedback_score", "comparison": "preference"}
RATED = {"feedback": "generation", "meta": "evaluated_feedback"}  # the text a rating task's critic rates
MIXED_CONSTANTS = "two constant ratings mixed blind (any share)"


def labelled(kind, docs: Sequence[dict]) -> bool:
    key = LABELS.get(kind.data_dimension)
    return key is None or any(d.get(key) is not None for d in docs)


def _form(kind) -> str:
    return "Score: {}" if kind.data_dimension == "meta" else "Decision: {}"


def _shown(doc: dict) -> tuple[str, str]:
    return str(doc.get("generation_a") or ""), str(doc.get("generation_b") or "")


def _stubbed(code: str, value: str) -> str:
    """``code`` with every function's body replaced by ``return value`` (a constant program of the same shape)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return f"def solution(*args, **kwargs):\n    return {value}\n"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = [ast.Return(ast.parse(value, mode="eval").body)]
    return ast.unparse(tree)


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _correction_replies(docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {k: [] for k in ("constant", "always_first", "random", "every_label")}
    golds = [str(d.get("ground_truth_answer") or "") for d in docs]
    for doc in docs:
        original = str(doc.get("generation") or "")
        guess = str(rng.randint(0, 1000))
        out["always_first"].append(original if doc["domain"] == "math_cot" else _fenced(original))
        if doc["domain"] == "math_cot":
            out["constant"].append("#### RESULT: 0")
            out["random"].append(f"#### RESULT: {guess}")
            out["every_label"].append("#### RESULT: " + ", ".join(g for g in golds if g) if any(golds) else "")
        else:
            out["constant"].append(_fenced(_stubbed(original, "None" if doc["domain"].startswith("code") else "0")))
            out["random"].append(_fenced(_stubbed(original, guess)))
            every = "(" + ", ".join(g for g in golds if g) + ",)" if any(golds) else "None"
            out["every_label"].append(_fenced(_stubbed(original, every if doc["domain"] == "math_pot" else "None")))
    return out


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    """The canned critics' replies; a rating task's also rate by length (``longer`` / ``shorter``: of every monotone
    map of length onto the 1-7 scale, the one with the best Spearman against the labels,
    ``blind_critics.best_length_ratings``)."""
    if kind.data_dimension == "correction":
        return _correction_replies(docs, rng)
    if kind.pairwise:
        return blind_critics.verdict_replies("Decision: {}".format, len(docs), rng)
    form = _form(kind)
    texts = [str(d.get(RATED[kind.data_dimension]) or "") for d in docs]
    return {**blind_critics.rating_replies(form, LIKERT_LOW, LIKERT_HIGH, len(docs), rng),
            **blind_critics.best_length_ratings(form, LIKERT_LOW, LIKERT_HIGH, texts,
                                                [_label(d.get(LABELS[kind.data_dimension])) for d in docs])}


def _label(value) -> float | None:
    """A document's human score as the scorer reads it (``float(gold)``), None where it has none."""
    return None if value is None else float(value)


def _pair_rules(kind, docs: Sequence[dict]) -> dict:
    """Each headline rate of a comparison as its per-pair rule (``core.metrics.pairwise``); the headline score is
    the loose rule under the toolkit protocol."""
    toolkit = any(d.get("protocol") == "toolkit" for d in docs)
    rules = {"accuracy": pairwise.pair_correct, "accuracy_loose": pairwise.pair_correct_loose,
             "consistency": lambda f, r, g: pairwise.pair_consistent(f, r)}
    rules["score"] = rules["accuracy_loose" if toolkit else "accuracy"]
    return {key: rule for key, rule in rules.items() if key in kind.headline}


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    """(headline metric -> floor, metric -> the critic that sets it, floor critic -> its expected values)."""
    if kind.pairwise:
        pairs, rules = blind_critics.shown_pairs(docs, _shown), _pair_rules(kind, docs)
        floors = blind_critics.expected_pairwise(pairs, rules)
        # the whole family of verdict tables (slot, length, a hashed order of the pair); no mixture beats its best
        floors.update(blind_critics.best_tables(blind_critics.blind_table_values(pairs, rules)))
        return (*blind_critics.best_of(floors), floors)
    if kind.data_dimension == "correction":
        # deterministic content-blind corrections, run through the sandbox: the response unchanged, a constant
        chance: dict[str, float] = {}
        by: dict[str, str] = {}
        for key in kind.headline:
            ran = {name: values[name][key] for name in ("always_first", "constant") if key in values.get(name, {})}
            if key in ("pass_rate", "score") and ran:
                best = max(ran, key=ran.__getitem__)
                chance[key], by[key] = ran[best], {"always_first": "unchanged", "constant": "constant"}[best]
        return chance, by, {}
    keys = [k for k in kind.headline if k in ("spearman", "score")]
    chance, by = blind_critics.rating_floor(keys, values)
    # two constant ratings mixed blind at any share: exactly (each draw size's expected Spearman; all 0)
    labels = [y for y in (_label(d.get(LABELS[kind.data_dimension])) for d in docs) if y is not None]
    mixed = max(blind_critics.two_constant_mixtures(labels))
    floors = {MIXED_CONSTANTS: {k: (mixed + 100) / 2 if k == "score" else mixed for k in keys}}
    for key, value in floors[MIXED_CONSTANTS].items():
        if value > chance[key]:
            chance[key], by[key] = value, MIXED_CONSTANTS
    return chance, by, floors
