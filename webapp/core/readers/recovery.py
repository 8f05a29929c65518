"""Concatenated JSON in linear time: each value parsed in a window, and where to go on after one
that does not parse.

The stdlib's scanner gives the end of a value, but its error message counts the lines from the
start of the text it was handed, so every broken value would cost the whole text before it.
Each value is therefore parsed from a window starting where it starts, doubled while the value
may run past it: a value costs about twice its own length.

After a broken value, reading goes on where it ends. Its brackets are followed (strings skipped,
each up to the end of its line, as JSON strings hold no raw line break): it ends where they
close, or just before a bracket or comma that belongs to an enclosing value. A scalar ends with
its line. While brackets are open, a line that opens a new value (`{` or `[`) indented no
deeper than the broken value's own line, or closes an enclosing one from further left, ends it
too: a truncated record costs only itself. Every character is looked at a bounded number of
times, whatever the indentation.
"""

from __future__ import annotations

import re
from typing import Any

from webapp.core.jsoncheck import cut_short
from webapp.core.readers.parse import JsonError, scan_json

_WINDOW = 1024
_MARGIN = 64
"""An error this close to a window's end may be the window's doing: look again with more."""

_TOKEN = re.compile(r'"(?:[^"\\\r\n]|\\.)*+"?|[\[\]{},]|\r\n|\r|\n')
_BLANKS = re.compile(r"[ \t]*+")
_OPENER = {"]": "[", "}": "{"}


def scan_window(text: str, pos: int, hint: int = 0) -> tuple[Any, int]:
    """The JSON value starting at `pos` and where it ends; JsonError (with an absolute `pos`).

    `hint` is the length the value is likely to have (the previous value's), to size the window.
    """
    size = len(text)
    width = max(_WINDOW, 2 * hint)
    while True:
        stop = min(size, pos + width)
        window = text[pos:stop]
        final = stop == size
        try:
            value, end = scan_json(window, 0)
        except JsonError as error:
            at = error.pos
            if final or not _maybe_cut(window, error, at):
                raise JsonError(str(error), None if at is None else pos + at) from None
        else:
            if final or end < len(window):
                return value, pos + end
        width *= 2


def _maybe_cut(window: str, error: JsonError, at: int | None) -> bool:
    """Whether the error may come from the window ending inside the value."""
    if at is None or at >= len(window) - _MARGIN:
        return True
    return cut_short(window)


class Resumer:
    """Finds where a broken value ends; offsets asked about must not decrease."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._seen = 0
        self._line_start = 0

    def _indent(self, pos: int) -> int:
        """The indentation of the line holding `pos` (up to `pos`)."""
        text = self._text
        found = max(text.rfind("\n", self._seen, pos), text.rfind("\r", self._seen, pos))
        if found >= 0:
            self._line_start = found + 1
        self._seen = pos
        blanks = _BLANKS.match(text, self._line_start, pos)
        assert blanks is not None
        return blanks.end() - self._line_start

    def resume(self, pos: int) -> int:
        """Where the broken value starting at `pos` ends (after `pos`): see the module docstring."""
        end = self._end(pos)
        if end > pos:
            return end
        match = _TOKEN.match(self._text, pos)  # a stray `]`, `}` or `,`: it alone is the value
        return match.end() if match else pos + 1

    def _end(self, pos: int) -> int:
        text = self._text
        stack: list[str] = []
        open_count = {"[": 0, "{": 0}
        own: int | None = None
        for match in _TOKEN.finditer(text, pos):
            char = match.group()[0]
            if char == '"':
                continue
            if char in "[{":
                stack.append(char)
                open_count[char] += 1
                continue
            if char in "]}":
                opener = _OPENER[char]
                if not open_count[opener]:
                    return match.start()  # it closes an enclosing value
                while (top := stack.pop()) != opener:  # unclosed inner brackets close with it
                    open_count[top] -= 1
                open_count[opener] -= 1
                if not stack:
                    return match.end()
                continue
            if not stack:
                return match.start()  # a comma or a line break ends a scalar
            if char == ",":
                continue
            if own is None:
                own = self._indent(pos)
            if self._ends_before(match.end(), own):
                return match.end()
        return len(text)

    def _ends_before(self, line_start: int, own: int) -> bool:
        """Whether the line at `line_start` starts something new (see the module docstring)."""
        text = self._text
        blanks = _BLANKS.match(text, line_start)
        assert blanks is not None
        first = blanks.end()
        if first >= len(text):
            return False
        indent, char = first - line_start, text[first]
        if indent > own:
            return False
        return char in "{[" or (char in "]}" and indent < own)
