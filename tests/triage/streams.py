"""Streams the triage tests share: one ambiguous continuation, buried or alone."""

from __future__ import annotations

from typing import Any

from tests.streamkit import chunk, frag, records
from webapp.core.records import Record

TWO_HEADERS = [
    chunk(frag(0, "call_w", "get_weather", "")),
    chunk(frag(1, "call_f", "book_flight", "")),
    chunk(frag(args='{"city": "Paris"}')),
    chunk(frag(1, args='{"to": "Oslo"}')),
    chunk(finish="tool_calls"),
]
"""Two headers, then a bare continuation: it lands on book_flight while get_weather waits."""


def buried(size: int = 5_000) -> list[Record]:
    """`size` chunks: text, then TWO_HEADERS' three calls chunks, then index-1 spaces."""
    values: list[dict[str, Any]] = [chunk(content=f"word {i} ") for i in range(size // 2)]
    values += TWO_HEADERS[:3]
    values += [chunk(frag(1, args=" ")) for _ in range(size - len(values) - 1)]
    values.append(chunk(finish="tool_calls"))
    return records(values)
