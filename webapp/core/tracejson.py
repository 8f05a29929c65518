"""The trace document: what `streamviz trace --format json` prints and the API returns, the
schema-1 trace with an "input" key saying what was read.

The trace's own JSON is written from its columns a batch of steps at a time
(`webapp.core.stepsjson`, through `Trace.json_parts`); this module adds what was read, and
falls back to the whole document built as one object (`webapp.core.jsoncheck.dumps`, ASCII
JSON) when orjson refuses a value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webapp.core.jsoncheck import dumps
from webapp.core.records import ReadResult
from webapp.core.trace import Trace


def input_json(source: ReadResult, records: int | None = None) -> dict[str, Any]:
    """What the reader found: the detected format, its notes, the request's model and tools.

    `records` counts the records when `source` no longer holds them (a web app's trace view).
    """
    return {
        "format": source.format,
        "records": len(source.records) if records is None else records,
        "notes": list(source.notes),
        "model": source.model,
        "tools": list(source.tools),
        "others": [{"label": entry.label, "detail": entry.detail} for entry in source.others],
        "meta": dict(source.meta),
    }


def trace_document(trace: Trace, source: ReadResult, records: int | None = None) -> dict[str, Any]:
    """The schema-1 trace with an "input" key describing what was read."""
    document = trace.to_json()
    document["input"] = input_json(source, records)
    return document


def trace_document_parts(
    trace: Trace, source: ReadResult, records: int | None = None
) -> list[bytes]:
    """`dumps(trace_document(trace, source))`, written from the columns a batch of steps at a
    time instead of as one object tree; the pieces joined are the same bytes."""
    try:
        return list(trace.json_parts({"input": input_json(source, records)}))
    except TypeError:
        # orjson refused a value (a lone surrogate, an integer beyond 64 bits): `dumps` writes
        # the whole document as ASCII JSON then, so the whole document is built.
        return [dumps(trace_document(trace, source, records))]


def trace_document_stream(trace: Trace, source: ReadResult) -> Iterator[bytes]:
    """The pieces of `trace_document_parts`, made while they are written when that is safe.

    orjson refuses only values no orjson-parsed chunk holds; when every chunk came from orjson
    (`Trace.orjson_values`) the fallback is never needed, and a long stream's document is
    never held whole (at 100,000 steps it is about 30 MB).
    """
    if trace.orjson_values:
        yield from trace.json_parts({"input": input_json(source)})
    else:
        yield from trace_document_parts(trace, source)
