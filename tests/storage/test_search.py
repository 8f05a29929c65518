"""The library's search in the store, on SQLite and PostgreSQL: terms, prefixes, the index,
tombstones of deleted streams, and a store of schema 7 upgraded."""

from __future__ import annotations

import pytest

from webapp.storage import Storage, open_storage
from webapp.storage.schema import MIGRATIONS, migrate
from webapp.storage.search import (
    MAX_PER_KIND,
    MAX_VALUE_WORDS,
    TERMS_VERSION,
    VALUE_CHARS,
    Search,
    after_prefix,
    words,
)
from webapp.storage.team import Library

HOLDS = {
    "model": ["gpt-4o-2024-08-06"],
    "tool": ["get_current_weather", "book_flight"],
    "call": ["call_AbC123", None, ""],
    "anomaly": ["phantom-call"],
    "quirk": ["bare-continuation", "missing-index"],
}


@pytest.fixture
def storage(db_url: str) -> Storage:
    return open_storage(db_url)


def _found(storage: Storage, search: str, ids: list[str] | None = None) -> list[str]:
    return [
        row.id for row in Library(storage).page(search=search, ids=ids, limit=20, offset=0).rows
    ]


def test_a_stream_is_found_by_what_it_holds(storage: Storage) -> None:
    held = storage.add(b"x", title="Pasted stream", format="sse")
    other = storage.add(b"y", title="weather report", format="sse")
    assert Search(storage).index(held.id, HOLDS)
    assert Search(storage).index(other.id, {"tool": ["lookup"]})
    for search in (
        "get_current_weather",  # a tool name
        "weather",  # from a separator on
        "current_w",  # a prefix of that
        "BOOK",  # any case
        "gpt-4o",  # a model by its prefix
        "call_abc123",  # a call id
        "phantom-call",  # an anomaly code
        "missing-index",  # a quirk code
        "continuation",  # the part of a quirk code after its dash
        "book weather",  # every word must match
        "pasted",  # the title still, anywhere in it
    ):
        expected = {held.id, other.id} if search == "weather" else {held.id}
        assert set(_found(storage, search)) == expected, search
    assert _found(storage, "book lookup") == []  # two words, two streams: none holds both
    assert _found(storage, "eather") == [other.id]  # within a term: only titles match
    assert _found(storage, "weather", ids=[other.id]) == [other.id]
    assert _found(storage, "%") == [] and _found(storage, "_") == []
    assert Search(storage).terms(held.id)["quirk"] == [
        "bare-continuation",
        "continuation",
        "index",
        "missing-index",
    ]
    storage.close()


def test_terms_are_bounded_and_storable(storage: Storage) -> None:
    info = storage.add(b"x", title="", format="sse")
    many = [f"call_{n}" for n in range(500)]
    odd = ["nul\x00here", "lone\ud800surrogate", "x" * 1000, "  spaced   out  "]
    assert Search(storage).index(info.id, {"call": many, "tool": odd})
    kept = Search(storage).terms(info.id)
    assert len([term for term in kept["call"] if term.startswith("call_")]) == MAX_PER_KIND
    assert "nul\ufffdhere" in kept["tool"] and "lone\ufffdsurrogate" in kept["tool"]
    assert "spaced out" in kept["tool"] and max(map(len, kept["tool"])) == 120
    assert _found(storage, "lone\ud800") == [info.id]
    assert Search(storage).index(info.id, {"tool": ["again"]})  # replaced, not added to
    assert Search(storage).terms(info.id) == {"tool": ["again"]}
    assert not Search(storage).index("no-such-stream", HOLDS)
    storage.close()


def test_values_are_found_by_each_word_and_bounded(storage: Storage) -> None:
    info = storage.add(b"x", title="", format="sse")
    long = "word " * 100 + "farbeyond"
    values = ["Edinburgh, Scotland", "NVDA", "2024-05-01", 42, None, long]
    assert Search(storage).index(info.id, {"value": values})
    for search in ("edinburgh", "SCOTLAND", "nvda", "2024-05", "05-01", "word"):
        assert _found(storage, search) == [info.id], search
    assert _found(storage, "farbeyond") == []  # past a value's first VALUE_CHARS
    assert len(long) > VALUE_CHARS
    assert _found(storage, "burgh") == []  # a word's start, as for every term
    many = [f"v{n} w{n}" for n in range(MAX_VALUE_WORDS)]  # twice as many words
    assert Search(storage).index(info.id, {"value": many})
    kept = Search(storage).terms(info.id)["value"]
    assert len(kept) == MAX_VALUE_WORDS and "w127" in kept and "v128" not in kept
    storage.close()


def test_the_search_reads_the_term_index(storage: Storage, store_kind: str) -> None:
    for n in range(30):
        info = storage.add(b"x", title=f"t{n}", format="sse")
        Search(storage).index(info.id, {"tool": [f"tool_{n}"]})
    probe = "SELECT stream_id FROM stream_terms WHERE term >= ? AND term < ?"
    with storage.backend.transaction() as run:
        if store_kind == "sqlite":
            plan = " ".join(str(row) for row in run(f"EXPLAIN QUERY PLAN {probe}", ("to", "tp")))
        else:  # a planner may scan 30 rows whatever the index: ask it not to
            run("SET LOCAL enable_seqscan = off", ())
            plan = " ".join(str(row) for row in run(f"EXPLAIN {probe}", ("to", "tp")))
    assert "stream_terms_term" in plan, plan
    assert len(_found(storage, "tool_2")) == 11  # tool_2, tool_20 ... tool_29
    assert len(_found(storage, "tool_7")) == 1
    storage.close()


def test_prefix_bounds_and_words() -> None:
    assert after_prefix("get") == "geu"
    assert after_prefix("a\U0010ffff") == "b"
    assert after_prefix("\U0010ffff") is None
    assert after_prefix("\ud7ff") == "\ue000"
    assert words('  "Get_Weather", (gpt-4o)  ') == ["get_weather", "gpt-4o"]
    assert len(words("a " * 50)) == 8


def test_a_deleted_stream_leaves_its_id_and_nothing_else(storage: Storage) -> None:
    info = storage.add(b"secret bytes", title="secret title", format="sse")
    Search(storage).index(info.id, HOLDS)
    assert storage.deleted(info.id) is None
    assert storage.delete(info.id, "by its owner")
    gone = storage.deleted(info.id)
    assert gone is not None and gone.why == "by its owner" and gone.deleted[:2] == "20"
    assert storage.info(info.id) is None and storage.raw(info.id) is None
    assert Search(storage).terms(info.id) == {}
    rows = storage.backend.run("SELECT * FROM deleted_streams")
    assert rows == [(info.id, gone.deleted, "by its owner")]  # no title, no bytes
    assert not storage.delete(info.id, "again") and storage.deleted(info.id) == gone
    assert storage.deleted("never-was") is None
    storage.close()


def test_a_store_of_schema_7_gains_the_search(db_url: str) -> None:
    old = open_storage(db_url)
    old.close()  # made at the latest; take it back to 7 the way an old release left it
    store = open_storage(db_url)
    with store.backend.transaction() as run:
        for table in ("stream_terms", "deleted_streams"):
            run(f"DROP TABLE {table}", ())
        run("DROP INDEX streams_terms_version", ())
        run("ALTER TABLE streams DROP COLUMN terms_version", ())
        run("ALTER TABLE notes DROP COLUMN author_hash", ())
        run("DROP TABLE lens_results", ())  # and the migrations after 8
        run("ALTER TABLE minimise_jobs DROP COLUMN owner", ())
        run("ALTER TABLE captures DROP COLUMN request_masked", ())
        run("ALTER TABLE captures DROP COLUMN owner", ())
        run("DROP INDEX captures_twin_of", ())
        run("ALTER TABLE captures DROP COLUMN twin_of", ())
        run("DELETE FROM schema_migrations WHERE version >= 8", ())
        run(
            "INSERT INTO streams (id, title, created, size, format) "
            "VALUES ('old1', 'Pasted stream', '2024-01-01T00:00:00+00:00', 1, 'sse')",
            (),
        )
    store.close()
    again = open_storage(db_url)
    assert again.version == MIGRATIONS[-1].version
    assert Search(again).unindexed(10) == ["old1"]
    assert Search(again).index("old1", {"tool": ["get_weather"]})
    assert Search(again).unindexed(10) == []
    [(version,)] = again.backend.run("SELECT terms_version FROM streams WHERE id = 'old1'")
    assert version == TERMS_VERSION
    assert _found(again, "weather") == ["old1"]
    again.close()


def test_migrate_applies_8_after_7(db_url: str) -> None:
    store = open_storage(db_url)
    assert [m.version for m in MIGRATIONS][6:8] == [7, 8]
    with store.backend.migrating() as run:
        assert migrate(run, store.dialect) == MIGRATIONS[-1].version  # nothing to do
    store.close()
