"""What a team adds to stored streams: notes on steps, and the library's listing of streams."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from webapp.storage.search import matching
from webapp.storage.store import Storage

_NOTE_COLUMNS = "id, stream_id, step, author, text, created, edited, author_hash"


@dataclass(frozen=True, slots=True)
class StoredNote:
    """A note left on a step of a stream."""

    id: int
    stream_id: str
    step: int
    author: str
    text: str
    created: str
    edited: str
    """When it was last edited ("" when never)."""
    author_hash: str = ""
    """A hash of the token that may edit it ("" for a note left before there were any)."""


@dataclass(frozen=True, slots=True)
class NoteBounds:
    """The most notes one stream, and one step of it, may hold."""

    per_stream: int
    per_step: int


@dataclass(frozen=True, slots=True)
class Listed:
    """One row of the library: a stream's record, its numbers (if known) and its notes."""

    id: str
    title: str
    created: str
    input_format: str
    format: str
    stats: dict[str, Any] | None
    """chunks, calls, errors, warnings (None until first computed)."""
    notes: int
    capture: str = ""
    """A captured stream's state ("live", "complete", "cut by the client"...), else ""."""

    @property
    def live(self) -> bool:
        """A capture still arriving."""
        return self.capture == "live"


@dataclass(frozen=True, slots=True)
class Page:
    """One page of the library and how many streams match in all."""

    rows: tuple[Listed, ...]
    total: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _note(row: Sequence[Any]) -> StoredNote:
    return StoredNote(
        id=int(row[0]),
        stream_id=str(row[1]),
        step=int(row[2]),
        author=str(row[3]),
        text=str(row[4]),
        created=str(row[5]),
        edited=str(row[6]),
        author_hash=str(row[7]),
    )


class Notes:
    """The notes of every stream (removed with their stream)."""

    def __init__(self, storage: Storage) -> None:
        self._run = storage.backend.run

    def add(
        self,
        stream_id: str,
        step: int,
        text: str,
        author: str,
        bounds: NoteBounds | None = None,
        author_hash: str = "",
    ) -> StoredNote | None:
        """A new note on `step` of the stream; None (nothing stored) when the stream or the
        step already holds as many notes as `bounds` allow. The count and the insert are one
        statement. `author_hash` is a hash of the token that may edit or delete it (never the
        token)."""
        if bounds is None:
            rows = self._run(
                "INSERT INTO notes (stream_id, step, author, text, created, author_hash) "
                f"VALUES (?, ?, ?, ?, ?, ?) RETURNING {_NOTE_COLUMNS}",
                (stream_id, step, author, text, _now(), author_hash),
            )
        else:
            rows = self._run(
                "INSERT INTO notes (stream_id, step, author, text, created, author_hash) "
                "SELECT ?, ?, ?, ?, ?, ? WHERE "
                "(SELECT COUNT(*) FROM notes WHERE stream_id = ?) < ? AND "
                "(SELECT COUNT(*) FROM notes WHERE stream_id = ? AND step = ?) < ? "
                f"RETURNING {_NOTE_COLUMNS}",
                (stream_id, step, author, text, _now(), author_hash, stream_id,
                 bounds.per_stream, stream_id, step, bounds.per_step),
            )  # fmt: skip
        return _note(rows[0]) if rows else None

    def counts(self, stream_id: str, step: int) -> tuple[int, int]:
        """How many notes the stream holds, and how many of them are on `step`."""
        [(total, on_step)] = self._run(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN step = ? THEN 1 ELSE 0 END), 0) "
            "FROM notes WHERE stream_id = ?",
            (step, stream_id),
        )
        return int(total), int(on_step)

    def of(self, stream_id: str) -> list[StoredNote]:
        """The stream's notes by step, then in the order they were left."""
        rows = self._run(
            f"SELECT {_NOTE_COLUMNS} FROM notes WHERE stream_id = ? ORDER BY step, id",
            (stream_id,),
        )
        return [_note(row) for row in rows]

    def get(self, stream_id: str, note_id: int) -> StoredNote | None:
        """One note of the stream, or None."""
        rows = self._run(
            f"SELECT {_NOTE_COLUMNS} FROM notes WHERE stream_id = ? AND id = ?",
            (stream_id, note_id),
        )
        return _note(rows[0]) if rows else None

    def edit(self, stream_id: str, note_id: int, step: int, text: str, author: str) -> bool:
        """Replace a note's step, text and author; False when there is no such note."""
        rows = self._run(
            "UPDATE notes SET step = ?, text = ?, author = ?, edited = ? "
            "WHERE stream_id = ? AND id = ? RETURNING id",
            (step, text, author, _now(), stream_id, note_id),
        )
        return bool(rows)

    def remove(self, stream_id: str, note_id: int) -> bool:
        """Delete a note; False when there was none."""
        rows = self._run(
            "DELETE FROM notes WHERE stream_id = ? AND id = ? RETURNING id", (stream_id, note_id)
        )
        return bool(rows)


class Library:
    """Streams listed live captures first, then newest first, searched by title and terms
    (`webapp.storage.search`); optionally only some ids (and, with `captures`, every captured
    stream besides them)."""

    def __init__(self, storage: Storage) -> None:
        self._run = storage.backend.run

    def page(
        self,
        *,
        search: str = "",
        ids: Sequence[str] | None = None,
        captures: bool = False,
        limit: int,
        offset: int,
    ) -> Page:
        """The streams that match, `limit` of them from `offset`; `ids` None means all."""
        where: list[str] = []
        params: list[Any] = []
        if ids is not None:
            chosen = [f"streams.id IN ({', '.join('?' for _ in ids)})"] if ids else []
            if captures:
                chosen.append("captures.stream_id IS NOT NULL")
            if not chosen:
                return Page((), 0)
            where.append(f"({' OR '.join(chosen)})")
            params += list(ids)
        found, found_params = matching(search)
        where += found
        params += found_params
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        joined = " FROM streams LEFT JOIN captures ON captures.stream_id = streams.id"
        [(total,)] = self._run(f"SELECT COUNT(*){joined}{clause}", params)
        rows = self._run(
            "SELECT streams.id, title, created, input_format, format, stats, "
            "(SELECT COUNT(*) FROM notes WHERE notes.stream_id = streams.id), "
            f"COALESCE(captures.state, ''){joined}{clause} "
            "ORDER BY CASE WHEN captures.state = 'live' THEN 0 ELSE 1 END, created DESC, "
            "streams.id DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        listed = tuple(
            Listed(
                id=str(row[0]),
                title=str(row[1]),
                created=str(row[2]),
                input_format=str(row[3]),
                format=str(row[4]),
                stats=json.loads(row[5]) if row[5] else None,
                notes=int(row[6]),
                capture=str(row[7]),
            )
            for row in rows
        )
        return Page(listed, int(total))

    def keep_stats(self, stream_id: str, stats: dict[str, Any], made_from: int) -> bool:
        """Remember a stream's numbers, made of its first `made_from` bytes, for the next
        listing: only while it is that size and no capture of it is live (the numbers of a
        live capture's first bytes are never kept). Whether they were kept."""
        rows = self._run(
            "UPDATE streams SET stats = ? WHERE id = ? AND size = ? AND NOT EXISTS "
            "(SELECT 1 FROM captures WHERE stream_id = ? AND state = 'live') RETURNING id",
            (json.dumps(stats), stream_id, made_from, stream_id),
        )
        return bool(rows)
