"""Streams and headers shared by the web tests (imported by name, like tests/cli's helpers)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from playwright.sync_api import Page

Store = Callable[..., str]
"""The `store` fixture: a stream's text in, its id out."""


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


@dataclass
class Watched:
    """A page plus what it reported: console errors, uncaught errors, dialogs."""

    page: Page
    base: str
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def store(self, text: str, title: str = "browser test") -> str:
        """Store a stream through the API; its id."""
        response = httpx.post(f"{self.base}/api/streams", json={"text": text, "title": title})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def assert_clean(self) -> None:
        """Nothing went to the console as an error, nothing threw, no dialog opened."""
        assert self.errors == []
        assert self.dialogs == []
