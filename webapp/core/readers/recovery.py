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

What the windows read past a broken value's end is read again by the values after it: a value
nested in a broken one that stays open (`[` on every line) is parsed again from each line, to
the same far error. That re-reading is counted (`Waste`); past a budget linear in the input,
a value starting with a bracket is parsed only up to where the resumer ends it, so the rest of
the input costs only itself. A valid value that goes on past a line opening another value at
its own indentation is then reported broken there, with a note saying why.
"""

from __future__ import annotations

import re
from typing import Any

from webapp.core.jsoncheck import cut_short
from webapp.core.readers.parse import JsonError, scan_json

_WINDOW = 1024
_MARGIN = 64
"""An error this close to a window's end may be the window's doing: look again with more."""

WASTE_PER_CHAR = 4
WASTE_FLOOR = 1 << 16
"""The re-reading allowed before values are cut where the resumer ends them: this many
characters per character of input, plus the floor (so no ordinary paste comes near it)."""

_TOKEN = re.compile(r'"(?:[^"\\\r\n]|\\.)*+"?|[\[\]{},]|\r\n|\r|\n')
_BLANKS = re.compile(r"[ \t]*+")
_OPENER = {"]": "[", "}": "{"}


class WindowError(JsonError):
    """A value that does not parse; `reach` is how far the windows that found it went."""

    def __init__(self, message: str, pos: int | None, reach: int) -> None:
        super().__init__(message, pos)
        self.reach = reach


def scan_window(text: str, pos: int, hint: int = 0, limit: int | None = None) -> tuple[Any, int]:
    """The JSON value starting at `pos` and where it ends; WindowError (with absolute positions).

    `hint` is the length the value is likely to have (the previous value's), to size the window;
    with `limit`, the value must end by then (the text beyond it is not read).
    """
    size = len(text) if limit is None else min(limit, len(text))
    width = max(_WINDOW, 2 * hint)
    while True:
        stop = min(size, pos + width)
        window = text[pos:stop]
        final = stop == size
        try:
            value, end = scan_json(window, 0)
        except JsonError as error:
            at = error.pos
            # Without a position the error is the nesting's or a constant's (NaN): a wider
            # window would meet it again.
            if final or at is None or not _maybe_cut(window, error, at):
                raise WindowError(str(error), None if at is None else pos + at, stop) from None
        else:
            if final or end < len(window):
                return value, pos + end
        width *= 2


class Waste:
    """The characters windows read past the ends of broken values, against a budget."""

    def __init__(self, size: int) -> None:
        self.budget = WASTE_PER_CHAR * size + WASTE_FLOOR
        self.read = 0
        self.first: int | None = None
        """The offset of the first broken value that was read past its end."""
        self.spent_at: int | None = None
        """The offset where the budget ran out, if it did."""

    def add(self, start: int, end: int, reach: int) -> None:
        """A broken value from `start` to `end` whose windows read up to `reach`."""
        if reach <= end:
            return
        if self.first is None:
            self.first = start
        self.read += reach - end
        if self.spent_at is None and self.read > self.budget:
            self.spent_at = end


def _maybe_cut(window: str, error: JsonError, at: int) -> bool:
    """Whether the error may come from the window ending inside the value."""
    if at >= len(window) - _MARGIN:
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
