"""What the browser tests share: a page watched for console errors, uncaught errors and dialogs."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
from playwright.sync_api import Page


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
