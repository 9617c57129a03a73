"""The judge formats JudgeBench's authors released (``utils/judges.py``), as their code asks and reads them.

Each format (``JUDGES``) is the authors' template for the user message, the system message their code sends with it
(a template, a string of their ``judges.py``, or none), the template variables their code passes (``auto_j`` passes
``question=`` to a template that reads ``{{prompt}}``, so its query renders empty: their published numbers were made
so, and so is ours), the turns, the budget their code asks for, and how the reply is read (``scoring``'s readers,
written here, proven equal to theirs by ``tests/test_judgebench_authors.py``).

The authors' text is never copied here: the templates and ``judges.py`` are read at run time
(``protocols.authors.AuthorsFile``: a checkout named by ``JUDGEBENCH_DATA_DIR`` / ``data_dir``, a mirror, the cache, or
GitHub at ``AUTHORS_COMMIT``, always checked by sha256), and rendered as their ``utils/prompts.py`` renders them
(jinja2, ``trim_blocks`` and ``lstrip_blocks``). The strings of ``judges.py`` we need (the Arena-Hard judge's second
user turn, Prometheus 2's system message and rubric, PandaLM's special-token pattern) are read from its syntax tree
(``ast``: nothing of theirs is run).

``prompt``: ``authors`` (the default) renders these; ``ours`` is our wording of the Arena-Hard judge
(``prompts.py``), the variant the bundled sample and the demo use (no authors' file needed offline).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.protocols import prompt_choice
from critic_tasks.protocols.authors import AuthorsFile

DATA_ENV = "JUDGEBENCH_DATA_DIR"  # data.DATA_DIR_ENV (data.py imports this module)
AUTHORS_REPO = "ScalerLab/JudgeBench"
# the release the paper's numbers were made with; each file's sha256 checked against the text read_file gives there
AUTHORS_COMMIT = "12a499c5c29f06940d259b49250fca627d2a0ee5"

AUTHORS, OURS = prompt_choice.AUTHORS, prompt_choice.OURS

_TEMPLATE_SHA256 = {
    "arena_hard_judge_prompt": "16c2290ec6737343982773be71f80bd1caa8a8eaffe65077736586252ddda4c3",
    "arena_hard_judge_system": "03f68010febd7a6405102ef882b4dd5a9700c56b2e1ff286d3b38f5d3a929bbf",
    "vanilla_prompt": "45d0b0bd8304b032c9b34a2fece15ac9ad5c241ef296aff9896e5d5666d77026",
    "prometheus2_prompt": "9894b506210fce47f7acb506bea44d5f0c1077c563a191fd2555235a7a13b592",
    "skywork_critic_prompt": "4b0e07aaa873da013bff00b9b3a1e137f956b5aa13aab9ea3f6b9840902a5186",
    "judgelm_prompt": "cc9ea7ee7e6506fd3bb89acb7adb7387f4b12d8563fc44a79f649dd4c9765d1b",
    "pandalm_prompt": "98c3cf9b690c42cd5b7212a0e6010476285bb036925cbe9b67cda402a1dc0960",
    "autoj_prompt": "465e22810bba39cd615ef04a0f14fdcb5e0e753c51bb40bb157349223020b395",
}
TEMPLATES = {name: AuthorsFile(AUTHORS_REPO, AUTHORS_COMMIT, f"utils/templates/{name}.jinja2", sha, DATA_ENV)
             for name, sha in _TEMPLATE_SHA256.items()}
# judges.py at the pinned commit; a later version (CompassJudger added, nothing we read changed) is accepted in a
# checkout: the paper repository's main branch holds it
JUDGES_PY = AuthorsFile(AUTHORS_REPO, AUTHORS_COMMIT, "utils/judges.py",
                        "f0cf5458d767db7ef015bd10884d8d4811ec644187941f2870b034b41e7e5deb", DATA_ENV,
                        also_sha256=("960c5f59d773e7bdee426b7b2df97a5c51d59118053446ace19a419cfe09f236",))


@dataclass(frozen=True)
class JudgeFormat:
    name: str
    template: str  # the user message's template (a key of TEMPLATES)
    # (question, answer shown as A, answer shown as B) -> the template's variables, as the authors' code passes them
    variables: Callable[[str, str, str], dict]
    # the system message: "template:<name>" (rendered without variables), "judges.py:<Class>.<attribute>" (a string
    # their judge assigns), or "" for none
    system: str
    budget: int  # the max_tokens their code asks for
    chat: bool  # a chat request (True) or a raw completion (PandaLM, JudgeLM: api.complete, no chat template)
    turns: int = 1  # Arena-Hard: a second user turn when the first reply has no verdict
    # their extras this harness cannot send (beam search, truncation by the judge's tokenizer): said in the docs
    differs: str = ""
    # ``judges.py:<Class>.<attribute>`` of a template variable read from their file (Prometheus 2's rubric)
    extra_variables: tuple[tuple[str, str], ...] = ()
    # a pattern their code removes from both answers before rendering (PandaLM), from judges.py; and a text it appends
    strip_pattern: str = ""
    suffix: str = ""


JUDGES = {j.name: j for j in (
    JudgeFormat("arena_hard", "arena_hard_judge_prompt", lambda q, a, b: {"prompt": q, "answer_a": a, "answer_b": b},
                "template:arena_hard_judge_system", 4096, True, turns=2),
    JudgeFormat("vanilla", "vanilla_prompt", lambda q, a, b: {"question": q, "answer_a": a, "answer_b": b}, "",
                1024, True),
    JudgeFormat("prometheus_2", "prometheus2_prompt",
                lambda q, a, b: {"instruction": q, "response_A": a, "response_B": b},
                "judges.py:Prometheus2.REL_SYSTEM_PROMPT", 1024, True,
                extra_variables=(("rubric", "judges.py:Prometheus2.rubric"),)),
    JudgeFormat("skywork_critic", "skywork_critic_prompt",
                lambda q, a, b: {"input": q, "response_a": a, "response_b": b}, "", 2048, True),
    JudgeFormat("judge_lm", "judgelm_prompt", lambda q, a, b: {"question": q, "answer_1": a, "answer_2": b}, "",
                16, False, differs="the answers are not truncated to the 2,048-token context by the judge's tokenizer"),
    JudgeFormat("panda_lm", "pandalm_prompt", lambda q, a, b: {"instruction": q, "resp1": a, "resp2": b}, "",
                150, False, strip_pattern="judges.py:PandaLM.pattern", suffix="\n",
                differs="greedy decoding (the authors ask vLLM for beam search: best_of 4, repetition penalty 1.2), "
                        "and the answers are not truncated to the 2,048-token context by the judge's tokenizer"),
    # the authors' code passes question= to a template reading {{prompt}}: the query renders empty, as in theirs
    JudgeFormat("auto_j", "autoj_prompt", lambda q, a, b: {"question": q, "response": a, "response_another": b}, "",
                1024, True),
)}
DEFAULT_JUDGE = "arena_hard"


def resolve_judge(judge: str | None) -> JudgeFormat:
    name = DEFAULT_JUDGE if judge in (None, "") else str(judge)
    if name not in JUDGES:
        raise ConfigError(f"judgebench judge={name!r}: expected one of {', '.join(JUDGES)}")
    return JUDGES[name]


def resolve(judge: str | None, prompt: str | None, sample: bool) -> tuple[JudgeFormat, str]:
    """How a run asks its pairs: its judge format (``resolve_judge``) and whose prompt (``resolve_prompt``)."""
    fmt = resolve_judge(judge)
    return fmt, resolve_prompt(prompt, sample, fmt)


def resolve_prompt(prompt: str | None, sample: bool, judge: JudgeFormat) -> str:
    """``prompt`` as given, else ``ours`` on the bundled sample (offline, no authors' file needed) and ``authors``
    elsewhere. Our wording exists for the Arena-Hard judge only."""
    try:
        chosen = prompt_choice.resolve(prompt, sample)
    except ConfigError as err:
        raise ConfigError(f"judgebench {err}") from None
    if chosen == OURS and judge.name != DEFAULT_JUDGE:
        raise ConfigError(f"judgebench prompt=ours with judge={judge.name!r}: our wording exists for the "
                          f"{DEFAULT_JUDGE} judge only; use prompt: authors (the default) for {judge.name}")
    return chosen


# ----------------------------------------------------------------------------- their files, read at run time


@lru_cache(maxsize=None)
def _environment():
    import jinja2

    # utils/prompts.py's settings (its cache_size only caches)
    return jinja2.Environment(trim_blocks=True, lstrip_blocks=True)


@lru_cache(maxsize=None)
def template(name: str, data_dir: str | None = None):
    """The authors' template ``name`` compiled (jinja2, their environment's settings)."""
    return _environment().from_string(TEMPLATES[name].text(data_dir))


def render(name: str, data_dir: str | None = None, **variables) -> str:
    return template(name, data_dir).render(**variables)


@lru_cache(maxsize=None)
def judges_strings(data_dir: str | None = None) -> dict[str, str]:
    """The string constants of ``judges.py`` we need, by ``<Class>.<attribute>`` (an assignment ``self.<attribute> =
    "..."`` or ``= re.compile("...")`` in the class), and ``ArenaHard.continue``: the user turn its get_judgment
    appends when a reply has no verdict."""
    source = JUDGES_PY.text(data_dir)
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise DataError(f"{JUDGES_PY.path}: not Python ({err})") from None
    found: dict[str, str] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
                value = node.value
                if isinstance(value, ast.Call) and value.args:  # re.compile("...")
                    value = value.args[0]
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found[f"{cls.name}.{node.targets[0].attr}"] = value.value
            if cls.name == "ArenaHard" and isinstance(node, ast.Dict):  # {"role": "user", "content": "continue ..."}
                pairs = {k.value: v.value for k, v in zip(node.keys, node.values)
                         if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
                if pairs.get("role") == "user" and isinstance(pairs.get("content"), str):
                    found["ArenaHard.continue"] = pairs["content"]
    return found


def judges_string(key: str, data_dir: str | None = None) -> str:
    strings = judges_strings(data_dir)
    if key not in strings:
        raise DataError(f"{JUDGES_PY.path}: {key} not found (another version of the authors' judges.py?)")
    return strings[key]


def second_turn_text(data_dir: str | None = None) -> str:
    """The Arena-Hard judge's second user turn (their wording, from their judges.py)."""
    return judges_string("ArenaHard.continue", data_dir)


@lru_cache(maxsize=None)
def _system_message(judge: JudgeFormat, data_dir: str | None) -> str:
    """The judge's system message (the same for every document: rendered once per run)."""
    kind, _, name = judge.system.partition(":")
    if kind == "template":
        return render(name, data_dir)
    if kind == "judges.py":
        return judges_string(name, data_dir)
    return ""


def messages(judge: JudgeFormat, question: str, answer_a: str, answer_b: str,
             data_dir: str | os.PathLike | None = None) -> tuple[str, str]:
    """(system message, "" for none; user message) of one order of one pair, as the authors' judge sends them."""
    where = None if data_dir in (None, "") else str(data_dir)
    if judge.strip_pattern:
        import re

        pattern = re.compile(judges_string(judge.strip_pattern.partition(":")[2], where))
        answer_a = pattern.sub("", answer_a.strip()).strip()
        answer_b = pattern.sub("", answer_b.strip()).strip()
    variables = judge.variables(question, answer_a, answer_b)
    variables.update({name: judges_string(source.partition(":")[2], where) for name, source in judge.extra_variables})
    return _system_message(judge, where), render(judge.template, where, **variables) + judge.suffix
