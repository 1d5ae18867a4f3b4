"""Judgement cache: a bounded in-memory LRU, optionally backed by a SQLite file that survives restarts
(for re-scoring a dataset). Only successful judgements are cached."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CachedJudgement:
    reward: float
    score: Any  # the verdict: a judge score, a rubric criterion's 0/1, a pairwise winner, a group's score list
    reasoning: str | None
    model: str


def cache_key(*, template: str, mode: str, question: str, response: str, reference: str | None, model: str,
              score_min: int, score_max: int) -> str:
    """Identity of one judgement; the scale is part of it because it changes the prompt."""
    material = json.dumps([template, mode, question, response, reference, model, score_min, score_max],
                          ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(material.encode()).hexdigest()


class JudgeCache:
    def __init__(self, max_entries: int, path: str | None = None) -> None:
        self.max_entries = max_entries
        self.path = path
        self.hits = 0
        self.misses = 0
        self._memory: OrderedDict[str, CachedJudgement] = OrderedDict()
        self._db: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()  # one connection, used from worker threads

    async def open(self) -> None:
        if self.path and self._db is None:
            self._db = await asyncio.to_thread(self._connect, self.path)

    @staticmethod
    def _connect(path: str) -> sqlite3.Connection:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
                   "created_at REAL NOT NULL)")
        return db

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await asyncio.to_thread(self._locked, db.close)

    def _locked(self, fn, *args):  # type: ignore[no-untyped-def]
        with self._db_lock:
            return fn(*args)

    def _remember(self, key: str, value: CachedJudgement) -> None:
        if self.max_entries <= 0:
            return
        self._memory[key] = value
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    async def get(self, key: str) -> CachedJudgement | None:
        value = self._memory.get(key)
        if value is not None:
            self._memory.move_to_end(key)
        elif self._db is not None:
            row = await asyncio.to_thread(self._select, key)
            if row is not None:
                value = CachedJudgement(**json.loads(row))
                self._remember(key, value)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def _select(self, key: str) -> str | None:
        with self._db_lock:
            if self._db is None:
                return None
            row = self._db.execute("SELECT value FROM judgements WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    async def put(self, key: str, value: CachedJudgement) -> None:
        self._remember(key, value)
        if self._db is not None:
            await asyncio.to_thread(self._insert, key, json.dumps(asdict(value)))

    def _insert(self, key: str, value: str) -> None:
        with self._db_lock:
            if self._db is not None:
                self._db.execute("INSERT OR REPLACE INTO judgements (key, value, created_at) VALUES (?, ?, ?)",
                                 (key, value, time.time()))

    def stats(self) -> dict[str, object]:
        return {"entries": len(self._memory), "max_entries": self.max_entries, "hits": self.hits,
                "misses": self.misses, "persistent": self.path}
