"""``critic-eval register-lm-eval``: make the plain ``lm_eval --tasks critic_feedback,...`` command find our tasks.

lm-eval 0.4.13 indexes only its own ``lm_eval/tasks/`` tree and ``--include_path``; an installed package's tasks
are not found ("Tasks not found"). Registering places one folder in the installed lm-eval's task tree,
``lm_eval/tasks/critic_tasks/``, holding

* one include-only YAML per task and group of ours (``include: <this package>/adapters/lm_eval/tasks/<name>.yaml``):
  the generated YAML files and the hooks they name stay in this package, so lm-eval resolves every
  ``!function utils.<name>`` next to our own files;
* ``utils.py``, one line re-exporting our generated ``tasks/utils.py``, so that ``!function utils.<name>`` means
  the same from this folder (lm-eval 0.4.13 resolves a function next to the file that names it, our included
  file, and never loads it; it is there for a loader that resolves functions next to the including file);
* ``critic_tasks_registration.json``, the marker: who made the folder, for which package folder, and its files.

``--undo`` removes exactly the files the marker lists (and the bytecode Python may have cached for ``utils.py``),
then the folder: lm-eval's tree is as it was, byte for byte. Registering again rewrites the folder (idempotent; a
task added or removed by an upgrade of critic-tasks is picked up). A folder of that name without our marker is never
touched. Only lm-eval versions whose task loading we know are changed (``KNOWN_VERSIONS``); once lm-eval reads the
``lm_eval.tasks`` entry point that critic-tasks declares (lm-eval PR #4015), nothing is needed and nothing is done.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from critic_tasks.adapters.lm_eval import TASKS_DIR
from critic_tasks.core.errors import ConfigError

KNOWN_VERSIONS = ("0.4.13",)  # lm-eval releases whose task index we checked: tasks/**/*.yaml, `include:` resolved
FOLDER = "critic_tasks"
MARKER = "critic_tasks_registration.json"
MADE_BY = "critic-eval register-lm-eval"
SHIM = "from critic_tasks.adapters.lm_eval.tasks.utils import *  # noqa: F401,F403  (critic-eval register-lm-eval)\n"
HEADER = f"# Placed by `{MADE_BY}` (critic-tasks); removed by `{MADE_BY} --undo`.\n"
FALLBACK = ('lm_eval --include_path "$(critic-eval tasks-dir)" ..., or lm_eval --config FILE ... with '
            "FILE from `critic-eval lm-eval-config`")
# lm-eval's own code names the entry-point group (PR #4015): a module that calls entry_points() with "lm_eval.tasks"
_GROUP = re.compile(r"""["']lm_eval\.tasks["']""")


@dataclass(frozen=True)
class LmEval:
    """The installed lm-eval: its package folder and version."""

    package: Path
    version: str

    @property
    def tasks_root(self) -> Path:
        return self.package / "tasks"

    @property
    def folder(self) -> Path:
        return self.tasks_root / FOLDER


def installed() -> LmEval:
    """The lm-eval this Python imports (found without importing it)."""
    spec = importlib.util.find_spec("lm_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("lm-eval is not installed in this environment (pip install 'lm-eval>=0.4.13,<0.5')")
    try:
        version = importlib.metadata.version("lm_eval")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return LmEval(Path(list(spec.submodule_search_locations)[0]), version)


def reads_entry_points(lm: LmEval) -> bool:
    """Whether this lm-eval finds installed task packages itself: one of its modules (top two levels) calls
    ``entry_points`` and names the ``"lm_eval.tasks"`` group. 0.4.13 does not."""
    for path in [*lm.package.glob("*.py"), *lm.package.glob("*/*.py")]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "entry_points" in text and _GROUP.search(text):
            return True
    return False


def pointer_files(tasks_dir: Path = TASKS_DIR) -> dict[str, str]:
    """File name -> content for the registered folder: one include-only YAML per task / group file, and the shim."""
    files = {path.name: f"{HEADER}include: {path.resolve()}\n" for path in sorted(Path(tasks_dir).glob("*.yaml"))}
    files["utils.py"] = SHIM
    return files


def read_marker(lm: LmEval) -> dict | None:
    """Our marker in lm-eval's tree, or None when there is none (or it is not ours)."""
    try:
        marker = json.loads((lm.folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("made_by") == MADE_BY else None


def up_to_date(lm: LmEval | None = None, tasks_dir: Path = TASKS_DIR) -> bool:
    """lm-eval's tree holds a registration of exactly this package's task files."""
    try:
        lm = lm or installed()
    except ConfigError:
        return False
    marker = read_marker(lm)
    return (marker is not None and marker.get("tasks_dir") == str(Path(tasks_dir).resolve())
            and sorted(marker.get("files", [])) == sorted(pointer_files(tasks_dir)))


def _write_error(lm: LmEval, err: OSError) -> ConfigError:
    return ConfigError(f"cannot write into lm-eval's task tree {lm.tasks_root} ({err.strerror or err}); nothing was "
                       f"registered. Without registering: {FALLBACK}")


def register(lm: LmEval | None = None, tasks_dir: Path = TASKS_DIR) -> str:
    """Place (or refresh) the folder; returns the line to print. Raises ConfigError with the reason to refuse."""
    lm = lm or installed()
    if reads_entry_points(lm):
        note = (f" A registration from before is still in {lm.folder}: `{MADE_BY} --undo` removes it."
                if read_marker(lm) else "")
        return (f"lm-eval {lm.version} reads the `lm_eval.tasks` entry point, which critic-tasks declares: "
                f"`lm_eval --tasks critic_...` finds our tasks without registering; nothing done.{note}")
    if lm.version not in KNOWN_VERSIONS:
        raise ConfigError(f"lm-eval {lm.version} is not a version {MADE_BY} knows ({', '.join(KNOWN_VERSIONS)}): "
                          f"its task tree ({lm.tasks_root}) is left alone. Instead: {FALLBACK}")
    if not lm.tasks_root.is_dir():
        raise ConfigError(f"{lm.tasks_root}: lm-eval's task folder is missing; is lm-eval {lm.version} installed whole?")
    old = read_marker(lm)
    if lm.folder.exists() and old is None:
        raise ConfigError(f"{lm.folder} exists and was not made by {MADE_BY} (no {MARKER} of ours in it): "
                          "not touching it")
    files = pointer_files(tasks_dir)
    marker = {"made_by": MADE_BY, "tasks_dir": str(Path(tasks_dir).resolve()), "lm_eval_version": lm.version,
              "critic_tasks_version": _own_version(), "files": sorted(files)}
    created = not lm.folder.exists()
    written: list[Path] = []
    try:
        lm.folder.mkdir(exist_ok=True)
        for name in sorted(set(old["files"]) - set(files)) if old else []:  # tasks an upgrade removed
            (lm.folder / name).unlink(missing_ok=True)
        # the marker first: a folder we started writing is always recognisably ours
        for name, text in [(MARKER, json.dumps(marker, indent=2) + "\n"), *sorted(files.items())]:
            path = lm.folder / name
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as err:
        if created:  # leave nothing behind
            shutil.rmtree(lm.folder, ignore_errors=True)
        raise _write_error(lm, err) from None
    verb = "registered" if old is None else "already registered; rewrote the" if old == marker else "refreshed the"
    return (f"{verb} {len(files) - 1} critic task and group files in {lm.folder} (lm-eval {lm.version}): "
            f"`lm_eval --tasks critic_feedback,critic_meta --model ...` now finds them; undo: {MADE_BY} --undo")


def undo(lm: LmEval | None = None) -> str:
    """Remove our folder: the files the marker lists, Python's bytecode cache of the shim, the marker, the folder."""
    lm = lm or installed()
    if not lm.folder.exists():
        return f"nothing to undo: {lm.folder} does not exist"
    marker = read_marker(lm)
    if marker is None:
        raise ConfigError(f"{lm.folder} was not made by {MADE_BY} (no {MARKER} of ours in it): not touching it")
    try:
        for name in marker.get("files", []):
            if "/" not in name and name not in (".", ".."):
                (lm.folder / name).unlink(missing_ok=True)
        cache = lm.folder / "__pycache__"
        if cache.is_dir():
            for pyc in cache.glob("utils.*.pyc"):
                pyc.unlink()
            if not any(cache.iterdir()):
                cache.rmdir()
        (lm.folder / MARKER).unlink()
        left = sorted(p.name for p in lm.folder.iterdir())
        if left:
            return f"removed our files from {lm.folder}; left it in place: it also holds {', '.join(left)} (not ours)"
        lm.folder.rmdir()
    except OSError as err:
        raise ConfigError(f"cannot remove {lm.folder} ({err.strerror or err}): lm-eval's task tree cannot be "
                          "written here") from None
    return f"removed {lm.folder}: lm-eval {lm.version}'s task tree is as it was before {MADE_BY}"


def config_yaml(tasks_dir: Path = TASKS_DIR) -> str:
    """An lm-eval ``--config`` file that puts our tasks on its path (for CI: nothing written into lm-eval)."""
    return ("# lm_eval --config THIS_FILE --tasks critic_feedback,critic_meta --model ...  (written by critic-eval "
            "lm-eval-config;\n# command-line flags override these keys)\n"
            f"include_path: {json.dumps(str(Path(tasks_dir).resolve()))}\n")


def _own_version() -> str:
    try:
        return importlib.metadata.version("critic-tasks")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
