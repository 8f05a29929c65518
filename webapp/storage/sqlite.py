"""The embedded store: one SQLite file in WAL mode, a connection per thread.

WAL lets readers go on while one connection writes, in this process or another worker's;
`busy_timeout` makes a writer wait for another's write instead of failing. A connection per
thread (not one behind a lock) means that a request looking a stream up never waits for
another thread writing a large stream or trace. Foreign keys are switched on per
connection, as SQLite requires. Statements are not cached: SQLite copies a bound blob and a
cached statement keeps its last copy, so each thread that stored a 200 MB stream or its trace
held 200 MB more until it ran that statement again (a statement is prepared in microseconds).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from webapp.storage.location import Dialect
from webapp.storage.schema import Run

PIECE = 8 * 1024 * 1024
"""Bytes per piece of a stream read in pieces (`raw_pieces`): large enough that a copy waits
for the GIL a few dozen times, not hundreds (beside a thread that holds it)."""


class SqliteBackend:
    """A SQLite file (created, with its folder, when missing)."""

    dialect: Dialect = "sqlite"
    reads_by_offset = True
    """Incremental blob I/O reads only the pages it is asked for."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        """Guards `_opened`, every connection made, to close them all."""
        self._wal(self._db())

    def _db(self) -> sqlite3.Connection:
        """This thread's connection, made on its first use."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, cached_statements=0
            )  # a cached statement keeps SQLite's copy of its last bound blob: a whole stream
            db.execute("PRAGMA busy_timeout=10000")
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
            with self._guard:
                self._opened.append(db)
        return db

    def _wal(self, db: sqlite3.Connection) -> None:
        """Switch to WAL. Switching takes the file's exclusive lock without waiting on SQLite's
        busy handler, so a worker opening a new file while another does may be told "database
        is locked": it tries again for up to `busy_timeout`'s 10 s."""
        for attempt in range(200):
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or attempt == 199:
                    raise
                time.sleep(0.05)

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit) and return its rows."""
        return self._db().execute(sql, params).fetchall()

    def raw_prefix(self, stream_id: str, size: int) -> bytes | None:
        """Through SQLite's incremental blob I/O: `substr` would read the whole blob first."""
        db = self._db()
        found = _bytes_row(db, stream_id)
        if found is None:
            return None
        rowid, length = found
        try:
            with db.blobopen("stream_bytes", "raw", rowid, readonly=True) as blob:
                return blob.read(min(size, length))
        except sqlite3.Error:  # deleted meanwhile
            return None

    def range_reader(self, stream_id: str) -> _BlobReader | None:
        """On a connection of its own, through one blob handle kept open until `close`: a
        handle walks the blob's overflow pages up to where it reads, the first time (60-95 ms
        near the end of 217 MB), then remembers them. An open handle holds a read
        transaction, so the WAL cannot be checkpointed past it meanwhile: close it soon."""
        found = _bytes_row(self._db(), stream_id)
        if found is None:
            return None
        db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, cached_statements=0
        )
        return _BlobReader(db, *found)

    def insert_raw(self, run: Run, stream_id: str, raw: bytes) -> None:
        """A row of zeros, then the bytes written into it through incremental blob I/O, a
        piece at a time: SQLite copies a bound blob twice while it inserts it (+417 MB for a
        217 MB stream), a zeroblob in a record's last column not at all."""
        [(rowid,)] = run(
            "INSERT INTO stream_bytes (stream_id, raw) VALUES (?, zeroblob(?)) RETURNING rowid",
            (stream_id, len(raw)),
        )
        _write(self._db(), "stream_bytes", "raw", rowid, raw)

    def insert_artefact(
        self, run: Run, key: tuple[str, str, str], data: bytes, created: str
    ) -> None:
        """As `insert_raw`: a zeroblob in the record's last column (migration 14), replacing an
        older one under the same key, then the bytes written into it a piece at a time."""
        [(rowid,)] = run(
            "INSERT INTO artefacts (stream_id, options, kind, size, created, data) "
            "VALUES (?, ?, ?, ?, ?, zeroblob(?)) ON CONFLICT (stream_id, options, kind) DO UPDATE "
            "SET size = excluded.size, created = excluded.created, data = excluded.data "
            "RETURNING rowid",
            (*key, len(data), created, len(data)),
        )
        _write(self._db(), "artefacts", "data", rowid, data)

    def raw_pieces(self, stream_id: str, size: int) -> Iterator[bytes] | None:
        """Through one incremental blob handle, read in order (a blob opened again for each
        piece would walk its overflow pages from the start each time); the handle is closed
        when the pieces end (a row deleted meanwhile ends them early)."""
        db = self._db()
        found = _bytes_row(db, stream_id)
        if found is None:
            return None
        rowid, length = found
        return _pieces(db, rowid, min(size, length))

    def migrating(self) -> AbstractContextManager[Run]:
        """`BEGIN IMMEDIATE` takes the file's write lock: other workers wait, then see it done."""
        return self.transaction()

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Run]:
        """`BEGIN IMMEDIATE` (the write lock, waited for), the statements, `COMMIT`; not
        `durable`: committed without waiting for the disk (`synchronous=NORMAL` in WAL: kept
        when the process dies, maybe not when the machine does)."""
        db = self._db()
        if not durable:
            db.execute("PRAGMA synchronous=NORMAL")
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield lambda sql, params: db.execute(sql, params).fetchall()
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            if not durable:
                db.execute("PRAGMA synchronous=FULL")

    def close(self) -> None:
        """Close every thread's connection."""
        with self._guard:
            for db in self._opened:
                db.close()
            self._opened.clear()


def _write(db: sqlite3.Connection, table: str, column: str, rowid: int, data: bytes) -> None:
    """`data` into the zeroblob of the row's column, `PIECE` bytes at a time."""
    view = memoryview(data)
    with db.blobopen(table, column, rowid) as blob:
        for at in range(0, len(view), PIECE):
            blob.write(view[at : at + PIECE])


class _BlobReader:
    """Reads one row's blob by offset through a handle opened at the first read and kept
    until `close`; after `close`, each read opens a handle of its own and closes it."""

    def __init__(self, db: sqlite3.Connection, rowid: int, length: int) -> None:
        self._db = db
        self._rowid = rowid
        self._length = length
        self._blob: sqlite3.Blob | None = None
        self._closed = False
        self._lock = threading.Lock()
        weakref.finalize(self, db.close)

    def __call__(self, begin: int, end: int) -> bytes | None:
        with self._lock:
            blob = self._blob
            found: bytes | None = None
            try:
                if blob is None:
                    blob = self._db.blobopen("stream_bytes", "raw", self._rowid, readonly=True)
                blob.seek(min(begin, self._length))
                found = blob.read(max(0, min(end, self._length) - begin))
            except sqlite3.Error:  # the row deleted meanwhile
                pass
            keep = found is not None and not self._closed
            if blob is not None and not keep:
                with contextlib.suppress(sqlite3.Error):
                    blob.close()
            self._blob = blob if keep else None
            return found

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._blob is not None:
                self._blob.close()
                self._blob = None


def _bytes_row(db: sqlite3.Connection, stream_id: str) -> tuple[int, int] | None:
    """The rowid and length of the stream's row of `stream_bytes`, or None (an upload's, or a
    capture's from before its parts stayed its bytes)."""
    rows = db.execute(
        "SELECT rowid, length(raw) FROM stream_bytes WHERE stream_id = ?", (stream_id,)
    ).fetchall()
    return None if not rows else (int(rows[0][0]), int(rows[0][1]))


def _pieces(db: sqlite3.Connection, rowid: int, size: int) -> Iterator[bytes]:
    try:
        with db.blobopen("stream_bytes", "raw", rowid, readonly=True) as blob:
            at = 0
            while at < size:
                piece = blob.read(min(PIECE, size - at))
                if not piece:
                    return
                at += len(piece)
                yield piece
    except sqlite3.Error:  # deleted meanwhile: fewer bytes than asked
        return
