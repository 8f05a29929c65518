"""`/replay/ID/v1/chat/completions`: a stored stream served again to the application's own client.

ASGI middleware, as the recording proxy is (`webapp.proxy.mount`): a client whose base URL is
`http://HOST:PORT/replay/ID/v1` (a HAR's or a cassette's entry N: `/replay/ID/N/v1`) gets the
stream's bytes one HTTP chunk per record (`webapp.triage.replay.pieces`), at the recorded pace
(`?speed=S` or the header `streamviz-replay-speed: S`; 0: as fast as possible), or, when its
request body is a JSON object without `"stream": true` (`false`, or left out as the API's
default), the stream's non-stream twin (409 when it has none); a request with no JSON body (a
GET, curl) gets the bytes. The body is read for `stream` only; nothing is stored. Where a
stream comes from is the `Library`'s business: the web's store (`streamviz serve`), or one file
(`streamviz replay`, which loads no module of the web). A page of another site is refused for
every method, as by the proxy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

import orjson
from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from webapp.proxy.forward import answer, lifespan
from webapp.proxy.guard import AllowedHosts, RefuseCrossSite, RefuseUnknownHosts
from webapp.triage.replay import NoTwin, Paced, parse_speed, schedule

PREFIX = "/replay/"
ENDPOINT = "chat/completions"
SPEED_HEADER = "streamviz-replay-speed"
MOST_BODY = 64 * 1024 * 1024
"""The largest request body read (for its `stream` key); a larger one is a 413."""


class Missing(LookupError):
    """No stream (or no such entry of it) to replay; the message says which."""


class Unavailable(RuntimeError):
    """The stream cannot be read now (the server is busy); the message says why."""


class Library(Protocol):
    """Where the streams replayed come from (each call may block: it runs in a thread)."""

    def paced(self, stream_id: str, entry: int | None) -> Paced:
        """The stream's pieces and their arrivals; Missing when there is none, Unavailable
        when it cannot be read now."""

    def twin(self, stream_id: str, entry: int | None) -> dict[str, Any] | NoTwin:
        """The stream's non-stream twin, or why it has none; Missing when there is none."""


class Clock(Protocol):
    """The time a replay is paced by: tests give a fake one."""

    def now(self) -> float:
        """Seconds, monotonic."""

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`."""


class RealClock:
    """The event loop's time."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def split_path(scope: Scope) -> tuple[str, int | None, str] | None:
    """(stream id, entry or None, the rest of the path), or None off the prefix."""
    path = str(scope.get("path", ""))
    if not path.startswith(PREFIX):
        return None
    stream_id, _, rest = path[len(PREFIX) :].partition("/")
    head, slash, tail = rest.partition("/")
    if head.isdigit() and slash:
        return stream_id, int(head), tail
    return stream_id, None, rest


class ReplayRoutes:
    """Answers `/replay/...` from `library`, passes the rest to `app`; `speed` is the pace
    when a request names none, `answered` is called after each replay's last byte."""

    def __init__(
        self,
        app: ASGIApp,
        library: Library,
        *,
        speed: float = 1.0,
        allow_origins: tuple[str, ...] = (),
        clock: Clock | None = None,
        answered: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.library = library
        self.speed = speed
        self.origins = RefuseCrossSite(app, allow_origins)
        self.clock: Clock = clock or RealClock()
        self.answered = answered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        where = split_path(scope) if scope["type"] == "http" else None
        if where is None:
            await self.app(scope, receive, send)
            return
        try:
            await self._replay(*where, scope, receive, send)
        finally:
            if self.answered is not None:
                self.answered()

    async def _replay(
        self, stream_id: str, entry: int | None, rest: str, scope: Scope, receive: Receive,
        send: Send,
    ) -> None:  # fmt: skip
        headers = Headers(scope=scope)
        refusal = self.origins.refusal(headers)
        if refusal is not None:
            message = f"Forbidden: {refusal}; --allow-origins lets a site use the replay"
            await _error(send, 403, message, "cross_site")
            return
        if not rest.rstrip("/").endswith(ENDPOINT):
            message = f"a replay answers only /replay/ID/v1/{ENDPOINT}, not {rest[:100]!r}"
            await _error(send, 404, message, "not_found")
            return
        try:
            asked = parse_speed(QueryParams(scope.get("query_string", b"")).get("speed"))
            if asked is None:
                asked = parse_speed(headers.get(SPEED_HEADER))
        except ValueError as error:
            await _error(send, 400, str(error), "bad_speed")
            return
        streamed = await _streamed(receive)
        if streamed is None:
            message = f"the request body is larger than {MOST_BODY // 1024 // 1024} MB"
            await _error(send, 413, message, "body_too_large")
            return
        try:
            if streamed:
                paced = await asyncio.to_thread(self.library.paced, stream_id, entry)
            else:
                found = await asyncio.to_thread(self.library.twin, stream_id, entry)
        except Missing as error:
            await _error(send, 404, str(error), "stream_not_found")
            return
        except Unavailable as error:
            await _error(send, 503, str(error), "server_busy")
            return
        if not streamed:
            await _twin(send, stream_id, found)
            return
        speed = self.speed if asked is None else asked
        await self._stream(stream_id, paced, speed, receive, send)

    async def _stream(
        self, stream_id: str, paced: Paced, speed: float, receive: Receive, send: Send
    ) -> None:
        """The pieces at their times; stops early when the client goes away."""
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            (b"streamviz-stream-id", stream_id.encode("latin-1", "replace")),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def pieces() -> None:
            start = self.clock.now()
            for due, piece in zip(schedule(paced, speed), paced.pieces, strict=True):
                wait = start + due - self.clock.now()
                if wait > 0:
                    await self.clock.sleep(wait)
                body = bytes(piece)  # a copy of one piece at a time, as ASGI sends bytes
                await send({"type": "http.response.body", "body": body, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        sending = asyncio.ensure_future(pieces())
        watching = asyncio.ensure_future(_gone(receive))
        try:
            await asyncio.wait((sending, watching), return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            if not sending.done():
                sending.cancel()
                await asyncio.wait((sending,))  # its cancellation done, not raised here
        if not sending.cancelled():
            sending.result()


async def _streamed(receive: Receive) -> bool | None:
    """Whether the request asks for a stream: a JSON object body does when its `stream` is
    true (the API's default is false: openai-python leaves it out); a request without one (a
    GET, a body that is not JSON) gets the bytes. None when the body passes `MOST_BODY`."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return True
        body += message.get("body", b"")
        if len(body) > MOST_BODY:
            return None
        if not message.get("more_body", False):
            break
    try:
        value = orjson.loads(bytes(body)) if body else None
    except orjson.JSONDecodeError:
        return True
    return not isinstance(value, dict) or value.get("stream") is True


async def _gone(receive: Receive) -> None:
    """Return when the client has gone away."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _twin(send: Send, stream_id: str, found: dict[str, Any] | NoTwin) -> None:
    """The twin as a `chat.completion`, or a 409 saying why there is none."""
    if isinstance(found, NoTwin):
        await _error(send, 409, found.message, "no_intended_reading")
        return
    body = orjson.dumps(found)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"streamviz-stream-id", stream_id.encode("latin-1", "replace")),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _error(send: Send, status: int, message: str, code: str) -> None:
    """An OpenAI-shaped error: `{"error": {"message", "type": "replay_error", "code"}}`."""
    await answer(send, status, message, code, kind="replay_error")


def replay_app(
    library: Library,
    hosts: AllowedHosts,
    *,
    speed: float = 1.0,
    answered: Callable[[], None] | None = None,
) -> ASGIApp:
    """An ASGI app of the replay alone, as `streamviz replay` serves it: `/replay/...` from
    `library`, any other path a 404, and a Host not among `hosts` a 400, as `serve` answers."""

    async def elsewhere(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
        elif scope["type"] == "http":
            said = "streamviz replay serves only /replay/ID/v1/chat/completions"
            await _error(send, 404, said, "not_found")

    routes = ReplayRoutes(elsewhere, library, speed=speed, answered=answered)
    return RefuseUnknownHosts(routes, hosts)
