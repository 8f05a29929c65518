"""Bounded by design: the cache in bytes, misses computed once, upload slots, early 413s, and
heavy work off the event loop (another request is answered while one assembles)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import webapp.tuning
import webapp.web.backend.service
import webapp.web.routes.api
import webapp.web.routes.pages
from tests.web.webkit import CONTINUATION, FILE_PART, MULTIPART, Store, post_chunked
from webapp.core.options import Options
from webapp.web.backend.intake.ingest import clean_title
from webapp.web.backend.memory.cache import Memo
from webapp.web.backend.memory.inflight import Busy, InFlight
from webapp.web.backend.service import Service
from webapp.web.backend.trace.keeper import Keeper

WAIT = 30.0
"""How long a test waits for an event that should come at once, before it fails."""


def test_sixteen_concurrent_misses_on_one_key_compute_once() -> None:
    memo: Memo[str, bytes] = Memo(10_000, len)
    gate = threading.Barrier(16)
    made: list[int] = []
    results: list[bytes] = []

    def make() -> bytes:
        made.append(1)
        return b"x" * 100

    def worker() -> None:
        gate.wait()
        results.append(memo.get("k", make))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1]
    assert len(results) == 16 and all(result is results[0] for result in results)


def test_waiters_share_a_value_too_heavy_to_keep() -> None:
    memo: Memo[str, bytes] = Memo(10, len)
    entered, release = threading.Event(), threading.Event()
    made: list[int] = []
    results: list[bytes] = []

    def make() -> bytes:
        made.append(1)
        entered.set()
        assert release.wait(WAIT)
        return b"y" * 50  # heavier than the whole budget: returned, never kept

    first = threading.Thread(target=lambda: results.append(memo.get("k", make)))
    first.start()
    assert entered.wait(WAIT)
    second = threading.Thread(target=lambda: results.append(memo.get("k", make)))
    second.start()
    release.set()
    first.join()
    second.join()
    assert made == [1] and results == [b"y" * 50] * 2
    assert len(memo) == 0 and memo.weight == 0


def test_the_cache_evicts_by_bytes_not_entries() -> None:
    memo: Memo[str, bytes] = Memo(1000, len)
    for key in "abcd":
        memo.get(key, lambda: b"." * 300)
    assert len(memo) == 3 and memo.weight == 900  # "a" went: 4 x 300 > 1000
    memo.get("big", lambda: b"." * 700)  # evicts the two least recent
    assert memo.weight == 1000 and len(memo) == 2
    made: list[str] = []
    memo.get("d", lambda: made.append("d") or b"")  # kept: the most recent of the 300s
    memo.get("b", lambda: made.append("b") or b"")  # evicted for "big"
    assert made == ["b"]


def test_a_touched_value_is_dropped_last_and_touching_makes_nothing() -> None:
    memo: Memo[str, bytes] = Memo(1000, len)
    for key in "abc":
        memo.get(key, lambda: b"." * 300)
    assert memo.touch("a") and not memo.touch("z") and len(memo) == 3
    memo.get("d", lambda: b"." * 300)  # drops "b", the least recent now, not "a"
    assert memo.peek("a") is not None and memo.peek("b") is None


def test_traces_are_cached_by_canonical_options(
    app: FastAPI, client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Options] = []
    real = webapp.web.backend.service.assemble

    def counted(records: Any, options: Options) -> Any:
        calls.append(options)
        return real(records, options)

    monkeypatch.setattr(webapp.web.backend.service, "assemble", counted)
    stream_id = store(CONTINUATION)
    calls.clear()  # storing indexed it under the default options (the library's terms)
    service: Service = app.state.service
    for tools in (("b", "a"), ("a", " b", "a"), ("a", "b")):
        view = service.view(stream_id, Options(path="server-tools", server_tools=tools))
        assert view.options.server_tools == tools  # the user sees what they asked for
        assert view.trace.server_tools == tools
    assert calls == [Options(path="server-tools", server_tools=("a", "b"))]
    body = client.get(f"/api/streams/{stream_id}/trace?path=server-tools&server_tools=b,a").json()
    assert body["server_tools"] == ["b", "a"] and len(calls) == 1


def test_the_cache_budget_bounds_what_one_worker_keeps(
    app: FastAPI, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    service: Service = app.state.service
    service.cache.budget = 60_000
    ids = [store(CONTINUATION, title=f"s{n}") for n in range(4)]
    for stream_id in ids:
        for choice in range(3):
            service.view(stream_id, Options(choice=choice))
            assert service.cache.weight <= 60_000
    assert 0 < len(service.cache) < 4 * 4


def test_an_upload_over_the_slots_gets_a_503_that_says_why(
    app: FastAPI, client: TestClient
) -> None:
    with app.state.uploads.slot(), app.state.uploads.slot():
        for _ in range(app.state.uploads.size - 2):
            app.state.uploads._free.acquire()
        try:
            api = client.post("/api/streams", json={"text": CONTINUATION})
            page = client.post("/streams", data={"text": CONTINUATION})
        finally:
            for _ in range(app.state.uploads.size - 2):
                app.state.uploads._free.release()
    assert api.status_code == 503 and api.headers["retry-after"] == "2"
    assert "checking 4 other uploads right now" in api.json()["detail"]
    assert page.status_code == 503 and "Too many uploads at once" in page.text
    assert client.post("/api/streams", json={"text": CONTINUATION}).status_code == 201


@pytest.mark.parametrize(
    ("path", "content_type", "head", "limit"),
    [
        ("/api/streams", "application/json", b'{"text": "', 2 * 50_000 + 64 * 1024),
        ("/api/streams", MULTIPART, FILE_PART, 50_000 + 64 * 1024),
        ("/streams", MULTIPART, FILE_PART, 50_000 + 64 * 1024),
        ("/streams", "application/x-www-form-urlencoded", b"text=", 50_000 + 64 * 1024),
    ],
)
def test_a_chunked_upload_is_refused_as_soon_as_it_passes_the_limit(
    app: FastAPI, client: TestClient, path: str, content_type: str, head: bytes, limit: int
) -> None:
    size = 8 * 1024
    got = post_chunked(app, path, content_type, head, chunks=10_000, size=size)
    assert got.status == 413
    assert got.pulled == limit // size + 1  # the chunk that passed the limit was the last read


def _blocked(
    monkeypatch: pytest.MonkeyPatch, module: object, name: str
) -> tuple[threading.Event, threading.Event, list[bool]]:
    """Replace `module.name` with a version that waits for `release` once `entered` is set."""
    entered, release = threading.Event(), threading.Event()
    waited: list[bool] = []
    real: Callable[..., Any] = getattr(module, name)

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        waited.append(release.wait(WAIT))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)
    return entered, release, waited


def _get_in_thread(client: TestClient, url: str) -> tuple[threading.Thread, list[int]]:
    """GET `url` from a thread of its own (started); its status lands in the list."""
    statuses: list[int] = []
    thread = threading.Thread(target=lambda: statuses.append(client.get(url).status_code))
    thread.start()
    return thread, statuses


def test_a_slow_assembly_does_not_stall_other_requests(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream_id = store(CONTINUATION)
    entered, release, waited = _blocked(monkeypatch, webapp.web.backend.service, "assemble")
    # not the default options: storing the stream assembled (and cached) those for the library
    thread, slow = _get_in_thread(client, f"/api/streams/{stream_id}/trace?policy=exact-key")
    try:
        assert entered.wait(WAIT)
        # The assembly holds a worker thread; the event loop answers everything else meanwhile
        # (an upload is indexed by assembling it, so it would wait on the blocked assembler).
        assert client.get(f"/api/streams/{stream_id}").status_code == 200
        assert client.get(f"/api/streams/{stream_id}/raw").content == CONTINUATION.encode()
        assert client.get("/").status_code == 200
        assert not release.is_set() and slow == []
    finally:
        release.set()
        thread.join(WAIT)
    assert slow == [200] and waited == [True]


def test_a_slow_upload_does_not_stall_other_requests(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream_id = store(CONTINUATION)
    entered, release, waited = _blocked(monkeypatch, webapp.web.routes.api, "prepare_json")
    posted: list[int] = []
    thread = threading.Thread(
        target=lambda: posted.append(
            client.post("/api/streams", json={"text": CONTINUATION}).status_code
        )
    )
    thread.start()
    try:
        assert entered.wait(WAIT)
        assert client.get(f"/api/streams/{stream_id}/trace").status_code == 200
        assert client.get(f"/s/{stream_id}").status_code == 200
        assert not release.is_set() and posted == []
    finally:
        release.set()
        thread.join(WAIT)
    assert posted == [201] and waited == [True]


@pytest.mark.parametrize(
    ("title", "expected"),
    [("a\x00b", "a b"), ("tab\there", "tab here"), ("\x7f\x1b[31m", "[31m"), ("\x00", "API")],
)
def test_titles_lose_control_characters(title: str, expected: str) -> None:
    assert clean_title(title, "API") == expected


def test_a_nul_in_a_title_is_stored_on_every_store(client: TestClient) -> None:
    response = client.post("/api/streams", json={"text": CONTINUATION, "title": "x\x00y"})
    assert response.status_code == 201
    info = client.get(f"/api/streams/{response.json()['id']}").json()
    assert info["title"] == "x y"


def test_a_small_stream_does_not_queue_behind_large_ones(app: FastAPI, store: Store) -> None:
    """Every slot for heavy work is taken (by large streams' assemblies): a small stream is
    still read and assembled at once, not after them."""
    service: Service = app.state.service
    stream_id = store(CONTINUATION)
    taken = [
        service.gate.heavy.acquire(blocking=False)
        for _ in range(webapp.web.backend.service.HEAVY_AT_ONCE)
    ]
    assert all(taken)
    made: list[int] = []
    try:
        thread = threading.Thread(
            target=lambda: made.append(
                len(service.view(stream_id, Options("exact-key")).trace.steps)
            )
        )
        thread.start()
        thread.join(WAIT)
        assert made and made[0] > 0, "a small stream waited for the slots of large ones"
    finally:
        for _ in taken:
            service.gate.heavy.release()


def test_the_heap_is_trimmed_after_a_request_that_did_heavy_work(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large trace's freed memory goes back to the system once its request is answered
    (`webapp.tuning.trim`); a request with no heavy work does not pay for a trim."""
    trims: list[int] = []
    monkeypatch.setattr(webapp.tuning, "trim", lambda: trims.append(1) or True)
    # every stream counts as large
    monkeypatch.setattr(webapp.web.backend.service, "LIGHT_BELOW", 0)
    stream_id = store(CONTINUATION)
    trims.clear()  # storing it read it: heavy work too
    assert client.get(f"/s/{stream_id}?policy=exact-key").status_code == 200
    assert trims == [1]
    assert client.get(f"/s/{stream_id}?policy=exact-key").status_code == 200  # cached
    assert client.get("/").status_code == 200
    assert trims == [1]


def test_views_in_flight_share_one_byte_budget() -> None:
    budget = InFlight(100, wait=0.0)
    first = budget.take(60)
    with pytest.raises(Busy, match="try again"):
        budget.take(60)  # 60 + 60 > 100, and nothing frees room
    first.settle(30)  # made: it weighs less than its estimate
    second = budget.take(60)
    assert budget.used == 90
    first.release()
    first.release()  # a second release gives nothing back twice
    assert budget.used == 60
    second.release()
    heavy = budget.take(10**9)  # one ticket always fits, capped at the budget
    assert heavy.weight == 100 and budget.used == 100
    heavy.release()
    assert budget.used == 0


def test_a_waiting_ticket_is_served_when_room_is_given_back() -> None:
    budget = InFlight(100, wait=WAIT)
    held = budget.take(100)
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(budget.take(50).weight))
    waiter.start()
    assert not got  # the budget is full: it waits
    held.release()
    waiter.join(WAIT)
    assert got == [50]


def test_a_request_holds_its_view_until_answered_and_a_second_view_is_free(
    app: FastAPI, client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one request makes a large view and renders it, another large view waits for the
    room; a page that needs two views (the report) takes one ticket."""
    service: Service = app.state.service
    # every stream counts as large
    monkeypatch.setattr(webapp.web.backend.service, "LIGHT_BELOW", 0)
    service.gate.inflight = InFlight(1, wait=0.0)  # room for one view at a time, no waiting
    stream_id = store(CONTINUATION)
    real = webapp.web.routes.pages.views.summary
    rendering, release, _ = _blocked(monkeypatch, webapp.web.routes.pages.views, "summary")
    # storing it made its default view (the library's terms): the report still needs exact-key's
    first, answers = _get_in_thread(client, f"/s/{stream_id}?policy=exact-key&path=server-tools")
    try:
        assert rendering.wait(WAIT)
        made = service.cached_view(stream_id, Options("exact-key", "server-tools"))
        assert made is not None  # settled to the view's own weight, held while it renders
        assert service.gate.inflight.used == made.weight
        other = client.get(f"/s/{stream_id}/report.md?policy=adr-0019")
        assert other.status_code == 503 and other.headers["Retry-After"]
        assert "making other large traces" in other.text
    finally:
        release.set()
        first.join(WAIT)
    assert answers == [200] and service.gate.inflight.used == 0
    monkeypatch.setattr(webapp.web.routes.pages.views, "summary", real)
    report = client.get(f"/s/{stream_id}/report.md?policy=adr-0019")  # two views, one ticket
    assert report.status_code == 200
    assert service.gate.inflight.used == 0


def test_the_keeper_trims_the_heap_once_no_other_work_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Captures ending by the dozen each second (the keeper indexes each): one trim once the
    queue runs dry, not one after each (a trim walks the whole heap)."""
    trims: list[int] = []
    monkeypatch.setattr(webapp.tuning, "trim", lambda: trims.append(1) or True)
    keeper = Keeper(lambda view: None, contextlib.nullcontext)
    go, done = threading.Event(), []

    def held() -> None:
        go.wait()

    keeper.later(held, "the first, held until the rest are queued")
    for n in range(5):
        keeper.later(lambda n=n: done.append(n), f"work {n}")  # type: ignore[misc]
    go.set()
    keeper.settle()
    assert done == [0, 1, 2, 3, 4] and trims == [1]
    keeper.later(lambda: None, "alone")
    keeper.settle()
    assert trims == [1, 1]
    keeper.close()
