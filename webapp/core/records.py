"""What an input reader hands to the assembler: records, with the line each starts on."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

RecordKind = Literal["chunk", "done", "invalid"]


@dataclass(frozen=True, slots=True)
class Record:
    """One item of a stream: a parsed chunk, the `[DONE]` sentinel, or text that did not parse."""

    kind: RecordKind
    line: int | None
    value: Any = None
    """The parsed chunk (kind "chunk"): what `JSON.parse` gives, already wrapped in a chunk
    envelope when the input held a bare delta, choice or fragment (see `wrapped`)."""
    text: str = ""
    """The record's payload as it appeared in the input (the SSE data, the JSON text)."""
    error: str | None = None
    """Kind "invalid": what is wrong, in words, with the parser's own message."""
    event: str | None = None
    """The SSE `event:` field, when there was one (`error` ends the stream, as upstream)."""
    wrapped: str | None = None
    """How a bare value was wrapped into a chunk: "delta", "choice", "tool_calls", or None."""


@dataclass(frozen=True, slots=True)
class Entry:
    """Another candidate stream found in the same input (a HAR holds several), not followed."""

    label: str
    detail: str = ""
    number: int | None = None
    """Its number in the input (a HAR entry's 1-based place in `log.entries`), to pick it by."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Everything a reader found: the records in order plus what a person should know."""

    format: str
    """The reader that produced the records: "sse", "json", "jsonl", "har" or "repr" (an HTTP
    dump reports its body's format and sets `meta["container"] = "http"`)."""
    records: Sequence[Record]
    """A tuple, or `Payloads` for a plain SSE stream (parsed when asked for)."""
    notes: tuple[str, ...] = ()
    """Things worth saying that are not errors: a truncated last line, a skipped header block."""
    model: str | None = None
    """The request's model, when the input carried the request (HAR)."""
    tools: tuple[dict[str, Any], ...] = ()
    """The request's declared tools (HAR `postData`), for display only."""
    others: tuple[Entry, ...] = ()
    """Other streams found in the input and not followed (HAR entries beyond the first)."""
    entries: tuple[Entry, ...] = ()
    """Every stream found in the input, the one read included (a HAR's event-stream entries,
    in order), for a page to offer: `read(..., har_entry=entry.number)` reads another."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else a reader wants shown (request URL without query, response status)."""


MakeRecord = Callable[[str, int, bool], Record]
"""A reader's record for one payload: its text, its line, whether the input ended inside it."""


Payload = str | bytes
"""A plain stream's payload: its text, or its UTF-8 bytes when it was read from bytes."""


class Payloads(Sequence[Record]):
    """The records of a plain stream kept as their payloads, each parsed when asked for.

    A plain SSE stream (one `data: ` line per event, one blank line between events) is most
    long streams. Its parsed chunks would take about ten times the text's memory, and the
    assembler needs each only once, in order: it reads the payloads itself
    (`Assembler.payloads`). Everyone else sees an ordinary sequence of records, equal to the
    tuple the reader would have built, made again on each access (a window of steps parses
    only its own chunks).

    The payloads are kept in `segments` of about `webapp.core.readers.sse.SEGMENT` bytes,
    each some consecutive payloads joined by `separator` (`"\\n\\ndata: "`), not as one object
    each: a hundred thousand small objects would hold the input's memory twice over once the
    assembler had freed them (a freed small object's memory goes back to Python's allocator
    only when nothing else lives in its pool), and a reader cuts its input a segment at a time,
    never holding it whole. `cut(k)` splits one segment into its payloads (the last one split
    is kept). A payload is text, or valid UTF-8 bytes when the stream was read from bytes
    (`webapp.core.readers.read_plain`): orjson parses either, and `text` decodes it.
    """

    __slots__ = ("_cut", "_make", "at_end", "first_line", "firsts", "segments", "separator")

    def __init__(
        self,
        segments: list[Payload | None],
        firsts: list[int],
        separator: Payload,
        first_line: int,
        make: MakeRecord,
        *,
        at_end: bool,
    ) -> None:
        self.segments = segments
        """The payloads, a segment at a time (None: let go by `let_go`)."""
        self.firsts = firsts
        """The position of each segment's first payload, then the number of payloads."""
        self.separator = separator
        self.first_line = first_line
        """The line of the first payload; each next one is two lines further down."""
        self.at_end = at_end
        """Whether the input ended inside the last event (no blank line after it)."""
        self._make = make
        self._cut: tuple[int, list[Payload]] = (-1, [])

    def cut(self, segment: int) -> list[Payload]:
        """The payloads of segment `segment`, in order (each "" once it was let go)."""
        cached = self._cut  # read once: another thread may cut another segment meanwhile
        if cached[0] == segment:
            return cached[1]
        whole = self.segments[segment]
        if whole is None:
            pieces: list[Payload] = [""] * (self.firsts[segment + 1] - self.firsts[segment])
        else:
            split: Any = whole.split  # `separator` is of the segment's kind, text or bytes
            pieces = split(self.separator)
        self._cut = (segment, pieces)
        return pieces

    def let_go(self, segment: int) -> None:
        """Free segment `segment`'s payloads: a caller that reads each payload once is done
        with them (the CLI's `check` and `trace --format json`, whose peak is then lower)."""
        self.segments[segment] = None
        if self._cut[0] == segment:
            self._cut = (-1, [])

    def payload(self, position: int) -> Payload:
        """The payload at `position` (0 <= position < len(self))."""
        segment = bisect_right(self.firsts, position) - 1
        return self.cut(segment)[position - self.firsts[segment]]

    @property
    def payloads(self) -> list[Payload]:
        """Every payload, in order (a list made on each access)."""
        return [piece for at in range(len(self.segments)) for piece in self.cut(at)]

    def text(self, position: int) -> str:
        """The payload at `position` as text."""
        payload = self.payload(position)
        return payload if isinstance(payload, str) else payload.decode("utf-8")

    def line(self, position: int) -> int:
        """The input line of the record at `position`."""
        return self.first_line + 2 * position

    def parsed(self, position: int, value: Any) -> Record:
        """The record at `position` from its payload already parsed (a JSON chunk)."""
        return Record(kind="chunk", line=self.line(position), value=value, text=self.text(position))

    def __len__(self) -> int:
        return self.firsts[-1]

    @overload
    def __getitem__(self, position: int) -> Record: ...
    @overload
    def __getitem__(self, position: slice) -> tuple[Record, ...]: ...
    def __getitem__(self, position: int | slice) -> Record | tuple[Record, ...]:
        if isinstance(position, slice):
            return tuple(self[at] for at in range(*position.indices(len(self))))
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("record index out of range")
        last = position == len(self) - 1
        return self._make(self.text(position), self.line(position), last and self.at_end)

    def __iter__(self) -> Iterator[Record]:
        for position in range(len(self)):
            yield self[position]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Payloads):
            return (self.first_line, self.at_end, len(self)) == (
                other.first_line,
                other.at_end,
                len(other),
            ) and all(self.text(at) == other.text(at) for at in range(len(self)))
        return isinstance(other, tuple | list) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        texts = tuple(self.text(at) for at in range(len(self)))
        return hash((texts, self.first_line, self.at_end))

    def __repr__(self) -> str:
        return f"Payloads({len(self)} records from line {self.first_line})"


class ReaderError(ValueError):
    """The input is not any stream this tool can read; the message says what was tried."""
