"""RealCritic's chance line: critics that read nothing of the solution's quality, and the floor they set.

Canned critics (``critic_tasks.chance.CANNED``): ``always_first`` accepts the solution (boxes the answer it reached:
the accuracy before the critique, the paper's baseline; on the direct-CoT tasks, which show none, ``constant``'s
answer), ``constant`` boxes one fixed answer (option A; 0),
``random`` a random option letter or a random integer 0..100, ``every_label`` boxes every option at once (an
ambiguous box; for the math tasks a list of digits). The floor of ``accuracy`` and ``incorrect_to_correct`` is the
best of the deterministic ones and of ``random``'s expected value (its run is held to it within its sampling
allowance); ``correct_to_incorrect`` is lower-is-better and ``parse_rate`` a count of form: neither has a floor.
"""

from __future__ import annotations

import random
from typing import Sequence

from critic_tasks.protocols.realcritic.data import OPTION_LETTERS
from critic_tasks.protocols.realcritic.scoring import shown_correct
from critic_tasks.protocols.realcritic.stages import DIRECT

DETERMINISTIC = ("always_first", "constant", "every_label")
FLOORED = ("accuracy", "incorrect_to_correct")


def canned_replies(docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    """Each content-blind critic's reply to every document (``injection`` and ``unparseable`` are the caller's)."""
    def boxed(value) -> str:
        return f"I checked the solution.\n\\boxed{{{value}}}"

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


def floor_line(docs: Sequence[dict], values: dict[str, dict], headline: Sequence[str]) -> tuple[dict, dict, dict]:
    """What ``critic_tasks.chance._chance`` returns for a task: (headline metric -> the best of the deterministic
    canned critics' values and ``random``'s expected value, metric -> that critic, {"random": its expectation})."""
    chance: dict[str, float] = {}
    by: dict[str, str] = {}
    expected = expected_random(docs)
    for key in headline:
        if key not in FLOORED:
            continue
        ran = {name: values[name][key] for name in DETERMINISTIC if values.get(name, {}).get(key) is not None}
        if key in expected:
            ran["random (expected)"] = expected[key]
        if ran:
            best = max(ran, key=ran.__getitem__)  # DETERMINISTIC order breaks ties
            chance[key], by[key] = ran[best], {"always_first": "the solution accepted"}.get(best, best)
    return chance, by, {"random": expected}


# ``critic_tasks.chance``'s three steps for a protocol (``registry.Protocol.chance``)


def labelled(kind, docs: Sequence[dict]) -> bool:
    return True  # every item has its gold answer


def replies(kind, docs: Sequence[dict], rng: random.Random) -> dict[str, list[str]]:
    return canned_replies(docs, rng)


def floor(kind, docs: Sequence[dict], values: dict) -> tuple[dict, dict, dict]:
    return floor_line(docs, values, kind.headline)
