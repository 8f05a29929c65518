"""Records back to text: raw server-sent events, the format every reader round-trips.

A chunk is written as compact JSON on one `data:` line (`webapp.core.jsoncheck.dumps`), `[DONE]` as
itself, a record that did not parse as its own text (one `data:` line per line of it); an SSE
event name is kept. Events are separated by a blank line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from webapp.core.jsoncheck import dumps
from webapp.core.records import Record

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def record_text(record: Record) -> str:
    """The payload of one record: compact JSON for a chunk, its own text otherwise."""
    if record.kind == "chunk":
        return dumps(record.value).decode("utf-8")
    return record.text or ("[DONE]" if record.kind == "done" else "")


def to_sse(records: Iterable[Record]) -> str:
    """The records as SSE text, ending with a blank line."""
    parts: list[str] = []
    for record in records:
        event = f"event: {record.event}\n" if record.event else ""
        lines = _LINE_BREAK.split(record_text(record))
        parts.append(event + "".join(f"data: {line}\n" for line in lines) + "\n")
    return "".join(parts)
