"""What the recording proxy refuses to forward, and what it keeps of a request: a request framed
two ways (Content-Length with Transfer-Encoding), a path that climbs out of the upstream's base
path, and keys in a body kept with --keep-requests. Real uvicorn servers on loopback; the
requests are written on a socket, since HTTP clients remove dot segments themselves."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest

from tests.capture.conftest import KEY, Rig
from tests.capture.fake import Fake, corpus_pieces, serving
from tests.capture.test_proxy import WAIT, capture_of, ended, stored_bytes, wait_for
from webapp.proxy.app import recording_app
from webapp.proxy.files import FileRecorder
from webapp.proxy.forward import Forwarder, Limits, parse_upstreams
from webapp.proxy.guard import AllowedHosts
from webapp.settings import Settings
from webapp.web.app import create_app

BASE_PATH = "/openai/v1"


@dataclass
class Based:
    """A fake provider behind streamviz, as upstream `up` with a base path: `FAKE/openai/v1`."""

    fake: Fake
    port: int


@pytest.fixture(scope="module")
def based(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Based]:
    fake = Fake(script=[b"data: [DONE]\n\n"])
    folder = tmp_path_factory.mktemp("based")
    with ExitStack() as stack:
        upstream = stack.enter_context(serving(fake))
        settings = Settings(db=str(folder / "s.sqlite3"), upstreams=(f"up={upstream}{BASE_PATH}",))
        base = stack.enter_context(serving(create_app(settings)))
        yield Based(fake, int(base.rsplit(":", 1)[1]))


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool
    """The server closed the connection after its answer."""


def send_raw(port: int, request: bytes) -> Answer:
    """Write the request on a new connection as it is; read the answer until the server closes
    the connection (or WAIT seconds pass: then `closed` is False)."""
    received = b""
    closed = False
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as connection:
        connection.sendall(request)
        try:
            while piece := connection.recv(65536):
                received += piece
            closed = True
        except TimeoutError:
            pass
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(status_line.split()[1]), headers, body, closed)


def post(path: str, extra: bytes = b"", body: bytes = b"{}") -> bytes:
    """A POST of `body` to `path` as written on the wire (closing the connection after it)."""
    return (
        b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nConnection: close\r\n"
        + extra
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )


# -- Content-Length with Transfer-Encoding -------------------------------------------------------

SMUGGLED = b"0\r\n\r\nGET /proxy/up/smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
"""The end of a chunked body, then a request of its own: never forwarded either."""


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
        b"Content-Length: 44\r\nTransfer-Encoding: chunked\r\n",
    ],
)
def test_a_request_framed_two_ways_is_refused_and_nothing_is_forwarded(
    based: Based, framing: bytes
) -> None:
    based.fake.seen.clear()
    request = (
        b"POST /proxy/up/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\n" + framing + b"\r\n2\r\n{}\r\n" + SMUGGLED
    )
    answer = send_raw(based.port, request)
    assert answer.status == 400, answer.body[:300]
    error = orjson.loads(answer.body)["error"]
    assert error["code"] == "ambiguous_framing" and error["type"] == "proxy_error"
    assert "Content-Length" in error["message"] and "Transfer-Encoding" in error["message"]
    assert answer.headers["connection"] == "close" and answer.closed
    assert based.fake.seen == []


def test_a_chunked_request_alone_is_forwarded(based: Based) -> None:
    based.fake.seen.clear()
    request = (
        b"POST /proxy/up/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n"
    )
    answer = send_raw(based.port, request)
    assert answer.status == 200 and b"data: [DONE]\n\n" in answer.body  # chunked
    assert [seen.body for seen in based.fake.seen] == [b"{}"]


# -- Paths ---------------------------------------------------------------------------------------

FORWARDED = [
    ("/chat/completions", "/chat/completions"),
    ("/./chat/completions", "/chat/completions"),
    ("/models/../chat/completions", "/chat/completions"),
    ("/models/%2e%2e/chat/completions", "/chat/completions"),
    ("/models/.%2E/chat/completions", "/chat/completions"),
    ("/a/%2e/b/%2E%2e/c", "/a/c"),
    ("/a/b/..", "/a/"),
    ("/a/.", "/a/"),
    ("/a//b", "/a//b"),
    ("/file%2ename/x", "/file%2ename/x"),
    ("/x%2F..%2Fchat/completions", "/x%2F..%2Fchat/completions"),
    ("/...", "/..."),
]
"""(the path under /proxy/up, the path under the base the upstream is sent)."""

REFUSED = [
    "/../../secret",
    "/..",
    "/../openai/v1/chat/completions",
    "/models/../../secret",
    "/%2e%2e/secret",
    "/%2E%2e/%2e%2E/secret",
    "/.%2e/secret",
    "/%2e./secret",
    "/a/./../../secret",
    "/..%2fsecret",
    "/..%2F..%2Fsecret",
    "/a%2f..%2f..%2fsecret",
    "/..%5csecret",
    "/..\\secret",
    "/..;x/secret",
    "/%252e%252e/secret",
]
"""Paths under /proxy/up that would leave the upstream's base path, read one way or another."""


@pytest.mark.parametrize(("rest", "path"), FORWARDED)
def test_dot_segments_are_removed_before_the_path_is_forwarded(
    based: Based, rest: str, path: str
) -> None:
    based.fake.seen.clear()
    answer = send_raw(based.port, post(f"/proxy/up{rest}"))
    assert answer.status == 200, answer.body[:300]
    [seen] = based.fake.seen
    assert seen.raw_path.decode() == BASE_PATH + path


@pytest.mark.parametrize("rest", REFUSED)
def test_a_path_that_would_leave_the_base_is_refused_and_nothing_is_forwarded(
    based: Based, rest: str
) -> None:
    based.fake.seen.clear()
    answer = send_raw(based.port, post(f"/proxy/up{rest}?key={KEY}"))
    assert answer.status == 400, answer.body[:300]
    error = orjson.loads(answer.body)["error"]
    assert error["code"] == "path_outside_upstream" and error["type"] == "proxy_error"
    assert "/proxy/up/" in error["message"] and KEY not in error["message"]
    assert based.fake.seen == []


# -- Keys in kept request bodies -----------------------------------------------------------------

PLAIN = "plain-secret-value-4242"
BEARER = "Bearer abcdefghijklmnopqrstuvwxyz012345"
KEPT_BODY = {
    "model": "gpt-4o",
    "stream": True,
    "api_key": PLAIN,
    "messages": [
        {"role": "user", "content": f"PROMPT-TEXT with my key {KEY} and {BEARER}"},
    ],
}
MASKED = [
    "member 'api_key' of the posted JSON",
    "API key (line 1)",
    "bearer token (line 1)",
]
"""What masking the body says it masked (as an upload of it would)."""


def masked_body(kept: bytes) -> dict[str, object]:
    """The kept body, checked to hold none of the secrets and the rest of the prompt."""
    for secret in (KEY, PLAIN, BEARER):
        assert secret.encode() not in kept
    value: dict[str, object] = json.loads(kept)
    assert value["api_key"] == "[redacted]" and value["model"] == "gpt-4o"
    [message] = value["messages"]  # type: ignore[misc]
    assert message["content"].startswith("PROMPT-TEXT with my key sk-proj-")
    assert "Bearer " in message["content"]
    return value


def test_keep_requests_masks_keys_in_the_kept_body(make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(keep_requests=True)
    rig.fake.script = corpus_pieces("clean-single-call.sse")
    sent = orjson.dumps(KEPT_BODY)
    response = httpx.post(
        f"{rig.proxy}/chat/completions", content=sent, headers={"Content-Type": "application/json"}
    )
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    assert rig.fake.seen[-1].body == sent  # the upstream gets the body as sent
    kept = httpx.get(f"{rig.base}/api/streams/{stream_id}/request", timeout=WAIT)
    assert kept.status_code == 200
    masked_body(kept.content)
    assert json.loads(kept.headers["streamviz-masked"]) == MASKED
    capture = capture_of(rig, stream_id)
    assert capture["request_kept"] is True and capture["request_masked"] == MASKED
    for secret in (KEY, PLAIN, BEARER.split()[1]):
        assert secret.encode() not in stored_bytes(rig)


def test_a_kept_body_with_no_key_is_kept_as_sent_and_says_so(
    make_rig: Callable[..., Rig],
) -> None:
    rig = make_rig(keep_requests=True)
    rig.fake.script = corpus_pieces("clean-single-call.sse")
    sent = b'{"model": "gpt-4o", "stream": true, "messages": [], "x": "\xc3\xa9"}'
    response = httpx.post(f"{rig.proxy}/chat/completions", content=sent)
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    kept = httpx.get(f"{rig.base}/api/streams/{stream_id}/request", timeout=WAIT)
    assert kept.content == sent and json.loads(kept.headers["streamviz-masked"]) == []
    assert capture_of(rig, stream_id)["request_masked"] == []


def test_record_keep_requests_masks_keys_in_the_request_file(tmp_path: Path) -> None:
    fake = Fake(script=corpus_pieces("clean-single-call.sse"))
    out = tmp_path / "out"
    out.mkdir()
    sent = orjson.dumps(KEPT_BODY)
    with serving(fake) as upstream:
        recorder = FileRecorder(out, lambda line: None)
        forwarder = Forwarder(parse_upstreams([upstream]), recorder, Limits(keep_requests=True))
        with serving(recording_app(forwarder, AllowedHosts.of(()))) as base:
            response = httpx.post(f"{base}/proxy/default/v1/chat/completions", content=sent)
            assert response.status_code == 200
            wait_for(lambda: list(out.glob("*.timing.json")), "the timing file")
    assert fake.seen[-1].body == sent
    [request] = list(out.glob("*.request.json"))
    masked_body(request.read_bytes())
    [timing] = list(out.glob("*.timing.json"))
    assert json.loads(timing.read_text())["request_masked"] == MASKED
    for path in out.iterdir():
        assert KEY.encode() not in path.read_bytes() and PLAIN.encode() not in path.read_bytes()
