"""The store's queries, the same SQL for SQLite and PostgreSQL, over a small backend protocol."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from webapp.storage.location import Dialect
from webapp.storage.schema import Run, migrate

_COLUMNS = "id, title, created, size, format, input_format, redactions"


class Backend(Protocol):
    """What a database offers the store: statements with `?` placeholders, a migration lock."""

    dialect: Dialect

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement in its own transaction; its rows (empty when it returns none)."""
        ...

    def migrating(self) -> AbstractContextManager[Run]:
        """One transaction that holds the store-wide migration lock (one worker at a time)."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Storage:
    """Streams and their derived artefacts in one database; migrated when opened."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.dialect = backend.dialect
        with backend.migrating() as run:
            self.version = migrate(run, backend.dialect)

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
            created=_now(),
            size=len(raw),
            format=format,
            input_format=input_format,
            redactions=redactions,
        )
        self.backend.run(
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
        rows = self.backend.run(f"SELECT {_COLUMNS} FROM streams WHERE id = ?", (stream_id,))
        if not rows:
            return None
        row = rows[0]
        return StreamInfo(
            id=row[0],
            title=row[1],
            created=row[2],
            size=int(row[3]),
            format=row[4],
            input_format=row[5],
            redactions=tuple(json.loads(row[6])),
        )

    def raw(self, stream_id: str) -> bytes | None:
        """The stored bytes, exactly as stored, or None."""
        rows = self.backend.run("SELECT raw FROM streams WHERE id = ?", (stream_id,))
        return bytes(rows[0][0]) if rows else None

    def count(self) -> int:
        """How many streams are stored."""
        [(n,)] = self.backend.run("SELECT COUNT(*) FROM streams")
        return int(n)

    def put_artefact(self, stream_id: str, options: str, kind: str, data: bytes) -> None:
        """Keep something derived from a stream (replacing an older one under the same key)."""
        self.backend.run(
            "INSERT INTO artefacts (stream_id, options, kind, data, size, created) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (stream_id, options, kind) "
            "DO UPDATE SET data = excluded.data, size = excluded.size, created = excluded.created",
            (stream_id, options, kind, data, len(data), _now()),
        )

    def artefact(self, stream_id: str, options: str, kind: str) -> bytes | None:
        """A kept artefact's bytes, or None."""
        rows = self.backend.run(
            "SELECT data FROM artefacts WHERE stream_id = ? AND options = ? AND kind = ?",
            (stream_id, options, kind),
        )
        return bytes(rows[0][0]) if rows else None

    def close(self) -> None:
        """Close the connections."""
        self.backend.close()
