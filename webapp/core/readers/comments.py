"""Comments and trailing commas in pasted JSON: people annotate the chunks they paste.

`//` and `/* */` comments and a comma right before `]` or `}` are blanked out (never inside a
string), each character replaced by a space and line breaks kept, so offsets and line numbers
stay those of the input. Strings are matched up to the end of their line, as JSON strings hold
no raw line break, so one unclosed quote cannot hide the rest of the input.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from webapp.core.readers.parse import LineCounter

_COMMENT = re.compile(r'"(?:[^"\\\r\n]|\\.)*+"?|//[^\r\n]*|/\*(?:[^*]|\*(?!/))*+(?:\*/)?')
_TRAILING_COMMA = re.compile(r'"(?:[^"\\\r\n]|\\.)*+"?|,(?=[ \t\r\n]*+[\]}])')
_NOT_LINE_BREAK = re.compile(r"[^\r\n]")
_ANY_TRAILING_COMMA = re.compile(r",[ \t\r\n]*+[\]}]")


@dataclass(frozen=True, slots=True)
class Mark:
    """One comment or trailing comma that was blanked out."""

    start: int
    end: int
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class Cleaned:
    """The text to parse, the input it came from, and what was blanked out (in order)."""

    text: str
    source: str
    marks: tuple[Mark, ...] = ()
    lines: tuple[int, ...] = ()
    """Each mark's line, for looking marks up by line."""

    def remark(self, first_line: int, last_line: int) -> str:
        """What to add to the error of a record on these lines that still does not parse."""
        first = bisect.bisect_left(self.lines, first_line)
        inside = [mark for mark in self.marks[first : first + 3] if mark.line <= last_line]
        if not inside:
            return ""
        said = ", ".join(f"line {mark.line}: {_short(mark.text)}" for mark in inside)
        return f"; streamviz blanked out before parsing what JSON does not allow ({said})"

    def note(self) -> str | None:
        """The note naming the lines that held comments or trailing commas."""
        if not self.marks:
            return None
        lines = sorted({mark.line for mark in self.marks})
        shown = ", ".join(str(line) for line in lines[:10])
        if len(lines) > 10:
            shown += f" and {len(lines) - 10} more"
        kinds = {"comma" if mark.text == "," else "comment" for mark in self.marks}
        what = " and ".join(
            name
            for key, name in (("comment", "comments"), ("comma", "trailing commas"))
            if key in kinds
        )
        return (
            f"read on after blanking out {what}, which JSON does not allow "
            f"(line{'s' if len(lines) > 1 else ''} {shown}); strings were left as they are"
        )


def _short(text: str) -> str:
    if text == ",":
        return "a trailing comma"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 40 else flat[:39] + "…")


def _blank(text: str) -> str:
    return _NOT_LINE_BREAK.sub(" ", text)


def clean(text: str, first_line: int = 1) -> Cleaned:
    """The text with comments and trailing commas blanked out, and where they were."""
    if "//" not in text and "/*" not in text and not _ANY_TRAILING_COMMA.search(text):
        return Cleaned(text, text)
    found: list[tuple[int, int, str]] = []
    parts: list[str] = []
    done = 0
    for pattern in (_COMMENT, _TRAILING_COMMA):
        source = text if not parts else "".join(parts)
        parts, done = [], 0
        for match in pattern.finditer(source):
            token = match.group()
            if token.startswith('"'):
                continue
            parts.append(source[done : match.start()])
            parts.append(_blank(token))
            done = match.end()
            found.append((match.start(), match.end(), token))
        parts.append(source[done:])
    if not found:
        return Cleaned(text, text)
    found.sort()
    lines = LineCounter(text, first_line)
    marks = tuple(Mark(start, end, lines.line_at(start), token) for start, end, token in found)
    return Cleaned("".join(parts), text, marks, tuple(mark.line for mark in marks))
