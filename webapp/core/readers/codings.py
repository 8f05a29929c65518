"""HTTP content codings of a recorded body: gzip and deflate inflated a piece at a time, under
a budget of bytes shared by the whole input.

A body is never inflated whole and then measured (`gzip.decompress` of a few kilobytes can
make gigabytes): `zlib.decompressobj` gives at most what is left of the `Budget`, and one byte
more says the input passes it. Brotli (`br`) and zstd need libraries streamviz does not ship:
such a body is refused by name.
"""

from __future__ import annotations

import zlib

from webapp.core.records import ReaderError
from webapp.core.words import count

INFLATED = ("gzip", "x-gzip", "deflate")
"""The codings inflated here (`deflate` with or without its zlib wrapper, as servers send it)."""
_PLAIN = ("", "identity")
_AUTO = 32 + zlib.MAX_WBITS
"""zlib's window bits that take a gzip or a zlib header, whichever the data has."""
PIECE = 1 << 20
"""Bytes inflated at a time: the most held beside the body inflated so far."""


class OverLimit(ReaderError):
    """What the input holds (inflated, or with its aliases written out) passes the size limit
    it is held to."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class Budget:
    """The bytes an input may still make once inflated: each use of a body counts (the same
    body used twice, through a YAML alias, counts twice)."""

    def __init__(self, limit: int, what: str = "the input's bodies") -> None:
        self.limit = limit
        self.what = what
        self.spent = 0

    @property
    def left(self) -> int:
        """Bytes still allowed."""
        return max(0, self.limit - self.spent)

    def spend(self, size: int, where: str) -> None:
        """Count `size` more bytes; OverLimit, naming `where`, once they pass the limit."""
        self.spent += size
        if self.spent > self.limit:
            raise OverLimit(
                f"{self.what}, inflated, pass the size limit of {count(self.limit, 'byte')} at "
                f"{where} (every use of a body counts, an alias to one as often as it is used)",
                self.limit,
            )


def codings(header: str) -> list[str]:
    """A Content-Encoding header's codings, the last applied first (the order to undo them)."""
    return [part.strip().lower() for part in reversed(header.split(",")) if part.strip()]


def encoded(header: str) -> bool:
    """Whether the header names a coding other than identity."""
    return any(coding not in _PLAIN for coding in codings(header))


def decode_body(data: bytes, header: str, budget: Budget, where: str) -> bytes | bytearray:
    """The body with the header's codings undone, each under what is left of `budget` (the
    result is spent from it); ReaderError when a coding is unknown or the data does not
    inflate, OverLimit when it inflates past the budget."""
    result: bytes | bytearray = data
    for coding in codings(header):
        if coding in _PLAIN or not result:  # an empty body (a HEAD's, a 204's) stays empty
            continue
        if coding not in INFLATED:
            raise ReaderError(
                f"{where} kept its body {coding}-encoded, which streamviz cannot decode: "
                "record it with vcrpy's decode_compressed_response=True"
            )
        result = _inflate(result, coding, budget.left, budget, where)
    budget.spend(len(result), where)
    return result


def _inflate(
    data: bytes | bytearray, coding: str, most: int, budget: Budget, where: str
) -> bytearray:
    """`data` inflated (a gzip or zlib stream, else raw deflate), at most `most` bytes."""
    try:
        return _members(data, _AUTO, most, budget, where)
    except zlib.error as error:
        first = error
    try:
        return _members(data, -zlib.MAX_WBITS, most, budget, where)
    except zlib.error:
        why = f"{where} kept its body {coding}-encoded, and it does not inflate ({first})"
        raise ReaderError(why) from None


def _members(
    data: bytes | bytearray, wbits: int, most: int, budget: Budget, where: str
) -> bytearray:
    """Every member of the stream (gzip allows several, one after another), inflated a
    `PIECE` at a time."""
    out = bytearray()
    while True:
        inflater = zlib.decompressobj(wbits)
        pending = data
        while not inflater.eof:
            piece = inflater.decompress(pending, min(PIECE, most + 1 - len(out)))
            out += piece
            if len(out) > most:
                budget.spend(len(out), where)  # over: raises, naming the limit
            pending = inflater.unconsumed_tail
            if not (piece or pending or inflater.eof):
                raise zlib.error("the compressed data ends early")
        data = inflater.unused_data
        if wbits < 0 or not data.strip(b"\x00"):  # trailing zeros pad some gzip files
            return out
