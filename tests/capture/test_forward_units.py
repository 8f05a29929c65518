"""The proxy's parts alone: batching, back-pressure, headers, facts, upstream parsing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from webapp.proxy.forward import (
    Batcher,
    Forwarder,
    Limits,
    capture_format,
    end_to_end,
    parse_upstreams,
    request_facts,
    title_of,
)
from webapp.proxy.target import OutsideBase, forwarded_path
from webapp.storage.capture import Facts, Part
from webapp.storage.store import ENDINGS

POOL = ThreadPoolExecutor(1)


class Sink:
    stream_id = "s"

    def __init__(self) -> None:
        self.parts: list[tuple[int, Part]] = []
        self.ended: list[tuple[str, str]] = []
        self.wrote = threading.Event()

    def write(self, seq: int, part: Part) -> None:
        self.parts.append((seq, part))
        self.wrote.set()

    def end(self, state: str, detail: str) -> None:
        self.ended.append((state, detail))


def test_pieces_are_written_in_bounded_batches_not_one_by_one_nor_all_at_the_end() -> None:
    sink = Sink()

    async def run() -> None:
        batcher = Batcher(sink, Limits(batch_bytes=16 * 1024, batch_ms=60_000), POOL)
        for n in range(1000):
            await batcher.add(b"x" * 1024, float(n))
        written_before_the_end = len(sink.parts)
        await batcher.close("complete", "")
        assert written_before_the_end >= 60

    asyncio.run(run())
    sizes = [len(part.data) for _, part in sink.parts]
    assert sum(sizes) == 1000 * 1024 and 60 <= len(sizes) <= 64
    assert max(sizes) <= 16 * 1024 + 1024
    assert [seq for seq, _ in sink.parts] == list(range(len(sink.parts)))
    ends = [end for _, part in sink.parts for end in part.ends]
    assert ends == [1024 * (n + 1) for n in range(1000)]
    assert sink.ended == [("complete", "")]


def test_a_batch_is_written_when_its_first_piece_is_old_enough() -> None:
    sink = Sink()

    async def run() -> None:
        batcher = Batcher(sink, Limits(batch_bytes=1 << 20, batch_ms=5), POOL)
        await batcher.add(b"data: {}\n\n", 1.0)
        # no more pieces come: the timer writes it (waited for as an event, with a bound)
        for _ in range(2000):
            if sink.parts:
                break
            await asyncio.sleep(0.005)
        assert len(sink.parts) == 1 and not sink.ended
        await batcher.close("cut by the upstream", "x")

    asyncio.run(run())
    assert sink.ended == [("cut by the upstream", "x")]


class StoreLikeSink(Sink):
    """A sink that refuses writes once ended, as the store does (`Captures.append` of a
    capture no longer live), and whose first write waits at a gate the test opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.writing = threading.Event()
        self.order: list[str] = []

    def write(self, seq: int, part: Part) -> None:
        if seq == 0:
            self.writing.set()
            self.gate.wait(WAIT_S)
        if self.ended:
            raise LookupError("no live capture s")
        super().write(seq, part)
        self.order.append(f"write {seq}")

    def end(self, state: str, detail: str) -> None:
        self.order.append("end")
        self.gate.set()  # an end that comes while a write waits lets that write go on, too late
        super().end(state, detail)


WAIT_S = 1.0
"""How long the gated write waits for an end that, correctly, never comes before it."""


def test_closing_while_the_timer_writes_the_last_batch_loses_nothing() -> None:
    """Issue 31: the timer had taken the last batch and was writing it when the exchange
    ended; `close` cancelled the timer (the write went on in its thread, unawaited) and ended
    the stream from the other writer thread first: the store refused the late write, and the
    capture lost its last events though marked complete."""
    sink = StoreLikeSink()
    pool = ThreadPoolExecutor(2)  # as the proxy's: a write and the end can run at once

    async def run() -> None:
        batcher = Batcher(sink, Limits(batch_bytes=1 << 20, batch_ms=1), pool)
        await batcher.add(b'data: {"choices":[{"finish_reason":"stop"}]}\n\n', 1.0)
        await batcher.add(b"data: [DONE]\n\n", 2.0)
        await asyncio.to_thread(sink.writing.wait, WAIT_S)  # the timer is inside its write
        assert sink.writing.is_set()
        closing = asyncio.ensure_future(batcher.close("complete", ""))
        # An end before the write has returned would open the gate at once; without one the
        # gate opens after WAIT_S, and the write, then the end, follow.
        await asyncio.to_thread(sink.gate.wait, WAIT_S)
        sink.gate.set()
        await closing

    asyncio.run(run())
    pool.shutdown(wait=True)
    assert sink.order == ["write 0", "end"]
    assert b"".join(part.data for _, part in sink.parts).endswith(b"data: [DONE]\n\n")
    assert sink.ended == [("complete", "")]


def test_beyond_the_stored_bytes_the_rest_is_not_kept_and_says_so() -> None:
    sink = Sink()

    async def run() -> None:
        batcher = Batcher(sink, Limits(batch_bytes=10, batch_ms=60_000, stored_bytes=25), POOL)
        for _ in range(5):
            await batcher.add(b"0123456789", 0.0)
        await batcher.close("complete", "")

    asyncio.run(run())
    assert b"".join(part.data for _, part in sink.parts) == b"0123456789" * 2
    detail = "complete; stored the first 20 bytes (--max-bytes)"
    assert sink.ended == [(ENDINGS["truncated"], detail)]


def test_a_client_that_reads_nothing_stops_the_upstream_being_read() -> None:
    """Back-pressure: with the client's send stuck, the proxy takes at most `queue_chunks`
    pieces (those being sent among them) and one waiting for a slot from the upstream, however
    many it has."""
    yielded = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal yielded
        while True:
            yielded += 1
            yield b"data: {}\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=endless())  # fmt: skip

    async def run() -> int:
        limits = Limits(queue_chunks=4)
        forwarder = Forwarder(
            {"u": "http://up.invalid"}, None, limits, httpx.MockTransport(handler)
        )
        stuck = asyncio.Event()
        starts = []

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                starts.append(message)
                return
            await stuck.wait()  # a client that never reads

        async def receive() -> dict[str, object]:
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        scope = {"type": "http", "method": "GET", "headers": [], "query_string": b""}
        task = asyncio.ensure_future(forwarder.handle("u", "/v1/x", scope, receive, send))
        for _ in range(2000):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await forwarder.aclose()
        assert starts
        return yielded

    assert asyncio.run(run()) <= 4 + 1


def test_hop_by_hop_headers_and_those_connection_names_are_dropped() -> None:
    headers = [
        (b"Connection", b"close, X-Private"),
        (b"X-Private", b"1"),
        (b"Keep-Alive", b"5"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Proxy-Anything", b"x"),
        (b"Content-Type", b"text/event-stream"),
        (b"Set-Cookie", b"a=b"),
    ]
    assert end_to_end(headers) == [(b"Content-Type", b"text/event-stream"), (b"Set-Cookie", b"a=b")]


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (b'{"model": "gpt-4o", "stream": true, "tools": [{"type": "function", "function": '
         b'{"name": "a"}}, {"type": "custom", "name": "b"}, 3]}', ("gpt-4o", True, ("a", "b"))),
        (b'{"model": 1, "stream": "yes", "functions": [{"name": "f"}]}', ("", None, ("f",))),
        (b"not json", ("", None, ())),
        (b"[]", ("", None, ())),
        (None, ("", None, ())),
    ],
)  # fmt: skip
def test_the_request_facts(body: bytes | None, facts: tuple[object, ...]) -> None:
    assert request_facts(body) == facts


def test_titles() -> None:
    facts = Facts("u", "POST", "/v1/chat/completions", 200, model="gpt-4o",
                  tools=("get_weather", "book_flight"))  # fmt: skip
    assert title_of(facts) == "gpt-4o: get_weather, book_flight"
    assert title_of(Facts("u", "POST", "/v1/chat/completions", 200)) == "POST /v1/chat/completions"
    assert len(title_of(Facts("u", "POST", "/", 200, model="m" * 500))) == 200


def test_what_is_recorded() -> None:
    assert capture_format("POST", "/v1/chat/completions", "text/event-stream; charset=utf-8")
    assert capture_format("GET", "/v1/anything", "text/event-stream") == "sse"
    assert capture_format("POST", "/v1/chat/completions", "application/json") == "json"
    assert capture_format("GET", "/v1/models", "application/json") is None


def test_upstreams_are_parsed_and_checked() -> None:
    assert parse_upstreams(["https://api.openai.com/"]) == {"default": "https://api.openai.com"}
    assert parse_upstreams(["a=http://x:1/v", "b=https://y"]) == {
        "a": "http://x:1/v",
        "b": "https://y",
    }
    for bad in ("ftp://x", "a=notaurl", "a b=http://x", "a=http://x?key=1", "a=http://u:p@x"):
        with pytest.raises(ValueError):
            parse_upstreams([bad])
    with pytest.raises(ValueError, match="twice"):
        parse_upstreams(["http://x", "default=http://y"])


@pytest.mark.parametrize(
    ("rest", "path"),
    [
        ("", ""),
        ("/", "/"),
        ("/a/b/c/./../../g", "/a/g"),  # RFC 3986 5.2.4's example
        ("/a/b/c/../..", "/a/"),
        ("/a/%2E%2e/b", "/b"),
        ("/a/..%2e", "/a/..%2e"),  # three dots: a name
        ("/a%2fb/..", "/"),
        ("/x;y/../z", "/z"),
    ],
)
def test_dot_segments_are_removed(rest: str, path: str) -> None:
    assert forwarded_path(rest) == path


@pytest.mark.parametrize(
    "rest", ["/..", "/a/../..", "/%2e%2E", "/a/b/../../../c", "/a%2f..%2f..", "/..%5c", "/..;"]
)
def test_a_climb_above_the_base_is_refused(rest: str) -> None:
    with pytest.raises(OutsideBase):
        forwarded_path(rest)


class Recording:
    """A recorder whose one stream is a `Sink`."""

    def __init__(self) -> None:
        self.sink = Sink()

    def open(self, facts: Facts, title: str, format: str) -> Sink:
        return self.sink


def _relay(upstream: AsyncIterator[bytes], sent: list[bytes], recording: Recording) -> None:
    """One streamed exchange through a forwarder to `upstream`, the client's bodies in `sent`."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=upstream)  # fmt: skip

    async def run() -> None:
        forwarder = Forwarder(
            {"u": "http://up.invalid"}, recording, Limits(batch_ms=60_000),
            httpx.MockTransport(handler),
        )  # fmt: skip

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.body":
                sent.append(bytes(message["body"]))  # type: ignore[arg-type]

        async def receive() -> dict[str, object]:
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        scope = {"type": "http", "method": "POST", "headers": [], "query_string": b""}
        await asyncio.wait_for(
            forwarder.handle("u", "/v1/chat/completions", scope, receive, send), 30
        )
        await forwarder.aclose()

    asyncio.run(run())


def test_pieces_already_waiting_go_to_the_client_together_and_to_the_recorder_apart() -> None:
    pieces = [b'data: {"n": %d}\n\n' % n for n in range(10)]

    async def upstream() -> AsyncIterator[bytes]:
        for piece in pieces:  # all read before the client's side runs again
            yield piece

    sent: list[bytes] = []
    recording = Recording()
    _relay(upstream(), sent, recording)
    assert b"".join(sent) == b"".join(pieces)
    assert sent[-1] == b"" and len(sent) - 1 < len(pieces)  # fewer messages than pieces
    ((_, part),) = recording.sink.parts
    assert part.data == b"".join(pieces)
    assert len(part.ends) == len(part.ms) == len(pieces)  # each piece kept with its own time
    assert list(part.ends) == [sum(map(len, pieces[: n + 1])) for n in range(len(pieces))]
    assert recording.sink.ended == [(ENDINGS["complete"], "")]


def test_a_piece_is_sent_without_waiting_for_the_next() -> None:
    """The upstream sends its next piece only once the client has had the last one: a proxy
    that held a piece back to join it to the next would never finish."""
    sent: list[bytes] = []

    async def upstream() -> AsyncIterator[bytes]:
        for n in range(5):
            piece = b"data: %d\n\n" % n
            yield piece
            while not sent or not b"".join(sent).endswith(piece):
                await asyncio.sleep(0)

    _relay(upstream(), sent, Recording())
    assert b"".join(sent) == b"".join(b"data: %d\n\n" % n for n in range(5))
    assert len(sent) == 6
