"""Fixtures for the capture tests: a fake provider and streamviz in front of it, both real
uvicorn servers on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.capture.fake import Fake, serving
from webapp.settings import Settings
from webapp.web.app import create_app

KEY = "sk-proj-TESTKEY0123456789abcdefSECRET"
"""The API key the tests' clients send: it must reach the fake and nothing else."""


@dataclass
class Rig:
    """A fake provider, a streamviz serving it as upstream `default`, and their URLs."""

    fake: Fake
    upstream: str
    base: str
    """streamviz's base URL."""
    folder: Path

    @property
    def proxy(self) -> str:
        """The base URL a client is given: `.../proxy/default/v1`."""
        return f"{self.base}/proxy/default/v1"


@pytest.fixture
def make_rig(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    stack = ExitStack()

    def make(fake: Fake | None = None, **settings: object) -> Rig:
        fake = fake or Fake()
        upstream = stack.enter_context(serving(fake))
        folder = tmp_path / f"rig{len(stack._exit_callbacks)}"
        folder.mkdir()
        chosen = {"upstreams": (f"default={upstream}",), **settings}
        app = create_app(Settings(db=str(folder / "s.sqlite3"), **chosen))  # type: ignore[arg-type]
        base = stack.enter_context(serving(app))
        return Rig(fake, upstream, base, folder)

    with stack:
        yield make


@pytest.fixture
def rig(make_rig: Callable[..., Rig]) -> Rig:
    return make_rig()
