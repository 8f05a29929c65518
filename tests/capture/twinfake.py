"""A loopback fake provider that answers both ways: a request asking for a stream gets the
`Fake`'s script, any other gets one JSON answer (a `chat.completion`, or an error) — what a
non-stream twin (`serve --twin`) is sent to."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from tests.capture.fake import Fake, Seen, read_body


@dataclass
class TwinFake:
    """The stream's fake, and the answer to a request that does not ask for a stream."""

    stream: Fake
    answer: bytes = b"{}"
    status: int = 200
    hold: threading.Event | None = None
    """Answer the non-stream request only once this is set."""
    answered: list[Seen] = field(default_factory=list)
    """The non-stream requests, in order."""
    done: threading.Event = field(default_factory=threading.Event)
    """Set once a non-stream answer has been sent."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.stream(scope, receive, send)
            return
        body = await read_body(receive)
        if _asks_for_a_stream(body):
            given = False

            async def again() -> Message:
                nonlocal given
                if not given:
                    given = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.stream(scope, again, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.answered.append(Seen(scope["method"], scope["path"], scope["query_string"],
                                  headers, body))  # fmt: skip
        while self.hold is not None and not self.hold.is_set():
            await asyncio.sleep(0.005)
        start = {"type": "http.response.start", "status": self.status,
                 "headers": [(b"content-type", b"application/json")]}  # fmt: skip
        await send(start)
        await send({"type": "http.response.body", "body": self.answer, "more_body": False})
        self.done.set()


def _asks_for_a_stream(body: bytes) -> bool:
    try:
        value: Any = json.loads(body)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("stream") is True
