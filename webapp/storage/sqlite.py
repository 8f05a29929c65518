"""The embedded store: one SQLite file in WAL mode, one connection guarded by a lock.

WAL lets readers in other worker processes go on while one writes; `busy_timeout` makes a
writer wait for another process's write instead of failing. Foreign keys are switched on per
connection, as SQLite requires.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from webapp.storage.location import Dialect
from webapp.storage.schema import Run


class SqliteBackend:
    """A SQLite file (created, with its folder, when missing)."""

    dialect: Dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA busy_timeout=10000")
            self._wal()
            self._db.execute("PRAGMA foreign_keys=ON")

    def _wal(self) -> None:
        """Switch to WAL. Switching takes the file's exclusive lock without waiting on SQLite's
        busy handler, so a worker opening a new file while another does may be told "database
        is locked": it tries again for up to `busy_timeout`'s 10 s."""
        for attempt in range(200):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or attempt == 199:
                    raise
                time.sleep(0.05)

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit) and return its rows."""
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    @contextmanager
    def migrating(self) -> Iterator[Run]:
        """`BEGIN IMMEDIATE` takes the file's write lock: other workers wait, then see it done."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield lambda sql, params: self._db.execute(sql, params).fetchall()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[Run]:
        """`BEGIN IMMEDIATE` (the write lock, waited for), the statements, `COMMIT`."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield lambda sql, params: self._db.execute(sql, params).fetchall()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
