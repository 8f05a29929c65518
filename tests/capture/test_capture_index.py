"""A capture that ends is indexed for the library from its trace alone: found by what it holds,
nothing kept in the store for it until its page is opened (most captures never are)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.capture.conftest import KEY, Rig
from tests.capture.test_proxy import WAIT, wait_for
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage import open_storage
from webapp.storage.capture import Captures, Facts
from webapp.storage.search import Search
from webapp.web.backend.library.indexing import index_ended
from webapp.web.backend.service import STORE_FROM, Service
from webapp.web.backend.trace import stored


def _event(payload: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _large_script() -> list[bytes]:
    """A call to `lookup_ticker` whose arguments come in pieces, larger than STORE_FROM bytes."""
    opening = {
        "index": 0,
        "id": "call_T1",
        "function": {"name": "lookup_ticker", "arguments": '{"ticker": "NVDA", "pad": "'},
    }
    script = [
        _event({"model": "gpt-4o", "choices": [{"index": 0, "delta": {"tool_calls": [opening]}}]})
    ]
    piece = {"index": 0, "function": {"arguments": " " * 200}}
    chunk = _event({"model": "gpt-4o", "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})
    script += [chunk] * (STORE_FROM // len(chunk) + 1)
    last = {"index": 0, "function": {"arguments": '"}'}}
    script.append(_event({"choices": [{"index": 0, "delta": {"tool_calls": [last]}}]}))
    script.append(_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    return [*script, b"data: [DONE]\n\n"]


def test_an_ended_capture_is_found_by_what_it_holds_and_keeps_no_view(
    make_rig: Callable[..., Rig],
) -> None:
    rig = make_rig(list_streams=True)
    rig.fake.script = _large_script()
    response = httpx.post(
        f"{rig.proxy}/chat/completions",
        json={"model": "gpt-4o", "stream": True, "messages": []},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=WAIT,
    )
    stream_id = response.headers["streamviz-stream-id"]
    assert len(response.content) >= STORE_FROM
    storage = open_storage(str(rig.folder / "s.sqlite3"))
    try:  # the store read directly: the capture's pages and timing would make its view

        def live() -> bool:
            capture = Captures(storage).get(stream_id)
            return capture is None or capture.live

        def found(query: str) -> set[str]:
            listed = httpx.get(f"{rig.base}/api/streams?q={query}", timeout=WAIT).json()
            return {row["id"] for row in listed["streams"]}

        wait_for(lambda: not live(), "the capture to end")
        wait_for(lambda: stream_id in found("lookup_ticker"), "the capture to be indexed")
        assert stream_id in found("NVDA")  # a value in its arguments
        key, kind = Options().canonical().key(), stored.kind(None)
        assert storage.artefact(stream_id, key, kind) is None  # indexing kept no view
        assert httpx.get(f"{rig.base}/s/{stream_id}", timeout=WAIT).status_code == 200
        wait_for(lambda: storage.artefact(stream_id, key, kind) is not None, "its page's view kept")
    finally:
        storage.close()


def test_a_capture_deleted_before_its_index_is_left_alone(tmp_path: Path) -> None:
    service = Service(Settings(db=str(tmp_path / "s.sqlite3")))
    try:
        info = Captures(service.storage).start(
            Facts("default", "POST", "/v1/chat/completions", 200), title="t", format="sse"
        )
        service.storage.delete(info.id)
        index_ended(service, info.id)  # the background's work, after the delete: no error
        assert Search(service.storage).unindexed(10) == []
    finally:
        service.close()
