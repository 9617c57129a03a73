"""Reading lm-eval's command line as its CLI will: a flag's values, the merged ``--metadata``, our tasks among
``--tasks``, and the argv less some flags. Shared by the passthrough (runner.py) and the chained runs (stages.py)."""

from __future__ import annotations

from critic_tasks.adapters.lm_eval import private
from critic_tasks.core.errors import ConfigError
from critic_tasks.preflight import expand


def logs_samples(argv: list[str]) -> bool:
    return any(a in ("--log_samples", "-s") or a.startswith("--log_samples=") for a in argv)


def flag_value(argv: list[str], name: str, short: str = "") -> str | None:
    values = flag_values(argv, name, short)
    return values[0] if values else None


def flag_values(argv: list[str], name: str, short: str = "") -> list[str] | None:
    """The values of a flag (``--flag a b``, ``--flag=a``; every occurrence), or None when it is absent."""
    out, found, taking = [], False, False
    for arg in argv:
        if taking and not arg.startswith("-"):
            out.append(arg)
            continue
        taking = arg in (name, short or name)
        found |= taking
        if arg.startswith(name + "="):
            found = True
            out.append(arg.split("=", 1)[1])
    return out if found else None


def run_metadata(argv: list[str]) -> dict:
    """Every ``--metadata`` given, parsed and merged exactly as lm-eval's CLI does (``private.parse_metadata``); where
    lm-eval would stop (malformed JSON, a list, a word without ``=``), one ConfigError line."""
    try:
        return private.parse_metadata(_occurrences(argv, "--metadata"))
    except ValueError as err:
        raise ConfigError(f"--metadata {err}") from None


def _occurrences(argv: list[str], name: str) -> list[list[str]]:
    """The words after each occurrence of a flag taking one or more (argparse's ``nargs="+"``): ``--flag a b`` and
    ``--flag=a`` (that one word only)."""
    out: list[list[str]] = []
    taking = False
    for arg in argv:
        if taking and not arg.startswith("-"):
            out[-1].append(arg)
            continue
        taking = arg == name
        if taking:
            out.append([])
        elif arg.startswith(name + "="):
            out.append([arg.split("=", 1)[1]])
    return out


def run_tasks(argv: list[str]):
    names = ",".join(flag_values(argv, "--tasks", "-t") or []).split(",")
    return expand(n.strip() for n in names if n.strip())


def without_flags(argv: list[str], flags: dict[str, bool]) -> list[str]:
    """``argv`` less the flags named (``flags``: name -> takes values, as many as follow it)."""
    out, skip = [], False
    for arg in argv:
        if skip and not arg.startswith("-"):
            continue
        name = arg.split("=", 1)[0]
        skip = name in flags and flags[name] and "=" not in arg
        if name not in flags:
            out.append(arg)
    return out
