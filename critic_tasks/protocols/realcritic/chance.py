"""RealCritic's chance line: critics that read nothing of the solution's quality, and the floor they set.

Canned critics (``critic_tasks.chance.CANNED``): ``always_first`` accepts the solution (boxes the answer it reached:
the accuracy before the critique, the paper's baseline; on the direct-CoT tasks, which show none, ``constant``'s
answer), ``constant`` boxes one fixed answer (option A; 0),
``random`` a random option letter or a random integer 0..100, ``every_label`` boxes every option at once (an
ambiguous box; for the math tasks a list of digits).

The floor of ``accuracy`` and ``incorrect_to_correct`` is the best expected value over a stated family of critics
that read nothing of the item's quality (issue 44.3): the copy-back critic (``always_first``), every constant answer
the data makes possible (``best_constants``: each option letter on the multiple-choice tasks; on the others the
task's most common gold answers, ``FREE_FORM_CONSTANTS`` of them by text: a critic may know the task's distribution
of answers, not the item's), ``every_label``, and ``random``'s expected value (its run is held to it within its
sampling allowance). Both metrics are means over items (over the items whose solution was wrong, for the second),
so a critic that picks a member per item by a hash with share p scores linearly in p: the best mixture is an
endpoint, and the line is the best member, computed per task (a group averages its tasks). ``correct_to_incorrect``
is lower-is-better and ``parse_rate`` a count of form: neither has a floor.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Sequence

from critic_tasks.protocols.realcritic import scoring
from critic_tasks.protocols.realcritic.data import OPTION_LETTERS
from critic_tasks.protocols.realcritic.scoring import shown_correct
from critic_tasks.protocols.realcritic.stages import DIRECT

DETERMINISTIC = ("always_first", "constant", "every_label")
FLOORED = ("accuracy", "incorrect_to_correct")
# free-form tasks: how many of the task's gold answers (the most common by text first) are tried as constant answers;
# grading every distinct gold against every item would cost a symbolic comparison per pair of items
FREE_FORM_CONSTANTS = 5


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


def constant_candidates(docs: Sequence[dict]) -> list[str]:
    """The constant answers tried on one task's documents: every option letter on a multiple-choice task; on a
    free-form one its ``FREE_FORM_CONSTANTS`` most common golds (by text, spaces and case aside; ties: file order)."""
    if all(d["multiple_choice"] for d in docs):
        return list(OPTION_LETTERS)
    counts = Counter(re.sub(r"\s+", "", d["gold"]).lower() for d in docs)
    first: dict[str, str] = {}
    for d in docs:
        first.setdefault(re.sub(r"\s+", "", d["gold"]).lower(), d["gold"].strip())
    ranked = sorted(first, key=lambda text: -counts[text])  # a stable sort: file order among equal counts
    return [first[text] for text in ranked[:FREE_FORM_CONSTANTS]]


def best_constants(docs: Sequence[dict]) -> dict[str, tuple[float, str]]:
    """metric (``FLOORED``) -> (the best constant answer's value, that answer), each task's documents graded by the
    scorer's own record (its reader and its reading rule); over several tasks the mean of each task's best (a critic
    may know which task it is in), named by the answers joined."""
    by_task: dict[str, list[dict]] = {}
    for d in docs:
        by_task.setdefault(d["task"], []).append(d)
    per_task: dict[str, list[tuple[float, str]]] = {key: [] for key in FLOORED}
    for task_docs in by_task.values():
        best: dict[str, tuple[float, str]] = {}
        for answer in constant_candidates(task_docs):
            records = [scoring.record(d, boxed(answer)) for d in task_docs]
            for key in FLOORED:
                value = scoring.METRICS[("realcritic", key)](records)
                if value is not None and (key not in best or value > best[key][0]):
                    best[key] = (value, answer)
        for key, found in best.items():
            per_task[key].append(found)
    return {key: (sum(v for v, _ in found) / len(found), ", ".join(a for _, a in found))
            for key, found in per_task.items() if found and len(found) == len(by_task)}


def floor_line(docs: Sequence[dict], values: dict[str, dict], headline: Sequence[str]) -> tuple[dict, dict, dict]:
    """What ``critic_tasks.chance._chance`` returns for a task: (headline metric -> the best of the deterministic
    canned critics' values, the best constant answer's and ``random``'s expected value, metric -> that critic,
    {"random": its expectation, "best constant": its values})."""
    chance: dict[str, float] = {}
    by: dict[str, str] = {}
    expected = expected_random(docs)
    constants = best_constants(docs)
    for key in headline:
        if key not in FLOORED:
            continue
        ran = {name: values[name][key] for name in DETERMINISTIC if values.get(name, {}).get(key) is not None}
        if key in expected:
            ran["random (expected)"] = expected[key]
        if key in constants:
            ran[f"constant answer {constants[key][1]}"] = constants[key][0]
        if ran:
            best = max(ran, key=ran.__getitem__)  # DETERMINISTIC order breaks ties
            chance[key], by[key] = ran[best], {"always_first": "the solution accepted"}.get(best, best)
    return chance, by, {"random": expected, "best constant": {k: v for k, (v, _) in constants.items()}}


# ``critic_tasks.chance``'s three steps for a protocol (``registry.Protocol.chance``)


def labelled(kind, docs: Sequence[dict]) -> bool:
    return True  # every item has its gold answer


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return canned_replies(docs, rng)


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    return floor_line(docs, values, kind.headline)
