"""The trace kept beside its stream: a second worker (a fresh Service on the same store) serves
steps from it without reading or assembling; an artefact that does not load is assembled
again, never a 500; a step's record comes from its own lines of the raw bytes."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

import webapp.storage.postgres
import webapp.storage.sqlite
import webapp.web.backend.service
import webapp.web.backend.trace.view
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import HX
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage import tracefile
from webapp.web.app import create_app
from webapp.web.backend.memory.cache import Memo
from webapp.web.backend.rawlines import RawLines
from webapp.web.backend.service import Service
from webapp.web.backend.trace import stored

STREAM = sse(
    chunk(role="assistant", content="Let me look."),
    chunk(frag(0, "call_1", "get_weather")),
    chunk(frag(args='{"city":')),
    chunk(frag(args='"Paris"}')),
    chunk(frag(1, "call_2", "get_time")),
    chunk(frag(1, args='{"tz":"CET"}')),
    chunk(frag(args="}")),
    chunk(finish="tool_calls"),
)
"""Two calls, a continuation after the second opened (an anomaly), text first."""
PIECE = 7
"""Bytes per piece of a stream read in pieces, in these tests (many pieces, cut anywhere)."""
QUERIES = ("", "&policy=exact-key", "&path=server-tools&server_tools=get_time")


@pytest.fixture(autouse=True)
def store_every_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every stream's trace, however small (the app keeps only large ones)."""
    monkeypatch.setattr(webapp.web.backend.service, "STORE_FROM", 0)


@pytest.fixture
def worker(settings: Settings, client: TestClient) -> Iterator[Any]:
    """Start another worker on the same store: a new app, so a new Service and an empty cache
    (once the first worker has stored the traces it was keeping)."""
    clients: list[TestClient] = []

    def start() -> TestClient:
        for running in [client, *clients]:
            running.app.state.service.settle()  # type: ignore[attr-defined]
        made = TestClient(create_app(settings), follow_redirects=False)
        made.__enter__()
        clients.append(made)
        return made

    yield start
    for made in clients:
        made.__exit__(None, None, None)


def _pages(client: TestClient, stream_id: str) -> list[str]:
    """Every step's stage (the detail panel included), the timeline, the trace JSON."""
    pages = []
    for query in QUERIES:
        for step in range(10):
            got = client.get(f"/s/{stream_id}?step={step}{query}", headers=HX)
            assert got.status_code == 200, got.text
            pages.append(got.text)
        pages.append(client.get(f"/s/{stream_id}/timeline?step=3{query}", headers=HX).text)
        pages.append(client.get(f"/api/streams/{stream_id}/trace?{query[1:]}").text)
    client.app.state.service.settle()  # type: ignore[attr-defined]  # the traces kept, if any
    return pages


def _refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("read or assembled although the trace was stored")

    monkeypatch.setattr(webapp.web.backend.service, "assemble", refuse)
    monkeypatch.setattr(webapp.web.backend.service, "read", refuse)


def test_a_second_worker_serves_steps_from_the_stored_trace(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    first = _pages(client, stream_id)
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    kept = service.storage.artefact(stream_id, Options().key(), stored.kind(None))
    assert kept is not None and kept.startswith(stored.MAGIC)
    _refuse(monkeypatch)
    second = worker()
    assert _pages(second, stream_id) == first
    page = second.get(f"/s/{stream_id}?step=3")
    assert page.status_code == 200 and "get_weather" in page.text


def test_a_step_reads_only_its_own_lines_and_the_stored_bytes_once(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    first = _pages(client, stream_id)
    _refuse(monkeypatch)
    second = worker()
    storage = second.app.state.service.storage  # type: ignore[attr-defined]
    fetched = _count_fetches(storage, monkeypatch)
    assert _pages(second, stream_id) == first
    # once, for the detail panels, never per step: its first megabyte, which is all of it
    assert fetched == [("prefix", stream_id)]


def _reopened(
    worker: Any, monkeypatch: pytest.MonkeyPatch, prefix: int
) -> tuple[TestClient, list[tuple[str, str]]]:
    """Another worker, whose first fetch of a stream takes `prefix` bytes, and its fetches."""
    monkeypatch.setattr(webapp.web.backend.service, "PREFIX_BYTES", prefix)
    second = worker()
    return second, _count_fetches(second.app.state.service.storage, monkeypatch)


def _count_fetches(storage: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    fetched: list[tuple[str, str]] = []
    real_raw, real_prefix = storage.raw, storage.raw_prefix

    def raw(stream: str) -> bytes | None:
        fetched.append(("whole", stream))
        return real_raw(stream)  # type: ignore[no-any-return]

    def prefix(stream: str, size: int) -> bytes | None:
        fetched.append(("prefix", stream))
        return real_prefix(stream, size)  # type: ignore[no-any-return]

    def pieces(stream: str, size: int) -> Iterator[bytes] | None:
        fetched.append(("pieces", stream))
        found = real_pieces(stream, size)
        return None if found is None else (piece for piece in found if _piece(piece))

    real_pieces = storage.raw_pieces
    monkeypatch.setattr(storage, "raw", raw)
    monkeypatch.setattr(storage, "raw_prefix", prefix)
    monkeypatch.setattr(storage, "raw_pieces", pieces)
    return fetched


def _piece(piece: bytes) -> bool:
    assert 0 < len(piece) <= PIECE  # never the whole stream at once
    return True


def test_after_a_restart_the_first_steps_fetch_only_the_streams_start(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large stream reopened shows its first steps from its first bytes; a step past them
    fetches the whole stream once, and every step's record is still the reader's."""
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    first = _pages(client, stream_id)
    second, fetched = _reopened(worker, monkeypatch, STREAM.index("get_time"))
    for step in range(3):
        assert second.get(f"/s/{stream_id}?step={step}", headers=HX).text == first[step]
    assert fetched == [("prefix", stream_id)]
    for step in range(3, 10):  # the fifth chunk starts past the prefix
        assert second.get(f"/s/{stream_id}?step={step}", headers=HX).text == first[step]
    assert fetched == [("prefix", stream_id), ("whole", stream_id)]


def test_a_utf16_streams_start_is_never_read_alone(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """UTF-16 bytes cut anywhere may end mid-character: a reopened UTF-16 stream longer than the
    prefix reads its steps from all its bytes. (Its decoded start is shorter in characters than
    the prefix in bytes, which once passed for "the whole stream": a record cut by the prefix's
    end was then shown cut, when it was not a chunk whose kind gave the cut away.)"""
    broken = "data: {this record is not JSON, and the prefix ends in its middle}\n\n"
    text = STREAM.replace("data: ", broken + "data: ", 2)
    data = text.encode("utf-16")
    files = {"file": ("utf16.sse", data, "text/event-stream")}
    stream_id = client.post("/api/streams", files=files).json()["id"]
    first = [client.get(f"/s/{stream_id}?step={step}", headers=HX).text for step in range(12)]
    client.app.state.service.settle()  # type: ignore[attr-defined]
    cut = data.index("in its middle".encode("utf-16-le"))  # inside the broken record's line
    second, fetched = _reopened(worker, monkeypatch, cut)
    assert second.get(f"/s/{stream_id}?step=0", headers=HX).text == first[0]
    assert fetched == [("prefix", stream_id), ("whole", stream_id)]  # at once
    for step in range(12):
        assert second.get(f"/s/{stream_id}?step={step}", headers=HX).text == first[step]


def test_a_long_streams_steps_read_their_lines_from_a_file_not_memory(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream of `SPILL_FROM` bytes or more is indexed from the store's pieces, then copied
    in pieces to a temporary file by the keeper, and its steps' records are read from there:
    its bytes are never held whole, and only its line index stays in memory."""
    monkeypatch.setattr(webapp.web.backend.service, "SPILL_FROM", 0)
    monkeypatch.setattr(webapp.storage.sqlite, "PIECE", PIECE)
    monkeypatch.setattr(webapp.storage.postgres, "PIECE", PIECE)
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    first = _pages(client, stream_id)
    second, fetched = _reopened(worker, monkeypatch, STREAM.index("get_time"))
    for step in range(10):
        assert second.get(f"/s/{stream_id}?step={step}", headers=HX).text == first[step]
    service: Service = second.app.state.service  # type: ignore[attr-defined]
    service.settle()
    # SQLite: indexed from one pass, copied by the next; PostgreSQL: copied as it is indexed
    passes = 2 if service.storage.backend.reads_by_offset else 1
    assert fetched == [("prefix", stream_id)] + [("pieces", stream_id)] * passes
    lines = service.cache.peek(("raw", stream_id, len(STREAM.encode())))
    assert isinstance(lines, RawLines) and lines.spilled_to_file
    assert lines.weight < len(STREAM) // 4


def test_a_long_upload_is_filed_from_the_bytes_in_hand(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long upload's bytes go to their file from the upload's own copy: the worker that
    took it never reads them back from the store, and their index is not dropped from the
    cache when the view is kept (the reading is, the least recently used). Every page is the
    one another worker serves from the store."""
    monkeypatch.setattr(webapp.web.backend.service, "SPILL_FROM", 0)
    monkeypatch.setattr(webapp.storage.sqlite, "PIECE", PIECE)
    monkeypatch.setattr(webapp.storage.postgres, "PIECE", PIECE)
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    size, weigh = len(STREAM.encode()), webapp.web.backend.service.weigh
    measured = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    service.settle()
    kept = [
        service.cache.peek(key)
        for key in (("raw", measured, size), ("reading", measured, None, size))
    ]
    view = service.cached_view(measured, Options())
    assert view is not None and kept[1] is not None
    # Room for all three but one byte: keeping the view drops the least recently used
    assert kept[0] is not None
    service.cache = Memo(sum(map(weigh, [view, *kept])) - 1, weigh)
    fetched = _count_fetches(service.storage, monkeypatch)
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    lines = service.cache.peek(("raw", stream_id, size))
    first = _pages(client, stream_id)
    assert fetched == [], "nothing read back from the store"
    assert isinstance(lines, RawLines) and lines.spilled_to_file
    assert service.cache.peek(("reading", stream_id, None, size)) is None
    second, _ = _reopened(worker, monkeypatch, 1)
    assert _pages(second, stream_id) == first


def test_a_long_streams_steps_read_the_store_until_its_bytes_are_in_their_file(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writing the file can take seconds (217 MB beside a store that has just written as
    much), and a step's record waited for it. Where the store reads by offset cheaply
    (SQLite's blob I/O) the index comes first, from the store's pieces, and the records are
    read from the store by offset until the keeper has written the file. PostgreSQL inflates a
    compressed value from its start for each read (60-150 ms a record at 217 MB): there the
    file is written in the pass that indexes it, and no record is read by offset. The pages
    are the same either way; once the file is there the store is not read again."""
    monkeypatch.setattr(webapp.web.backend.service, "SPILL_FROM", 0)
    monkeypatch.setattr(webapp.storage.sqlite, "PIECE", PIECE)
    monkeypatch.setattr(webapp.storage.postgres, "PIECE", PIECE)
    monkeypatch.setattr(webapp.web.backend.rawlines, "WINDOW", 256)  # many windows
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    first = _pages(client, stream_id)
    released = threading.Event()
    real_spill = RawLines.spill

    def spill(self: RawLines, *args: Any) -> bool:
        assert released.wait(10)
        return real_spill(self, *args)

    monkeypatch.setattr(RawLines, "spill", spill)
    second, _ = _reopened(worker, monkeypatch, 1)  # every step past the first megabyte
    service: Service = second.app.state.service  # type: ignore[attr-defined]
    by_offset = service.storage.backend.reads_by_offset
    ranges: list[int] = []
    real_reader = service.storage.range_reader

    def range_reader(stream: str) -> Any:
        reader = real_reader(stream)
        assert reader is not None

        class Counted:
            def __call__(self, begin: int, end: int) -> bytes | None:
                ranges.append(begin)
                return reader(begin, end)

            def close(self) -> None:
                reader.close()

        return Counted()

    monkeypatch.setattr(service.storage, "range_reader", range_reader)
    try:
        for step in (7, 2, 9, 0, 5):  # `first` holds steps 0 to 9 first
            assert second.get(f"/s/{stream_id}?step={step}", headers=HX).text == first[step]
        lines = service.cache.peek(("raw", stream_id, len(STREAM.encode())))
        assert isinstance(lines, RawLines) and lines.held_out
        if by_offset:
            assert not lines.spilled_to_file
            assert len(ranges) > 2, "the records came from the store"
        else:  # copied before the first record, not by the keeper's spill (still held back)
            assert lines.spilled_to_file
            assert ranges == [], "no read by offset on PostgreSQL"
    finally:
        released.set()
    service.settle()
    assert lines.spilled_to_file and lines.held_out
    ranges.clear()
    for step in range(10):
        assert second.get(f"/s/{stream_id}?step={step}", headers=HX).text == first[step]
    assert ranges == [], "from the file once it is written"


def test_the_keeper_drops_the_assembled_view_before_it_loads_the_lighter_one(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view assembled for the first page, its packed bytes and the view loaded from them are
    never all held at once: once stored, the assembled view leaves the cache and the keeper
    before the loaded one is made (the requests that used it have ended)."""
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    released = threading.Event()
    real_keep, real_unpacked = Service._keep, webapp.web.backend.service._unpacked
    alive: list[bool] = []

    def keep(self: Service, held: Any) -> None:
        assert released.wait(10)  # after the page's request has ended
        real_keep(self, held)

    def unpacked(*args: Any) -> Any:
        alive.append(assembled() is not None)
        return real_unpacked(*args)

    monkeypatch.setattr(Service, "_keep", keep)
    monkeypatch.setattr(webapp.web.backend.service, "_unpacked", unpacked)
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    assert client.get(f"/s/{stream_id}?step=3", headers=HX).status_code == 200
    view = service.cached_view(stream_id, Options())
    assert view is not None
    assembled = weakref.ref(view.recall)  # only the view holds it (the view takes no weakref)
    del view
    released.set()
    service.settle()
    assert alive == [False]  # loaded once, the assembled view no longer held by then
    view = service.cached_view(stream_id, Options())
    assert view is not None and view.recall is not assembled()
    assert client.get(f"/s/{stream_id}?step=3").status_code == 200


def test_a_long_streams_bytes_by_line_are_made_beside_its_first_page(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the keeper's thread, before the view is packed: not in the first step that needs a
    record once the upload's reading has left the cache (that step would wait, holding the
    view as assembled while the keeper replaces it)."""
    monkeypatch.setattr(webapp.web.backend.service, "SPILL_FROM", 0)
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    assert client.get(f"/s/{stream_id}").status_code == 200
    service.settle()
    lines = service.cache.peek(("raw", stream_id, len(STREAM.encode())))
    assert isinstance(lines, RawLines) and lines.spilled_to_file


@pytest.mark.parametrize("size", [0, 1, 7, 100, 10**9])
def test_the_store_reads_a_streams_bytes_in_pieces(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(webapp.storage.sqlite, "PIECE", PIECE)
    monkeypatch.setattr(webapp.storage.postgres, "PIECE", PIECE)
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    whole = service.storage.raw(stream_id)
    pieces = service.storage.raw_pieces(stream_id, size)
    assert whole is not None and pieces is not None
    found = list(pieces)
    assert b"".join(found) == whole[:size] and all(_piece(piece) for piece in found)
    assert service.storage.raw_pieces("no-such-stream", size) is None


@pytest.mark.parametrize("size", [0, 1, 100, 10**9])
def test_the_store_reads_a_streams_first_bytes(client: TestClient, size: int) -> None:
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    whole = service.storage.raw(stream_id)
    assert whole is not None
    assert service.storage.raw_prefix(stream_id, size) == whole[:size]
    assert service.storage.raw_prefix("no-such-stream", size) is None


def _damaged(data: bytes) -> list[bytes]:
    """Bytes that are not a loadable stored view: junk, cut short, another format, an older
    trace file inside."""
    at = data.index(tracefile.MAGIC) + len(tracefile.MAGIC)
    old_trace = data[:at] + (tracefile.VERSION + 1).to_bytes(4, "little") + data[at + 4 :]
    other_format = data[:8] + (stored.FORMAT + 1).to_bytes(4, "little") + data[12:]
    return [b"junk", data[: len(data) // 2], other_format, old_trace, data[:-3]]


@pytest.mark.parametrize("damage", range(5))
def test_a_damaged_or_old_stored_trace_is_assembled_again(
    client: TestClient, worker: Any, monkeypatch: pytest.MonkeyPatch, damage: int
) -> None:
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    first = _pages(client, stream_id)
    storage = client.app.state.service.storage  # type: ignore[attr-defined]
    key = (stream_id, Options().key(), stored.kind(None))
    good = storage.artefact(*key)
    storage.put_artefact(*key, _damaged(good)[damage])
    calls: list[Options] = []
    real = webapp.web.backend.service.assemble

    def counted(records: Any, options: Options) -> Any:
        calls.append(options)
        return real(records, options)

    monkeypatch.setattr(webapp.web.backend.service, "assemble", counted)
    second = worker()
    assert _pages(second, stream_id) == first  # never a 500: the same pages
    assert Options() in calls
    assert storage.artefact(*key) == good  # replaced by one that loads


def test_deleting_a_stream_deletes_its_stored_traces(client: TestClient) -> None:
    created = client.post("/api/streams", json={"text": STREAM}).json()
    stream_id = created["id"]
    _pages(client, stream_id)
    storage = client.app.state.service.storage  # type: ignore[attr-defined]
    assert storage.artefact(stream_id, Options().key(), stored.kind(None)) is not None
    headers = {"Authorization": f"Bearer {created['delete_token']}"}
    assert client.delete(f"/api/streams/{stream_id}", headers=headers).status_code in (200, 204)
    assert storage.artefact(stream_id, Options().key(), stored.kind(None)) is None


@pytest.mark.parametrize(
    "text",
    [
        STREAM,
        STREAM.replace("\n", "\r\n"),
        "\ufeff" + STREAM,
        'event: x\ndata: {"choices":[]}\n\n: note\ndata: 1\ndata: 2\n\n'
        "data: {bad\n\ndata: [DONE]\n",
        '{"choices":[{"index":0,"delta":{"content":"a"}}]}\n{"content":"b"}\n[DONE]\n',
        '[{"choices":[{"index":0,"delta":{"content":"a"}}]},\n {"delta":{"content":"b"}}]',
    ],
    ids=["sse", "crlf", "bom", "odd-sse", "jsonl", "json"],
)
def test_each_steps_record_is_the_one_the_reader_gave(client: TestClient, text: str) -> None:
    stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    records = service.reading(stream_id).result.records
    for options in (Options(), Options(policy="exact-key")):
        view = service.view(stream_id, options)
        assert view.source.records == len(records)
        for step in range(len(view.trace.steps)):
            want = records[step] if step < len(records) else None
            got = view.record(step)
            if want is None or got is None:
                assert got == want
            else:  # an error's wording may say where the input ends: the panel shows the step's
                assert (got.kind, got.line, got.value, got.text) == (
                    want.kind,
                    want.line,
                    want.value,
                    want.text,
                )
                assert (got.event, got.wrapped) == (want.event, want.wrapped)


def test_the_page_is_answered_before_its_trace_is_stored(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packing and storing a large trace (a second or more at a million chunks) happens after
    the page that made it is answered; `close` waits for it."""
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
    release = threading.Event()
    real = service._keep

    def held(view: Any) -> None:
        assert release.wait(30)
        real(view)

    monkeypatch.setattr(service, "_keep", held)
    key = (stream_id, Options("exact-key").key(), stored.kind(None))
    try:
        assert client.get(f"/s/{stream_id}?policy=exact-key").status_code == 200
        assert service.storage.artefact(*key) is None  # still being kept
    finally:
        release.set()
    service.settle()
    assert service.storage.artefact(*key) is not None


@pytest.mark.parametrize(
    "text",
    [
        STREAM,
        STREAM.replace("\n", "\r\n"),
        "\ufeff" + STREAM,
        'event: x\ndata: {"choices":[]}\n\n: note\ndata: 1\ndata: 2\n\n'
        "data: {bad\n\ndata: [DONE]\n",
    ],
    ids=["sse", "crlf", "bom", "odd-sse"],
)
def test_with_no_reading_cached_a_steps_record_is_read_from_its_own_lines(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """Once the stream's reading has left the cache, a step's record is the one the reader gave,
    read again from its own lines only (the whole stream is not read again)."""
    stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    records = service.reading(stream_id).result.records
    views = [service.view(stream_id, options) for options in (Options(), Options("exact-key"))]
    service.cache.discard(lambda key: isinstance(key, tuple) and key[0] == "reading")
    _refuse(monkeypatch)
    for view in views:
        for step in range(len(records)):
            got, want = view.record(step), records[step]
            assert got is not None
            assert (got.kind, got.line, got.value, got.text) == (
                want.kind,
                want.line,
                want.value,
                want.text,
            )


def test_once_kept_the_cached_view_is_the_one_loaded_from_the_store(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view an upload assembled is swapped, once stored, for the same view loaded from the
    store (it holds less memory): its pages are the assembled view's, and its long block's
    parse marks, found before the swap, are kept."""
    unpacked: list[Any] = []
    real_unpack = stored.unpack

    def unpack(data: bytes) -> Any:
        unpacked.append(real_unpack(data))
        return unpacked[-1]

    monkeypatch.setattr(stored, "unpack", unpack)
    monkeypatch.setattr(webapp.web.backend.trace.view, "LONG", 10_000)  # under the test's limit
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    release = threading.Event()
    real_keep = service._keep
    monkeypatch.setattr(service, "_keep", lambda view: (release.wait(30), real_keep(view)))
    long_call = sse(
        chunk(frag(0, "call_1", "write", '{"text":"')),
        *(chunk(frag(0, args="x" * 1000)) for _ in range(20)),
        chunk(frag(0, args='"}')),
        chunk(finish="tool_calls"),
    )
    posted = client.post("/api/streams", json={"text": long_call})
    assert posted.status_code == 201, posted.text
    stream_id = posted.json()["id"]

    def pages() -> list[str]:
        got = [client.get(f"/s/{stream_id}?step={step}", headers=HX) for step in range(25)]
        got.append(client.get(f"/s/{stream_id}/timeline?step=3", headers=HX))
        got.append(client.get(f"/api/streams/{stream_id}/trace"))
        assert all(page.status_code == 200 for page in got)
        return [page.text for page in got]

    assembled = pages()
    assert not unpacked
    release.set()
    service.settle()  # kept, then swapped
    assert len(unpacked) == 1
    view = service.view(stream_id, Options())
    assert view.trace is unpacked[0].trace
    (block,) = view.long_blocks()
    assert view.long_text(block)._marks is not None, "the marks moved over, not found again"
    assert pages() == assembled
    assert len(unpacked) == 1
