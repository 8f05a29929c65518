"""The store, on SQLite and on PostgreSQL: bytes kept exactly, migrations, artefacts, URLs."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tests.pgserver import PgServer
from webapp.core.options import Options
from webapp.storage import UnsupportedDatabase, open_storage, parse_location
from webapp.storage.postgres import LARGE, PostgresBackend
from webapp.storage.schema import LATEST, MIGRATIONS, migrate

EVERY_BYTE = bytes(range(256)) * 3 + b"\x00\xff\r\n\xef\xbb\xbfdata: {}"


def test_storage_keeps_bytes_and_metadata_across_reopen(
    db_url: str, store_kind: str, tmp_path: Path
) -> None:
    if store_kind == "sqlite":
        db_url = str(tmp_path / "deep" / "folder" / "s.sqlite3")
    store = open_storage(db_url)
    raw = b"\x00\xff\r\n\xef\xbb\xbfdata: {}"
    info = store.add(raw, title="t", format="sse", input_format="auto", redactions=("a",))
    every = store.add(EVERY_BYTE, title="\u00e9\U0001f600", format="json", redactions=())
    store.close()
    again = open_storage(db_url)
    assert again.raw(info.id) == raw
    assert again.info(info.id) == info
    assert again.raw(every.id) == EVERY_BYTE and again.info(every.id) == every
    assert again.info("missing") is None and again.raw("missing") is None
    if store_kind == "sqlite":
        mode = sqlite3.connect(db_url).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    again.close()


def test_storage_is_safe_across_threads(db_url: str) -> None:
    store = open_storage(db_url)
    ids: list[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for k in range(25):
            info = store.add(f"{n}-{k}".encode(), title="", format="sse")
            assert store.raw(info.id) == f"{n}-{k}".encode()
            with lock:
                ids.append(info.id)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 200 == store.count()
    store.close()


def test_migrations_run_once_even_when_workers_open_the_store_together(db_url: str) -> None:
    gate = threading.Barrier(4)
    failures: list[BaseException] = []

    def open_one() -> None:
        gate.wait()
        try:
            open_storage(db_url).close()
        except BaseException as error:  # reported below, with the store's name
            failures.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    store = open_storage(db_url)
    assert store.version == LATEST == len(MIGRATIONS)
    rows = store.backend.run("SELECT version, name FROM schema_migrations ORDER BY version")
    assert [(int(v), n) for v, n in rows] == [(m.version, m.name) for m in MIGRATIONS]
    store.close()


def test_a_store_newer_than_the_code_is_refused(db_url: str) -> None:
    store = open_storage(db_url)
    store.backend.run(
        "INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)",
        (LATEST + 1, "from the future", "2099-01-01T00:00:00+00:00"),
    )
    store.close()
    with pytest.raises(RuntimeError, match="newer than this streamviz"):
        open_storage(db_url)


def test_a_file_of_the_first_release_opens_with_its_streams(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE streams (id TEXT PRIMARY KEY, raw BLOB NOT NULL, title TEXT NOT NULL "
        "DEFAULT '', created TEXT NOT NULL, size INTEGER NOT NULL, format TEXT NOT NULL, "
        "input_format TEXT NOT NULL DEFAULT 'auto', redactions TEXT NOT NULL DEFAULT '[]')"
    )
    old.execute(
        "INSERT INTO streams VALUES ('abc', x'00ff', 'old', '2024-01-01T00:00:00+00:00', 2, "
        "'sse', 'auto', '[]')"
    )
    old.commit()
    old.close()
    store = open_storage(f"sqlite:///{path}")
    assert store.raw("abc") == b"\x00\xff"
    info = store.info("abc")
    assert info is not None and info.title == "old"
    store.put_artefact("abc", Options().key(), "columns", b"x")
    assert store.version == LATEST
    store.close()


def test_artefacts_stored_before_their_data_went_last_are_kept(tmp_path: Path) -> None:
    """Migration 14 rebuilds the table with the blob last (for incremental blob I/O): what
    was kept before is kept, and a newer artefact replaces it as before."""
    path = tmp_path / "v13.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA foreign_keys=ON")
    migrate(lambda sql, params: old.execute(sql, params).fetchall(), "sqlite", MIGRATIONS[:13])
    old.execute("INSERT INTO streams (id, created, size, format) VALUES ('abc', 'then', 0, 'sse')")
    old.execute(
        "INSERT INTO artefacts (stream_id, options, kind, data, size, created) "
        "VALUES ('abc', 'o', 'view', ?, ?, 'then')",
        (EVERY_BYTE, len(EVERY_BYTE)),
    )
    old.close()
    store = open_storage(f"sqlite:///{path}")
    assert store.version == LATEST
    assert store.artefact("abc", "o", "view") == EVERY_BYTE
    columns = [row[1] for row in store.backend.run("PRAGMA table_info(artefacts)")]
    assert columns[-1] == "data"
    assert store.put_artefact("abc", "o", "view", b"newer", made_from=0)
    assert store.artefact("abc", "o", "view") == b"newer"
    assert not store.put_artefact("abc", "o", "view", b"stale", made_from=1)  # not its size
    assert store.artefact("abc", "o", "view") == b"newer"
    store.close()


def test_artefacts_are_kept_per_stream_options_and_kind(db_url: str) -> None:
    store = open_storage(db_url)
    stream = store.add(b"data: {}\n\n", title="", format="sse")
    key = Options(server_tools=("b", " a", "b")).key()
    assert key == Options(server_tools=("a", "b")).key()
    assert store.artefact(stream.id, key, "columns") is None
    store.put_artefact(stream.id, key, "columns", EVERY_BYTE)
    assert store.artefact(stream.id, key, "columns") == EVERY_BYTE
    store.put_artefact(stream.id, key, "columns", b"newer")
    assert store.artefact(stream.id, key, "columns") == b"newer"
    assert store.artefact(stream.id, key, "other") is None
    assert store.artefact(stream.id, Options(policy="exact-key").key(), "columns") is None
    store.close()


def test_an_artefact_needs_its_stream(db_url: str) -> None:
    store = open_storage(db_url)
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        store.put_artefact("no-such-stream", Options().key(), "columns", b"x")
    store.close()


@pytest.mark.parametrize(
    ("value", "dialect", "target"),
    [
        ("data/streamviz.sqlite3", "sqlite", "data/streamviz.sqlite3"),
        ("/srv/s.db", "sqlite", "/srv/s.db"),
        ("sqlite:///data/s.db", "sqlite", "data/s.db"),
        ("sqlite:////srv/s.db", "sqlite", "/srv/s.db"),
        ("C:\\data\\s.db", "sqlite", "C:\\data\\s.db"),
        ("postgresql://u:p@db.internal:5432/streamviz", "postgresql", None),
        ("postgres://u@db/streamviz", "postgresql", None),
        (" postgresql:///streamviz?host=/run/postgresql ", "postgresql", None),
    ],
)
def test_db_values_name_a_dialect(value: str, dialect: str, target: str | None) -> None:
    location = parse_location(value)
    assert location.dialect == dialect
    assert location.target == (target or value.strip())


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("mysql://u@h/db", "mysql:// is not supported"),
        ("", "--db is empty"),
        ("sqlite:///", "needs a file path"),
        ("sqlite:///:memory:", "needs a file path"),
    ],
)
def test_unusable_db_values_say_why(value: str, needle: str) -> None:
    with pytest.raises(UnsupportedDatabase, match=needle):
        parse_location(value)


def test_a_shown_url_hides_the_password() -> None:
    shown = parse_location("postgresql://team:s3cret@db.internal/streamviz").shown()
    assert shown == "postgresql://team:***@db.internal/streamviz"
    assert "s3cret" not in shown


def test_canonical_options_sort_strip_and_deduplicate_server_tools() -> None:
    asked = Options(path="server-tools", server_tools=(" web_*", "b", "web_*", "", "a "))
    assert asked.canonical() == Options(path="server-tools", server_tools=("a", "b", "web_*"))
    canon = asked.canonical()
    assert canon.canonical() is canon
    same = Options(path="server-tools", server_tools=("web_*", "a", "b"))
    assert asked.key() == same.key()
    assert Options().key() != Options(choice=1).key()


def _sqlite_memory_used() -> int:
    """Bytes SQLite itself holds now in this process (`sqlite3_memory_used`)."""
    import _sqlite3  # the module's own library, whose counters these are
    import ctypes

    used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    used.restype = ctypes.c_int64
    return int(used())


def test_sqlite_keeps_no_copy_of_a_stored_stream_or_trace(tmp_path: Path) -> None:
    """SQLite copies a bound blob; a cached statement kept that copy, so each thread that had
    stored a large stream held its size again (20 MB here, 200 MB at a million chunks)."""
    store = open_storage(str(tmp_path / "s.sqlite3"))
    before = _sqlite_memory_used()
    raw = b"data: {}\n\n" * 2_000_000
    info = store.add(raw, title="t", format="sse")
    store.put_artefact(info.id, Options().key(), "view", raw, len(raw))
    assert _sqlite_memory_used() - before < len(raw) // 4
    assert store.raw(info.id) == raw
    store.close()


def _sqlite_memory_peak() -> int:
    """The most bytes SQLite has held in this process since the last call (its high-water
    mark, `sqlite3_memory_highwater`, read and reset)."""
    import _sqlite3
    import ctypes

    highwater = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_highwater
    highwater.restype = ctypes.c_int64
    highwater.argtypes = [ctypes.c_int]
    return int(highwater(1))


def test_sqlite_stores_a_stream_without_copying_its_bytes(tmp_path: Path) -> None:
    """A bound blob is copied twice by SQLite as it is inserted (+417 MB for a 217 MB stream,
    at the end of an upload): the bytes are written into a row of zeros, a piece at a time."""
    store = open_storage(str(tmp_path / "s.sqlite3"))
    raw = b"data: {}\n\n" * 2_000_000
    _sqlite_memory_peak()
    before = _sqlite_memory_used()
    info = store.add(raw, title="t", format="sse")
    assert _sqlite_memory_peak() - before < len(raw) // 4
    assert store.raw(info.id) == raw
    store.close()


def test_sqlite_stores_an_artefact_without_copying_its_bytes(tmp_path: Path) -> None:
    """A bound blob was copied four times as a view was kept (+160 MB for a 1M-chunk stream's
    41 MB view, while the server answered pages): the bytes go into a row of zeros, a piece
    at a time, when it is new and when it replaces one."""
    store = open_storage(str(tmp_path / "s.sqlite3"))
    info = store.add(b"data: {}\n\n", title="t", format="sse")
    view = b"\x00columns\xff" * 2_000_000
    for data in (view, view[::-1]):
        _sqlite_memory_peak()
        before = _sqlite_memory_used()
        assert store.put_artefact(info.id, Options().key(), "view", data, info.size)
        assert _sqlite_memory_peak() - before < len(data) // 4
        assert store.artefact(info.id, Options().key(), "view") == data
    store.close()


def test_postgresql_replaces_a_connection_that_carried_a_large_value(
    postgres_server: PgServer,
) -> None:
    """libpq keeps a connection's buffers at the largest message it carried (two pooled
    connections held 310 MB after a 217 MB upload): a statement that moves `LARGE` bytes
    drains the pool, so no connection that carried them is handed out again. Small ones
    keep their connection, and so does a stream's bytes stored by `COPY` (sent in pieces of
    psycopg's, its buffers stay small: +1 MB of RSS after 217 MB); the bytes read back are the
    bytes stored, in pieces too."""
    store = open_storage(postgres_server.new_schema_url())
    backend = store.backend
    assert isinstance(backend, PostgresBackend)

    def pids() -> set[int]:
        """The server processes of the connections the pool hands out now (each one taken
        while the others are held, so every pooled connection is seen)."""
        with backend._pool.connection() as a, backend._pool.connection() as b:
            found = [conn.execute("SELECT pg_backend_pid()").fetchall() for conn in (a, b)]
        return {int(rows[0][0]) for rows in found}

    before = pids()
    small = store.add(b"data: {}\n\n", title="small", format="sse")
    assert pids() == before, "a small statement keeps its connection"
    raw = b"data: {}\n\n" * (LARGE // 10 + 1)
    large = store.add(raw, title="large", format="sse")
    assert pids() == before, "copied in pieces: the connection is kept"
    assert store.raw(large.id) == raw
    assert pids().isdisjoint(before), "the connection that read the stream whole is gone"
    pieces = store.raw_pieces(large.id, len(raw))
    assert pieces is not None and b"".join(pieces) == raw
    assert store.raw(small.id) == b"data: {}\n\n"
    store.close()


def test_a_range_reader_reads_the_stored_bytes_by_offset(db_url: str) -> None:
    """Any span (past the end too), before and after `close` (SQLite's handle kept open
    until then, a handle per read after); a stream kept in parts, or none, has no reader; a
    deleted stream reads as None."""
    store = open_storage(db_url)
    raw = EVERY_BYTE * 3000
    info = store.add(raw, title="t", format="sse")
    reader = store.range_reader(info.id)
    assert reader is not None
    spans = [(0, 0), (0, 10), (5, 5), (len(raw) - 3, len(raw) + 50), (len(raw) + 5, len(raw) + 9)]
    spans += [(at, at + 777) for at in range(0, len(raw), len(raw) // 7)]
    for closed in (False, True):
        for begin, end in spans:
            assert reader(begin, end) == raw[begin:end], (begin, end, closed)
        reader.close()
    assert store.range_reader("no-such-stream") is None
    store.delete(info.id)
    assert reader(0, 10) is None
    store.close()
