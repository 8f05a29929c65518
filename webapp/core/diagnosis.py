"""Where a block's arguments stopped being JSON, and what the parser's complaint means there.

A text stops being the start of any valid JSON text at one piece, and never becomes one again,
so the breaking piece is found by bisecting the block's pieces: a few strict parses of
prefixes, only for the blocks whose final text is broken. The parser's message is translated
into what it usually means for streamed tool calls, and kept as the detail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jiter

from webapp.core.jsoncheck import cut_short, parses
from webapp.core.words import excerpt

_WHITESPACE = " \t\n\r"
_WHERE = re.compile(r" at line (\d+) column (\d+)$")


def is_prefix(text: str) -> bool:
    """Whether some text (maybe none) could follow `text` to make one valid JSON value."""
    return not text.strip(_WHITESPACE) or parses(text) or cut_short(text)


def first_break(pieces: list[str], *, broken: bool = False) -> int | None:
    """The index of the piece after which the joined text is no longer a JSON prefix, if any.

    `broken`: the caller knows the joined text is no prefix (it is not checked again).
    """
    if not broken and is_prefix("".join(pieces)):
        return None
    low, high = 0, len(pieces) - 1  # the prefix through `high` is broken
    while low < high:
        middle = (low + high) // 2
        if is_prefix("".join(pieces[: middle + 1])):
            low = middle + 1
        else:
            high = middle
    return low


@dataclass(frozen=True, slots=True)
class Break:
    """Where a text breaks (a character offset), what that means, and the parser's words."""

    position: int
    meaning: str
    detail: str

    def around(self, text: str, width: int = 24) -> str:
        """The text on both sides of the break: `'..."Paris"}' | '{"date": ...'`."""
        before = text[max(0, self.position - width) : self.position]
        after = text[self.position : self.position + width]
        return f"{excerpt(before, width + 3)} | {excerpt(after, width + 3)}"


def explain(text: str) -> Break:
    """Why `text` is not the start of valid JSON, in words about tool calls."""
    try:
        jiter.from_json(text.encode("utf-8", "surrogatepass"), allow_inf_nan=False)
    except ValueError as error:
        detail = str(error)
    else:
        return Break(len(text), "the text is valid JSON", "")
    position = _offset(text, detail)
    return Break(position, _meaning(text, detail, position), detail)


def _meaning(text: str, detail: str, position: int) -> str:
    start = text.lstrip(_WHITESPACE)[:1]
    if detail.startswith("trailing characters"):
        if start == '"':
            return (
                "a string value followed by more text: these arguments start mid-string, "
                "probably the tail of another call's arguments"
            )
        return (
            "a second value starts here after a complete one: two values glued together, "
            "probably two calls' arguments merged"
        )
    if detail.startswith("control character"):
        return (
            "a raw control character (a line break?) inside a string; upstream's client "
            "escapes it before parsing"
        )
    if detail.startswith("invalid escape"):
        return (
            "a backslash that starts no valid escape; upstream's client doubles it before parsing"
        )
    if detail.startswith("trailing comma"):
        return "a trailing comma before a closing bracket"
    if text[position : position + 3] in ("NaN", "Inf") or text[position : position + 4] == "-Inf":
        return "NaN and Infinity are not JSON"
    if position <= len(text) - len(text.lstrip(_WHITESPACE)):
        return (
            "the arguments do not start with a JSON value: probably the tail of another "
            "call's arguments"
        )
    if detail.startswith(("expected `,`", "expected `:`", "key must be a string")):
        return (
            "the structure breaks here (a missing comma or colon): pieces of two calls' "
            "arguments interleaved?"
        )
    return "the text stops being JSON here"


def _offset(text: str, detail: str) -> int:
    """The character offset jiter's `line L column C` (1-based, in bytes) points at."""
    found = _WHERE.search(detail)
    if found is None:
        return 0
    line, column = int(found.group(1)), int(found.group(2))
    data = text.encode("utf-8", "surrogatepass")
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
    target = max(start + column - 1, start)
    return len(data[:target].decode("utf-8", "ignore"))
