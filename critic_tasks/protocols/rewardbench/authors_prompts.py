"""The RewardBench authors' generative-judge prompts, read at run time from their ``rewardbench/generative.py``.

The file is Python whose prompts are module-level string literals (``prompt_v2``, the system message of the v1
pairwise judge) and a dict literal (``MTBENCH_V2``, whose ``prompt_template`` is the user message). Importing it
would import the authors' API clients (anthropic, openai, together, google), so the file is read as text through
``protocols.authors`` (a checkout named by ``REWARDBENCH_AUTHORS_DIR`` or ``REWARDBENCH_DATA_DIR``, the mirror, the
cache or GitHub at the pinned commit, sha256-checked), parsed with ``ast`` and each literal evaluated with
``ast.literal_eval``: nothing of the file is executed. Adjacent string literals are one constant once parsed, as
Python itself joins them.

RM-Bench releases no generative-judge prompt of its own, so ``protocols.rmbench`` asks with the same two messages.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from critic_tasks.core.errors import DataError
from critic_tasks.protocols.authors import AuthorsFile

DATA_DIR_ENV = "REWARDBENCH_DATA_DIR"
# the authors' checkout, apart from the data: their prompts are on GitHub, their data on the Hub (and the bundled
# sample is ours), so a run on the sample or a Hub copy reads the prompts from a clone named here
AUTHORS_DIR_ENV = "REWARDBENCH_AUTHORS_DIR"
REPO = "allenai/reward-bench"
COMMIT = "05a9005efb607249822c193590c8ecab87c77052"
# RewardBench, RewardBench 2 and RM-Bench have no prompt of ours to fall back on (no ``prompt`` option): the way
# round a missing file is to fetch it once
FETCH_ONCE = "run once where GitHub can be reached (the file is then read from the cache)"
GENERATIVE = AuthorsFile(REPO, COMMIT, "rewardbench/generative.py",
                         "0ac67792e6e202efad5c57c7354dfb92bae8a5b36ad82544949221e3c0edebe0", DATA_DIR_ENV,
                         instead=FETCH_ONCE, checkout_env=AUTHORS_DIR_ENV)
# the subset weights and the sections (EXAMPLE_COUNTS, SUBSET_MAPPING), read the same way
CONSTANTS = AuthorsFile(REPO, COMMIT, "rewardbench/constants.py",
                        "4c3661b48b189783b9dc3ed5424f8e2d0e24a9ee3fd2c3531713e212dd9d227d", DATA_DIR_ENV,
                        what="the authors' subsets and weights", instead=FETCH_ONCE, checkout_env=AUTHORS_DIR_ENV)


def _assignments(source: str, where: str) -> dict[str, ast.expr]:
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise DataError(f"{where}: not Python ({err.msg}, line {err.lineno})") from None
    return {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)}


def _literal(node: ast.expr | None, name: str, where: str) -> str:
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise DataError(f"{where}: {name} is not a string literal there (another version of the authors' file?)")
    return value


def _dict_entry(node: ast.expr | None, key: str, name: str, where: str) -> str:
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and k.value == key:
                return _literal(v, f"{name}[{key!r}]", where)
    raise DataError(f"{where}: {name}[{key!r}] is not there (another version of the authors' file?)")


@lru_cache(maxsize=None)
def pairwise_v1(data_dir: str | None = None) -> tuple[str, str]:
    """(system message, user template) of the authors' v1 pairwise judge: ``prompt_v2`` and
    ``MTBENCH_V2["prompt_template"]`` (fields ``question``, ``answer_a``, ``answer_b``), as ``format_judge_answers``
    uses them for a single-turn prompt with no model modifier."""
    where = f"{REPO}'s {GENERATIVE.path}"
    names = _assignments(GENERATIVE.text(data_dir), where)
    return (_literal(names.get("prompt_v2"), "prompt_v2", where),
            _dict_entry(names.get("MTBENCH_V2"), "prompt_template", "MTBENCH_V2", where))


@lru_cache(maxsize=None)
def sections(data_dir: str | None = None) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """(EXAMPLE_COUNTS, SUBSET_MAPPING) of the authors' ``constants.py``: each subset's weight, each section's
    subsets."""
    where = f"{REPO}'s {CONSTANTS.path}"
    names = _assignments(CONSTANTS.text(data_dir), where)
    try:
        counts = ast.literal_eval(names["EXAMPLE_COUNTS"])
        mapping = ast.literal_eval(names["SUBSET_MAPPING"])
    except (KeyError, ValueError):
        raise DataError(f"{where}: EXAMPLE_COUNTS / SUBSET_MAPPING are not literals there (another version of the "
                        "authors' file?)") from None
    return counts, {section: tuple(subsets) for section, subsets in mapping.items()}


def render_pairwise_v1(question: str, answer_a: str, answer_b: str, data_dir: str | None = None) -> tuple[str, str]:
    """(system message, user message) for one pair, as ``format_judge_answers`` renders them."""
    system, template = pairwise_v1(data_dir)
    return system, template.format(question=question, answer_a=answer_a, answer_b=answer_b)


def read_v1_verdict(reply) -> str | None:
    """``process_judgement``'s default reading: ``A`` if the reply contains ``[[A]]`` anywhere, else ``B`` if it
    contains ``[[B]]``, else None (their ``error``). Two substring searches: linear in the reply's length.

    >>> read_v1_verdict("[[B]] then [[A]]"), read_v1_verdict("so [[B]]"), read_v1_verdict("A"), read_v1_verdict(None)
    ('A', 'B', None, None)
    """
    if not isinstance(reply, str):
        return None
    if "[[A]]" in reply:
        return "A"
    if "[[B]]" in reply:
        return "B"
    return None
