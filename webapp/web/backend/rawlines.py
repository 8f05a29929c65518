"""A stored stream's bytes and where each line starts, so that one record's lines are sliced
out, decoded and read (`RawLines.record`) without decoding (or parsing) the rest.

Lines break as the readers break them (`webapp.core.readers.parse.split_lines`): CRLF, lone CR or
LF. Without a CR, a line's start is found from a sparse index (how many breaks precede each
8 KB block, counted once in C), then by a scan of at most one block; with CRs, every line's
start is found once, in an `array('q')`. UTF-8 bytes are kept as they are (a line break is one
ASCII byte, so a slice between breaks decodes to the same text as the whole decoded then cut);
UTF-16 input (it has a BOM) is decoded once and kept as text.

A long stream's bytes are not kept in memory (`RawLines.spilled`): they are written, piece by
piece as the store gives them, to an unnamed temporary file, its index made meanwhile, and a
record's lines are read back from it (`os.pread`, one block to find a line, then its bytes).
The file goes when its `RawLines` does.

Writing that file can take seconds (217 MB beside a store that has just written as much: the
disk's writeback throttles it), and a step's record waited for it. So a stream without a CR
is first only indexed (`RawLines.indexed`, its pieces counted, 0.2 s at 217 MB), its lines
read from the store meanwhile (`reader`, a window of `WINDOW` bytes at a time), and moved to
the file after (`spill`).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import weakref
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, TypeGuard

from webapp.core.readers import decode
from webapp.core.readers.sse import read_sse
from webapp.core.records import ReadResult, Record

_BREAK_BYTES = re.compile(rb"\r\n|\r|\n")
_BREAK_TEXT = re.compile(r"\r\n|\r|\n")
_BOMS = (b"\xff\xfe", b"\xfe\xff")
BLOCK = 8 * 1024
"""Characters per block of the sparse line index (8 bytes per block, and a line is found within
one block's scan)."""
PIECE = 1024 * 1024
"""Bytes read at once from a spilled stream's file while its line starts are found."""
WINDOW = 64 * 1024
"""Bytes read at once from the store, aligned, while the bytes are not in their file yet (a
record's three reads, its line's block, the next line's, its text, are then usually one)."""


class RawLines:
    """The bytes of one stored stream and its line starts (built on first use)."""

    __slots__ = (
        "__weakref__",
        "_blocks",
        "_cr",
        "_data",
        "_fd",
        "_lock",
        "_reader",
        "_size",
        "_starts",
        "_window",
        "complete",
    )

    def __init__(self, raw: bytes, *, complete: bool = True) -> None:
        utf16 = raw.startswith(_BOMS)
        self.complete = complete
        """False for the first bytes of a longer stream: only lines that start and end in
        them can be read (and none of a UTF-16 stream's, whose cut may fall mid-character)."""
        self._data: bytes | str = decode(raw) if utf16 else raw
        self._size = len(self._data)
        self._fd = -1
        """The spilled bytes' file (`spilled`), -1 when they are in `_data`."""
        self._starts: array[int] | None = None
        self._blocks: array[int] | None = None
        self._cr: bool | None = None
        self._lock = threading.Lock()
        self._reader: Callable[[int, int], bytes | None] | None = None
        """Reads bytes `begin` to `end` from the store while they are in no file yet
        (`indexed`); None otherwise."""
        self._window: tuple[int, bytes] = (0, b"")
        """The last `WINDOW` bytes `_reader` read, and where they start."""

    @classmethod
    def indexed(
        cls, pieces: Iterable[bytes], reader: Callable[[int, int], bytes | None]
    ) -> RawLines | None:
        """The line index of the bytes `pieces` give, in order, the bytes left in the store and
        read with `reader(begin, end)` until `spill` puts them in a file; None for bytes with a
        CR (their every line start is found from the bytes, read back, as `spilled` does) or a
        UTF-16 stream (kept decoded)."""
        counted = _Counted()
        for piece in pieces:
            if not counted.size and piece.startswith(_BOMS):
                return None
            counted.add(piece)
            if counted.cr:
                return None
        lines = cls(b"")
        lines._size, lines._blocks, lines._cr = counted.size, counted.blocks(), False
        lines._reader = reader
        return lines

    def spill(self, pieces: Iterable[bytes], folder: str | None = None) -> bool:
        """Write the bytes `pieces` give (this stream's, again) to an unnamed temporary file in
        `folder` and read them from it from then on; False (the store still read) when they
        are not this stream's size."""
        handle, size = _written(pieces, folder)
        if size != self._size or self._reader is None:
            handle.close()
            return False
        weakref.finalize(self, handle.close)
        self._fd = handle.fileno()  # before the reader goes: `_read` counts on that order
        self._reader = None
        self._window = (0, b"")
        return True

    @classmethod
    def spilled(cls, pieces: Iterable[bytes], folder: str | None = None) -> RawLines:
        """The bytes `pieces` give, in order, kept in an unnamed temporary file in `folder`
        (None: the system's), their line index made as they are written; a UTF-16 stream is
        kept in memory, decoded (its breaks are not single bytes)."""
        found = iter(pieces)
        first = next(found, b"")
        if first.startswith(_BOMS):
            return cls(first + b"".join(found))
        lines, counted = cls(b""), _Counted()
        handle, size = _written(_chained(first, found), folder, counted.add)
        weakref.finalize(lines, handle.close)  # holds the file open until `lines` goes
        lines._data, lines._size, lines._fd = b"", size, handle.fileno()
        lines._blocks, lines._cr = counted.blocks(), counted.cr
        if counted.cr:
            lines._starts = _starts_in(lines._read, size)
        return lines

    @property
    def spilled_to_file(self) -> bool:
        """Whether the bytes are in a temporary file rather than in memory."""
        return self._fd >= 0

    @property
    def held_out(self) -> bool:
        """Whether the bytes are out of memory: in their file, or still in the store."""
        return self._fd >= 0 or self._reader is not None

    @property
    def size(self) -> int:
        """How many bytes (characters, for a decoded UTF-16 stream) it holds."""
        return self._size

    @property
    def data(self) -> bytes | str:
        """The whole stream: the bytes (the text, for UTF-16); read from the file, whole, when
        spilled (a reading of every record, a capture's timing)."""
        return self._read(0, self._size) if self.held_out else self._data

    @property
    def weight(self) -> int:
        """Its size in memory, in bytes (about)."""
        if self.held_out:  # only the index is in memory
            window = WINDOW if self._reader is not None else 0  # what the store last gave
            return 8 * (self._size // BLOCK + 2) + 8 * len(self._starts or ()) + window
        text = self._data
        per = 1 if isinstance(text, bytes) or text.isascii() else 4
        return len(text) * per + 8 * (len(text) // 64 + 1)

    def _read(self, begin: int, end: int) -> bytes | str:
        """Characters `begin` to `end` (excluded)."""
        fd = self._fd
        if fd < 0:
            reader = self._reader
            if reader is not None:
                return self._from_store(reader, begin, end)
            fd = self._fd  # spilled meanwhile: `spill` sets the file before it drops the reader
            if fd < 0:
                return self._data[begin:end]
        parts = []
        while begin < end:
            part = os.pread(fd, end - begin, begin)
            if not part:
                break
            parts.append(part)
            begin += len(part)
        return b"".join(parts)

    def _from_store(
        self, reader: Callable[[int, int], bytes | None], begin: int, end: int
    ) -> bytes:
        """Bytes `begin` to `end` through `reader`: from the last window read when it holds
        them, else from a new one (a span longer than a window is read alone); b"" when the
        store no longer has them (deleted meanwhile)."""
        end = min(end, self._size)
        low, held = self._window
        if low <= begin and end <= low + len(held):
            return held[begin - low : end - low]
        if end - begin > WINDOW:
            return reader(begin, end) or b""
        low = begin - begin % WINDOW
        held = reader(low, min(self._size, max(end, low + WINDOW))) or b""
        self._window = (low, held)  # one assignment: a thread reads the old pair or the new
        return held[begin - low : end - low]

    def starts(self) -> array[int]:
        """The offset of every line's first character (line 1 at index 0)."""
        with self._lock:
            if self._starts is None:
                self._starts = _starts_in(self._read, self._size)
            return self._starts

    def start(self, line: int) -> int | None:
        """The offset line `line` (1-based) starts at; None past the last line."""
        data = self._data
        if self._cr is None:
            self._cr = b"\r" in data if isinstance(data, bytes) else "\r" in data
        if self._cr:
            starts = self.starts()
            return starts[line - 1] if 1 <= line <= len(starts) else None
        mark = b"\n" if isinstance(data, bytes) else "\n"
        with self._lock:
            if self._blocks is None:
                self._blocks = _blocks(data, mark)
            blocks = self._blocks
        if line < 1:
            return None
        before = line - 1  # the breaks before the line
        if before == 0:
            return 0
        if before > blocks[-1]:
            return None
        block = bisect_right(blocks, before - 1) - 1  # the block holding break number `before`
        chunk = self._read(block * BLOCK, (block + 1) * BLOCK)
        at = -1
        for _ in range(before - blocks[block]):
            at = chunk.find(mark, at + 1)  # type: ignore[arg-type]
        offset = block * BLOCK + at + 1
        return offset if offset < self._size else None

    def text(self, first: int, stop: int | None) -> str:
        """Lines `first` to `stop` (excluded; None: to the end), 1-based, with their breaks."""
        begin = self.start(first)
        if begin is None:
            return ""
        end = self.start(stop) if stop is not None else None
        part = self._read(begin, self._size if end is None else max(begin, end))
        if isinstance(part, str):
            return part
        return decode(part) if begin == 0 else part.decode("utf-8", errors="replace")

    def record(self, line: int, stop: int | None, kind: str) -> Record | None:
        """The SSE record of kind `kind` starting on `line`, read from lines `line` to `stop`
        alone (None when they do not start with that record)."""
        records = read_sse(self.text(line, stop), line).records
        first = records[0] if records else None  # a plain stream's records are made on access
        if first is not None and first.line == line and first.kind == kind:
            return first
        return None


def by_lines(found: ReadResult) -> bool:
    """Whether each record of what a reader found can be read again from its own lines (plain
    SSE, nothing mapped): then `RawLines.record` gives it."""
    return found.format == "sse" and not {"container", "mapped_from"} & found.meta.keys()


def is_line(line: object) -> TypeGuard[int]:
    """Whether a step's line is one an SSE reader gives (a line number, not None or odd)."""
    return type(line) is int and line >= 0


def _written(
    pieces: Iterable[bytes], folder: str | None, each: Callable[[bytes], None] | None = None
) -> tuple[BinaryIO, int]:
    """An unnamed temporary file in `folder` (None: the system's) holding the bytes `pieces`
    give, in order (`each` shown every piece as it is written), and how many there were."""
    handle = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 (the caller closes it)
    size = 0
    for piece in pieces:
        handle.write(piece)
        size += len(piece)
        if each is not None:
            each(piece)
    handle.flush()
    return handle, size


class _Counted:
    """How many LF breaks precede each block of `BLOCK` bytes, counted piece by piece, and
    whether any piece held a CR."""

    __slots__ = ("_counts", "_partial", "_total", "cr", "size")

    def __init__(self) -> None:
        self._counts = array("q", [0])
        self._total = 0
        self._partial = 0  # the breaks so far in the block begun and not ended
        self.size = 0
        self.cr = False

    def add(self, piece: bytes) -> None:
        self.cr = self.cr or b"\r" in piece
        at, room = 0, BLOCK - self.size % BLOCK
        self.size += len(piece)
        while at < len(piece):
            take = min(room, len(piece) - at)
            self._partial += piece.count(b"\n", at, at + take)
            at, room = at + take, room - take
            if not room:
                self._total, self._partial, room = self._total + self._partial, 0, BLOCK
                self._counts.append(self._total)

    def blocks(self) -> array[int]:
        """The counts (`_blocks` of `RawLines`), the last block's included."""
        counts = array("q", self._counts)
        if self.size % BLOCK:
            counts.append(self._total + self._partial)
        return counts


def _chained(first: bytes, rest: Iterable[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _blocks(data: bytes | str, mark: bytes | str) -> array[int]:
    """How many breaks precede each block of `BLOCK` characters, then the total."""
    counts = array("q", [0])
    total = 0
    for begin in range(0, len(data), BLOCK):
        total += data.count(mark, begin, begin + BLOCK)  # type: ignore[arg-type]
        counts.append(total)
    return counts


def _starts_in(read: Callable[[int, int], bytes | str], size: int) -> array[int]:
    """Every line's start, the text read `PIECE` characters at a time (a CRLF cut between
    two pieces is one break)."""
    starts = array("q", [0])
    at, after_cr = 0, False
    while at < size:
        piece = read(at, min(size, at + PIECE))
        if not piece:
            break
        pattern = _BREAK_BYTES if isinstance(piece, bytes) else _BREAK_TEXT
        for match in pattern.finditer(piece):  # type: ignore[arg-type]
            if after_cr and match.start() == 0 and piece[:1] in (b"\n", "\n"):
                starts[-1] = at + 1  # the LF of a CRLF whose CR ended the last piece
            else:
                starts.append(at + match.end())
            after_cr = False
        after_cr = piece[-1:] in (b"\r", "\r")
        at += len(piece)
    if len(starts) > 1 and starts[-1] == size:
        starts.pop()  # a final break does not start another line
    return starts
