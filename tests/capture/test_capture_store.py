"""Captures in the store, on SQLite and PostgreSQL: live parts, the end, deletion."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from webapp.storage import open_storage
from webapp.storage.capture import LIVE, Captures, Facts, Part
from webapp.storage.store import PARTS_AT_ONCE

FACTS = Facts("default", "POST", "/v1/chat/completions", 200, "text/event-stream",
              "gpt-4o", True, ("get_weather",), None, 12.5)  # fmt: skip


def test_a_capture_grows_while_live_then_its_parts_become_its_bytes(db_url: str) -> None:
    storage = open_storage(db_url)
    captures = Captures(storage)
    info = captures.start(FACTS, title="gpt-4o: get_weather", format="sse")
    assert storage.raw(info.id) == b"" and storage.info(info.id) is not None
    capture = captures.get(info.id)
    assert capture is not None and capture.live and capture.state == LIVE
    captures.append(info.id, 0, Part(b"data: 1\n\n", (9,), (20.0,)))
    captures.append(info.id, 1, Part(b"data: 2\n\ndata: 3\n\n", (18, 27), (30.0, 31.0)))
    assert storage.raw(info.id) == b"data: 1\n\ndata: 2\n\ndata: 3\n\n"
    assert storage.raw_prefix(info.id, 12) == b"data: 1\n\ndat"
    found = storage.info(info.id)
    assert found is not None and found.size == 27
    live = captures.arrivals(info.id)
    assert live is not None and live.ends == (9, 18, 27) and live.headers_ms == 12.5
    assert captures.live() == [info.id]
    assert captures.finish(info.id, "cut by the client")
    assert not captures.finish(info.id, "complete")  # once
    assert storage.raw(info.id) == b"data: 1\n\ndata: 2\n\ndata: 3\n\n"
    ended = captures.get(info.id)
    assert ended is not None and not ended.live and ended.state == "cut by the client"
    assert ended.facts.tools == ("get_weather",) and ended.facts.streamed is True
    assert ended.pieces == 3 and ended.ended
    done = captures.arrivals(info.id)
    assert done is not None and done.ms == (20.0, 30.0, 31.0)
    assert captures.live() == []
    with pytest.raises(LookupError):
        captures.append(info.id, 2, Part(b"x", (28,), (40.0,)))
    storage.close()


def test_an_ended_capture_s_bytes_are_its_parts_read_in_pieces(db_url: str) -> None:
    # Written once: the parts stay the bytes when it ends. A long capture is copied (to the
    # steps' spilled file) a few parts a query, never joined whole.
    storage = open_storage(db_url)
    captures = Captures(storage)
    info = captures.start(FACTS, title="t", format="sse")
    parts = [f"data: {seq:03}\n\n".encode() * (seq % 3 + 1) for seq in range(PARTS_AT_ONCE * 2 + 5)]
    total = 0
    for seq, data in enumerate(parts):
        total += len(data)
        captures.append(info.id, seq, Part(data, (total,), (float(seq),)))
    assert captures.finish(info.id, "complete")
    whole = b"".join(parts)
    assert storage.raw(info.id) == whole
    pieces = storage.raw_pieces(info.id, len(whole))
    assert pieces is not None and list(pieces) == parts
    cut = len(whole) - len(parts[-1]) - 3  # inside the last part but one
    pieces = storage.raw_pieces(info.id, cut)
    assert pieces is not None and b"".join(pieces) == whole[:cut]
    assert storage.raw_prefix(info.id, cut) == whole[:cut]
    assert storage.raw_prefix(info.id, 10 * len(whole)) == whole
    assert storage.range_reader(info.id) is None  # its parts are not read by offset
    found = storage.info(info.id)
    assert found is not None and found.size == len(whole)
    assert storage.raw_pieces("nosuchstream", 10) is None
    assert storage.raw_prefix("nosuchstream", 10) is None
    assert storage.delete(info.id)
    assert storage.raw(info.id) is None and storage.raw_pieces(info.id, 10) is None
    storage.close()


def test_a_deleted_live_capture_takes_no_more_parts(db_url: str) -> None:
    storage = open_storage(db_url)
    captures = Captures(storage)
    info = captures.start(FACTS, title="t", format="sse")
    assert storage.delete(info.id)
    with pytest.raises(LookupError):
        captures.append(info.id, 0, Part(b"x", (1,), (1.0,)))
    assert not captures.finish(info.id, "complete")
    assert storage.raw(info.id) is None and captures.get(info.id) is None
    storage.close()


def test_a_kept_request_is_served_only_when_kept(db_url: str) -> None:
    storage = open_storage(db_url)
    captures = Captures(storage)
    kept = captures.start(
        Facts("u", "POST", "/v1/chat/completions", 200, request=b'{"a": 1}'), title="t",
        format="json",
    )  # fmt: skip
    plain = captures.start(FACTS, title="t", format="sse")
    assert captures.request(kept.id) == b'{"a": 1}' and captures.request(plain.id) is None
    capture = captures.get(kept.id)
    assert capture is not None and capture.to_json()["request_kept"] is True
    storage.close()


def test_what_was_masked_in_a_kept_request_is_kept_with_it(db_url: str) -> None:
    storage = open_storage(db_url)
    captures = Captures(storage)
    path = "/v1/chat/completions"
    masked = captures.start(
        Facts("u", "POST", path, 200, request=b'{"api_key": "[redacted]"}',
              request_masked=("member 'api_key' of the posted JSON",)),
        title="t", format="sse",
    )  # fmt: skip
    clean = captures.start(Facts("u", "POST", path, 200, request=b"{}", request_masked=()),
                           title="t", format="sse")  # fmt: skip
    unlooked = captures.start(Facts("u", "POST", path, 200, request=b"{}"), title="t",
                              format="sse")  # fmt: skip
    said = {
        stream.id: capture.to_json()["request_masked"]
        for stream in (masked, clean, unlooked)
        if (capture := captures.get(stream.id)) is not None
    }
    assert said == {
        masked.id: ["member 'api_key' of the posted JSON"],
        clean.id: [],
        unlooked.id: None,  # kept before keys were masked: not looked at
    }
    plain = captures.get(captures.start(FACTS, title="t", format="sse").id)
    assert plain is not None and plain.to_json()["request_masked"] is None
    storage.close()


def test_a_non_stream_twin_is_found_beside_its_stream(db_url: str) -> None:
    storage = open_storage(db_url)
    captures = Captures(storage)
    stream = captures.start(FACTS, title="gpt-4o: get_weather", format="sse")
    captures.finish(stream.id, "complete")
    assert captures.twin(stream.id) is None
    answer = replace(FACTS, status=503, streamed=False, twin_of=stream.id)
    twin = captures.start(answer, title="non-stream twin", format="json")
    captures.append(twin.id, 0, Part(b'{"error": {}}', (13,), (40.0,)))
    captures.finish(twin.id, "complete")
    found = captures.twin(stream.id)
    assert found is not None and found.stream_id == twin.id
    assert found.facts.status == 503 and found.facts.twin_of == stream.id
    assert found.to_json()["twin_of"] == stream.id and captures.twin(twin.id) is None
    storage.close()


def _how_durable(run: Any, url: str) -> str:
    """The connection's commit setting as its backend says it (SQLite 2 FULL, 1 NORMAL)."""
    if url.startswith("postgresql"):
        return str(run("SHOW synchronous_commit", ())[0][0])
    return str(run("PRAGMA synchronous", ())[0][0])


def test_a_live_capture_s_batches_are_committed_without_waiting_for_the_disk(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half the capture writers' CPU was the disk's wait, a commit every 64 KiB: a batch is
    committed as the process's (kept when it dies), the stream's start and end as the disk's."""
    storage = open_storage(db_url)
    backend = storage.backend
    with backend.transaction() as run:
        durable = _how_durable(run, db_url)
    with backend.transaction(durable=False) as run:
        relaxed = _how_durable(run, db_url)
    with backend.transaction() as run:
        assert _how_durable(run, db_url) == durable  # only that transaction's
    # (the throwaway PostgreSQL of the tests runs with synchronous_commit off throughout)
    assert relaxed == "off" if db_url.startswith("postgresql") else (durable, relaxed) == ("2", "1")
    seen: list[bool] = []
    every = backend.transaction

    def watched(*, durable: bool = True) -> Any:
        seen.append(durable)
        return every(durable=durable)

    monkeypatch.setattr(backend, "transaction", watched)
    captures = Captures(storage)
    info = captures.start(FACTS, title="t", format="sse")
    captures.append(info.id, 0, Part(b"data: 1\n\n", (9,), (20.0,)))
    captures.append(info.id, 1, Part(b"data: 2\n\n", (18,), (30.0,)))
    assert captures.finish(info.id, "complete")
    assert seen == [True, False, False, True]
    assert storage.raw(info.id) == b"data: 1\n\ndata: 2\n\n"
    storage.close()
