"""Resume by default: ``critic-eval`` runs keep lm-eval's own request cache (``--use_cache``) in a per-model folder.

lm-eval writes each generation to that cache (sqlite, one row per request, keyed by the prompt and the generation
arguments) the moment the model returns it, and a run with the same cache asks the model only for the requests it
does not find there. The cache key does not name the model, so each model gets a folder of its own:

    $CRITIC_REQUEST_CACHE (default ~/.cache/critic_tasks/requests) / <model>-<name>-<hash>/requests_rank<N>.db

``<hash>`` covers ``--model`` and ``--model_args`` (and, for a local checkpoint, its files' sizes and times, so a
checkpoint rewritten in place is not answered from the old cache). ``--no_resume`` or ``CRITIC_REQUEST_CACHE=off``
turns it off; a ``--use_cache`` of the user's own wins. Sampled requests (``do_sample``) are never answered from the
cache (lm-eval's rule), so a resumed sampled task regenerates them.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import hashlib
import json
import os
import re
import sqlite3

from critic_tasks.core.paths import cache_dir, is_off
from critic_tasks.core.settings import read_setting

CACHE_ENV = "CRITIC_REQUEST_CACHE"
NO_RESUME_FLAG = "--no_resume"
PREFIX = "requests"  # lm-eval appends _rank<N>.db


def cache_root() -> str | None:
    """The folder under which each model's request cache lives; None when turned off."""
    value = read_setting(CACHE_ENV)
    if is_off(value):
        return None
    if value:
        return os.path.expanduser(value)
    return str(cache_dir("requests"))


def _model_args(raw: str | None) -> dict:
    """``--model_args`` as a dict (``k=v,k=v`` or a JSON object), for naming and hashing only."""
    raw = (raw or "").strip()
    if raw.startswith("{"):
        try:
            value = json.loads(raw)
            return value if isinstance(value, dict) else {"": raw}
        except ValueError:
            return {"": raw}
    out = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip()
    return out


def _local_files(path: str) -> list:
    """(name, size, mtime) of a local checkpoint's files (a file, or a folder's top-level files)."""
    path = os.path.expanduser(path)
    if os.path.isfile(path):
        files = [path]
    elif os.path.isdir(path):
        files = sorted(os.path.join(path, n) for n in os.listdir(path))
        files = [f for f in files if os.path.isfile(f)]
    else:
        return []
    out = []
    for f in files:
        st = os.stat(f)
        out.append((os.path.basename(f), st.st_size, int(st.st_mtime)))
    return out


def model_folder(model: str | None, model_args: str | None) -> str | None:
    """The per-model cache folder for these arguments; None when the cache is off."""
    root = cache_root()
    if root is None:
        return None
    args = _model_args(model_args)
    name = args.get("pretrained") or args.get("model") or args.get("path") or ""
    fingerprint = {"model": model or "", "model_args": sorted(args.items(), key=lambda kv: kv[0]),
                   "files": {k: _local_files(v) for k, v in args.items()
                             if k in ("pretrained", "gguf_file", "peft", "delta", "tokenizer") and v}}
    digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(str(name).rstrip("/")))[:60].strip("._") or "model"
    return os.path.join(root, f"{re.sub(r'[^A-Za-z0-9._-]+', '_', model or 'model')}-{slug}-{digest}")


def with_request_cache(argv: list[str], flag_value) -> tuple[list[str], str | None]:
    """(argv for lm-eval, the cache prefix in use or None). Adds ``--use_cache`` unless the user gave one, or
    ``--no_resume`` / ``CRITIC_REQUEST_CACHE=off`` turned it off; ``--no_resume`` is ours and never reaches lm-eval."""
    resume = NO_RESUME_FLAG not in argv
    argv = [a for a in argv if a != NO_RESUME_FLAG]
    given = flag_value(argv, "--use_cache", "-c")
    if given:
        return argv, given
    if not resume:
        return argv, None
    folder = model_folder(flag_value(argv, "--model"), flag_value(argv, "--model_args"))
    if folder is None:
        return argv, None
    prefix = os.path.join(folder, PREFIX)
    return [*argv, "--use_cache", prefix], prefix


def flush_caches() -> None:
    """Commit and close every lm-eval request cache still open (its writes go through a daemon thread that an
    interrupted process would otherwise kill with the last replies still queued)."""
    try:
        from sqlitedict import SqliteDict
    except ImportError:
        return
    for obj in gc.get_objects():
        # type(), not isinstance(): isinstance reads obj.__class__, and some objects warn on any attribute read
        # (torch's deprecated torch.distributed.reduce_op: a FutureWarning printed on every Ctrl-C)
        if issubclass(type(obj), SqliteDict):
            try:
                obj.close()
            except Exception:  # a cache that cannot be closed cleanly keeps what it committed
                pass


def cached_count(prefix: str) -> int:
    """How many replies the request cache with this prefix holds (every rank's file)."""
    total = 0
    for path in glob.glob(glob.escape(prefix) + "_rank*.db"):
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                total += db.execute("SELECT COUNT(*) FROM unnamed").fetchone()[0]
        except sqlite3.Error:
            pass
    return total
