"""The proxy's connections to its upstreams: httpx's transport on httpcore's pool, kept from
closing a connection it has promised to a request.

httpcore 1.0.9's pool (`AsyncConnectionPool._assign_requests_to_connections`), at each pass,
closes the idle connections that have expired and, when it holds more connections than it
keeps, idle ones; it then gives idle connections to waiting requests. A connection it gave
to a request stays idle until that request starts on it, so a later pass (another request
coming or going) may pick it to close; the close is awaited outside the pool's lock, and if
the request has started meanwhile, its socket is closed under it: the request fails with a
ReadError that says nothing, and the proxy's client gets a 502 (httpcore issue 1110; the load
bench met it in 1 to 3 of every 100 streams with 50 at once). `PromiseKeepingPool` hides the
connections promised to requests from each pass, so no pass closes or gives them again.

httpcore's HTTP/1.1 connection hands on a chunked body one chunk at a time, each through five
async generators (httpcore's and httpx's layers); an SSE stream is a chunk an event, and a read
of the socket holds hundreds. `JoinedChunks` joins the chunks that h11 already holds after each
read into one piece: the same bytes, one trip up the layers a read (a paced stream's event is
still a piece of its own: it came in a read of its own). The profile of `serve --upstream`
under 20 streams had a quarter of the proxy's samples in that climb.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import h11
import httpcore
import httpx
from h11._readers import ChunkedReader
from httpcore._async.http11 import AsyncHTTP11Connection

from webapp.proxy.chunked import Dechunker

_UNREAD = ChunkedReader().__dict__
"""A chunked body's reader in h11 that has read nothing of it yet."""
_CUT = "peer closed connection without sending complete message body (incomplete chunked read)"
"""h11's words."""


class PromiseKeepingPool(httpcore.AsyncConnectionPool):
    """httpcore's pool, whose passes leave alone the connections given to requests, its
    connections `UpstreamConnection`s."""

    def _assign_requests_to_connections(self) -> list[Any]:
        promised = {id(r.connection) for r in self._requests if r.connection is not None}
        every = self._connections
        self._connections = [c for c in every if id(c) not in promised]
        try:
            closing: list[Any] = super()._assign_requests_to_connections()
        finally:
            after = self._connections
            staying = {id(c) for c in after} | promised
            before = {id(c) for c in every}
            added = [c for c in after if id(c) not in before]
            self._connections = [c for c in every if id(c) in staying] + added
        return closing

    def create_connection(self, origin: httpcore.Origin) -> UpstreamConnection:
        return UpstreamConnection(
            origin=origin,
            ssl_context=self._ssl_context,
            keepalive_expiry=self._keepalive_expiry,
            http1=True,
            http2=False,
            retries=self._retries,
            local_address=self._local_address,
            uds=self._uds,
            network_backend=self._network_backend,
            socket_options=self._socket_options,
        )


class JoinedChunks(AsyncHTTP11Connection):
    """httpcore's HTTP/1.1 connection, its body handed on a read at a time, not a chunk at a
    time: a chunked body decoded by a `Dechunker` (h11 reads the trailer section and ends the
    response), any other joined from h11's events."""

    async def _receive_response_body(self, request: httpcore.Request) -> AsyncIterator[bytes]:
        timeouts = request.extensions.get("timeout", {})
        timeout = timeouts.get("read", None)
        h11_state = self._h11_state
        reader = getattr(h11_state, "_reader", None)
        unread = isinstance(reader, ChunkedReader) and reader.__dict__ == _UNREAD
        if unread and not h11_state.trailing_data[1]:  # (h11 has not seen the end yet)
            async for piece in self._dechunked(timeout):
                yield piece
        while True:  # the rest of a body, all of one not chunked: h11's events, joined
            event = await self._receive_event(timeout=timeout)
            if not isinstance(event, h11.Data):  # the end of the body (EndOfMessage, PAUSED)
                return
            pieces = [event.data]
            try:
                while isinstance(after := h11_state.next_event(), h11.Data):
                    pieces.append(after.data)
            except h11.RemoteProtocolError as error:  # after the chunks before it, as httpcore
                yield b"".join(pieces)
                raise httpcore.RemoteProtocolError(str(error)) from error
            yield bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces)
            if after is not h11.NEED_DATA:
                return

    async def _dechunked(self, timeout: float | None) -> AsyncIterator[bytes]:
        """A chunked body's data up to its last chunk's line, taken from h11's buffer and then
        the network; then h11 is given that line and what came after it (the trailer)."""
        h11_state = self._h11_state
        dechunker = Dechunker(self.MAX_INCOMPLETE_EVENT_SIZE)
        data, closed = h11_state.trailing_data[0], False
        h11_state._receive_buffer = type(h11_state._receive_buffer)()
        while True:
            piece = dechunker.feed(data)
            if piece:
                yield piece
            if dechunker.error:
                raise httpcore.RemoteProtocolError(dechunker.error)
            if dechunker.rest is not None:
                h11_state.receive_data(b"0\r\n" + dechunker.rest)
                if closed:
                    h11_state.receive_data(b"")
                return
            if closed:
                raise httpcore.RemoteProtocolError(_CUT)
            data = await self._network_stream.read(self.READ_NUM_BYTES, timeout=timeout)
            closed = not data


class UpstreamConnection(httpcore.AsyncHTTPConnection):
    """httpcore's connection to one origin, on HTTP/1.1 only, as a `JoinedChunks`."""

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if not self.can_handle_request(request.url.origin):
            raise RuntimeError(f"a request to {request.url.origin} on a connection to another")
        try:
            async with self._request_lock:
                if self._connection is None:
                    stream = await self._connect(request)
                    self._connection = JoinedChunks(
                        origin=self._origin, stream=stream, keepalive_expiry=self._keepalive_expiry
                    )
        except BaseException:
            self._connect_failed = True
            raise
        return await self._connection.handle_async_request(request)


class UpstreamTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (no settings from the environment) on a `PromiseKeepingPool`."""

    def __init__(self, limits: httpx.Limits) -> None:
        super().__init__(trust_env=False, limits=limits)
        self._pool = PromiseKeepingPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )
