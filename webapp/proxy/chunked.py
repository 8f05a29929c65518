"""A chunked HTTP/1.1 body's data out of the bytes as they are read (RFC 9112 7.1), sans I/O.

h11 decodes a chunked body a chunk at a time, each a trip through its state machine; an SSE
stream is a chunk an event, and a read of the socket holds hundreds. `Dechunker` takes a read
and gives back the data of every chunk in it, joined, with a regex and a slice a chunk (a
chunk whole in the read at once; one the read cuts, a piece at a time). It takes what h11
takes: a size of 1 to 20 hex digits, any extension after `;` (ignored), spaces
or tabs before the CRLF, the CRLF after the data. It stops at the last chunk's line (size 0):
the trailer section and what follows are left for h11 (`rest`), which reads them as before,
so the connection ends its response in h11's state as if h11 had read it all.
"""

from __future__ import annotations

import re

_HEADER = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*")
"""A chunk's size line without its CRLF (h11's `chunk_header`: `.` does not take a LF)."""
_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*?)?[ \t]*\r\n")
"""The same with its CRLF, found where a chunk starts (the extension ends at the first CRLF,
as the line does); no match: the line is cut short by the read, or wrong (`_HEADER` says)."""


class Dechunker:
    """One chunked body's decoder: `feed` it each read, in order, until `rest` is not None."""

    __slots__ = ("_buffer", "_footer", "_left", "error", "most", "rest")

    def __init__(self, most: int) -> None:
        self.most = most
        """The longest size line waited for (h11's bound on an incomplete event)."""
        self._buffer = b""
        """Bytes read and not decoded: the start of a size line."""
        self._left = 0
        """Bytes of the current chunk's data still to come."""
        self._footer = b""
        """What is still to come of the CRLF after a chunk's data."""
        self.rest: bytes | None = None
        """Once the last chunk's line is read: the bytes after it (the trailer section, its
        blank line, and anything after), for h11."""
        self.error = ""
        """What is wrong where the body stops being chunked as HTTP/1.1 says (h11's words);
        nothing is decoded after it."""

    def feed(self, data: bytes) -> bytes:
        """The chunks' data in `data` (with what was left of the reads before), joined; up to
        the error, when there is one (`error`)."""
        if self._buffer:
            data, self._buffer = self._buffer + data, b""
        out: list[bytes] = []
        at, end = 0, len(data)
        whole = _LINE.match
        while at < end:
            if not (self._left or self._footer) and (found := whole(data, at)) is not None:
                size, start = int(found[1], 16), found.end()
                if not size:
                    self.rest = data[start:]
                    break
                stop = start + size
                if data[stop : stop + 2] == b"\r\n":  # the chunk whole in this read (most are)
                    out.append(data[start:stop])
                    at = stop + 2
                else:
                    at, self._left = start, size
            elif self._left:
                upto = min(at + self._left, end)
                out.append(data[at:upto])
                self._left -= upto - at
                at = upto
                if not self._left:
                    self._footer = b"\r\n"
            elif self._footer:
                got = data[at : at + len(self._footer)]
                if not self._footer.startswith(got):
                    self.error = f"malformed chunk footer: {got!r} (expected {self._footer!r})"
                    break
                self._footer = self._footer[len(got) :]
                at += len(got)
            else:
                brk = data.find(b"\r\n", at)
                if brk < 0:
                    if end - at > self.most:
                        self.error = "Receive buffer too long"
                        break
                    self._buffer = data[at:]
                    break
                found = _HEADER.fullmatch(data, at, brk)
                if found is None:
                    self.error = f"illegal chunk header: {data[at : brk + 2]!r}"
                    break
                at = brk + 2
                size = int(found[1], 16)
                if not size:
                    self.rest = data[at:]
                    break
                self._left = size
        return out[0] if len(out) == 1 else b"".join(out)
