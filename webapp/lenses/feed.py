"""The stream as its transport would carry it: SSE text rebuilt from the records read."""

from __future__ import annotations

import json
from collections.abc import Iterable

from webapp.core.records import Record


def sse_text(records: Iterable[Record]) -> str:
    """One SSE event per record, `data: [DONE]` where the stream had it; `event:` kept.

    A record's payload is its text as it appeared in the input, so an HTTP dump, a HAR file or
    JSON Lines reach each client as the event stream the provider sent. A bare delta that the
    reader wrapped into a chunk is sent wrapped (no client reads a bare delta). Another API's
    own stream is never sent: no chat-completions client reads it (`webapp.lenses.not_run`).
    """
    events: list[str] = []
    for record in records:
        if record.kind == "done":
            payload = "[DONE]"
        elif record.kind == "chunk" and record.wrapped is not None:
            payload = json.dumps(record.value, ensure_ascii=False)
        else:
            payload = record.text
        lines = [f"event: {record.event}"] if record.event else []
        lines.extend(f"data: {line}" for line in payload.split("\n"))
        events.append("\n".join(lines) + "\n\n")
    return "".join(events)
