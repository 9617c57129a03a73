"""The documentation resolves: every relative link points at a file (and heading) that exists, and every
``critic-eval <command>`` it shows is a command critic-eval has."""

import re
from pathlib import Path

import pytest

from critic_tasks.cli import COMMANDS

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted({REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("benchmarks/*.md")})
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"critic-eval[ \t]+([A-Za-z][\w-]*)")


def _split(page: Path) -> tuple[list[str], list[str]]:
    """(prose lines, code: fenced blocks' lines and inline code spans)."""
    prose, code, fenced = [], [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            code.append(line)
        else:
            prose.append(line)
            code += re.findall(r"`([^`]+)`", line)
    return prose, code


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    heads = [m.group(1) for line in _split(page)[0] for m in [re.match(r"#+\s+(.*)$", line)] if m]
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):  # http(s), mailto: not ours to check offline
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: broken links {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_critic_eval_command_shown_exists(page):
    shown = {c for snippet in _split(page)[1] for c in COMMAND.findall(snippet)}
    # critic-eval passes anything that is not its own command on to lm-eval (flags start with --)
    # run / ls / validate: lm-eval's own subcommands, which critic-eval hands to it (runner.run_cli)
    unknown = sorted(c for c in shown if c not in COMMANDS and c not in ("run", "ls", "validate"))
    assert not unknown, f"{page.relative_to(REPO)} shows critic-eval commands that do not exist: {unknown}"


def test_readme_front_page_stays_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move details to docs/"


@pytest.mark.parametrize("page", sorted(REPO.glob("docs/protocols/*.md")), ids=lambda p: p.name)
def test_a_protocols_example_commands_use_data_a_user_has(page):
    """issue 46 (newcomer): docs/protocols/processbench.md's example read ../shared/data/processbench, this project's
    test copy, which a user does not have; an example command reads the data the way a user gets it (the default
    source, or their own download folder)."""
    fenced, shown = False, []
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced and "shared/data" in line:
            shown.append(line.strip())
    assert shown == [], f"{page.name}: an example names the project's test data: {shown}"
