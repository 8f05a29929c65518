"""What a team adds to stored streams: notes on steps, and the library's listing of streams."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from webapp.storage.store import Storage

_NOTE_COLUMNS = "id, stream_id, step, author, text, created, edited"


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
    ) -> StoredNote | None:
        """A new note on `step` of the stream; None (nothing stored) when the stream or the
        step already holds as many notes as `bounds` allow. The count and the insert are one
        statement."""
        if bounds is None:
            rows = self._run(
                "INSERT INTO notes (stream_id, step, author, text, created) "
                f"VALUES (?, ?, ?, ?, ?) RETURNING {_NOTE_COLUMNS}",
                (stream_id, step, author, text, _now()),
            )
        else:
            rows = self._run(
                "INSERT INTO notes (stream_id, step, author, text, created) "
                "SELECT ?, ?, ?, ?, ? WHERE "
                "(SELECT COUNT(*) FROM notes WHERE stream_id = ?) < ? AND "
                "(SELECT COUNT(*) FROM notes WHERE stream_id = ? AND step = ?) < ? "
                f"RETURNING {_NOTE_COLUMNS}",
                (stream_id, step, author, text, _now(), stream_id, bounds.per_stream,
                 stream_id, step, bounds.per_step),
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


def _like(text: str) -> str:
    """A LIKE pattern that finds `text` anywhere, its `%`, `_` and `\\` taken literally."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Library:
    """Streams listed newest first, searched by title, optionally only some ids."""

    def __init__(self, storage: Storage) -> None:
        self._run = storage.backend.run

    def page(
        self, *, search: str = "", ids: Sequence[str] | None = None, limit: int, offset: int
    ) -> Page:
        """The streams that match, `limit` of them from `offset`; `ids` None means all."""
        where: list[str] = []
        params: list[Any] = []
        if ids is not None:
            if not ids:
                return Page((), 0)
            where.append(f"id IN ({', '.join('?' for _ in ids)})")
            params += list(ids)
        if search:
            where.append("LOWER(title) LIKE ? ESCAPE '\\'")
            params.append(_like(search))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        [(total,)] = self._run(f"SELECT COUNT(*) FROM streams{clause}", params)
        rows = self._run(
            "SELECT id, title, created, input_format, format, stats, "
            "(SELECT COUNT(*) FROM notes WHERE notes.stream_id = streams.id) "
            f"FROM streams{clause} ORDER BY created DESC, id DESC LIMIT ? OFFSET ?",
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
            )
            for row in rows
        )
        return Page(listed, int(total))

    def keep_stats(self, stream_id: str, stats: dict[str, Any]) -> None:
        """Remember a stream's numbers for the next listing."""
        self._run("UPDATE streams SET stats = ? WHERE id = ?", (json.dumps(stats), stream_id))
