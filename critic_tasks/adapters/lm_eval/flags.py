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


class _Unparsed(Exception):
    """argparse stopped on something other than an unknown argument."""


def check_flag_names(command: str, argv: list[str], ours: tuple[str, ...] = ()) -> list[str]:
    """``argv`` read by lm-eval's own parser for ``command`` (run, ls, validate), before anything runs: an argument it
    does not know (a typo'd flag, a stray word) is one ConfigError line naming it, with the nearest of lm-eval's flags
    and ``ours`` (flags critic-eval takes out before lm-eval runs), where lm-eval printed its usage and "unrecognized
    arguments". Returned with each abbreviation its parser takes (argparse's allow_abbrev: ``--limi 1``) written in
    full: our own checks look for the full names."""
    import difflib

    parser = private.cli_parsers()[command]

    def stop(message: str = "", *args):
        raise _Unparsed(message)

    parser.error = parser.exit = parser.print_help = stop
    try:
        _, unknown = parser.parse_known_args([a for a in argv if a not in ours])
    except Exception as stopped:  # _Unparsed, or a ValueError of lm-eval's actions (--metadata's malformed JSON)
        if isinstance(stopped, _Unparsed) and str(stopped).startswith("ambiguous option"):
            raise ConfigError(f"{stopped}: write the flag in full") from None  # our checks would miss both flags
        return argv  # a value missing or malformed, --help: lm-eval's to say (or show) in the run, as before
    options = [o for action in parser._actions for o in action.option_strings]
    if unknown:
        name = unknown[0].split("=", 1)[0]
        if not name.startswith("-"):  # a word left after the flags' values
            raise ConfigError(f"{unknown[0]}: unexpected argument (not a value of the flag before it)")
        close = difflib.get_close_matches(name, [o for o in [*options, *ours] if len(o) > 2], n=3)
        raise ConfigError(f"{name}: no such option" + (f"; did you mean {' or '.join(close)}?" if close else "")
                          + f" (`critic-eval {command} --help` lists lm-eval's)")
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        if name.startswith("--") and name not in options and name not in ours:
            matches = [o for o in options if o.startswith(name)]
            if len(matches) == 1:  # what argparse took it for (else it would have stopped above)
                arg = matches[0] + eq + value
        out.append(arg)
    return out
