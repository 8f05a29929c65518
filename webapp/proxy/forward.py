"""The recording proxy: a request under `/proxy/NAME/` forwarded to upstream NAME and back.

How one exchange goes: the request's body is streamed to the upstream as it arrives (a copy of
at most `Limits.request_bytes` kept, to read the model and tools from); the response's status
and headers come back with `streamviz-stream-id` added; then its bytes are read by one task,
timed (ms since the request was sent) and put on a queue, which another task sends to the
client (the pieces already waiting in one message: fewer trips through the server's layers,
and no wait for a piece not yet read). At most `Limits.queue_chunks` pieces are read and not
yet sent: a slow client holds them, the reader waits, and TCP slows the upstream: nothing is
buffered without bound. An event stream (or a JSON chat completion) is also handed to a
`Recorder`, piece by piece with each piece's own time, in batches (`Batcher`: at most
`batch_bytes`, at most `batch_ms` old, one write at a time in a thread).

A third task waits for the client to go away: then the exchange is cancelled, the upstream's
connection closed, and the stream kept as "cut by the client". An upstream that breaks off
mid-stream is kept as "cut by the upstream", and the client's connection is closed unfinished,
as the upstream's was, so its SDK sees the same failure. Hop-by-hop headers (RFC 9110 7.6.1:
Connection and the headers it names, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade,
Proxy-*) are dropped both ways; Host is the upstream's. `Accept-Encoding` is sent as
`identity`, so that the bytes kept are the bytes the client got, readable (mitmproxy's
"anticomp" does the same). Credentials go to the upstream and nowhere else: no header is kept
or logged, the query string is neither stored nor logged (`hide_queries_in_logs`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx
import orjson
from starlette.types import Message, Receive, Scope, Send

from webapp.core.words import title_from
from webapp.proxy.coding import Inflater, inflater_for
from webapp.proxy.pool import UpstreamTransport
from webapp.proxy.target import OutsideBase, forwarded_path
from webapp.storage.capture import Facts, Part
from webapp.storage.store import ENDINGS

log = logging.getLogger(__name__)
MB = 1024 * 1024
T = TypeVar("T")

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
    }
)
"""Headers of one connection, never forwarded (Host is the upstream's own)."""
REPLACED = frozenset({"accept-encoding"})
"""Request headers the proxy sets itself."""
SERVER_OWN = frozenset({"date", "server"})
"""Response headers the proxy's server writes itself (two Date headers would be invalid)."""
STREAM_ID = "streamviz-stream-id"


@dataclass(frozen=True, slots=True)
class Limits:
    """Every bound of the proxy (`streamviz serve` and `record` set them from options)."""

    connect_timeout: float = 10.0
    """Seconds to connect to the upstream (then 504)."""
    read_timeout: float = 600.0
    """Seconds the upstream may stay silent: before its headers (then 504) or between two
    pieces of its body (then the stream is cut by the upstream)."""
    queue_chunks: int = 16
    """Pieces (network reads, 64 KiB at most) read and not yet sent to a slow client before the
    upstream is no longer read."""
    batch_bytes: int = 64 * 1024
    """A batch of a recorded stream is written once it holds this many bytes..."""
    batch_ms: float = 100.0
    """... or once its first piece is this old."""
    drain_s: float = 1.0
    """How long the upstream is read on after a client left having been sent every piece, to
    see whether its body ends there (then the capture is complete): openai-python closes its
    connection as soon as it reads `[DONE]`, often before the upstream's end of body has
    reached the proxy."""
    request_bytes: int = 8 * MB
    """How much of a request body is kept to read its facts (and kept with --keep-requests)."""
    stored_bytes: int = 64 * MB
    """How much of a response is recorded; the rest is forwarded, not kept."""
    keep_requests: bool = False
    """Whether request bodies (prompts) are stored with the stream."""
    writers: int = 2
    """Threads that write recorded streams (SQLite takes one writer at a time; each thread
    keeps a connection, so their number bounds the connections and their caches)."""
    idle_s: float = 2.0
    """Seconds an idle upstream connection is kept for the next request: well under the 5 s
    after which uvicorn (vLLM's server, say) and Node close an idle one, so that the proxy
    does not send a request on a connection the upstream is closing (httpx's default is those
    same 5 s: now and then a request met the close, and its client got a 502)."""
    idle_connections: int = 1_000_000
    """Idle upstream connections kept at most: no bound but their `idle_s`. httpcore 1.0.9
    closes idle ones whenever the pool holds more connections than this, busy ones counted
    (`len` of a list of all of them): with httpx's 20, at every pass once 21 streams ran at
    once (`webapp.proxy.pool` keeps it from closing one promised to a request)."""


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def parse_upstreams(values: Sequence[str]) -> dict[str, str]:
    """`NAME=URL` (or a bare URL, named `default`) each, as a dict; ValueError says what is
    wrong with one (a URL with a query or credentials in it is refused: they would be kept in
    the settings and the process's environment)."""
    found: dict[str, str] = {}
    for value in values:
        name, equals, url = value.partition("=")
        if not equals or "://" in name:
            name, url = "default", value
        name, url = name.strip(), url.strip()
        if not _NAME.fullmatch(name):
            raise ValueError(f"{name[:60]!r}: an upstream's name is letters, digits, _ . -")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream {name}: give an http:// or https:// URL, not {url[:80]!r}")
        if parts.query or parts.fragment or "@" in parts.netloc:
            raise ValueError(
                f"upstream {name}: the URL must not carry a query, a fragment or credentials "
                "(the client's own go through)"
            )
        if name in found:
            raise ValueError(f"upstream {name} is given twice")
        found[name] = url.rstrip("/")
    return found


class Sink(Protocol):
    """Where one recorded stream goes (the store, or files): called from a worker thread."""

    stream_id: str

    def write(self, seq: int, part: Part) -> None:
        """Keep the next batch of bytes (`seq` counts from 0)."""
        ...

    def end(self, state: str, detail: str) -> None:
        """The stream ended: `state` is one of `ENDINGS`' values."""
        ...


class Recorder(Protocol):
    """Opens a sink for each stream worth recording: called from a worker thread."""

    def open(self, facts: Facts, title: str, format: str) -> Sink:
        """A new recorded stream (`format` is "sse" or "json"); a kept request is as sent, and
        is kept as `facts.masked()` has it."""
        ...


class TwinSender(Protocol):
    """Sends a captured stream's non-stream twin once the stream has ended (`twin.Twins`)."""

    def start(
        self,
        client: httpx.AsyncClient,
        stream_id: str,
        facts: Facts,
        url: str,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes | None,
    ) -> bool:
        """Send it in the background; False when the request gets no twin."""
        ...

    async def aclose(self) -> None:
        """Stop the twins still being sent."""
        ...


class ClientGone(Exception):
    """The client went away before its request was sent whole."""


def end_to_end(
    headers: Sequence[tuple[bytes, bytes]], drop: frozenset[str] = frozenset()
) -> list[tuple[bytes, bytes]]:
    """The headers without hop-by-hop ones (those Connection names too) and without `drop`."""
    named = {
        token.strip().decode("latin-1").lower()
        for key, value in headers
        if key.lower() == b"connection"
        for token in value.split(b",")
    }
    dropped = HOP_BY_HOP | named | drop
    return [
        (key, value)
        for key, value in headers
        if (lowered := key.decode("latin-1").lower()) not in dropped
        and not lowered.startswith("proxy-")
    ]


def request_facts(body: bytes | None) -> tuple[str, bool | None, tuple[str, ...]]:
    """(model, stream flag, declared tool names) of a chat request body; blanks when it is not
    JSON or not an object."""
    try:
        value = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return "", None, ()
    if not isinstance(value, dict):
        return "", None, ()
    model = value.get("model")
    flag = value.get("stream")
    names: list[str] = []
    for key in ("tools", "functions"):
        declared = value.get(key)
        for tool in declared if isinstance(declared, list) else ():
            if not isinstance(tool, dict):
                continue
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str) and name:
                names.append(name)
    return (
        model if isinstance(model, str) else "",
        flag if isinstance(flag, bool) else None,
        tuple(names),
    )


def title_of(facts: Facts) -> str:
    """ "gpt-4o: get_weather, book_flight"; the method and path when there is no model."""
    return title_from(facts.model or f"{facts.method} {facts.path}", facts.tools, "captured stream")


def capture_format(method: str, path: str, content_type: str) -> Literal["sse", "json"] | None:
    """ "sse" for an event stream, "json" for a JSON answer to a chat completion, else None."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "text/event-stream":
        return "sse"
    if kind == "application/json" and method == "POST" and path.endswith("/chat/completions"):
        return "json"
    return None


def error_body(message: str, code: str, kind: str = "proxy_error") -> bytes:
    """An OpenAI-shaped error: `{"error": {"message", "type", "code"}}`."""
    return orjson.dumps({"error": {"message": message, "type": kind, "code": code}})


async def answer(
    send: Send, status: int, message: str, code: str, close: bool = False, kind: str = "proxy_error"
) -> None:
    """A whole JSON error response (`close`: the connection is closed after it)."""
    body = error_body(message, code, kind)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def lifespan(
    receive: Receive, send: Send, shutdown: Callable[[], Awaitable[None]] | None = None
) -> None:
    """The ASGI lifespan of an app of the wing served alone (`record`, `replay`): started at
    once; `shutdown` awaited before it says it has stopped."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if shutdown is not None:
                await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request answered by the proxy itself, not forwarded."""

    status: int
    message: str
    code: str
    close: bool = False
    """The connection is closed after the answer."""


TWO_FRAMINGS = (
    "this request has both Content-Length and Transfer-Encoding, which may disagree on where "
    "its body ends (RFC 9112 6.3: a request smuggling risk); nothing was forwarded"
)


def framed_twice(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """Whether a request says its length both ways (Content-Length and Transfer-Encoding)."""
    names = {key.lower() for key, _ in headers}
    return b"content-length" in names and b"transfer-encoding" in names


def in_words(error: httpx.HTTPError) -> str:
    """An httpx error in words, without the URL (its query may hold a key)."""
    words = {
        httpx.ConnectTimeout: "no connection",
        httpx.ReadTimeout: "no answer",
        httpx.WriteTimeout: "the request could not be sent",
        httpx.PoolTimeout: "no free connection",
        httpx.ConnectError: "the connection failed",
        httpx.RemoteProtocolError: "the upstream broke off the exchange",
        httpx.ReadError: "reading from the upstream failed",
        httpx.WriteError: "sending to the upstream failed",
    }
    for kind, text in words.items():
        if isinstance(error, kind):
            return f"{text} ({type(error).__name__})"
    return type(error).__name__


class _Connects:
    """Whether a request made a new connection (httpcore's `trace` extension): if not, it was
    sent on a kept one."""

    def __init__(self) -> None:
        self.new = False

    async def trace(self, event: str, info: dict[str, Any]) -> None:
        if event.startswith("connection.connect_tcp"):
            self.new = True


def _closed_while_idle(error: httpx.HTTPError) -> bool:
    """Whether the error is a kept connection's that the upstream had closed: the request met
    a reset or a broken pipe, or the connection ended before any byte of a response."""
    root = _root_cause(error)
    if isinstance(root, ConnectionResetError | BrokenPipeError):
        return True
    return isinstance(error, httpx.RemoteProtocolError) and "without sending" in str(error)


def _root_cause(error: BaseException) -> BaseException:
    """The exception at the bottom of `error`'s chain (an OSError under httpx's, say)."""
    while (below := error.__cause__ or error.__context__) is not None:
        error = below
    return error


async def to_the_end(future: asyncio.Future[T]) -> T:
    """The future's result, awaited to its end even when the caller is cancelled meanwhile
    (then cancelled once it has ended). Work in a thread cannot be stopped: a write left
    running unawaited would race whatever its caller does next (the batch after it, the
    stream's end), and the store refuses a write that comes after the end."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return future.result()


class Batcher:
    """A recorded stream's pieces, written to its sink in batches from a worker thread, one
    write at a time and in order, the stream's end after the last (`to_the_end`)."""

    def __init__(
        self, sink: Sink, limits: Limits, writers: Executor, coding: Inflater | str | None = None
    ) -> None:
        self.sink = sink
        self.writers = writers
        self.limits = limits
        self.coding = coding
        """The body's content coding: undone before storing (an `Inflater`), or, in words,
        one that is not (`webapp.proxy.coding.inflater_for`)."""
        self._data: list[bytes] = []
        self._ends: list[int] = []
        self._ms: list[float] = []
        self._pending = 0
        self.total = 0
        self._seq = 0
        self._lock = asyncio.Lock()
        self._begun = asyncio.Event()
        self._ticker = asyncio.ensure_future(self._tick())
        self.failed = False
        self.truncated = False

    async def add(self, piece: bytes, ms: float) -> None:
        """One more piece (written now if the batch is full, else within `batch_ms`)."""
        if self.failed or self.truncated:
            return
        if isinstance(self.coding, Inflater):
            piece = self.coding.feed(piece, self.limits.stored_bytes - self.total)
            if not piece:
                return
        if self.total + len(piece) > self.limits.stored_bytes:
            self.truncated = True
            return
        self.total += len(piece)
        self._data.append(piece)
        self._ends.append(self.total)
        self._ms.append(ms)
        self._pending += len(piece)
        self._begun.set()
        if self._pending >= self.limits.batch_bytes:
            await self.flush()

    async def _tick(self) -> None:
        while True:
            await self._begun.wait()
            await asyncio.sleep(self.limits.batch_ms / 1000)
            await self.flush()

    async def flush(self) -> None:
        """Write what is waiting (one write at a time, in order)."""
        async with self._lock:
            self._begun.clear()
            if not self._data or self.failed:
                return
            part = Part(b"".join(self._data), tuple(self._ends), tuple(self._ms))
            self._data, self._ends, self._ms, self._pending = [], [], [], 0
            seq, self._seq = self._seq, self._seq + 1
            try:
                await self._in_thread(self.sink.write, seq, part)
            except Exception as error:  # the stream deleted meanwhile, the store gone
                self.failed = True
                log.warning("stream %s: no longer recorded (%s)", self.sink.stream_id, error)

    async def _in_thread(self, work: Callable[..., object], *args: object) -> None:
        await to_the_end(asyncio.get_running_loop().run_in_executor(self.writers, work, *args))

    async def close(self, state: str, detail: str) -> None:
        """Write the rest and end the stream (shielded: a cancelled exchange still ends it)."""
        with anyio.CancelScope(shield=True):
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
            await self.flush()
            if self.coding is not None:
                said = self.coding if isinstance(self.coding, str) else self.coding.finish()
                detail = f"{detail}; {said}" if detail else said
            if self.truncated:  # the stored bytes stop before the stream's end, however it ended
                more = f"{state}; stored the first {self.total:,} bytes (--max-bytes)"
                state, detail = ENDINGS["truncated"], f"{more}; {detail}" if detail else more
            try:
                await self._in_thread(self.sink.end, state, detail)
            except Exception as error:
                log.warning("stream %s: its end was not recorded (%s)", self.sink.stream_id, error)


_DONE = object()
_GONE = object()
"""Put on an exchange's queue when its client left having been sent every piece read."""


@dataclass(frozen=True, slots=True)
class _Cut:
    detail: str


@dataclass(slots=True)
class Exchange:
    """One request through the proxy, as it goes."""

    upstream: str
    method: str
    path: str
    """The path under the upstream's URL, without the query."""
    started: float = 0.0
    """`time.perf_counter()` when the request was sent."""
    sent: str = ""
    """The wall clock then (ISO, to the microsecond): what links the two hops of a gateway."""
    kept: bytearray = field(default_factory=bytearray)
    overflow: bool = False
    body_done: asyncio.Event = field(default_factory=asyncio.Event)
    responded: bool = False
    """The last byte of the response has been handed to the server."""
    stream_id: str = ""
    cut_by: str = "client"
    """Who cut the exchange if it is cancelled: "client" or "server"."""
    queue: asyncio.Queue[Any] | None = None
    """What the pump sends the client next: pieces read, then how the body ended."""
    unsent: int = 0
    """Pieces read from the upstream and not yet handed to the server for the client."""
    url: str = ""
    """Where the request went (its query included: it may hold a key, and is never kept)."""
    headers: Sequence[tuple[bytes, bytes]] = ()
    """The headers it was sent with (never kept: a non-stream twin is sent with them)."""
    facts: Facts | None = None
    """The facts its recorded stream was opened with."""

    def left_after_all(self) -> bool:
        """The client has gone: True when it was sent every piece read so far (the pump then
        finishes, or reads on a little to see whether the body ends there: `Limits.drain_s`), False
        when the exchange is to be cut now."""
        if self.queue is None or self.unsent:
            return False
        with suppress(asyncio.QueueFull):  # full of no piece: the body's end is on it
            self.queue.put_nowait(_GONE)
        return True

    def since(self) -> float:
        """Milliseconds since the request was sent."""
        return (time.perf_counter() - self.started) * 1000


class Forwarder:
    """The upstreams by name, one pooled async client, and where recorded streams go."""

    def __init__(
        self,
        upstreams: Mapping[str, str],
        recorder: Recorder | None,
        limits: Limits,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.upstreams = {name: url.rstrip("/") for name, url in upstreams.items()}
        self.recorder = recorder
        self.limits = limits
        timeout = httpx.Timeout(limits.read_timeout, connect=limits.connect_timeout)
        # trust_env=False: no proxy, netrc credentials or certificates from the environment.
        # No bound on connections (httpx's is 100: the 101st stream at once waited for one).
        pool = httpx.Limits(
            max_connections=None,
            max_keepalive_connections=limits.idle_connections,
            keepalive_expiry=limits.idle_s,
        )
        self.client = httpx.AsyncClient(
            timeout=timeout,
            trust_env=False,
            follow_redirects=False,
            transport=transport or UpstreamTransport(pool),
        )
        self.writers = ThreadPoolExecutor(limits.writers, thread_name_prefix="streamviz-capture")
        self.twins: TwinSender | None = None
        """Sends each captured stream's non-stream twin (`serve --twin`); None: no twin."""

    async def aclose(self) -> None:
        """Close the upstream connections; let the writes in progress finish."""
        if self.twins is not None:
            await self.twins.aclose()
        await self.client.aclose()
        self.writers.shutdown(wait=True)

    async def handle(
        self, name: str, rest: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Forward one request to upstream `name` (`rest`: the path under it, percent-encoded);
        one framed two ways, or whose path would leave the upstream's base path
        (`webapp.proxy.target`), is answered 400 and nothing is forwarded."""
        target = self._target(name, rest.split("?", 1)[0], scope["headers"])
        if isinstance(target, Refusal):
            await answer(send, target.status, target.message, target.code, target.close)
            return
        base, path = target
        method = str(scope["method"])
        exchange = Exchange(name, method, path or "/")
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        url = base + path + (f"?{query}" if query else "")
        headers = [*end_to_end(scope["headers"], REPLACED), (b"accept-encoding", b"identity")]
        exchange.url, exchange.headers = url, headers
        content = self._body(scope, receive, exchange)
        try:
            request = self.client.build_request(method, url, headers=headers, content=content)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError, TypeError):
            message = "this request cannot be forwarded (its URL or headers are not valid)"
            await answer(send, 400, message, "bad_request")
            return
        main = asyncio.ensure_future(self._exchange(exchange, request, send))
        watcher = asyncio.ensure_future(self._watch(receive, exchange))
        try:
            await asyncio.wait({main, watcher}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            exchange.cut_by = "server"
            main.cancel()
            raise
        finally:
            watcher.cancel()
        if not main.done() and not exchange.responded and not exchange.left_after_all():
            main.cancel()  # the client went away before it was sent what was read
        try:
            await main
        except asyncio.CancelledError:
            if exchange.cut_by == "server":
                raise

    def _target(
        self, name: str, rest: str, headers: Sequence[tuple[bytes, bytes]]
    ) -> tuple[str, str] | Refusal:
        """(the upstream's URL, the path to forward under it), or why the request is refused."""
        if framed_twice(headers):
            return Refusal(400, TWO_FRAMINGS, "ambiguous_framing", close=True)
        base = self.upstreams.get(name)
        if base is None:
            known = ", ".join(sorted(self.upstreams))
            message = f"no upstream named {name[:60]!r} (this server has: {known})"
            return Refusal(404, message, "upstream_not_found")
        try:
            return base, forwarded_path(rest)
        except OutsideBase:
            message = (
                f"the path {rest[:200]!r} leaves /proxy/{name}/: its `..` would climb above the "
                "upstream's base path; nothing was forwarded"
            )
            return Refusal(400, message, "path_outside_upstream")

    def _body(
        self, scope: Scope, receive: Receive, exchange: Exchange
    ) -> AsyncIterator[bytes] | None:
        """The request body as it arrives (None when there is none), a bounded copy kept."""
        headers = {key.lower(): value for key, value in scope["headers"]}
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        length = headers.get(b"content-length", b"0").strip()
        if not chunked and length in (b"", b"0"):
            exchange.body_done.set()
            return None

        async def body() -> AsyncIterator[bytes]:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone()
                chunk = bytes(message.get("body", b""))
                if not exchange.overflow:
                    if len(exchange.kept) + len(chunk) > self.limits.request_bytes:
                        exchange.overflow = True
                        exchange.kept.clear()
                    else:
                        exchange.kept += chunk
                if not message.get("more_body", False):
                    exchange.body_done.set()
                if chunk:
                    yield chunk
                if exchange.body_done.is_set():
                    return

        return body()

    async def _watch(self, receive: Receive, exchange: Exchange) -> None:
        """Return when the client has gone away (once its request is read whole)."""
        await exchange.body_done.wait()
        while True:
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                return

    async def _exchange(self, exchange: Exchange, request: httpx.Request, send: Send) -> None:
        exchange.started = time.perf_counter()
        exchange.sent = datetime.now(UTC).isoformat(timespec="microseconds")
        try:
            response = await self._sent(exchange, request)
        except ClientGone:
            return
        except httpx.TimeoutException as error:
            message = f"upstream {exchange.upstream!r} timed out: {in_words(error)}"
            await answer(send, 504, message, "upstream_timeout")
            return
        except httpx.HTTPError as error:
            if isinstance(error.__cause__, ClientGone) or isinstance(error.__context__, ClientGone):
                return
            message = f"upstream {exchange.upstream!r} could not be reached: {in_words(error)}"
            root = _root_cause(error)
            log.warning("%s (%s: %s)", message, type(root).__name__, root)  # no URL: no key
            await answer(send, 502, message, "upstream_unreachable")
            return
        try:
            await self._respond(exchange, response, send)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    async def _sent(self, exchange: Exchange, request: httpx.Request) -> httpx.Response:
        """The upstream's response to `request`; sent once more, on a new connection, when a
        kept one turned out to be closed by the upstream before anything of the response came
        (`_closed_while_idle`): an upstream closes an idle connection some seconds after it
        wrote a response (uvicorn and Node after 5 s), which may be before the proxy, reading
        that response slowly out of the sockets' buffers for a slow client, has given the
        connection back. Only a request whose body was read whole and kept is sent again."""
        connected = _Connects()
        request.extensions["trace"] = connected.trace
        try:
            return await self.client.send(request, stream=True)
        except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as error:
            whole = exchange.body_done.is_set() and not exchange.overflow
            if connected.new or not whole or not _closed_while_idle(error):
                raise
            root = _root_cause(error)
            log.warning("upstream %r had closed a kept connection (%s): the request was sent "
                        "again on a new one", exchange.upstream, type(root).__name__)  # fmt: skip
        again = self.client.build_request(
            exchange.method, exchange.url, headers=exchange.headers, content=bytes(exchange.kept)
        )
        return await self.client.send(again, stream=True)

    async def _respond(self, exchange: Exchange, response: httpx.Response, send: Send) -> None:
        headers_ms = exchange.since()
        content_type = response.headers.get("content-type", "")
        batcher = None
        format = capture_format(exchange.method, exchange.path, content_type)
        if format is not None and self.recorder is not None:
            batcher = await self._open(exchange, response, format, headers_ms)
        out = end_to_end(response.headers.raw, SERVER_OWN)
        if batcher is not None:
            out.append((STREAM_ID.encode(), batcher.sink.stream_id.encode()))
        start = {"type": "http.response.start", "status": response.status_code, "headers": out}
        ending, detail = "client", ""
        try:
            await send(start)
            ending, detail = await self._pump(exchange, response, send, batcher)
        except asyncio.CancelledError:
            ending = exchange.cut_by
            raise
        finally:
            if batcher is not None:
                await batcher.close(ENDINGS[ending], detail)
                stream_id, upstream = batcher.sink.stream_id, exchange.upstream
                log.info("stream %s from upstream %s: %s", stream_id, upstream, ENDINGS[ending])
                if self.twins is not None and format == "sse" and exchange.facts is not None:
                    body = None if exchange.overflow else bytes(exchange.kept)
                    self.twins.start(self.client, stream_id, exchange.facts, exchange.url,
                                     exchange.headers, body)  # fmt: skip

    async def _open(
        self, exchange: Exchange, response: httpx.Response, format: str, headers_ms: float
    ) -> Batcher | None:
        """A batcher for a new recorded stream, or None when the recorder fails (the client's
        exchange goes on unrecorded)."""
        assert self.recorder is not None
        body = None if exchange.overflow else bytes(exchange.kept)
        model, streamed, tools = request_facts(body)
        facts = Facts(
            upstream=exchange.upstream,
            method=exchange.method,
            path=exchange.path,
            status=response.status_code,
            content_type=response.headers.get("content-type", "")[:200],
            model=model[:200],
            streamed=streamed,
            tools=tools,
            request=body if self.limits.keep_requests else None,
            headers_ms=headers_ms,
            sent=exchange.sent,
        )
        exchange.facts = facts
        loop = asyncio.get_running_loop()
        opened = loop.run_in_executor(
            self.writers, self.recorder.open, facts, title_of(facts), format
        )
        try:
            sink = await to_the_end(opened)
        except asyncio.CancelledError:  # opened all the same: it must not stay live
            if not opened.cancelled() and opened.exception() is None:
                self.writers.submit(opened.result().end, ENDINGS[exchange.cut_by], "")
            raise
        except Exception as error:
            log.warning("a stream from upstream %s was not recorded (%s)", exchange.upstream, error)
            return None
        exchange.stream_id = sink.stream_id
        coding = inflater_for(response.headers.get("content-encoding", ""))
        return Batcher(sink, self.limits, self.writers, coding)

    async def _pump(
        self, exchange: Exchange, response: httpx.Response, send: Send, batcher: Batcher | None
    ) -> tuple[str, str]:
        """Upstream to client through the queue; how it ended and why. At most
        `Limits.queue_chunks` pieces are read and not yet sent (`slots`: a piece's slot is
        given back once the message that holds it is sent)."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        slots = asyncio.Semaphore(self.limits.queue_chunks)
        exchange.queue = queue

        async def read() -> None:
            try:
                async for piece in response.aiter_raw():
                    ms = exchange.since()
                    exchange.unsent += 1
                    await slots.acquire()
                    queue.put_nowait(piece)
                    if batcher is not None:
                        await batcher.add(piece, ms)
            except httpx.ReadTimeout:
                queue.put_nowait(_Cut(f"no byte for {self.limits.read_timeout:g} s"))
            except httpx.HTTPError as error:
                queue.put_nowait(_Cut(in_words(error)))
            else:
                queue.put_nowait(_DONE)

        reader = asyncio.ensure_future(read())
        after: Any = None
        try:
            while True:
                item, after = (await queue.get() if after is None else after), None
                if item is _DONE:
                    exchange.responded = True
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return "complete", ""
                if isinstance(item, _Cut):
                    exchange.responded = True  # left unfinished: the server closes the connection
                    return "upstream", item.detail
                if item is _GONE:
                    return await _drain(queue, self.limits.drain_s)
                pieces, after = _waiting(queue, item)
                body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                await send({"type": "http.response.body", "body": body, "more_body": True})
                exchange.unsent -= len(pieces)
                for _ in pieces:
                    slots.release()
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


def _waiting(queue: asyncio.Queue[Any], first: bytes) -> tuple[list[bytes], Any]:
    """`first` and the pieces already waiting behind it, to be sent in one message (never
    waiting for more: a paced stream's piece goes out as it came), and the item after them
    that is not a piece (the body's end, a cut), or None. Each piece was handed to the
    recorder on its own, with its own arrival time."""
    pieces = [first]
    while not queue.empty():
        item = queue.get_nowait()
        if not isinstance(item, bytes):
            return pieces, item
        pieces.append(item)
    return pieces, None


async def _drain(queue: asyncio.Queue[Any], seconds: float) -> tuple[str, str]:
    """How an exchange ended whose client left after every piece it was sent: complete when
    the upstream's body ends within `seconds` with nothing more, else cut by the client."""
    try:
        item = await asyncio.wait_for(queue.get(), seconds)
    except TimeoutError:
        return "client", ""
    if item is _DONE:
        return "complete", "the client closed its connection after the last piece"
    return "client", ""


class _HideQueries(logging.Filter):
    """Log records of the server's access log and of httpx with query strings removed."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_without_query(arg) for arg in record.args)
        return True


def _without_query(arg: object) -> object:
    if isinstance(arg, httpx.URL) and arg.query:
        return arg.copy_with(query=None)
    if isinstance(arg, str) and arg.startswith("/proxy/") and "?" in arg:
        return arg.split("?", 1)[0] + "?(query not logged)"
    return arg


_FILTER = _HideQueries()


def hide_queries_in_logs() -> None:
    """Keep keys in URL queries out of the access log and httpx's request log (idempotent)."""
    for name in ("uvicorn.access", "httpx"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
