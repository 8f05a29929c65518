"""A recorded response's content coding undone as its pieces arrive, for what is stored.

The proxy asks the upstream for `identity`, but an upstream may compress all the same. The
client gets the bytes as sent (its SDK inflates them); the capture stores what the stream says,
inflated piece by piece with the time each piece came, and says which coding it undid. gzip
(several members too) and deflate (zlib-wrapped or raw, as servers send it) are undone; another
coding (br, zstd, or codings stacked) is stored as sent, and the capture says it could not be
read. Inflating is bounded by the bytes the capture may still store (`--max-bytes`).
"""

from __future__ import annotations

import zlib

from webapp.core.readers.codings import INFLATED, codings

_AUTO = 32 + zlib.MAX_WBITS
"""zlib's window bits that take a gzip or a zlib header, whichever the data has."""
_RAW = -zlib.MAX_WBITS


class Inflater:
    """One body's gzip or deflate coding, undone a piece at a time."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._wbits = _AUTO
        self._inflater = zlib.decompressobj(_AUTO)
        self._started = False
        self._head = bytearray()
        """What came before the first inflated byte (fed again if the header was not zlib's)."""
        self.error: str | None = None
        """Why inflating stopped before the body's end (what came before it is kept)."""

    def feed(self, piece: bytes, most: int) -> bytes:
        """What `piece` inflates to (at most `most` + 1 bytes: more than `most` says the
        capture's room is passed, and nothing more is inflated)."""
        if self.error is not None or not piece:
            return b""
        if not self._started:
            self._head += piece
        out = bytearray()
        try:
            self._inflate(piece, most, out)
        except zlib.error as error:
            self.error = f"its {self.coding} body stopped inflating ({error})"
        if out or self._inflater.eof:
            self._started, self._head = True, bytearray()
        return bytes(out)

    def _inflate(self, data: bytes, most: int, out: bytearray) -> None:
        while data and len(out) <= most:
            try:
                out += self._inflater.decompress(data, most + 1 - len(out))
            except zlib.error:
                if self._started or self._wbits == _RAW:
                    raise
                self._wbits = _RAW  # "deflate" without its zlib wrapper, as IIS sends it
                self._inflater = zlib.decompressobj(_RAW)
                data = bytes(self._head)
                continue
            if self._inflater.unconsumed_tail:
                return  # over the room: the rest is not inflated
            data = self._inflater.unused_data.lstrip(b"\x00") if self._inflater.eof else b""
            if data:  # another gzip member (some writers pad the last one with zeros)
                self._inflater = zlib.decompressobj(self._wbits)

    def finish(self) -> str:
        """In words, once the body has ended: what was undone, or why it stopped."""
        if self.error is None and (self._head or self._started) and not self._inflater.eof:
            self.error = f"its {self.coding} body ended before its compressed end"
        if self.error is not None:
            return f"sent {self.coding}-encoded; {self.error}: stored what inflated"
        return f"sent {self.coding}-encoded though asked for identity: stored inflated"


def inflater_for(header: str) -> Inflater | str | None:
    """The inflater for a Content-Encoding header: None when it names no coding (or only
    identity), the words to store beside the bytes when it names one that is not undone."""
    found = [coding for coding in codings(header) if coding not in ("", "identity")]
    if not found:
        return None
    if len(found) == 1 and found[0] in INFLATED:
        return Inflater(found[0])
    named = ", ".join(reversed(found))
    return f"sent {named}-encoded, which streamviz does not undo: stored as sent"
