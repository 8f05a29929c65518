"""The proxy's upstream connections: the pool never closes one it has given to a request that has
not started on it yet (httpcore 1.0.9's pool does: httpcore issue 1110, a 502 now and then), and
a request that meets a kept connection the upstream had closed is sent once more."""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
import socketserver
import struct
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import httpcore
import httpx
import pytest
from httpcore._async.connection_pool import AsyncPoolRequest

from tests.capture.fake import Fake, corpus_pieces, serving
from webapp.proxy.pool import PromiseKeepingPool, UpstreamTransport
from webapp.settings import Settings
from webapp.web.app import create_app


async def _promised_then_expired(pool: httpcore.AsyncConnectionPool, url: str) -> bool:
    """Whether the pool's next pass closes a connection it gave a waiting request, once the
    connection's idle time has run out (as it may, between the giving and the request's start)."""
    async with pool:
        await pool.request("POST", url, content=b"{}")  # one idle connection now
        (connection,) = pool.connections
        waiting = AsyncPoolRequest(httpcore.Request("POST", url))
        pool._requests.append(waiting)
        assert pool._assign_requests_to_connections() == []
        assert waiting.connection is connection  # given to the request, still idle
        connection._connection._expire_at = time.monotonic() - 1  # type: ignore[attr-defined]
        closing = pool._assign_requests_to_connections()  # another request came, or went
        pool._requests.remove(waiting)
        await pool._close_connections(closing)
        return connection in closing


@pytest.mark.parametrize(
    ("pool_class", "closes"), [(httpcore.AsyncConnectionPool, True), (PromiseKeepingPool, False)]
)
def test_a_connection_given_to_a_request_is_not_closed_under_it(
    pool_class: type[httpcore.AsyncConnectionPool], closes: bool
) -> None:
    with serving(Fake(script=corpus_pieces("clean-single-call.sse"))) as upstream:
        pool = pool_class(keepalive_expiry=60.0)
        assert (
            asyncio.run(_promised_then_expired(pool, f"{upstream}/v1/chat/completions")) is closes
        )


class _Resetting(socketserver.BaseRequestHandler):
    """An upstream on raw sockets: answers a connection's requests with a whole SSE stream,
    kept alive, but resets the connection at its request number `reset_at` (0: never), as an
    upstream that closed an idle connection does to a request sent on it."""

    reset_at = 0
    seen: ClassVar[list[tuple[int, bytes]]] = []
    """(connection number, request body) of every request read."""
    connections = 0

    def handle(self) -> None:
        type(self).connections += 1
        number, sock, buffer = type(self).connections, self.request, b""
        for count in itertools.count(1):
            while b"\r\n\r\n" not in buffer:
                data = sock.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            while len(buffer) < length:
                buffer += sock.recv(65536)
            body, buffer = buffer[:length], buffer[length:]
            type(self).seen.append((number, body))
            if count == self.reset_at:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()  # a reset, nothing of a response
                return
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in SCRIPT) + b"0\r\n\r\n"
            sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n" + chunks)  # fmt: skip


SCRIPT = corpus_pieces("clean-single-call.sse")


@pytest.mark.parametrize(("reset_at", "statuses", "requests"), [(2, [200, 200], 3), (1, [502], 1)])
def test_a_kept_connection_the_upstream_closed_is_tried_again_once(
    tmp_path: Path, reset_at: int, statuses: list[int], requests: int
) -> None:
    """A request that meets a reset on a kept connection is sent once more on a new one (the
    upstream had closed it); one that meets it on a new connection is a 502, not sent again."""
    handler = type("Handler", (_Resetting,), {"reset_at": reset_at, "seen": [], "connections": 0})
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as upstream:
        threading.Thread(target=upstream.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{upstream.server_address[1]}"
        app = create_app(Settings(db=str(tmp_path / "s.sqlite3"), upstreams=(url,)))
        try:
            with serving(app) as base, httpx.Client(timeout=15) as client:
                got = [
                    client.post(f"{base}/proxy/default/v1/chat/completions", json={"n": n})
                    for n in range(len(statuses))
                ]
        finally:
            upstream.shutdown()
    assert [answer.status_code for answer in got] == statuses
    assert [answer.content for answer in got if answer.status_code == 200] == [
        b"".join(SCRIPT)
    ] * statuses.count(200)
    assert len(handler.seen) == requests  # type: ignore[attr-defined]
    if reset_at == 2:  # the second request twice, the second time on a new connection
        assert [number for number, _ in handler.seen] == [1, 1, 2]  # type: ignore[attr-defined]
        assert handler.seen[1][1] == handler.seen[2][1] == b'{"n":1}'  # type: ignore[attr-defined]


class _Answering(socketserver.BaseRequestHandler):
    """An upstream on raw sockets: answers each request on a connection with `answer`, head and
    body in one write (as a fast upstream's chunks come: many in one read)."""

    answer = b""
    connections = 0

    def handle(self) -> None:
        type(self).connections += 1
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = self.request.recv(65536)
                if not data:
                    return
                buffer += data
            _, _, buffer = buffer.partition(b"\r\n\r\n")  # the requests here have no body
            self.request.sendall(self.answer)


def _chunked(pieces: list[bytes], end: bytes = b"0\r\n\r\n") -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + end
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + body


async def _read(transport: httpx.AsyncBaseTransport, url: str, times: int) -> list[Any]:
    """Each answer's pieces as `aiter_raw` hands them on, or the error that ended it."""
    got: list[Any] = []
    async with httpx.AsyncClient(transport=transport) as client:
        for _ in range(times):
            pieces: list[Any] = []
            try:
                async with client.stream("GET", url) as response:
                    async for piece in response.aiter_raw():
                        pieces.append(piece)
            except httpx.HTTPError as error:
                pieces.append(type(error))
            got.append(pieces)
    return got


def _through(transport: httpx.AsyncBaseTransport, answer: bytes, times: int = 1) -> list[Any]:
    handler = type("Handler", (_Answering,), {"answer": answer, "connections": 0})
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as upstream:
        threading.Thread(target=upstream.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{upstream.server_address[1]}/"
        try:
            got = asyncio.run(_read(transport, url, times))
        finally:
            upstream.shutdown()
    return [handler.connections, *got]  # type: ignore[attr-defined]


@pytest.mark.parametrize("upstream_transport", [False, True])
def test_the_chunks_of_one_read_come_as_one_piece(upstream_transport: bool) -> None:
    """httpx hands on a chunk at a time; the proxy's transport the chunks of a read, joined:
    the same bytes, on the same kept connection."""
    events = [b'data: {"n": %d}\n\n' % n for n in range(40)]
    transport = (
        UpstreamTransport(httpx.Limits()) if upstream_transport else httpx.AsyncHTTPTransport()
    )
    connections, *answers = _through(transport, _chunked(events), times=2)
    assert connections == 1
    for pieces in answers:
        assert b"".join(pieces) == b"".join(events)
        assert (len(pieces) < len(events)) is upstream_transport


@pytest.mark.parametrize("upstream_transport", [False, True])
def test_a_broken_chunk_ends_the_body_after_the_chunks_before_it(upstream_transport: bool) -> None:
    events = [b"data: %d\n\n" % n for n in range(3)]
    transport = (
        UpstreamTransport(httpx.Limits()) if upstream_transport else httpx.AsyncHTTPTransport()
    )
    _, pieces = _through(transport, _chunked(events, end=b"zz\r\nnot a chunk\r\n"))
    assert b"".join(pieces[:-1]) == b"".join(events)
    assert pieces[-1] is httpx.RemoteProtocolError
