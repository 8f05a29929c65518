"""The team store: PostgreSQL through psycopg 3, with a pool of connections per worker.

Statements are written with `?` like SQLite's and sent with psycopg's `%s`. Every statement
runs in autocommit on a pooled connection; the migrations run in one transaction that holds a
transaction-scoped advisory lock, so that workers starting together migrate once.

libpq keeps a connection's buffers at the largest message it has carried: after a 217 MB
upload and its view kept, the two pooled connections held 310 MB until they closed. A
statement that sends or receives `LARGE` bytes or more therefore drains the pool (psycopg_pool's
`drain`: the connections are replaced, the one in use when it comes back); large values come
a few times per large stream (its view kept and loaded, its bytes copied out), so a few
reconnections each. A stream's bytes go in by `COPY` (`insert_raw`), in pieces: that
connection's buffers stay small, and it is kept.

Rows come in binary format: in text, a bytea is hex, twice its size, decoded in Python (a
217 MB stream read whole took 5.1 s that way, 0.55 s in binary; its 16 MB pieces 2.5 -> 1.2 s).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from webapp.storage.location import Dialect
from webapp.storage.schema import Run

POOL_SIZE = 8
"""Connections per worker process at most (PostgreSQL allows 100 by default)."""
CONNECT_TIMEOUT = 15.0
PIECE = 16 * 1024 * 1024
"""Bytes per piece of a stream read in pieces (`raw_pieces`): a compressed value is inflated
from its start up to each piece's end, so fewer, larger pieces than SQLite's."""
LARGE = 4 * 1024 * 1024
"""Bytes of values in one statement's parameters or rows from which its connection is replaced
(the buffers of the eight pooled connections stay under 8 x this much)."""
_MIGRATION_LOCK = 0x5752_4D56  # "SVMW": any fixed number that no other app on the server uses


def _placeholders(sql: str) -> str:
    return sql.replace("?", "%s")


class PostgresBackend:
    """A PostgreSQL database named by a libpq URL (`postgresql://user:pass@host/db`)."""

    dialect: Dialect = "postgresql"
    reads_by_offset = False
    """A compressed bytea is inflated from its start for each `substring`: 60-150 ms a 4 KB
    read of a 217 MB stream (bench/README.md, round ten)."""

    def __init__(self, url: str) -> None:
        try:  # one plain connection first: a wrong URL fails at once, with libpq's reason
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT)).close()
        except psycopg.Error as error:
            raise ConnectionError(f"cannot connect to PostgreSQL: {error}") from error
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={"autocommit": True},
            open=False,
            name="streamviz",
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT)
        except Exception as error:
            self._pool.close()
            raise ConnectionError(f"cannot connect to PostgreSQL: {error}") from error

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement on a pooled connection and return its rows."""
        with self._pool.connection() as conn:
            return self._carry(conn, sql, params)

    def _carry(
        self, conn: psycopg.Connection[Any], sql: str, params: Sequence[Any]
    ) -> list[tuple[Any, ...]]:
        """Run one statement on `conn`, its rows; the pool drained when they or the
        parameters were `LARGE` (the module's docstring)."""
        cursor = conn.execute(_placeholders(sql), params, binary=True)
        rows = cursor.fetchall() if cursor.description is not None else []
        if _carried(params) + sum(_carried(row) for row in rows) >= LARGE:
            self._pool.drain()
        return rows

    def raw_prefix(self, stream_id: str, size: int) -> bytes | None:
        """`substring` of the bytea: PostgreSQL detoasts only the slice's chunks."""
        return self._range(stream_id, 0, size)

    def range_reader(self, stream_id: str) -> _RangeReader | None:
        """A `substring` per read (a compressed bytea is inflated from its start to the
        slice's end each time); nothing is kept open."""
        if self._range(stream_id, 0, 0) is None:
            return None
        return _RangeReader(self, stream_id)

    def _range(self, stream_id: str, begin: int, size: int) -> bytes | None:
        rows = self.run(
            "SELECT substring(raw FROM ? FOR ?) FROM stream_bytes WHERE stream_id = ?",
            (begin + 1, size, stream_id),
        )
        return bytes(rows[0][0]) if rows else None

    def insert_raw(self, run: Run, stream_id: str, raw: bytes) -> None:
        """`COPY FROM STDIN`, not an insert: libpq takes a bound value of 217 MB in 8.2-8.7 s,
        a copy's pieces in 1.3 s, the value stored the same (bench/README.md, round ten)."""
        _copy_row(_connection(run), "stream_bytes", ("stream_id", "raw"), (stream_id.encode(), raw))

    def insert_artefact(
        self, run: Run, key: tuple[str, str, str], data: bytes, created: str
    ) -> None:
        """By `COPY`, as `insert_raw` (a 1M-chunk stream's view is 41 MB): the older one under
        the key deleted first, the stream's row locked so that two workers keeping the same
        view take turns (a copy cannot update a row that is there)."""
        run("SELECT 1 FROM streams WHERE id = ? FOR NO KEY UPDATE", (key[0],))
        run("DELETE FROM artefacts WHERE stream_id = ? AND options = ? AND kind = ?", key)
        fields = (*(text.encode() for text in key), len(data).to_bytes(8, "big", signed=True))
        _copy_row(
            _connection(run),
            "artefacts",
            ("stream_id", "options", "kind", "size", "created", "data"),
            (*fields, created.encode(), data),
        )

    def raw_pieces(self, stream_id: str, size: int) -> Iterator[bytes] | None:
        """One `substring` per `PIECE` bytes; the length first (PostgreSQL knows it without
        reading the value)."""
        rows = self.run(
            "SELECT octet_length(raw) FROM stream_bytes WHERE stream_id = ?", (stream_id,)
        )
        if not rows:
            return None
        return self._pieces(stream_id, min(size, int(rows[0][0])))

    def _pieces(self, stream_id: str, size: int) -> Iterator[bytes]:
        """On one connection, replaced after (once, not at each piece)."""
        with self._pool.connection() as conn:
            try:
                for at in range(0, size, PIECE):
                    cursor = conn.execute(
                        _placeholders(
                            "SELECT substring(raw FROM ? FOR ?) FROM stream_bytes "
                            "WHERE stream_id = ?"
                        ),
                        (at + 1, min(PIECE, size - at), stream_id),
                        binary=True,
                    )
                    rows = cursor.fetchall()
                    if not rows:  # deleted meanwhile: fewer bytes than asked
                        return
                    yield bytes(rows[0][0])
            finally:
                if size >= LARGE:
                    self._pool.drain()

    @contextmanager
    def migrating(self) -> Iterator[Run]:
        """One transaction holding the advisory migration lock."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

            def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                return self._carry(conn, sql, params)

            yield run

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Run]:
        """One transaction on a pooled connection; not `durable`: committed without waiting
        for the WAL's flush (`synchronous_commit` off: kept when the server process dies, maybe
        not when the machine does)."""
        with self._pool.connection() as conn, conn.transaction():
            if not durable:
                conn.execute("SET LOCAL synchronous_commit TO OFF")
            yield _Transaction(self, conn)

    def close(self) -> None:
        """Close the pool and its connections."""
        self._pool.close()


class _Transaction:
    """A transaction's `Run`, which knows its connection (for `COPY`)."""

    def __init__(self, backend: PostgresBackend, connection: psycopg.Connection[Any]) -> None:
        self._backend = backend
        self.connection = connection

    def __call__(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._backend._carry(self.connection, sql, params)


def _connection(run: Run) -> psycopg.Connection[Any]:
    if not isinstance(run, _Transaction):
        raise TypeError("a copy runs inside PostgresBackend.transaction")
    return run.connection


_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
"""Binary `COPY`'s header: its signature, no flags, no header extension."""
_TRAILER = b"\xff\xff"


def _copy_row(
    conn: psycopg.Connection[Any], table: str, columns: tuple[str, ...], fields: tuple[bytes, ...]
) -> None:
    """One row by `COPY ... FROM STDIN` in binary, its fields in PostgreSQL's binary forms
    (text: UTF-8, bytea: the bytes); the last one sent from its own buffer, a piece at a time
    (psycopg cuts it), not copied whole."""
    *head, last = fields
    start = bytearray(_SIGNATURE)
    start += len(fields).to_bytes(2, "big")
    for field in head:
        start += len(field).to_bytes(4, "big", signed=True) + field
    start += len(last).to_bytes(4, "big", signed=True)
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    with conn.cursor() as cursor, cursor.copy(statement) as copy:
        copy.write(start)
        copy.write(last)
        copy.write(_TRAILER)


class _RangeReader:
    def __init__(self, backend: PostgresBackend, stream_id: str) -> None:
        self._backend = backend
        self._stream_id = stream_id

    def __call__(self, begin: int, end: int) -> bytes | None:
        return self._backend._range(self._stream_id, begin, max(0, end - begin))

    def close(self) -> None:
        """Nothing is kept open."""


def _carried(values: Sequence[Any]) -> int:
    """The bytes of the byte strings and texts among `values` (a row, or parameters)."""
    return sum(
        len(value) for value in values if isinstance(value, (bytes, bytearray, memoryview, str))
    )
