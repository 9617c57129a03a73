"""RealCritic's chance line: critics that read nothing of the solution's quality, and the floor they set.

Canned critics (``critic_tasks.chance.CANNED``): ``always_first`` accepts the solution (boxes the answer it reached:
the accuracy before the critique, the paper's baseline; on the direct-CoT tasks, which show none, ``constant``'s
answer), ``constant`` boxes one fixed answer (option A; 0),
``random`` a random option letter or a random integer 0..100, ``every_label`` boxes every option at once (an
ambiguous box; for the math tasks a list of digits).

The floor of ``accuracy`` and ``incorrect_to_correct`` is the best expected value over a stated family of critics
that read nothing of the item's quality (issue 44.3): the copy-back critic (``always_first``), on the multiple-choice tasks every
answer that depends only on the shown choice (``best_shown_choice``), every constant answer
the data makes possible (``best_constants``: each option letter on the multiple-choice tasks; on the others every
distinct gold of the task, by text: a critic may know the task's distribution of answers, not the item's; a
constant equal to no gold hits only golds the grader equates with it), ``every_label``, and ``random``'s expected
value (its run is held to it within its sampling allowance). The constants are searched exactly by branch and bound
(``_task_best``): the text and number rules decide most (answer, gold) pairs at once; of the rest, each grader's
necessary condition (``scoring.could_match``) refuses, without the symbolic step, every pair none of that grader's
rules could accept: under the authors' rule ``authors_grading.could_equal`` runs their ``math_equal`` itself with
its sympy step replaced by what each of sympy's rules can still see of the two readings (their strings, numeric
values, kinds, values at one point with undefined functions such as u(t) given fixed values, the structure of sets,
tuples and matrices), argued rule by rule there; under the strict rule ``core.answers.mv_could_equal``. Only the
pairs left are graded, once each, for the candidates whose bound can still win: the five most common always, the
others for up to ``SYMBOLIC_SECONDS`` a task; a candidate still open then is counted in the line's name ("N golds of
TASK left open"). The graders read each text once per process (their parse is a pure function of the text; it was
40-80% of a grading's time). Under the authors' rule the search closes on every released free-form task in seconds
(math 2 s, olympiadbench 2 s, college_math 10 s, minerva_math 40 s, where one gold sympy reads as complex infinity
stays open against every other and is graded); under the strict rule too (math 2 s, olympiadbench 3 s, college_math
25 s, minerva_math 28 s: ``core.answers.mv_could_equal`` follows math-verify's comparison of two relations, its
``solve`` included, and values expressions at two points); measured times and the soundness checks (refused pairs
graded by the scorer on the released data: none accepted) are in docs/reports.md and benchmarks/README.md.
Both metrics are means over items (over the items whose solution was wrong, for the second), so a critic that picks
a member per item by a hash with share p scores linearly in p: the best mixture is an endpoint, and the line is the
best member, computed per task (a group averages its tasks). ``correct_to_incorrect`` is lower-is-better and
``parse_rate`` a count of form: neither has a floor.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from typing import Sequence

from critic_tasks.core.answers import parse_gold
from critic_tasks.protocols.realcritic import scoring
from critic_tasks.protocols.realcritic.data import OPTION_LETTERS
from critic_tasks.protocols.realcritic.scoring import shown_correct
from critic_tasks.protocols.realcritic.stages import DIRECT

DETERMINISTIC = ("always_first", "constant", "every_label")
FLOORED = ("accuracy", "incorrect_to_correct")


def boxed(value) -> str:
    return f"I checked the solution.\n\\boxed{{{value}}}"


def canned_replies(docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    """Each content-blind critic's reply to every document (``injection`` and ``unparseable`` are the caller's)."""
    letters = OPTION_LETTERS[:4]
    constant = [boxed("A" if d["multiple_choice"] else 0) for d in docs]
    # direct CoT shows no solution to accept: that critic can only box a fixed answer
    return {"always_first": [boxed(d["solution_answer"]) if d.get("dimension") != DIRECT else c
                             for d, c in zip(docs, constant)],
            "constant": constant,
            "random": [boxed(rng.choice(letters) if d["multiple_choice"] else rng.randint(0, 100)) for d in docs],
            "every_label": [boxed(", ".join(letters) if d["multiple_choice"] else ", ".join(map(str, range(10))))
                            for d in docs]}


def _random_hit(doc: dict) -> float:
    """The chance that ``random``'s box equals the gold: one of four letters, or one of the integers 0..100."""
    if doc["multiple_choice"]:
        return 0.25 if doc["gold"] in OPTION_LETTERS[:4] else 0.0
    return 1 / 101 if doc["gold"].strip().isdigit() and int(doc["gold"]) <= 100 else 0.0


def expected_random(docs: Sequence[dict]) -> dict[str, float]:
    """``random``'s expected accuracy and incorrect_to_correct (x100) on one task's documents."""
    hits = [_random_hit(d) for d in docs]
    wrong = [h for h, d in zip(hits, docs) if not shown_correct(d)]
    out = {"accuracy": 100 * sum(hits) / len(hits)} if hits else {}
    if wrong:
        out["incorrect_to_correct"] = 100 * sum(wrong) / len(wrong)
    return out


def _text_key(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def constant_candidates(docs: Sequence[dict]) -> list[str]:
    """The constant answers tried on one task's documents: every option letter on a multiple-choice task; on a
    free-form one every distinct gold (by text, spaces and case aside; the most common first, ties in file order)."""
    if all(d["multiple_choice"] for d in docs):
        return list(OPTION_LETTERS)
    counts = Counter(_text_key(d["gold"]) for d in docs)
    first: dict[str, str] = {}
    for d in docs:
        first.setdefault(_text_key(d["gold"]), d["gold"].strip())
    ranked = sorted(first, key=lambda text: -counts[text])  # a stable sort: file order among equal counts
    return [first[text] for text in ranked]


def _gold_readable(doc: dict, known: dict) -> bool:
    """``grade``'s second value for a document (whether math-verify reads its gold), once per gold text."""
    if scoring.rule_of(doc) == scoring.AUTHORS_RULE or doc["multiple_choice"]:
        return True
    if doc["gold"] not in known:
        try:
            parse_gold(doc["gold"])
            known[doc["gold"]] = True
        except ValueError:
            known[doc["gold"]] = False
    return known[doc["gold"]]


def _task_best(task_docs: Sequence[dict], budget: int | None = None,
               seconds: float | None = None) -> tuple[dict[str, tuple[float, str]], int]:
    """metric -> (the best constant's value, that answer) on one task, and how many candidates were left open (their
    bound above the best when the budget of symbolic gradings ran out; 0: exact over every candidate).

    Branch and bound, exact: each candidate's replies are read once per kind of document (``scoring.reading_of``),
    and each (answer, document) pair is first graded by the rules both graders apply before any symbolic step
    (``grade_without_symbolic``), then, if left open, by each grader's necessary condition (``could_match``: the
    two values at one point too far apart for any of its rules: False); the pairs left open are all a candidate can
    still gain, so its value lies between its decided hits and those plus its open pairs. Candidates are taken most
    common first; one whose upper bound cannot beat the best value found is skipped; the others have their open
    pairs graded by ``grade`` (each (answer, gold) once): the first ``ALWAYS_CLOSED`` always, the rest while
    ``budget`` gradings (None: any number) and ``seconds`` of grading (None: ``SYMBOLIC_SECONDS``) last."""
    wrong = [not shown_correct(d) for d in task_docs]
    denominators = {"accuracy": len(task_docs), "incorrect_to_correct": sum(wrong)}
    counted = {"accuracy": [True] * len(task_docs), "incorrect_to_correct": wrong}
    readable: dict = {}
    graded: dict[tuple, bool] = {}
    possible: dict[tuple, bool] = {}
    best: dict[str, tuple[float, str]] = {}
    spent, bound = 0, SYMBOLIC_SECONDS if seconds is None else seconds
    started = time.perf_counter()
    unresolved: list[dict] = []  # the bounds of the candidates the budget left ungraded
    for rank, answer in enumerate(constant_candidates(task_docs)):
        reply, reads = boxed(answer), {}
        answers = []
        for d in task_docs:
            kind = scoring.reading_of(d)
            if kind not in reads:
                reads[kind] = scoring.read(d, reply)[0]
            answers.append(reads[kind])
        verdicts = [scoring.grade_without_symbolic(a, d, _gold_readable(d, readable))
                    for a, d in zip(answers, task_docs)]
        verdicts = [False if v is None and not _could_match(a, d, possible) else v
                    for a, d, v in zip(answers, task_docs, verdicts)]
        bounds = {key: (sum(v is True for v, c in zip(verdicts, counted[key]) if c),
                        sum(v is not False for v, c in zip(verdicts, counted[key]) if c))
                  for key in FLOORED if denominators[key]}
        if all(key in best and 100 * high / denominators[key] <= best[key][0] for key, (_, high) in bounds.items()):
            continue
        open_pairs = [i for i, v in enumerate(verdicts) if v is None]
        todo = [i for i in open_pairs if (answers[i], _gold_key(task_docs[i])) not in graded]
        over = (budget is not None and spent + len(todo) > budget) or time.perf_counter() - started > bound
        if todo and over and rank >= ALWAYS_CLOSED:
            unresolved.append(bounds)
            continue
        for i in todo:
            graded[(answers[i], _gold_key(task_docs[i]))] = scoring.grade(answers[i], task_docs[i])[0]
        spent += len(todo)
        for i in open_pairs:
            verdicts[i] = graded[(answers[i], _gold_key(task_docs[i]))]
        for key in bounds:
            value = 100 * sum(v for v, c in zip(verdicts, counted[key]) if c) / denominators[key]
            if key not in best or value > best[key][0]:
                best[key] = (value, answer)
    left_open = sum(any(key not in best or 100 * high / denominators[key] > best[key][0]
                        for key, (_, high) in bounds.items()) for bounds in unresolved)
    return best, left_open


def _could_match(answer: str, doc: dict, known: dict) -> bool:
    """``scoring.could_match`` once per (answer, gold)."""
    key = (answer, _gold_key(doc))
    if key not in known:
        known[key] = scoring.could_match(answer, doc)
    return known[key]


def _gold_key(doc: dict) -> tuple:
    """What ``grade`` compares an answer with: the rule and its reading of the gold."""
    rule = scoring.rule_of(doc)
    return rule, doc["authors_gold"] if rule == scoring.AUTHORS_RULE else doc["gold"], doc["multiple_choice"]


# the most common candidates are closed whatever they cost (the five the line held before); past them the search
# grades for at most SYMBOLIC_SECONDS a task (a few ms a grading on scalar golds, 0.1 s and more where equations,
# matrices or unread texts reach sympy's simplify), then counts the candidates still open and names them: the line
# is exact whenever it names none
ALWAYS_CLOSED = 5
SYMBOLIC_SECONDS = 180.0


def best_constants(docs: Sequence[dict], budget: int | None = None) -> dict[str, tuple[float, str]]:
    """metric (``FLOORED``) -> (the best constant answer's value, that answer), each task's documents graded by the
    scorer's own reading and grading (``_task_best``); over several tasks the mean of each task's best (a critic may
    know which task it is in), named by the answers joined; a task whose search left candidates open says how many."""
    by_task: dict[str, list[dict]] = {}
    for d in docs:
        by_task.setdefault(d["task"], []).append(d)
    per_task: dict[str, list[tuple[float, str]]] = {key: [] for key in FLOORED}
    for task, task_docs in by_task.items():
        best, left_open = _task_best(task_docs, budget)
        for key, (value, answer) in best.items():
            note = f" ({left_open} golds of {task} left open)" if left_open else ""
            per_task[key].append((value, answer + note))
    return {key: (sum(v for v, _ in found) / len(found), ", ".join(a for _, a in found))
            for key, found in per_task.items() if found and len(found) == len(by_task)}


def _shown_choice_task_best(task_docs: Sequence[dict]) -> dict[str, tuple[float, str]]:
    """metric -> (value, map) of the best critic whose answer on a multiple-choice task depends only on the shown
    solution's choice, as the scorer reads it (a letter, or none): copy-back, every constant, and "answer D unless
    the solution said D, then C" (a red team's critic: on arc-challenge it fixed 42.4% against constants' 30.3%)
    are members. Exact: a metric is a sum over items, so the best map takes, for each shown choice apart, the
    letter right on the most counted items among those showing it."""
    wrong = [not shown_correct(d) for d in task_docs]
    counted = {"accuracy": [True] * len(task_docs), "incorrect_to_correct": wrong}
    # a shown answer that reads as no letter (an option's text, a number) is one group: read as itself, nearly one
    # per item, it would let the map name items
    shown = [choice if choice in OPTION_LETTERS else None for choice in map(scoring.shown_reading, task_docs)]
    reads: dict[tuple, str | None] = {}  # a letter's box is read once per kind of document
    graded: dict[tuple, bool] = {}  # and graded once per (answer, gold)
    hits = {letter: [] for letter in OPTION_LETTERS}
    for letter in OPTION_LETTERS:
        for d in task_docs:
            kind = (scoring.reading_of(d), letter)
            if kind not in reads:
                reads[kind] = scoring.read(d, boxed(letter))[0]
            pair = (reads[kind], _gold_key(d))
            if pair not in graded:
                graded[pair] = scoring.grade(reads[kind], d)[0]
            hits[letter].append(graded[pair])
    best = {}
    for key, counts in counted.items():
        if not any(counts):
            continue
        total, chosen = 0, []
        for choice in sorted(set(shown), key=str):
            members = [i for i, c in enumerate(shown) if c == choice and counts[i]]
            letter = max(OPTION_LETTERS, key=lambda x: sum(hits[x][i] for i in members))  # first letter on ties
            total += sum(hits[letter][i] for i in members)
            if members:
                chosen.append(f"{choice or 'none'}->{letter}")
        best[key] = (100 * total / sum(counts), " ".join(chosen))
    return best


def best_shown_choice(docs: Sequence[dict]) -> dict[str, tuple[float, str]]:
    """``_shown_choice_task_best`` per task, averaged over tasks as ``best_constants`` does; {} unless every
    document is multiple-choice (a free-form shown answer is nearly one per item: a map from it would name items)."""
    if not docs or not all(d["multiple_choice"] for d in docs):
        return {}
    by_task: dict[str, list[dict]] = {}
    for d in docs:
        by_task.setdefault(d["task"], []).append(d)
    found = [_shown_choice_task_best(task_docs) for task_docs in by_task.values()]
    return {key: (sum(f[key][0] for f in found) / len(found), "; ".join(f[key][1] for f in found))
            for key in FLOORED if all(key in f for f in found)}


def floor_line(docs: Sequence[dict], values: dict[str, dict], headline: Sequence[str]) -> tuple[dict, dict, dict]:
    """What ``critic_tasks.chance._chance`` returns for a task: (headline metric -> the best of the deterministic
    canned critics' values, the best constant answer's and ``random``'s expected value, metric -> that critic,
    {"random": its expectation, "best constant": its values})."""
    chance: dict[str, float] = {}
    by: dict[str, str] = {}
    expected = expected_random(docs)
    constants = best_constants(docs)
    by_choice = best_shown_choice(docs)
    for key in headline:
        if key not in FLOORED:
            continue
        ran = {name: values[name][key] for name in DETERMINISTIC if values.get(name, {}).get(key) is not None}
        if key in expected:
            ran["random (expected)"] = expected[key]
        if key in constants:
            ran[f"constant answer {constants[key][1]}"] = constants[key][0]
        if key in by_choice:
            ran[f"answer by the shown choice ({by_choice[key][1]})"] = by_choice[key][0]
        if ran:
            best = max(ran, key=ran.__getitem__)  # DETERMINISTIC order breaks ties
            chance[key], by[key] = ran[best], {"always_first": "the solution accepted"}.get(best, best)
    return chance, by, {"random": expected, "best constant": {k: v for k, (v, _) in constants.items()},
                        **({"by the shown choice": {k: v for k, (v, _) in by_choice.items()}} if by_choice else {})}


# ``critic_tasks.chance``'s three steps for a protocol (``registry.Protocol.chance``)


def labelled(kind, docs: Sequence[dict]) -> bool:
    return True  # every item has its gold answer


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return canned_replies(docs, rng)


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    return floor_line(docs, values, kind.headline)
