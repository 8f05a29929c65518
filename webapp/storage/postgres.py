"""The team store: PostgreSQL through psycopg 3, with a pool of connections per worker.

Statements are written with `?` like SQLite's and sent with psycopg's `%s`. Every statement
runs in autocommit on a pooled connection; the migrations run in one transaction that holds a
transaction-scoped advisory lock, so that workers starting together migrate once.
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
_MIGRATION_LOCK = 0x5752_4D56  # "SVMW": any fixed number that no other app on the server uses


def _placeholders(sql: str) -> str:
    return sql.replace("?", "%s")


class PostgresBackend:
    """A PostgreSQL database named by a libpq URL (`postgresql://user:pass@host/db`)."""

    dialect: Dialect = "postgresql"

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
            cursor = conn.execute(_placeholders(sql), params)
            return cursor.fetchall() if cursor.description is not None else []

    def raw_prefix(self, stream_id: str, size: int) -> bytes | None:
        """`substring` of the bytea: PostgreSQL detoasts only the slice's chunks."""
        rows = self.run(
            "SELECT substring(raw FROM 1 FOR ?) FROM stream_bytes WHERE stream_id = ?",
            (size, stream_id),
        )
        return bytes(rows[0][0]) if rows else None

    def insert_raw(self, run: Run, stream_id: str, raw: bytes) -> None:
        """A plain insert, the bytes bound (not measured for its copies: bench/README.md)."""
        run("INSERT INTO stream_bytes (stream_id, raw) VALUES (?, ?)", (stream_id, raw))

    def insert_artefact(
        self, run: Run, key: tuple[str, str, str], data: bytes, created: str
    ) -> None:
        """A plain upsert, the bytes bound (as `insert_raw`)."""
        run(
            "INSERT INTO artefacts (stream_id, options, kind, size, created, data) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (stream_id, options, kind) DO UPDATE "
            "SET size = excluded.size, created = excluded.created, data = excluded.data",
            (*key, len(data), created, data),
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
        for at in range(0, size, PIECE):
            rows = self.run(
                "SELECT substring(raw FROM ? FOR ?) FROM stream_bytes WHERE stream_id = ?",
                (at + 1, min(PIECE, size - at), stream_id),
            )
            if not rows:  # deleted meanwhile: fewer bytes than asked
                return
            yield bytes(rows[0][0])

    @contextmanager
    def migrating(self) -> Iterator[Run]:
        """One transaction holding the advisory migration lock."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

            def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                cursor = conn.execute(_placeholders(sql), params)
                return cursor.fetchall() if cursor.description is not None else []

            yield run

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Run]:
        """One transaction on a pooled connection; not `durable`: committed without waiting
        for the WAL's flush (`synchronous_commit` off: kept when the server process dies, maybe
        not when the machine does)."""
        with self._pool.connection() as conn, conn.transaction():
            if not durable:
                conn.execute("SET LOCAL synchronous_commit TO OFF")

            def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                cursor = conn.execute(_placeholders(sql), params)
                return cursor.fetchall() if cursor.description is not None else []

            yield run

    def close(self) -> None:
        """Close the pool and its connections."""
        self._pool.close()
