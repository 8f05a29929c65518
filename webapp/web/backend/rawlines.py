"""A stored stream's bytes and where each line starts, so that one record's lines are sliced
out, decoded and read (`RawLines.record`) without decoding (or parsing) the rest.

Lines break as the readers break them (`webapp.core.readers.parse.split_lines`): CRLF, lone CR or
LF. Without a CR, a line's start is found from a sparse index (how many breaks precede each
8 KB block, counted once in C), then by a scan of at most one block; with CRs, every line's
start is found once, on first use, in an `array('q')`. UTF-8 bytes are kept as
they are (a line break is one ASCII byte, so a slice between breaks decodes to the same text
as the whole decoded then cut); UTF-16 input (it has a BOM) is decoded once and kept as text.
"""

from __future__ import annotations

import re
import threading
from array import array
from bisect import bisect_right
from typing import TypeGuard

from webapp.core.readers import decode
from webapp.core.readers.sse import read_sse
from webapp.core.records import ReadResult, Record

_BREAK_BYTES = re.compile(rb"\r\n|\r|\n")
_BREAK_TEXT = re.compile(r"\r\n|\r|\n")
BLOCK = 8 * 1024
"""Characters per block of the sparse line index (8 bytes per block, and a line is found within
one block's scan)."""


class RawLines:
    """The bytes of one stored stream and its line starts (built on first use)."""

    __slots__ = ("_blocks", "_cr", "_lock", "_starts", "complete", "data")

    def __init__(self, raw: bytes, *, complete: bool = True) -> None:
        utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff"))
        self.complete = complete
        """False for the first bytes of a longer stream: only lines that start and end in
        them can be read (and none of a UTF-16 stream's, whose cut may fall mid-character)."""
        self.data: bytes | str = decode(raw) if utf16 else raw
        self._starts: array[int] | None = None
        self._blocks: array[int] | None = None
        self._cr: bool | None = None
        self._lock = threading.Lock()

    @property
    def weight(self) -> int:
        """Its size in memory, in bytes (about)."""
        text = self.data
        per = 1 if isinstance(text, bytes) or text.isascii() else 4
        return len(text) * per + 8 * (len(text) // 64 + 1)

    def starts(self) -> array[int]:
        """The offset of every line's first character (line 1 at index 0)."""
        with self._lock:
            if self._starts is None:
                self._starts = _starts(self.data)
            return self._starts

    def start(self, line: int) -> int | None:
        """The offset line `line` (1-based) starts at; None past the last line."""
        data = self.data
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
        at = block * BLOCK - 1
        for _ in range(before - blocks[block]):
            at = data.find(mark, at + 1)  # type: ignore[arg-type]
        offset = at + 1
        return offset if offset < len(data) else None

    def text(self, first: int, stop: int | None) -> str:
        """Lines `first` to `stop` (excluded; None: to the end), 1-based, with their breaks."""
        begin = self.start(first)
        if begin is None:
            return ""
        end = self.start(stop) if stop is not None else None
        part = self.data[begin : len(self.data) if end is None else max(begin, end)]
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


def _blocks(data: bytes | str, mark: bytes | str) -> array[int]:
    """How many breaks precede each block of `BLOCK` characters, then the total."""
    counts = array("q", [0])
    total = 0
    for begin in range(0, len(data), BLOCK):
        total += data.count(mark, begin, begin + BLOCK)  # type: ignore[arg-type]
        counts.append(total)
    return counts


def _starts(data: bytes | str) -> array[int]:
    starts = array("q", [0])
    if isinstance(data, bytes):
        if b"\r" in data:
            starts.extend(match.end() for match in _BREAK_BYTES.finditer(data))
        else:
            _after_each(data, b"\n", starts)
    elif "\r" in data:
        starts.extend(match.end() for match in _BREAK_TEXT.finditer(data))
    else:
        _after_each(data, "\n", starts)
    if len(starts) > 1 and starts[-1] == len(data):
        starts.pop()  # a final break does not start another line
    return starts


def _after_each(data: bytes | str, mark: bytes | str, starts: array[int]) -> None:
    find = data.find
    at = find(mark)  # type: ignore[arg-type]
    while at >= 0:
        starts.append(at + 1)
        at = find(mark, at + 1)  # type: ignore[arg-type]
