"""The store's queries, the same SQL for SQLite and PostgreSQL, over a small backend protocol."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from webapp.storage.location import Dialect
from webapp.storage.schema import Run, migrate

_COLUMNS = "id, title, created, size, format, input_format, redactions, parent"

PARTS_AT_ONCE = 16
"""A capture's parts read a query at a time when its bytes are copied in pieces (a part is a
batch of about 64 KiB, or what came in 100 ms: `webapp.proxy.forward.Batcher`)."""
LIVE = "live"
"""A capture's state while its bytes are arriving."""
ENDINGS = {
    "complete": "complete",
    "client": "cut by the client",
    "upstream": "cut by the upstream",
    "server": "cut: the server stopped",
    "worker": "cut: the worker stopped",
    "truncated": "cut: stored up to --max-bytes",
}
"""How a capture ends, by the cause's name: the state it is stored with (`Captures`). Every
state but "complete" and `LIVE` says the stored bytes stop before the stream's end."""


def missing_end(state: object) -> str:
    """Why a capture in `state` holds no end of its stream: the state itself when it is one
    of `ENDINGS` that stops before the end, else "" (complete, live, or not a capture)."""
    cut = isinstance(state, str) and state in ENDINGS.values() and state != ENDINGS["complete"]
    return str(state) if cut else ""


class RangeReader(Protocol):
    """Reads one stream's stored bytes by offset (`Storage.range_reader`)."""

    def __call__(self, begin: int, end: int) -> bytes | None:
        """Bytes `begin` to `end` (fewer past the end); None once the stream is gone."""
        ...

    def close(self) -> None:
        """Let go of what the reads keep open (SQLite's blob handle); it may read again."""
        ...


class Backend(Protocol):
    """What a database offers the store: statements with `?` placeholders, a migration lock."""

    dialect: Dialect
    reads_by_offset: bool
    """Whether a read by offset (`range_reader`) costs about its own bytes, so that a long
    stream's records may be read from the store until its bytes are in a file of their own."""

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement in its own transaction; its rows (empty when it returns none)."""
        ...

    def migrating(self) -> AbstractContextManager[Run]:
        """One transaction that holds the store-wide migration lock (one worker at a time)."""
        ...

    def transaction(self, *, durable: bool = True) -> AbstractContextManager[Run]:
        """One transaction: its statements are committed together or not at all; not `durable`:
        without waiting for the disk (kept if the process dies, maybe not if the machine does)."""
        ...

    def raw_prefix(self, stream_id: str, size: int) -> bytes | None:
        """The first `size` bytes of a stream's stored bytes (fewer if it is shorter), read
        without reading the rest; None when there is no such stream."""
        ...

    def range_reader(self, stream_id: str) -> RangeReader | None:
        """A reader of the stream's row of `stream_bytes` by offset; None when it has no such
        row (a capture's bytes are its parts)."""
        ...

    def insert_raw(self, run: Run, stream_id: str, raw: bytes) -> None:
        """Add the stream's row of `stream_bytes` in the transaction `run` belongs to (this
        thread's), without copies of `raw` beyond the one the database keeps."""
        ...

    def insert_artefact(
        self, run: Run, key: tuple[str, str, str], data: bytes, created: str
    ) -> None:
        """Add or replace the artefact of `key` (stream id, options, kind) in the transaction
        `run` belongs to (this thread's), without copies of `data` beyond the one the database
        keeps."""
        ...

    def raw_pieces(self, stream_id: str, size: int) -> Iterator[bytes] | None:
        """The first `size` bytes of a stream's stored bytes (fewer if it is shorter), in order,
        in pieces of about a megabyte or more, never all of them in memory at once; None when
        there is no such row (a live capture's parts are not read)."""
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
    parent: str = ""
    """The stream this one was minimised from ("" when none)."""
    end: str = ""
    """Why the stored bytes stop before the stream's end: an ended capture's state ("cut by
    the client"); "" when they reach it, when the capture is live, and for an upload."""
    captured: bool = False
    """The bytes were recorded off the wire by the proxy (a capture)."""

    @property
    def recorded(self) -> bool:
        """The bytes end where the stream did, not where a paste or a file may have been cut
        (`webapp.core.contract.unended`): recorded off the wire by the proxy (a capture), or
        made whole by the minimiser (`parent`), which keeps what a property needs, its end
        included."""
        return self.captured or bool(self.parent)


@dataclass(frozen=True, slots=True)
class Deleted:
    """What is kept of a deleted stream besides its id: when, and who removed it."""

    deleted: str
    """ISO 8601, UTC."""
    why: str
    """"by its owner", "by retention" ... ("" when not said)."""


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
        delete_hash: str = "",
        parent: str = "",
    ) -> StreamInfo:
        """Store the bytes as given and return the new stream's `StreamInfo`.

        `delete_hash` is a hash of the token that may delete the stream (never the token).
        """
        info = StreamInfo(
            id=new_id(),
            title=title,
            created=_now(),
            size=len(raw),
            format=format,
            input_format=input_format,
            redactions=redactions,
            parent=parent,
        )
        with self.backend.transaction() as run:
            run(
                f"INSERT INTO streams ({_COLUMNS}, delete_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info.id,
                    info.title,
                    info.created,
                    info.size,
                    info.format,
                    info.input_format,
                    json.dumps(list(info.redactions)),
                    info.parent,
                    delete_hash,
                ),
            )
            self.backend.insert_raw(run, info.id, raw)
        return info

    def info(self, stream_id: str) -> StreamInfo | None:
        """The stream's `StreamInfo`, or None when no stream has this id (its bytes unread)."""
        rows = self.backend.run(
            f"SELECT {_COLUMNS}, (SELECT state FROM captures "
            "WHERE captures.stream_id = streams.id) FROM streams WHERE id = ?",
            (stream_id,),
        )
        if not rows:
            return None
        row = rows[0]
        state = row[8]
        return StreamInfo(
            id=row[0],
            title=row[1],
            created=row[2],
            size=int(row[3]),
            format=row[4],
            input_format=row[5],
            redactions=tuple(json.loads(row[6])),
            parent=row[7],
            end=missing_end(state),
            captured=state is not None,
        )

    def raw(self, stream_id: str) -> bytes | None:
        """The stored bytes, exactly as stored, or None. A capture's bytes are its parts
        (`webapp.storage.capture`), joined: while it is live, those that have arrived so far
        (read in the same statement as a row of `stream_bytes`, which a capture ended before
        its parts were kept has)."""
        rows = self.backend.run(
            "SELECT 0, 0, raw FROM stream_bytes WHERE stream_id = ? UNION ALL "
            "SELECT 1, seq, data FROM capture_parts WHERE stream_id = ? ORDER BY 1, 2",
            (stream_id, stream_id),
        )
        if rows and rows[0][0] == 0:
            return bytes(rows[0][2])
        if rows:
            return b"".join(bytes(row[2]) for row in rows)
        live = self.backend.run("SELECT 1 FROM captures WHERE stream_id = ?", (stream_id,))
        return b"" if live else None

    def raw_prefix(self, stream_id: str, size: int) -> bytes | None:
        """The first `size` stored bytes (all of them for a shorter stream), or None; a long
        stream's first megabyte comes at once, not with the rest."""
        found = self.backend.raw_prefix(stream_id, size)
        if found is None:  # a capture's bytes are its parts
            pieces = self._parts(stream_id, size)
            return None if pieces is None else b"".join(pieces)
        return found

    def range_reader(self, stream_id: str) -> RangeReader | None:
        """A reader by offset of a stream kept whole (an upload's, or a capture's from before
        its parts stayed its bytes), each read without the rest; None for any other (a
        capture's parts are not read by offset). `close` it when done."""
        return self.backend.range_reader(stream_id)

    def raw_pieces(self, stream_id: str, size: int) -> Iterator[bytes] | None:
        """The first `size` stored bytes in pieces (`Backend.raw_pieces`, or a capture's
        parts), so that a long stream is copied elsewhere without being held whole; None when
        there is no such stream."""
        found = self.backend.raw_pieces(stream_id, size)
        return self._parts(stream_id, size) if found is None else found

    def _parts(self, stream_id: str, size: int) -> Iterator[bytes] | None:
        """A capture's first `size` bytes from its parts, in order, `PARTS_AT_ONCE` parts a
        query (a deleted capture's end early); None when the stream is no capture."""
        rows = self.backend.run(
            "SELECT seq, data FROM capture_parts WHERE stream_id = ? ORDER BY seq LIMIT ?",
            (stream_id, PARTS_AT_ONCE),
        )
        if not rows and not self.backend.run(
            "SELECT 1 FROM captures WHERE stream_id = ?", (stream_id,)
        ):
            return None
        return self._more_parts(stream_id, size, rows)

    def _more_parts(
        self, stream_id: str, left: int, rows: list[tuple[Any, ...]]
    ) -> Iterator[bytes]:
        while rows and left > 0:
            for _, data in rows:
                piece = bytes(data[:left]) if len(data) > left else bytes(data)
                left -= len(piece)
                yield piece
                if left <= 0:
                    return
            rows = self.backend.run(
                "SELECT seq, data FROM capture_parts WHERE stream_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (stream_id, rows[-1][0], PARTS_AT_ONCE),
            )

    def delete_hash(self, stream_id: str) -> str | None:
        """The hash of the stream's delete token ("" when it has none), or None."""
        rows = self.backend.run("SELECT delete_hash FROM streams WHERE id = ?", (stream_id,))
        return str(rows[0][0]) if rows else None

    def delete(self, stream_id: str, why: str = "") -> bool:
        """Remove the stream with its notes and artefacts, keeping its id as deleted (`why`:
        who removed it, in words); False when there was none."""
        with self.backend.transaction() as run:
            rows = run("DELETE FROM streams WHERE id = ? RETURNING id", (stream_id,))
            if rows:
                run(
                    "INSERT INTO deleted_streams (id, deleted, why) VALUES (?, ?, ?) "
                    "ON CONFLICT (id) DO NOTHING",
                    (stream_id, _now(), why),
                )
        return bool(rows)

    def deleted(self, stream_id: str) -> Deleted | None:
        """When and why a stream with this id was deleted, or None (it never was)."""
        rows = self.backend.run(
            "SELECT deleted, why FROM deleted_streams WHERE id = ?", (stream_id,)
        )
        return Deleted(str(rows[0][0]), str(rows[0][1])) if rows else None

    def rename(self, stream_id: str, title: str) -> bool:
        """Give the stream a new title; False when there is no such stream."""
        rows = self.backend.run(
            "UPDATE streams SET title = ? WHERE id = ? RETURNING id", (title, stream_id)
        )
        return bool(rows)

    def created_before(self, cutoff: str) -> list[str]:
        """The ids of the streams stored before `cutoff` (ISO 8601, UTC)."""
        rows = self.backend.run("SELECT id FROM streams WHERE created < ?", (cutoff,))
        return [str(row[0]) for row in rows]

    def count(self) -> int:
        """How many streams are stored."""
        [(n,)] = self.backend.run("SELECT COUNT(*) FROM streams")
        return int(n)

    def put_artefact(
        self, stream_id: str, options: str, kind: str, data: bytes, made_from: int | None = None
    ) -> bool:
        """Keep something derived from a stream (replacing an older one under the same key);
        with `made_from` (the stream's size it was made of), only while the stream is still
        that size and no capture of it is live: a view of a live capture's first bytes is
        never kept, even when its keeping comes after the capture ended. Whether it was kept."""
        with self.backend.transaction() as run:
            if made_from is not None and not run(
                "SELECT 1 FROM streams WHERE id = ? AND size = ? AND NOT EXISTS "
                "(SELECT 1 FROM captures WHERE stream_id = ? AND state = 'live')",
                (stream_id, made_from, stream_id),
            ):
                return False
            self.backend.insert_artefact(run, (stream_id, options, kind), data, _now())
        return True

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
