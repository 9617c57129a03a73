"""The benchmark authors' own files (prompt templates, their wording), read at run time like data, never copied here.

A protocol that follows its authors' prompts names each file it needs as an ``AuthorsFile``: the repository, a
pinned commit, the path in it and the file's sha256. ``AuthorsFile.text`` finds it, in this order:

1. a checkout of the authors' repository: the file's own checkout setting (``checkout_env``), for a benchmark whose
   data are not in that repository (RewardBench's prompts are on GitHub, its data on the Hub: one folder cannot be
   both, so ``REWARDBENCH_AUTHORS_DIR`` names the checkout and ``REWARDBENCH_DATA_DIR`` the data, the bundled sample
   too); else the protocol's data-dir setting, when it points at such a checkout (JudgeBench's, ProcessBench's,
   RealCritic's hold both data and templates): ``<checkout>/<path>``. A checkout setting that names a folder without
   the file is one ``DataError`` naming it (never a silent fetch of what the user meant to give);
2. ``CRITIC_AUTHORS_MIRROR``: a folder or base URL laid out as ``<mirror>/<owner>/<repo>/<commit>/<path>`` (an
   air-gapped lab's copy, or a test's);
3. the cache, ``$XDG_CACHE_HOME/critic_tasks/authors/<owner>/<repo>/<commit>/<path>``;
4. GitHub, ``https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>``, once, into the cache.

Whatever the source, the bytes must hash to the pinned sha256: a checkout at another commit, a proxy's error page or
a truncated download is one ``DataError`` naming the file, never a prompt that silently differs from the one the
published numbers were made with. With no source reachable (offline, nothing cached) the error names the settings
that would give one, and the ``prompt: ours`` option that needs none.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from critic_tasks.core.errors import DataError
from critic_tasks.core.paths import cache_dir
from critic_tasks.core.settings import read_setting, resolve_dir

MIRROR_ENV = "CRITIC_AUTHORS_MIRROR"
GITHUB_RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class AuthorsFile:
    repo: str  # owner/name on GitHub
    commit: str  # the pinned commit (40 hex digits)
    path: str  # the file's path inside the repository
    sha256: str  # of the file's bytes at that commit
    data_env: str  # the protocol's data-dir setting, which may name a checkout of ``repo``
    # other released versions of the same file a checkout may hold, whose parts the protocol reads are the same
    # (each protocol's test shows they read alike); GitHub and the cache are read at ``commit`` only
    also_sha256: tuple[str, ...] = ()
    what: str = "the authors' prompt"  # what the file is, in the error lines
    instead: str = "use the option prompt: ours"  # the way round a missing file, in the error lines
    checkout_env: str = ""  # a setting naming a checkout of ``repo`` alone (its data elsewhere), read first

    @property
    def url(self) -> str:
        return f"{GITHUB_RAW}/{self.repo}/{self.commit}/{self.path}"

    def text(self, data_dir: str | os.PathLike | None = None) -> str:
        """The file's text (UTF-8), from the first source that has it (module docstring), checked by sha256."""
        return _text(self, None if data_dir in (None, "") else str(data_dir))


def _checked(spec: AuthorsFile, payload: bytes, where: str) -> bytes:
    got = hashlib.sha256(payload).hexdigest()
    if got != spec.sha256 and got not in spec.also_sha256:
        raise DataError(f"{where}: sha256 {got[:12]}... is not the pinned {spec.sha256[:12]}... of {spec.repo}'s "
                        f"{spec.path} at {spec.commit[:10]} (another version of the authors' file; check out that "
                        f"commit, or {spec.instead})")
    return payload


def _from_checkout(spec: AuthorsFile, data_dir: str | None) -> Path | None:
    named = read_setting(spec.checkout_env) if spec.checkout_env else ""
    if named:
        candidate = Path(named).expanduser() / spec.path
        if not candidate.is_file():
            raise DataError(f"{spec.checkout_env}={named}: no {spec.path} there ({spec.what}); it names a checkout of "
                            f"https://github.com/{spec.repo} (at {spec.commit[:10]}), or unset it")
        return candidate
    try:
        root = resolve_dir(data_dir, spec.data_env)
    except DataError:
        return None  # the data loader reports a bad data folder in its own words
    if root is None:
        return None
    candidate = root / spec.path
    return candidate if candidate.is_file() else None


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.read()


@lru_cache(maxsize=None)
def _text(spec: AuthorsFile, data_dir: str | None) -> str:
    local = _from_checkout(spec, data_dir)
    if local is not None:
        return _checked(spec, local.read_bytes(), str(local)).decode("utf-8")
    cached = cache_dir("authors", spec.repo, spec.commit, spec.path)
    if cached.is_file():
        return _checked(spec, cached.read_bytes(), str(cached)).decode("utf-8")
    mirror = read_setting(MIRROR_ENV)
    source = f"{mirror.rstrip('/')}/{spec.repo}/{spec.commit}/{spec.path}" if mirror else spec.url
    try:
        if mirror and "://" not in mirror:
            payload = Path(source).read_bytes()
        else:
            payload = _download(source)
    except Exception as err:  # offline, 404, a proxy, a missing mirror file: one message for all
        raise DataError(f"{spec.repo}'s {spec.path} ({spec.what}) is not cached and could not be read from "
                        f"{source} ({type(err).__name__}: {err}); set {spec.checkout_env or spec.data_env} to a checkout of "
                        f"https://github.com/{spec.repo} at {spec.commit[:10]}, or {MIRROR_ENV} to a folder holding "
                        f"it as {spec.repo}/{spec.commit}/{spec.path}, or {spec.instead}") from None
    _checked(spec, payload, source)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(cached.name + f".{os.getpid()}.part")
    partial.write_bytes(payload)
    partial.replace(cached)  # whole or not at all: a killed run leaves no half file behind
    return payload.decode("utf-8")
