"""One settings table (critic_tasks/core/settings.py): every CRITIC_* / CRITICBENCH_* variable the code reads is in
it, no module reads one through os.environ, docs/usage.md's table is the generated one, and an empty value means
the same thing wherever it is read."""

import re
from pathlib import Path

import pytest

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.settings import ROLE_SETTINGS, SETTINGS, markdown_table, read_flag, read_number, read_setting

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "critic_tasks"
OURS = re.compile(r"\b((?:CRITIC|CRITICBENCH|CRITIQUELLM|METACRITIQUE|OC)_[A-Z][A-Z_]*[A-Z])\b")


def _python_files():
    return [p for p in PACKAGE.rglob("*.py") if "configs" not in p.parts]


def test_no_module_reads_our_variables_but_the_settings_module():
    """``os.environ`` / ``os.getenv`` with one of our names (or a constant holding one) appears only in
    core/settings.py; the zygote's HOME/TMPDIR writes and third-party variables (RANK, XDG_CACHE_HOME) are not ours."""
    offenders = []
    for path in _python_files():
        if path.name == "settings.py" and path.parent.name == "core":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"os\.environ(?:\.get)?[\[(]|os\.getenv\(", line) and (OURS.search(line) or re.search(
                    r"(?:os\.environ(?:\.get)?[\[(]|os\.getenv\()\s*[A-Z_]*_ENV\b", line)):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_every_variable_named_in_the_code_is_in_the_table():
    named = set()
    for path in _python_files():
        named |= set(re.findall(r"[\"'](" + OURS.pattern.removeprefix(r"\b(").removesuffix(r")\b") + r")[\"']",
                                path.read_text(encoding="utf-8")))
    role = {f"CRITIC_{r}_{n}" for r in ("JUDGE", "REVISER") for n in ROLE_SETTINGS}
    missing = sorted(named - set(SETTINGS) - role)
    assert named >= {"CRITIC_EXECUTOR", "CRITICBENCH_DATA_DIR", "CRITIC_CI_SEED"}  # the search finds them at all
    assert missing == []


def test_usage_docs_table_is_the_generated_one():
    text = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    table = text.split("<!-- settings -->\n", 1)[1].split("\n<!-- /settings -->", 1)[0]
    assert table == markdown_table()
    rows = [line for line in table.splitlines()[2:]]
    assert len(rows) == len(SETTINGS) + len(ROLE_SETTINGS)
    assert all(f"`{name}`" in table for name in SETTINGS)


def test_an_empty_value_is_the_default_and_a_bad_one_names_the_variable():
    assert read_setting("CRITIC_EXECUTOR", {"CRITIC_EXECUTOR": ""}) == "sandbox"
    assert read_setting("CRITIC_EXECUTOR", {"CRITIC_EXECUTOR": "  "}) == "sandbox"
    assert read_setting("CRITIC_EXECUTOR", {}) == "sandbox"
    assert read_setting("CRITIC_EXECUTOR", {"CRITIC_EXECUTOR": " local "}) == "local"
    assert read_number("CRITIC_CI_RESAMPLES", {"CRITIC_CI_RESAMPLES": "200"}) == 200
    assert read_number("CRITIC_CI_LEVEL", {}) == 0.95
    assert [read_flag("CRITIC_CI", {"CRITIC_CI": v}) for v in ("off", "0", "NO", "on", "", "Yes")] == \
        [False, False, False, True, True, True]
    with pytest.raises(ConfigError, match=r"^CRITIC_CI_RESAMPLES='2x': expected an integer$"):
        read_number("CRITIC_CI_RESAMPLES", {"CRITIC_CI_RESAMPLES": "2x"})
    with pytest.raises(ConfigError, match=r"^CRITIC_ALLOW_UNISOLATED='maybe': expected 1 or 0"):
        read_flag("CRITIC_ALLOW_UNISOLATED", {"CRITIC_ALLOW_UNISOLATED": "maybe"})


def test_an_empty_executor_setting_is_the_sandbox_in_preflight_and_in_the_filter(monkeypatch):
    """``CRITIC_EXECUTOR=`` passed the preflight (``or "sandbox"``) and then the filter raised (``get("X",
    "sandbox")`` returns ''): both read the one setting now."""
    from critic_tasks import registry
    from critic_tasks.adapters.lm_eval.task_functions import ScoreFilter, TaskFunctions

    monkeypatch.setenv("CRITIC_EXECUTOR", "")
    registry.SCORERS["sandbox"].check_settings()
    assert type(ScoreFilter(TaskFunctions(registry.TASK_KINDS["correction"])).executor).__name__ == "SandboxExecutor"
