"""What the store and the caches keep of a capture while it grows: other workers' caches see
its new bytes, no view or library numbers of its first bytes are kept, and the captures a
crashed server left live are ended when the next one starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse
from tests.web.livekit import FACTS, PIECES, TOOL_CALL, captured, events, start
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage import open_storage
from webapp.storage.capture import ENDINGS, ORPHANED, Captures, Facts, Part
from webapp.storage.owners import owner_tag, process_tag
from webapp.storage.team import Library
from webapp.web.backend.service import STORE_FROM, Service
from webapp.web.backend.trace import stored


def test_the_numbers_of_a_live_capture_are_never_kept(app: FastAPI, client: TestClient) -> None:
    recording = start(app.state.service.storage)
    recording.add(PIECES[:3], [50.0] * 3)
    library = Library(app.state.service.storage)
    size = app.state.service.storage.info(recording.stream_id).size
    assert not library.keep_stats(recording.stream_id, {"chunks": 3}, size)
    recording.end()
    assert not library.keep_stats(recording.stream_id, {"chunks": 3}, size - 1)  # of fewer bytes
    assert library.keep_stats(recording.stream_id, {"chunks": 3}, size)


def test_another_workers_cache_follows_a_capture_it_did_not_record(settings: Settings) -> None:
    recorder, other = Service(settings), Service(settings)
    try:
        recording = start(recorder.storage)
        recording.add(PIECES[:2], [10.0, 10.0])
        assert len(other.view(recording.stream_id, Options()).trace.steps) == 3
        recording.add(PIECES[2:], [10.0] * 4)  # the recorder's worker wrote more
        assert len(other.view(recording.stream_id, Options()).trace.steps) == 7
        recording.end()
        ended = other.view(recording.stream_id, Options())
        assert len(ended.trace.steps) == 7 and ended.trace.stop_reason == "toolUse"
    finally:
        recorder.close()
        other.close()


def long_stream(fragments: int) -> str:
    chunks = [chunk(frag(0, "call_1", "get_weather", ""))]
    chunks += [chunk(frag(0, args="x" * 40)) for _ in range(fragments)]
    return sse(*chunks, chunk(finish="tool_calls"))


def test_a_view_of_a_live_capture_is_never_kept_in_the_store(settings: Settings) -> None:
    service = Service(settings)
    try:
        text = long_stream(STORE_FROM // 100)
        recording = start(service.storage)
        pieces = events(text)
        recording.add(pieces[:-2], [1.0] * (len(pieces) - 2))
        assert service.storage.info(recording.stream_id).size >= STORE_FROM
        service.view(recording.stream_id, Options())
        service.settle()
        key = (recording.stream_id, Options().key(), stored.kind(None))
        assert service.storage.artefact(*key) is None
        recording.add(pieces[-2:], [1.0, 1.0])
        recording.end()
        service.view(recording.stream_id, Options())
        service.settle()
        assert service.storage.artefact(*key) is not None
    finally:
        service.close()


def test_a_view_made_while_live_is_refused_by_the_store_after_the_end(db_url: str) -> None:
    storage = open_storage(db_url)
    recording = start(storage)
    recording.add(PIECES[:3], [1.0] * 3)
    size = storage.info(recording.stream_id).size
    assert not storage.put_artefact(recording.stream_id, "k", "columns", b"x", size)  # live
    recording.add(PIECES[3:], [1.0] * 3)
    recording.end()
    assert not storage.put_artefact(recording.stream_id, "k", "columns", b"x", size)  # grown
    full = storage.info(recording.stream_id).size
    assert storage.put_artefact(recording.stream_id, "k", "columns", b"x", full)
    storage.close()


def test_a_servers_start_ends_the_captures_left_live(db_url: str) -> None:
    storage = open_storage(db_url)
    left = start(storage)
    left.add(PIECES[:3], [5.0] * 3)
    done = captured(storage, TOOL_CALL, [5.0] * 6)
    captures = Captures(storage)
    assert captures.end_orphans() == [left.stream_id]
    capture = captures.get(left.stream_id)
    assert capture is not None and capture.state == ENDINGS["server"]
    assert capture.detail == ORPHANED and capture.pieces == 3
    assert storage.raw(left.stream_id) == b"".join(PIECES[:3])  # what arrived is kept
    assert captures.get(done.stream_id).state == "complete"  # type: ignore[union-attr]
    assert captures.end_orphans() == []
    storage.close()


def test_a_request_kept_before_keys_were_masked_is_masked_as_it_is_served(
    app: FastAPI, client: TestClient
) -> None:
    key = "sk-proj-OLDKEEP0123456789abcdefSECRET"
    body = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "key ' + key.encode()
    body += b'"}], "api_key": "plain-old-secret"}'
    facts = Facts("u", "POST", "/v1/chat/completions", 200, request=body)  # no request_masked
    info = Captures(app.state.service.storage).start(facts, title="t", format="sse")
    served = client.get(f"/api/streams/{info.id}/request")
    assert served.status_code == 200
    assert key.encode() not in served.content and b"plain-old-secret" not in served.content
    assert json.loads(served.headers["streamviz-masked"]) == [
        "member 'api_key' of the posted JSON",
        "API key (line 1)",
    ]


def test_the_live_captures_of_a_stopped_process_of_this_host_are_ended(db_url: str) -> None:
    """Issue 31: a worker killed mid-capture left its captures live for good; a sibling (or
    its restart) now ends them, and only them."""
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip
    dead_tag = f"{host} {process_tag(dead.pid)}"
    dead.communicate(b"")  # it has stopped, its tag is no one's
    storage = open_storage(db_url)
    captures = Captures(storage)
    owners = {
        "dead": dead_tag,
        "alive": owner_tag(),  # this process
        "reused": f"{host} {os.getpid()} 1",  # this pid, but an earlier process's start time
        "elsewhere": "another-host 1 1",  # cannot be told from here
        "unowned": "",  # recorded before captures had owners: the next start ends it
    }
    started = {}
    for name, owner in owners.items():
        info = captures.start(FACTS, title=name, format="sse", owner=owner)
        captures.append(info.id, 0, Part(PIECES[0], (len(PIECES[0]),), (5.0,)))
        started[name] = info.id
    ended = set(captures.end_gone(host))
    assert ended == {started["dead"], started["reused"]}
    for name, stream_id in started.items():
        capture = captures.get(stream_id)
        assert capture is not None
        if stream_id in ended:
            assert capture.state == ENDINGS["worker"] and owners[name] in capture.detail
            assert storage.raw(stream_id) == PIECES[0]  # what arrived is kept
        else:
            assert capture.live, name
    assert captures.end_gone(host) == []
    storage.close()
