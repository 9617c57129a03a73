"""Reading a protocol's data files: a local copy when a setting names one, else the paper repository's own file.

Each protocol names its setting (an environment variable, or ``data_dir`` in the task options / ``--metadata``)
and the raw URL of each file in its repository. A downloaded file is kept under
``$XDG_CACHE_HOME/critic_tasks/<protocol>/`` (``~/.cache/...``), so it is fetched once. Every problem is one
``DataError`` naming the file (or URL) and what to set instead.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from critic_tasks.core.errors import DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.paths import cache_dir
from critic_tasks.core.settings import resolve_dir


def fetch(url: str, protocol: str, relpath: str, env: str) -> Path:
    """The file at ``url``, downloaded once into the cache."""
    target = cache_dir(protocol, relpath)
    if target.is_file():
        return target
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            payload = resp.read()
    except Exception as err:  # offline, 404, proxy: one message for all
        raise DataError(f"{url}: could not be downloaded ({type(err).__name__}: {err}); set {env} to a local "
                        f"copy of the files") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".part")
    tmp.write_bytes(payload)
    tmp.replace(target)
    return target


def locate(relpath: str, data_dir, env: str, url: str, protocol: str) -> Path:
    root = resolve_dir(data_dir, env)
    if root is None:
        return fetch(url, protocol, relpath, env)
    path = root / relpath
    if not path.is_file():
        raise DataError(f"{path}: file not found (expected {relpath} under {root})")
    return path


def check_hub_dataset(repo: str, env: str, filename: str, timeout: float) -> None:
    """Online, before a run: ``repo`` (a Hub dataset) answers one call within ``timeout`` seconds, else one DataError
    naming ``env``. Offline it says nothing: the run's own loading from the cache is that check."""
    from huggingface_hub import constants

    from critic_tasks.core import hub

    answer = hub.probe(repo, filename, timeout, repo_type="dataset", cache_first=False)
    if answer.state not in ("ok", "offline"):
        raise DataError(f"the Hub ({constants.ENDPOINT}) cannot be reached for {repo} ({answer.detail}); set {env} "
                        "to a local copy of the data files, or to 'sample' for the bundled sample")


def hub_rows(repo: str, split: str | None, env: str) -> list[dict]:
    """The rows of a Hub dataset's split (``split`` None: the dataset's only one, as ``load_dataset`` picks it), or
    one DataError naming ``env`` (a local copy, or ``sample``): offline with nothing cached, the Hub unreachable, a
    missing split."""
    where = f"hf://datasets/{repo}" + (f" (split {split!r})" if split else "")
    try:
        from datasets import load_dataset

        return [dict(row) for row in load_dataset(repo, split=split)]
    except Exception as err:  # network, offline mode, a missing split: one message for all
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            raise DataError(f"HF_HUB_OFFLINE is set and {where} is not in the local cache; set {env} to a local copy "
                            "of the data files, or to 'sample' for the bundled sample") from None
        first = str(err).splitlines()[0] if str(err) else ""
        raise DataError(f"{where}: could not be read from the Hub ({type(err).__name__}: {first}). Set {env} to a "
                        "local copy of the data files, or to 'sample' for the bundled sample.") from None


def hub_file(repo: str, path: str, instead: str) -> Path:
    """One file of a Hub dataset repository (kept in huggingface_hub's cache), or one DataError naming it and what
    to give ``instead``: offline with nothing cached, the Hub unreachable, no such file."""
    from huggingface_hub import constants, hf_hub_download

    where = f"hf://datasets/{repo}/{path}"
    try:
        return Path(hf_hub_download(repo, path, repo_type="dataset"))
    except Exception as err:  # network, offline mode, a missing file: one message for all
        if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
            raise DataError(f"HF_HUB_OFFLINE is set and {where} is not in the local Hub cache; {instead}") from None
        first = str(err).splitlines()[0] if str(err) else ""
        raise DataError(f"{where}: could not be read from the Hub ({type(err).__name__}: {first}); {instead}") from None


def hub_commit(path: Path) -> str:
    """The commit a file ``hub_file`` returned was read at (its cache folder ``snapshots/<commit>/...``), or ''."""
    parts = path.parts
    return parts[parts.index("snapshots") + 1] if "snapshots" in parts[:-1] else ""


def read_json(path: Path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason})") from None
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror})") from None


def read_jsonl(path: Path) -> list[dict]:
    return [row for _, _, row in iter_jsonl(path)]


def field(item: dict, key: str, where: str, kinds=(str,)):
    """``item[key]`` of one of ``kinds``, or a DataError naming file, item and field."""
    if not isinstance(item, dict):
        raise DataError(f"{where}: expected an object, got {type(item).__name__}")
    if key not in item or item[key] is None:
        raise DataError(f"{where}: missing field '{key}'")
    value = item[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise DataError(f"{where}: field '{key}' should be {names}, got {type(value).__name__}")
    return value
