"""A client that goes away in the middle of an upload costs one log line, not tracebacks."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi import FastAPI
from starlette.types import Message

from tests.web.webkit import post_scope

BOUNDARY = "xyzzy"
PART = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="s.sse"\r\n'
    "Content-Type: text/event-stream\r\n\r\ndata: {}\n\n"
).encode()


def upload_then_leave(app: FastAPI, path: str) -> list[Message]:
    """Send the start of a multipart upload, then a disconnect; return what the app sent."""
    incoming: list[Message] = [
        {"type": "http.request", "body": PART, "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = post_scope(
        path,
        [
            (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode()),
            (b"content-length", b"100000"),
        ],
    )
    scope["app"] = app
    # A thread of its own: after the browser tests, Playwright's loop runs in this one.
    with ThreadPoolExecutor(1) as pool:
        # .result() raises if the app lets the disconnect escape
        pool.submit(asyncio.run, app(scope, receive, send)).result()
    return sent


@pytest.mark.parametrize("path", ["/streams", "/api/streams"])
def test_an_aborted_upload_logs_one_line(
    app: FastAPI, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    caplog.set_level(logging.DEBUG)
    upload_then_leave(app, path)
    noted = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(noted) == 1, [r.getMessage() for r in noted]
    assert noted[0].exc_info is None
    assert "went away" in noted[0].getMessage() and path in noted[0].getMessage()
