"""Stored streams in SQLite: the original bytes under an unguessable id, and what was found.

One connection, opened with `check_same_thread=False` and guarded by a lock, serves every
thread of the server; the database is in WAL mode so that readers never wait on a writer of
another process. The schema is created when the store opens.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (
    id TEXT PRIMARY KEY,
    raw BLOB NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    size INTEGER NOT NULL,
    format TEXT NOT NULL,
    input_format TEXT NOT NULL DEFAULT 'auto',
    redactions TEXT NOT NULL DEFAULT '[]'
)
"""
_COLUMNS = "id, title, created, size, format, input_format, redactions"


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A stored stream without its bytes."""

    id: str
    title: str
    created: str
    """ISO 8601, UTC."""
    size: int
    format: str
    """The format the reader detected when the stream was stored."""
    input_format: str
    """The format the user asked for ("auto" unless they chose one)."""
    redactions: tuple[str, ...]
    """What was removed before storing, in words (empty when nothing was)."""


def new_id() -> str:
    """An unguessable stream id: 144 random bits, URL-safe."""
    return secrets.token_urlsafe(18)


class Storage:
    """The streams table of one SQLite file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(_SCHEMA)

    def add(
        self,
        raw: bytes,
        *,
        title: str,
        format: str,
        input_format: str = "auto",
        redactions: tuple[str, ...] = (),
    ) -> StreamInfo:
        """Store the bytes as given and return the new stream's record."""
        info = StreamInfo(
            id=new_id(),
            title=title,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            size=len(raw),
            format=format,
            input_format=input_format,
            redactions=redactions,
        )
        with self._lock:
            self._db.execute(
                f"INSERT INTO streams ({_COLUMNS}, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info.id,
                    info.title,
                    info.created,
                    info.size,
                    info.format,
                    info.input_format,
                    json.dumps(list(info.redactions)),
                    raw,
                ),
            )
        return info

    def info(self, stream_id: str) -> StreamInfo | None:
        """The stream's record, or None when no stream has this id."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM streams WHERE id = ?", (stream_id,)
            ).fetchone()
        if row is None:
            return None
        return StreamInfo(
            id=row[0],
            title=row[1],
            created=row[2],
            size=row[3],
            format=row[4],
            input_format=row[5],
            redactions=tuple(json.loads(row[6])),
        )

    def raw(self, stream_id: str) -> bytes | None:
        """The stored bytes, exactly as stored, or None."""
        with self._lock:
            row = self._db.execute("SELECT raw FROM streams WHERE id = ?", (stream_id,)).fetchone()
        return None if row is None else bytes(row[0])

    def count(self) -> int:
        """How many streams are stored."""
        with self._lock:
            (n,) = self._db.execute("SELECT COUNT(*) FROM streams").fetchone()
        return int(n)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
