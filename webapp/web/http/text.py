"""Text helpers for views: clipping long strings, pretty JSON, making any string printable, SSE."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.readers.writer import to_sse
from webapp.core.records import Record
from webapp.core.words import visible
from webapp.storage import StreamInfo

_SURROGATE = re.compile("[\ud800-\udfff]")


def as_sse(records: Sequence[Record]) -> str:
    """The records as SSE ending with `data: [DONE]` (added when the last record is not it): a
    minimised stream, a fixture's stream, the playground's stream."""
    text = to_sse(records)
    return text if records and records[-1].kind == "done" else text + "data: [DONE]\n\n"


def stream_title(info: StreamInfo) -> str:
    """The stream's title as pages print it (invisible characters shown as escapes,
    `webapp.core.words.visible`), or "Untitled stream"."""
    return visible(info.title or "Untitled stream")


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def printable(text: str) -> str:
    """The text with lone surrogates (valid in JSON, not in UTF-8) replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """The text printable and on one line: control characters (line breaks too) become spaces,
    runs of spaces one, and the ends are trimmed."""
    return " ".join(_LINE_BREAKING.sub(" ", printable(text)).split())


def one_line_head(text: str, limit: int) -> Clipped:
    """`clipped_head(one_line(text), limit)` reading only as much of `text` as it takes (a
    call's arguments can be megabytes; its first few hundred characters are shown). What was
    left out is counted as 1 when more follows the head, its length not being known."""
    size = 2 * limit + 64
    while True:
        # one_line of a prefix is a prefix of one_line of the whole (a cut word is cut short)
        line = one_line(text[:size])
        if size >= len(text):
            return clipped_head(line, limit)
        if len(line) > limit:
            return Clipped(line[:limit], 1)
        size *= 4


def tally(items: Iterable[str]) -> tuple[str, ...]:
    """Repeated items once each, in first-seen order, with a count ("x 3") when repeated."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return tuple(item if n == 1 else f"{item} \u00d7{n}" for item, n in counts.items())


def pretty_json(value: Any) -> str:
    """Indented JSON, non-ASCII kept as is."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=repr)


def literal(value: Any) -> str:
    """A short JSON rendering of a key's value (`absent` for None is the caller's business)."""
    return json.dumps(value, ensure_ascii=False, default=repr)


@dataclass(frozen=True, slots=True)
class Clipped:
    """A possibly long text cut to its head and tail, with how much was left out between."""

    head: str
    hidden: int = 0
    tail: str = ""


def clipped(text: str, limit: int) -> Clipped:
    """The text whole when it fits; else its first and last `limit // 2` characters."""
    if len(text) <= limit:
        return Clipped(text)
    half = max(1, limit // 2)
    return Clipped(text[:half], len(text) - 2 * half, text[-half:])


def clipped_head(text: str, limit: int) -> Clipped:
    """The text whole when it fits; else its first `limit` characters."""
    if len(text) <= limit:
        return Clipped(text)
    return Clipped(text[:limit], len(text) - limit)


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Accumulated text with what the current step appended highlighted, clipped to fit.

    Shown as: `… hidden_before more characters`, `before`, then `appended` (itself clipped in
    the middle when long).
    """

    hidden_before: int
    before: str
    appended: Clipped
    has_appended: bool
    total: int


def excerpt(
    text: str, appended: str, before_limit: int = 1200, appended_limit: int = 1200
) -> Excerpt:
    """Split `text` into what was there before and `appended` (its suffix), and clip both."""
    cut = len(text) - len(appended) if appended and text.endswith(appended) else len(text)
    before = text[:cut]
    hidden = max(0, len(before) - before_limit)
    return Excerpt(
        hidden_before=hidden,
        before=before[hidden:],
        appended=clipped(text[cut:], appended_limit),
        has_appended=cut < len(text),
        total=len(text),
    )
