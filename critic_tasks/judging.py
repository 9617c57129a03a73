"""Run judge prompts through a backend with a persistent cache, and turn the replies into scores.

Unlike the original toolkit (resume by counting JSONL lines, failures silently dropped), every prompt gets a
``JudgeResult``: a score, or ``score=None`` with the error or the unparseable raw text kept, and the failures are
counted by ``summarize``. Each reply is written to the cache (sqlite, WAL) the moment it arrives, so a run killed
half-way resumes with nothing lost and nothing judged twice, and a rerun makes no calls at all.

What is cached: every reply that came back with text, keyed by sha256(judge identity, prompt). That includes a
reply with no parseable score: the judge runs at temperature 0, so asking again would cost a call for the same
text, and since scores are parsed on read, a parser fix re-scores cached replies for free. Transport failures
(timeouts, HTTP errors after all retries) are not cached, so the next run retries them.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import math
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass

from critic_tasks.plugins.judge import JudgeReply, JudgeSettings, get_backend

log = logging.getLogger(__name__)

__all__ = ["JudgeResult", "JudgeCache", "parse_judge_score", "judge_prompts", "summarize", "cache_key"]

# "Score: 7", "score: 7.5", "**Score:** 8", "Score: [[6]]", "Score: 9/10" -> the number after the marker.
_SCORE = re.compile(r"\bscore\**\s*[:：]\s*\**\s*\[*\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
PARSE_ERROR = "no 'Score: x' with 1 <= x <= 10 in the judge's reply"


@dataclass(frozen=True)
class JudgeResult:
    score: float | None
    text: str | None
    error: str | None
    cached: bool


def parse_judge_score(text: str | None) -> float | None:
    """The last ``Score: x`` marker whose x is in [1, 10]; None if there is none.

    The last one, because the judge is told to end with its score and may quote others (e.g. the reference's 8)
    while reasoning; out-of-range markers (``Score: 0``, ``Score: 80``) are skipped."""
    for match in reversed(list(_SCORE.finditer(text or ""))):
        value = float(match.group(1))
        if 1 <= value <= 10:
            return value
    return None


def cache_key(identity: dict, prompt: str) -> str:
    payload = json.dumps(identity, sort_keys=True, ensure_ascii=False) + "\x00" + prompt
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """sqlite in WAL mode: readers don't block the writer, each insert commits at once (autocommit), and one
    lock makes the connection safe to share with a backend's worker thread. Several processes may share a file."""

    def __init__(self, path: str):
        path = os.path.expanduser(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process; fsync only at checkpoints
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, identity TEXT NOT NULL, "
            "text TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get_many(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):  # stay under sqlite's bound-parameter limit
                chunk = unique[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, text FROM judgments WHERE key IN ({','.join('?' * len(chunk))})", chunk
                )
                found.update(rows)
        return found

    def put(self, key: str, identity: dict, text: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgments VALUES (?, ?, ?, ?)",
                (key, json.dumps(identity, sort_keys=True), text, time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _result(reply: JudgeReply, cached: bool) -> JudgeResult:
    if reply.text is None:
        return JudgeResult(None, None, reply.error or "no reply", cached)
    score = parse_judge_score(reply.text)
    return JudgeResult(score, reply.text, None if score is not None else PARSE_ERROR, cached)


def judge_prompts(prompts: list[str], settings: JudgeSettings | None = None,
                  progress: bool = True) -> list[JudgeResult]:
    """Judge each prompt: cached replies first, then the misses through the backend (identical prompts once)."""
    settings = settings or JudgeSettings.from_env()
    identity = settings.identity()
    keys = [cache_key(identity, p) for p in prompts]
    cache = JudgeCache(settings.cache) if settings.cache else None
    try:
        hits = cache.get_many(keys) if cache else {}
        results: list[JudgeResult | None] = [
            _result(JudgeReply(hits[k]), cached=True) if k in hits else None for k in keys
        ]
        misses: dict[str, list[int]] = {}  # key -> every index with that prompt
        for i, k in enumerate(keys):
            if k not in hits:
                misses.setdefault(k, []).append(i)
        log.info("judge %s: %d prompts, %d cached, %d to judge", settings.model, len(prompts),
                 len(prompts) - sum(map(len, misses.values())), len(misses))
        if misses:
            miss_keys = list(misses)
            delivered: set[int] = set()

            def on_result(j: int, reply: JudgeReply) -> None:
                delivered.add(j)
                if cache is not None and reply.text is not None:
                    cache.put(miss_keys[j], identity, reply.text)  # at once: a kill after this loses nothing
                for i in misses[miss_keys[j]]:
                    results[i] = _result(reply, cached=False)

            backend = get_backend(settings)
            miss_prompts = [prompts[misses[k][0]] for k in miss_keys]
            # Third-party backends may not take the callback; then results are stored when the batch returns.
            if "on_result" in inspect.signature(backend.generate).parameters:
                replies = backend.generate(miss_prompts, progress=progress, on_result=on_result)
            else:
                replies = backend.generate(miss_prompts, progress=progress)
            if len(replies) != len(miss_prompts):
                raise RuntimeError(f"judge backend returned {len(replies)} replies for {len(miss_prompts)} prompts")
            for j, reply in enumerate(replies):
                if j not in delivered:
                    on_result(j, reply)
        return results  # type: ignore[return-value]
    finally:
        if cache is not None:
            cache.close()


def summarize(results: list[JudgeResult], settings: JudgeSettings | None = None) -> dict:
    """Mean of the parsed scores, the share parsed (x100), and which items failed (call error or no score)."""
    scores = [r.score for r in results if r.score is not None]
    failed = [i for i, r in enumerate(results) if r.score is None]
    summary = {
        "judge_score": math.fsum(scores) / len(scores) if scores else None,
        "judge_parse_rate": 100.0 * len(scores) / len(results) if results else None,
        "n": len(results),
        "n_failed": len(failed),
        "failed_indices": failed,
        "n_call_errors": sum(r.text is None for r in results),  # the rest of n_failed had text but no score
        "n_cached": sum(r.cached for r in results),
    }
    if settings is not None:
        summary["judge"] = settings.identity()
    return summary
