"""The web tests' fixture types, htmx headers and sample stream (built with tests.streamkit)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from playwright.sync_api import Page

from tests.streamkit import chunk, frag, sse

Store = Callable[..., str]
"""The `store` fixture: a stream's text in, its id out."""


CONTINUATION = sse(
    chunk(frag(0, "call_1", "get_weather")),
    chunk(frag(args='{"city":')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
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
