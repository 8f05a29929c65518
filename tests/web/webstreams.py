"""Streams and headers shared by the web tests (imported by name, like tests/cli's helpers)."""

from __future__ import annotations

import json
from typing import Any


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    """One SSE `data:` line holding a chunk with this delta."""
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return "data: " + json.dumps(body, separators=(",", ":"))


def sse(*deltas: dict[str, Any], finish: str = "tool_calls") -> str:
    """A small SSE stream: one chunk per delta, then a finish chunk and [DONE]."""
    lines = [chunk(delta) for delta in deltas]
    lines.append(chunk({}, finish))
    lines.append("data: [DONE]")
    return "\n\n".join(lines) + "\n\n"


CONTINUATION = sse(
    {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "get_weather"}}]},
    {"tool_calls": [{"function": {"arguments": '{"city":'}}]},
    {"tool_calls": [{"function": {"arguments": '"Paris"}'}}]},
)
"""A header, then two bare continuation fragments: 1 block under adr-0019, 3 under exact-key."""


HX = {"HX-Request": "true", "HX-Request-Type": "partial"}
"""What htmx 4 sends with a swap request."""
