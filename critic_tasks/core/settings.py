"""Every environment variable critic-tasks reads, in one table: name, default, type and what it does.

Code reads a variable only through ``read_setting(NAME)`` (``read_flag`` / ``read_number`` for the typed
ones), never through ``os.environ`` itself, so that one spelling rule holds everywhere: a variable set to the empty
string (or to spaces) counts as unset and takes its default (``CRITIC_EXECUTOR=`` is the sandbox, in preflight and
in the run alike); only the data folders (``read_raw``, ``resolve_dir``) refuse an empty value. A value of the wrong type is one
``ConfigError`` naming the variable. docs/usage.md's settings table is generated from ``SETTINGS``
(``markdown_table``; ``tests/test_settings.py`` keeps the two in sync).

A model role (judge, reviser) reads the eight ``CRITIC_<ROLE>_*`` variables of ``ROLE_SETTINGS`` (a pool member
``CRITIC_<ROLE>_<MEMBER>_*`` first: ``role_setting``); ``llm/settings.py`` builds and validates them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from critic_tasks.core.errors import ConfigError, DataError


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # as the user would write it; '' = none
    kind: str  # text | path | flag | integer | number | choice (a free word checked by its reader: plugin names)
    doc: str


TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

SETTINGS: dict[str, Setting] = {s.name: s for s in (
    # data
    Setting("CRITICBENCH_DATA_DIR", "", "path", "a local copy of opencompass/CriticBench (its layout), or `sample` "
            "for the bundled sample; unset: the Hub"),
    Setting("CRITIQUELLM_DATA_DIR", "", "path", "a local copy of CritiqueLLM's AlignBench files; unset: the paper "
            "repository's files"),
    Setting("PROCESSBENCH_DATA_DIR", "", "path", "a local copy of Qwen/ProcessBench's subset files "
            "(`gsm8k.json`, ...), or `sample` for the bundled sample; unset: the Hub"),
    Setting("JUDGEBENCH_DATA_DIR", "", "path", "a local copy of JudgeBench's pair files (the repository's "
            "`data/*.jsonl`), or `sample` for the bundled sample; unset: the Hub (ScalerLab/JudgeBench)"),
    Setting("RMBENCH_DATA_DIR", "", "path", "a local copy of RM-Bench's data (the Hub's `total_dataset.json`, or "
            "the repository's `data/*_filtered.json`), or `sample` for the bundled sample; unset: the Hub "
            "(THU-KEG/RM-Bench)"),
    Setting("REWARDBENCH_DATA_DIR", "", "path", "a local copy of allenai/reward-bench's `filtered` split "
            "(`filtered.jsonl` or `filtered.json`), or `sample` for the bundled sample; unset: the Hub. A checkout "
            "of allenai/reward-bench here also gives the authors' judge prompts (as REWARDBENCH_AUTHORS_DIR)"),
    Setting("REWARDBENCH_AUTHORS_DIR", "", "path", "a checkout of allenai/reward-bench at 05a9005: the authors' "
            "judge prompts and subsets (`rewardbench/generative.py`, `generative_v2.py`, `constants.py`) of "
            "RewardBench, RewardBench 2 and RM-Bench, whatever the data folders name (the bundled sample too); "
            "unset: REWARDBENCH_DATA_DIR when it is such a checkout, else CRITIC_AUTHORS_MIRROR, the cache or GitHub"),
    Setting("REWARDBENCH2_DATA_DIR", "", "path", "a local copy of allenai/reward-bench-2's `test` split "
            "(`test.jsonl`, `test.json` or the Hub's `data/test-*.parquet`), or `sample` for the bundled sample; "
            "unset: the Hub (the authors' prompts come as RewardBench's: REWARDBENCH_AUTHORS_DIR)"),
    Setting("REALCRITIC_DATA_DIR", "", "path", "a local checkout of tangzhy/RealCritic (or its `data/mix_data` "
            "folder), or `sample` for the bundled sample; unset: the repository's files"),
    Setting("METACRITIQUE_DATA_DIR", "", "path", "a local copy of MetaCritique's benchmark and annotation files; "
            "unset: the paper repository's files"),
    Setting("CRITIC_AUTHORS_MIRROR", "", "text", "a folder or base URL laid out as `<owner>/<repo>/<commit>/<path>` "
            "holding the benchmark authors' prompt files (read instead of GitHub; protocols/authors.py)"),
    Setting("CRITICBENCH_TOOLKIT_DIR", "", "path", "a checkout of the CriticEval toolkit (the leaderboard protocol "
            "and MultiCritique's released prompts are read from it)"),
    Setting("CRITICBENCH_PROTOCOL", "ours", "choice", "`ours` or `toolkit` (the leaderboard's rules: "
            "docs/leaderboard-protocol.md)"),
    Setting("CRITIC_SELF_FEEDBACK", "", "path", "the stage-1 run (output folder or samples file) whose feedback "
            "critic_correction_self reads; unset: `critic-eval` runs stage 1 first"),
    Setting("CRITIC_PROMPT_VARIANT", "paper", "choice", "the prompt variant of the revision and CritiqueLLM tasks: "
            "`paper` or `short`"),
    Setting("CRITIC_REVISION_FAILURE_RULE", "exclude", "choice", "what a missing verdict or revision does to a "
            "revision item: `exclude`, `tie` or `zero`"),
    # scoring
    Setting("CRITIC_EXECUTOR", "sandbox", "choice", "the executor that runs programs: `sandbox`, or a plugin's name"),
    Setting("CRITIC_ALLOW_UNISOLATED", "", "flag", "1: accept a sandbox weaker than bubblewrap / unshare (said "
            "once per run); unset: refuse"),
    Setting("CRITIC_JUDGE_RETRY", "0", "flag", "1: ask the judge once more for an item whose reply held no "
            "readable grade (the paper asks once)"),
    Setting("CRITIC_JUDGE_ALLOW_FAILURES", "", "flag", "1: `critic-eval` exits 0 although the judge or revisers "
            "left items ungraded (they count at the scale's minimum)"),
    Setting("CRITIC_REVISERS", "", "text", "the reviser pool's members (`strong,weak`); each reads "
            "CRITIC_REVISER_<MEMBER>_* first"),
    Setting("CRITIC_ENDPOINT_TIMEOUT", "5", "number", "seconds for the preflight's one models call per endpoint "
            "(judge, revisers, the model's `--model_args base_url`; 0 skips the call)"),
    # intervals
    Setting("CRITIC_CI", "on", "flag", "`off`: no bootstrap intervals"),
    Setting("CRITIC_CI_RESAMPLES", "1000", "integer", "bootstrap resamples per interval"),
    Setting("CRITIC_CI_LEVEL", "0.95", "number", "the intervals' level"),
    Setting("CRITIC_CI_SEED", "0", "integer", "the bootstrap's seed"),
    # runs
    Setting("CRITIC_REQUEST_CACHE", "", "path", "the root of the per-model request cache (resume); `off` turns it "
            "off; unset: the user cache folder"),
    Setting("CRITIC_RESCUE_DIR", "critic-eval-rescue", "path", "where a run whose scoring failed saves its "
            "generations"),
    # OpenCompass's own judge variables, honoured by our datasets
    Setting("OC_JUDGE_MODEL", "", "text", "OpenCompass's judge model (used when CRITIC_JUDGE_MODEL is unset)"),
    Setting("OC_JUDGE_API_BASE", "", "text", "OpenCompass's judge endpoint"),
    Setting("OC_JUDGE_API_KEY", "", "text", "OpenCompass's judge key"),
)}

# Per model role: CRITIC_<ROLE>_<NAME> (and CRITIC_<ROLE>_<MEMBER>_<NAME> for a pool member).
ROLE_SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("BACKEND", "openai", "choice", "`openai` (any OpenAI-compatible server), `vllm`, `hf`, or a plugin's"),
    Setting("MODEL", "", "text", "the model's name (unset: no such model; judged tasks defer)"),
    Setting("BASE_URL", "", "text", "the endpoint(s): a URL, several comma-separated, or a file listing them"),
    Setting("API_KEY", "", "text", "the endpoint's key (falls back to OPENAI_API_KEY)"),
    Setting("CONCURRENCY", "16", "integer", "requests in flight"),
    Setting("CACHE", "", "path", "the reply cache: a file, or a folder keeping <role>.sqlite; `off`: none"),
    Setting("MAX_TOKENS", "1024", "integer", "the reply budget"),
    Setting("ENGINE_ARGS", "", "text", "the vllm backend's engine arguments, key=value,..."),
)}


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def read_setting(name: str, env: Mapping[str, str] | None = None) -> str:
    """The variable's value, stripped; its default when unset or empty."""
    default = SETTINGS[name].default  # a KeyError here is a variable missing from the table: a bug, not a user's
    return (_env(env).get(name) or "").strip() or default


def read_raw(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The variable exactly as set (None: unset), for the data folders, where an empty value is refused rather than
    taken as unset: ``CRITICBENCH_DATA_DIR=`` is a path left out, not a request for the Hub."""
    SETTINGS[name]
    return _env(env).get(name)


def resolve_dir(value: str | os.PathLike | None, env: str, default: str = "repo",
                named: dict[str, Path] | None = None) -> Path | None:
    """A data folder setting read (``value`` if given, else ``$env``) as its local root; a name of ``named``
    (CriticBench's ``sample``) is its folder; None for the published copy (unset; ``default`` only words where that
    is: 'repo', the paper's repository; 'hub', the Hugging Face Hub). Every protocol resolves alike, so
    ``critic-eval preflight`` (which resolves each protocol's setting here) and the run agree on every value; a word
    that is none of the documented ones ('hub', 'repo') is a folder that is not there."""
    named = named or {}
    given = value not in (None, "")
    value = value if given else read_raw(env)
    if not given and value is not None and not value.strip():  # `X_DATA_DIR=`: a path left out, not the default
        where = "the Hub" if default == "hub" else "the repository's own files"
        raise DataError(f"{env} is set but empty; give a local copy of the {'dataset' if named else 'files'}"
                        + "".join(f", {n!r} for the bundled {n}" for n in named) + f", or unset it for {where}")
    if value is None:
        return None
    if value in named:
        return named[value]
    root = Path(value).expanduser()
    if not root.is_dir():
        import difflib

        close = difflib.get_close_matches(str(value).strip().lower(), list(named), n=1, cutoff=0.7)
        hint = f"; did you mean {close[0]!r} (the bundled {close[0]})?" if close and "/" not in str(value) else ""
        raise DataError(f"{'data_dir' if given else env}={value}: not a directory{hint}")
    return root


def is_setting_set(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Set to something other than spaces (an empty value counts as unset)."""
    SETTINGS[name]
    return bool((_env(env).get(name) or "").strip())


def read_flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """A yes / no variable: 1 true yes on, 0 false no off (any case); anything else is one ConfigError."""
    raw = read_setting(name, env).lower()
    if raw in TRUE:
        return True
    if raw in FALSE or raw == "":
        return False
    raise ConfigError(f"{name}={_env(env).get(name)!r}: expected 1 or 0 (true/false, yes/no, on/off)")


def read_number(name: str, env: Mapping[str, str] | None = None) -> float | int:
    """An integer or a number, as the table says; a bad one is one ConfigError naming the variable."""
    spec, raw = SETTINGS[name], read_setting(name, env)
    kind = int if spec.kind == "integer" else float
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: expected {'an integer' if kind is int else 'a number'}") from None


def role_setting(role: str, name: str, member: str = "", env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """A role's ``name`` (a ``ROLE_SETTINGS`` key): (value, the variable it came from). A pool member's own
    ``CRITIC_<ROLE>_<MEMBER>_<NAME>`` first, then the role's; '' when neither is set (the caller knows the
    default, which may depend on the backend)."""
    ROLE_SETTINGS[name]
    env = _env(env)
    prefix = f"CRITIC_{role.upper()}_"
    for variable in ((f"{prefix}{member.upper()}_{name}",) if member else ()) + (prefix + name,):
        raw = (env.get(variable) or "").strip()
        if raw:
            return raw, variable
    return "", prefix + name


def markdown_table() -> str:
    """docs/usage.md's settings table (between its ``<!-- settings -->`` markers)."""
    rows = ["| variable | default | type | what it does |", "|---|---|---|---|"]
    rows += [f"| `{s.name}` | {f'`{s.default}`' if s.default else '—'} | {s.kind} | {s.doc} |"
             for s in SETTINGS.values()]
    rows += [f"| `CRITIC_<ROLE>_{s.name}` | {f'`{s.default}`' if s.default else '—'} | {s.kind} | {s.doc} |"
             for s in ROLE_SETTINGS.values()]
    return "\n".join(rows)
