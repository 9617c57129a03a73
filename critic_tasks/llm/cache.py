"""The persistent reply cache every model call goes through: cache-first, nothing asked twice, nothing lost.

sqlite in WAL mode, one row per reply, keyed by sha256(identity of the model, its sampling settings, the prompt
version and template hash, prompt). Each reply is written the moment it arrives, so a killed run resumes where it
stopped and a rerun makes no calls. A row also keeps what the server said answered (``served``: its ``model`` and
``system_fingerprint``), so a grade read from the cache still names the model behind it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time

from critic_tasks.core.errors import ConfigError


def cache_key(identity: dict, prompt: str) -> str:
    payload = json.dumps(identity, sort_keys=True, ensure_ascii=False) + "\x00" + prompt
    # surrogatepass: a prompt quoting a model's lone surrogate has a key too (UTF-8 refuses it; every valid text
    # hashes as before)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _stored(text: str) -> str | bytes:
    """A reply as sqlite can hold it: as is, or, holding a lone surrogate (which sqlite's UTF-8 refuses), its bytes
    with the surrogate kept (``_read`` gives the same text back)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _read(stored: str | bytes) -> str:
    return stored.decode("utf-8", "surrogatepass") if isinstance(stored, bytes) else stored


_OPENING = threading.Lock()


class ReplyCache:
    """sqlite in WAL mode: readers don't block the writer, each insert commits at once (autocommit), and one
    lock makes the connection safe to share with a backend's worker thread. Several processes may share a file."""

    def __init__(self, path: str):
        path = os.path.expanduser(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._lock = threading.Lock()
        # Switching a new file to WAL takes an exclusive lock that sqlite's busy timeout does not wait for: two
        # threads (a reviser pool) or processes creating the same cache at once would see "database is locked".
        # One opening at a time in this process, and a short retry for other processes.
        for attempt in range(50):
            try:
                with _OPENING:
                    self._db = self._open(path)
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 49:
                    raise ConfigError(f"reply cache {path}: unusable ({err}); point the CACHE setting elsewhere, "
                                      "or 'off'") from None
                time.sleep(0.1)
            except sqlite3.Error as err:
                raise ConfigError(f"reply cache {path}: unusable ({err}); point the CACHE setting elsewhere, or 'off'") \
                    from None

    @staticmethod
    def _open(path: str) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process; fsync at checkpoints
            db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, identity TEXT NOT NULL, "
                       "text TEXT NOT NULL, created REAL NOT NULL, served TEXT)")
            columns = {row[1] for row in db.execute("PRAGMA table_info(replies)")}
            if "served" not in columns:  # a cache written before replies kept who served them: its rows say none
                try:
                    db.execute("ALTER TABLE replies ADD COLUMN served TEXT")
                except sqlite3.OperationalError as err:  # another process added it first
                    if "duplicate column" not in str(err):
                        raise
        except sqlite3.Error:
            db.close()
            raise
        return db

    def get_many(self, keys: list[str]) -> dict[str, str]:
        """key -> cached reply text, for the keys that have one."""
        return {key: text for key, (text, _) in self.get_entries(keys).items()}

    def get_entries(self, keys: list[str]) -> dict[str, tuple[str, dict | None]]:
        """key -> (cached reply text, what the server said answered or None), for the keys that have one."""
        found: dict[str, tuple[str, dict | None]] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):  # stay under sqlite's bound-parameter limit
                chunk = unique[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, text, served FROM replies WHERE key IN ({','.join('?' * len(chunk))})", chunk
                )
                found.update((key, (_read(text), _served(served))) for key, text, served in rows)
        return found

    def put(self, key: str, identity: dict, text: str, served: dict | None = None) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, identity, text, created, served) VALUES (?, ?, ?, ?, ?)",
                (key, json.dumps(identity, sort_keys=True), _stored(text), time.time(),
                 None if served is None else json.dumps(served, sort_keys=True)),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _served(value: str | None) -> dict | None:
    """A row's ``served`` column back as a dict; a value that is not one (written by hand, say) reads as none."""
    try:
        served = json.loads(value) if value else None
    except ValueError:
        return None
    return served if isinstance(served, dict) else None
