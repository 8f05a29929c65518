"""What an input reader hands to the assembler: records, with the line each starts on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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
    records: tuple[Record, ...]
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


class ReaderError(ValueError):
    """The input is not any stream this tool can read; the message says what was tried."""
