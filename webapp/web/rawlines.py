"""A stored stream's bytes and where each line starts, so that one record's lines are sliced
out and decoded without decoding (or parsing) the rest.

Lines break as the readers break them (`webapp.readers.parse.split_lines`): CRLF, lone CR or
LF. The line starts are found once, on first use, in an `array('q')`. UTF-8 bytes are kept as
they are (a line break is one ASCII byte, so a slice between breaks decodes to the same text
as the whole decoded then cut); UTF-16 input (it has a BOM) is decoded once and kept as text.
"""

from __future__ import annotations

import re
import threading
from array import array

from webapp.readers import decode

_BREAK_BYTES = re.compile(rb"\r\n|\r|\n")
_BREAK_TEXT = re.compile(r"\r\n|\r|\n")


class RawLines:
    """The bytes of one stored stream and its line starts (built on first use)."""

    __slots__ = ("_lock", "_starts", "data")

    def __init__(self, raw: bytes) -> None:
        utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff"))
        self.data: bytes | str = decode(raw) if utf16 else raw
        self._starts: array[int] | None = None
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

    def text(self, first: int, stop: int | None) -> str:
        """Lines `first` to `stop` (excluded; None: to the end), 1-based, with their breaks."""
        starts = self.starts()
        if not 1 <= first <= len(starts):
            return ""
        begin = starts[first - 1]
        end = len(self.data) if stop is None or stop > len(starts) else starts[stop - 1]
        part = self.data[begin : max(begin, end)]
        if isinstance(part, str):
            return part
        return decode(part) if begin == 0 else part.decode("utf-8", errors="replace")


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
