"""Slow uploads hold no upload slot, and a body that trickles in is cut off with a 408.

Four uploads whose bodies had not arrived took all four `--max-uploads` slots (a slot was taken
before the body was read), and nothing timed them out: every other upload got a 503 for as
long as they cared to trickle. Now an upload takes its slot once its body is in, and a body
must arrive whole within `--body-timeout`. The trickles here are driven by events: each tells
when the app is waiting for the rest of its body, and sends it when told to.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx
import pytest

from tests.capture.fake import serving
from tests.web.webkit import CONTINUATION, FILE_PART, MULTIPART, post_scope
from webapp.settings import Settings
from webapp.web.app import create_app

Message = dict[str, Any]


def _bodies(kind: str) -> tuple[str, bytes]:
    """(content type, a whole upload of CONTINUATION) for each way a stream is sent."""
    if kind == "json":
        return "application/json", json.dumps({"text": CONTINUATION}).encode()
    if kind == "multipart":
        end = b"\r\n--xyz--\r\n"
        return MULTIPART, FILE_PART + CONTINUATION.encode() + end
    return "application/x-www-form-urlencoded", urlencode({"text": CONTINUATION}).encode()


PATHS = {"json": "/api/streams", "multipart": "/api/streams", "form": "/streams"}
STORED = {"json": 201, "multipart": 201, "form": 303}


@dataclass
class Upload:
    """One request straight to the ASGI app; a trickle stops after `head` until `go`."""

    path: str
    content_type: str
    body: bytes
    trickle: bool = False
    waiting: anyio.Event = field(default_factory=anyio.Event)
    """Set when the app asks for the part of the body that has not come yet."""
    go: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    status: int = 0
    answer: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    _pulls: int = 0

    async def receive(self) -> Message:
        self._pulls += 1
        if self._pulls == 1:
            head = self.body[: len(self.body) // 2] if self.trickle else self.body
            return {"type": "http.request", "body": head, "more_body": self.trickle}
        if self._pulls == 2 and self.trickle:
            self.waiting.set()
            await self.go.wait()
            return {"type": "http.request", "body": self.body[len(self.body) // 2 :]}
        await self.done.wait()  # a client that stays until it has its answer
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            self.answer += message.get("body", b"")
            if not message.get("more_body"):
                self.done.set()

    async def run(self, app: Any) -> None:
        headers = [(b"content-type", self.content_type.encode())]
        headers.append((b"content-length", str(len(self.body)).encode()))
        await app(post_scope(self.path, headers), self.receive, self.send)


def _run(main: Callable[[], Awaitable[None]]) -> None:
    """Run in a thread of its own: Playwright's sync API may hold an event loop in this one."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            anyio.run(main)
        except BaseException as error:  # re-raised in the test's thread
            failure.append(error)

    runner = threading.Thread(target=target)
    runner.start()
    runner.join()
    if failure:
        raise failure[0]


@pytest.mark.parametrize("kind", list(PATHS))
def test_four_slow_uploads_leave_the_slots_to_uploads_that_are_in(db_url: str, kind: str) -> None:
    app = create_app(Settings(db=db_url, max_uploads=4, body_timeout=600))
    content_type, body = _bodies(kind)
    slow = [Upload(PATHS[kind], content_type, body, trickle=True) for _ in range(4)]
    whole = Upload(PATHS[kind], content_type, body)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for upload in slow:
                group.start_soon(upload.run, app)
            for upload in slow:
                await upload.waiting.wait()  # all four are mid-body, as in the report
            await whole.run(app)
            assert whole.status == STORED[kind], whole.answer[:300]  # was a 503
            for upload in slow:
                upload.go.set()

    _run(main)
    assert [upload.status for upload in slow] == [STORED[kind]] * 4  # and they are stored too


ROUTES = [
    ("/api/streams", "json"),
    ("/api/streams", "multipart"),
    ("/streams", "form"),
    ("/api/play", "form"),
    ("/api/streams/{id}/notes", "json"),
    ("/s/{id}/notes", "form"),
    ("/diff/paste", "form"),
]


@pytest.mark.parametrize(("path", "kind"), ROUTES)
def test_a_body_that_trickles_past_the_timeout_gets_a_408(
    db_url: str, path: str, kind: str
) -> None:
    app = create_app(Settings(db=db_url, body_timeout=0.05))
    content_type, body = _bodies(kind)
    stalled = Upload(path, content_type, body, trickle=True)  # told to go on: never

    async def main() -> None:
        stored = Upload("/api/streams", *_bodies("json"))
        await stored.run(app)
        stalled.path = path.format(id=json.loads(stored.answer)["id"])
        await stalled.run(app)

    _run(main)
    assert stalled.status == 408, stalled.answer[:300]
    assert stalled.headers["connection"] == "close"
    assert b"--body-timeout" in stalled.answer and b"0.05 seconds" in stalled.answer
    if path.startswith("/api/"):
        assert stalled.headers["content-type"].startswith("application/json")
        assert "--body-timeout" in json.loads(stalled.answer)["detail"]


def test_a_real_server_answers_others_while_a_socket_trickles_then_cuts_it(
    db_url: str,
) -> None:
    app = create_app(Settings(db=db_url, max_uploads=1, body_timeout=1.0))
    with serving(app) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            head = (
                "POST /api/streams HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            )
            slow.sendall(head.encode() + b'{"text": "data: ')
            # The one slot is free for a whole upload while the socket's body is still out.
            posted = httpx.post(f"{base}/api/streams", json={"text": CONTINUATION}, timeout=30)
            assert posted.status_code == 201, posted.text
            answer = b""
            while b"\r\n\r\n" not in answer:
                piece = slow.recv(65536)  # the server's answer once the timeout passes
                if not piece:
                    break
                answer += piece
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"connection: close" in answer.lower()
