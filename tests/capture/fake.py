"""A loopback fake provider: an ASGI app that serves recorded streams, piece by piece.

A test gives it the pieces to send (`script`) and, where it must not go on by itself, a gate
(`threading.Event`) before a piece: the fake waits for the test to open it. Between pieces it
may pause (`pause_s`), as a provider does between tokens; no assertion depends on how long.
It records what each request carried and what it sent, and notices when its client (the proxy)
goes away: `cancelled` is set.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from starlette.types import Message, Receive, Scope, Send

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def corpus_pieces(name: str, size: int = 0) -> list[bytes]:
    """A corpus stream split into its events (or into `size`-byte pieces)."""
    data = (CORPUS / name).read_bytes()
    if size:
        return [data[at : at + size] for at in range(0, len(data), size)]
    events = data.split(b"\n\n")
    return [event + b"\n\n" for event in events[:-1] if event] + (
        [events[-1]] if events[-1] else []
    )


async def read_body(receive: Receive) -> bytes:
    """A fake server's whole request body, its messages joined."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


@dataclass
class Seen:
    """One request as the fake received it."""

    method: str
    path: str
    query: bytes
    headers: dict[str, str]
    body: bytes
    raw_path: bytes = b""
    """The path as it came on the wire, percent-encoded (`path` is decoded)."""


@dataclass
class Fake:
    """What the fake serves next and what it saw."""

    script: list[bytes] = field(default_factory=list)
    gates: dict[int, threading.Event] = field(default_factory=dict)
    """Before sending piece N, wait until gates[N] is set (N = len(script): before the end)."""
    pause_s: float = 0.0
    lead_s: float = 0.0
    """A pause after the headers, before the first piece (a model thinking)."""
    status: int = 200
    content_type: str = "text/event-stream"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    """More response headers (a Content-Encoding, say)."""
    hold_headers: threading.Event | None = None
    """Send no status or headers until this is set (an upstream that does not answer)."""
    drop_after: int | None = None
    """Break the connection off after this many pieces (an upstream that dies mid-stream)."""
    seen: list[Seen] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)
    cancelled: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    sending: threading.Event = field(default_factory=threading.Event)
    """Set once the first piece is sent."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw = scope.get("raw_path") or scope["path"].encode()
        seen = Seen(scope["method"], scope["path"], scope["query_string"], headers, body, raw)
        self.seen.append(seen)
        gone = asyncio.Event()

        async def watch() -> None:
            message: Message = await receive()
            while message["type"] != "http.disconnect":
                message = await receive()
            gone.set()

        watcher = asyncio.ensure_future(watch())
        while self.hold_headers is not None and not self.hold_headers.is_set():
            if gone.is_set():
                self.cancelled.set()
                watcher.cancel()
                return
            await asyncio.sleep(0.005)
        await send(
            {
                "type": "http.response.start",
                "status": self.status,
                "headers": [
                    (b"content-type", self.content_type.encode()),
                    (b"x-fake", b"1"),
                    *self.headers,
                ],
            }
        )
        try:
            for number, piece in enumerate(self.script):
                if self.drop_after is not None and number == self.drop_after:
                    return  # unfinished: uvicorn closes the connection
                gate = self.gates.get(number)
                while gate is not None and not gate.is_set():
                    if gone.is_set():
                        self.cancelled.set()
                        return
                    await asyncio.sleep(0.005)
                if gone.is_set():
                    self.cancelled.set()
                    return
                if self.pause_s and number:
                    await asyncio.sleep(self.pause_s)
                elif self.lead_s and not number:
                    await asyncio.sleep(self.lead_s)
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                self.sent.append(piece)
                self.sending.set()
            gate = self.gates.get(len(self.script))  # before the end of the body
            while gate is not None and not gate.is_set():
                if gone.is_set():
                    self.cancelled.set()
                    return
                await asyncio.sleep(0.005)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self.finished.set()
        finally:
            watcher.cancel()


@contextmanager
def serving(app: object, **config: object) -> Iterator[str]:
    """A real uvicorn on a free loopback port, in a thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    options = {"log_level": "warning", "lifespan": "on", **config}
    server = uvicorn.Server(uvicorn.Config(app, **options))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
