"""The proxy's upstream connections decode a chunked body themselves (`webapp.proxy.chunked`), a
read at a time: whatever the body and however the network cuts it, they hand on the same bytes
as httpcore's own connections (h11), fail where those fail, and leave the connection as fit to
carry the next response."""

from __future__ import annotations

import asyncio
from typing import Any

import httpcore
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.proxy.chunked import Dechunker
from webapp.proxy.pool import PromiseKeepingPool

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
NEXT = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nnext"
"""The response to a second request on the same connection."""

_extensions = st.sampled_from([b"", b";a=b", b";x", b' ;q="v w"', b"\t", b"  ", b";"])
_chunk = st.tuples(st.binary(min_size=1, max_size=300), _extensions, st.booleans())
_trailer = st.sampled_from([b"", b"x-t: 1\r\n", b"x-a: b\r\nx-c: d\r\n", b"bad trailer\r\n"])


@st.composite
def _wire(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A chunked response, sometimes with a byte changed, and the reads that bring it and the
    next response (any cut, a byte or the whole)."""
    chunks = draw(st.lists(_chunk, max_size=12))
    body = b"".join(
        b"%s%s\r\n%s\r\n" % (b"%X" % len(data) if upper else b"%x" % len(data), ext, data)
        for data, ext, upper in chunks
    )
    body += b"0" + draw(_extensions) + b"\r\n" + draw(_trailer) + b"\r\n"
    if draw(st.booleans()) and body:  # a broken body, somewhere
        at = draw(st.integers(0, len(body) - 1))
        body = body[:at] + bytes([draw(st.sampled_from(b"\r\nz0;9 "))]) + body[at + 1 :]
    wire = HEAD + body + NEXT
    cuts = sorted(draw(st.sets(st.integers(1, len(wire) - 1), max_size=20)))
    reads = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    return body, reads


async def _exchange(pool: httpcore.AsyncConnectionPool) -> list[Any]:
    """The body as handed on (its pieces joined), the error that cut it, then what a second
    request on the connection got (its body, or its error)."""
    async with pool:
        pieces: list[bytes] = []
        try:
            async with pool.stream("GET", "http://upstream/") as response:
                async for piece in response.aiter_stream():
                    pieces.append(piece)
        except httpcore.ProtocolError as error:
            return [b"".join(pieces), type(error)]
        try:
            after = await pool.request("GET", "http://upstream/")
        except httpcore.ProtocolError as error:
            return [b"".join(pieces), None, type(error)]
        return [b"".join(pieces), None, after.content]


def _through(pool_class: type[httpcore.AsyncConnectionPool], reads: list[bytes]) -> list[Any]:
    return asyncio.run(_exchange(pool_class(network_backend=httpcore.AsyncMockBackend(reads))))


@settings(max_examples=400, deadline=None)
@given(_wire())
def test_a_chunked_body_comes_out_as_httpcore_gives_it(wire: tuple[bytes, list[bytes]]) -> None:
    _, reads = wire
    assert _through(PromiseKeepingPool, reads) == _through(httpcore.AsyncConnectionPool, reads)


def test_the_next_response_on_the_connection_is_read_after_a_decoded_body() -> None:
    reads = [HEAD + b"5;ext\r\nhello\r\n6\r\n world\r\n0\r\nx-t: 1\r\n\r\n" + NEXT]
    assert _through(PromiseKeepingPool, reads) == [b"hello world", None, b"next"]


def test_the_dechunker_takes_a_read_cut_anywhere() -> None:
    wire = b"3\r\nabc\r\n10\r\n" + b"x" * 16 + b"\r\n0\r\nafter"
    for cut in range(1, len(wire)):
        dechunker = Dechunker(100)
        got, rest = dechunker.feed(wire[:cut]), dechunker.rest
        if rest is None:  # fed until the last chunk's line, not after it
            got, rest = got + dechunker.feed(wire[cut:]), dechunker.rest
        else:
            rest += wire[cut:]
        assert got == b"abc" + b"x" * 16 and rest == b"after" and not dechunker.error


def test_the_dechunker_stops_at_what_is_wrong() -> None:
    for wire, data, error in [
        (b"3\r\nabcX\r\n", b"abc", "malformed chunk footer: b'X\\r' (expected b'\\r\\n')"),
        (b"2\r\nab\r\nzz\r\n", b"ab", "illegal chunk header: b'zz\\r\\n'"),
        (b"1" * 21 + b"\r\n", b"", "illegal chunk header"),
        (b"ab" * 60, b"", "Receive buffer too long"),
    ]:
        dechunker = Dechunker(100)
        assert dechunker.feed(wire) == data and dechunker.error.startswith(error)
