"""The web tests' fixture types, htmx headers and sample stream (built with tests.streamkit)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from tests.streamkit import chunk, frag, sse

Store = Callable[..., str]
"""The `store` fixture: a stream's text in, its id out."""


CONTINUATION = sse(
    chunk(frag(0, "call_1", "get_weather")),
    chunk(frag(args='{"city":')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
)
"""A header, then two bare continuation fragments: 1 block under adr-0019, 3 under exact-key."""

HX = {"HX-Request": "true", "HX-Request-Type": "partial"}
"""What htmx 4 sends with a swap request."""


FILE_PART = (
    b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="s.sse"\r\n'
    b"Content-Type: text/plain\r\n\r\n"
)
"""The head of a multipart upload's file part (boundary `xyz`), before the file's bytes."""
MULTIPART = "multipart/form-data; boundary=xyz"


@dataclass(frozen=True)
class Chunked:
    """What a chunked upload got: the status, how many chunks the app read, the body."""

    status: int
    pulled: int
    body: bytes


def post_scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """The ASGI scope of a POST to `path` on the test server (its `host` header added)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


def post_chunked(
    app: Any, path: str, content_type: str, head: bytes, *, chunks: int = 1000, size: int = 8192
) -> Chunked:
    """POST `head` and then filler, in `chunks` chunks of `size` bytes with no Content-Length,
    straight to the ASGI app (no client could send it so)."""
    pulled = 0
    status: list[int] = []
    body: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        data = (head + b"a" * (size - len(head))) if pulled == 1 else b"a" * size
        return {"type": "http.request", "body": data, "more_body": pulled < chunks}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    scope = post_scope(path, [(b"content-type", content_type.encode())])

    async def main() -> None:
        await app(scope, receive, send)

    # A thread of its own: Playwright's sync API may hold an event loop in this one.
    runner = threading.Thread(target=anyio.run, args=(main,))
    runner.start()
    runner.join()
    return Chunked(status[0], pulled, b"".join(body))
