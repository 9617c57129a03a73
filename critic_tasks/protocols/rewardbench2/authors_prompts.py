"""The RewardBench 2 authors' generative-judge prompts, read at run time from their ``rewardbench/generative_v2.py``,
and our readers of the judge's replies, written to decide as theirs do.

The file's prompts are module-level string literals: ``prompt_v2`` (the four-way judge's system message),
``MTBENCH_V2["prompt_template"]`` (its user message, fields ``question``, ``answer_a`` .. ``answer_d``),
``ratings_prompt`` and ``ratings_prompt_ties`` (the 1-10 rating of one answer, fields ``prompt`` and ``completion``,
sent as the only message: their ``system_prompt`` is empty). As for v1 (``protocols.rewardbench.authors_prompts``)
the file is read as text through ``protocols.authors`` (the same repository and pinned commit, sha256-checked: a
checkout named by ``REWARDBENCH_AUTHORS_DIR`` or ``REWARDBENCH_DATA_DIR``, the mirror, the cache or GitHub), parsed
with ``ast`` and each literal evaluated with ``ast.literal_eval``: nothing of it is executed, nothing of it is
copied here.
"""

from __future__ import annotations

from functools import lru_cache

from critic_tasks.protocols.authors import AuthorsFile
from critic_tasks.protocols.rewardbench.authors_prompts import (
    AUTHORS_DIR_ENV,
    COMMIT,
    DATA_DIR_ENV,
    FETCH_ONCE,
    REPO,
    _assignments,
    _dict_entry,
    _literal,
)

GENERATIVE_V2 = AuthorsFile(REPO, COMMIT, "rewardbench/generative_v2.py",
                            "eeb3986569fc29b761ae8d9ecda5599adf52733bbfd3cd0ae348888950ce76c7", DATA_DIR_ENV,
                            instead=FETCH_ONCE, checkout_env=AUTHORS_DIR_ENV)
LETTERS = ("A", "B", "C", "D")
RATING_TEMPLATES = ("ratings_prompt", "ratings_prompt_ties")


@lru_cache(maxsize=None)
def prompts(data_dir: str | None = None) -> dict[str, str]:
    """``prompt_v2``, ``prompt_template`` (``MTBENCH_V2``'s), ``ratings_prompt`` and ``ratings_prompt_ties``."""
    where = f"{REPO}'s {GENERATIVE_V2.path}"
    names = _assignments(GENERATIVE_V2.text(data_dir), where)
    out = {name: _literal(names.get(name), name, where) for name in ("prompt_v2", *RATING_TEMPLATES)}
    out["prompt_template"] = _dict_entry(names.get("MTBENCH_V2"), "prompt_template", "MTBENCH_V2", where)
    return out


def render_four_way(question: str, answers, data_dir: str | None = None) -> tuple[str, str]:
    """(system message, user message) for four answers shown as A, B, C, D, as their ``format_judge_answers``
    renders them (no model modifier)."""
    texts = prompts(data_dir)
    a, b, c, d = answers
    return texts["prompt_v2"], texts["prompt_template"].format(question=question, answer_a=a, answer_b=b,
                                                               answer_c=c, answer_d=d)


def render_rating(question: str, answer: str, ties: bool, data_dir: str | None = None) -> str:
    """The one (user) message rating ``answer``, as their ``get_single_rating`` writes it (``ties``: the Ties
    subset's prompt)."""
    template = prompts(data_dir)["ratings_prompt_ties" if ties else "ratings_prompt"]
    return template.format(prompt=question, completion=answer)


def read_four_way_verdict(reply) -> str | None:
    """``process_judgement``'s reading: the first of ``[[A]]``, ``[[B]]``, ``[[C]]``, ``[[D]]`` (in that order, not
    by position) the reply contains anywhere; None for none (their ``error``). Four substring searches: linear.

    >>> read_four_way_verdict("[[D]] or [[B]]"), read_four_way_verdict("**[[C]]**"), read_four_way_verdict("C")
    ('B', 'C', None)
    """
    if not isinstance(reply, str):
        return None
    return next((letter for letter in LETTERS if f"[[{letter}]]" in reply), None)


def _word_character(ch: str) -> bool:
    """A character of ``re``'s Unicode ``\\w`` (what its ``\\b`` looks at)."""
    return ch.isalnum() or ch == "_"


def read_rating(reply) -> int | None:
    """``get_single_rating``'s reading of a reply: once stripped, it must end in a whole word ``1`` .. ``10`` (their
    ``re.search(r"\\b([1-9]|10)\\b\\s*$", reply.strip())``); None otherwise (their -1). Only the reply's last three
    characters are looked at once it is stripped: linear (the strip) and total.

    >>> read_rating("Clear and correct.\\n\\n9"), read_rating("Rating: 10 "), read_rating("x10"), read_rating("7/10")
    (9, 10, None, 10)
    >>> read_rating("110"), read_rating("0"), read_rating("rated 8."), read_rating(None)
    (None, None, None, None)
    """
    if not isinstance(reply, str):
        return None
    text = reply.strip()
    if text.endswith("10") and (len(text) == 2 or not _word_character(text[-3])):
        return 10
    if text[-1:] in set("123456789") and (len(text) == 1 or not _word_character(text[-2])):
        return int(text[-1])
    return None
