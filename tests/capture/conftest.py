"""Fixtures for the capture tests: a fake provider and streamviz in front of it, both real
uvicorn servers on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
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


Client = Callable[..., openai.OpenAI]
"""The `make_client` fixture: `make_client(base_url, **options)`."""


@pytest.fixture
def make_client() -> Iterator[Client]:
    """openai.OpenAI(base_url, ...) with no retries, each closed at the test's end."""
    made: list[openai.OpenAI] = []

    def make(base_url: str, **options: Any) -> openai.OpenAI:
        made.append(openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, **options))
        return made[-1]

    yield make
    for one in made:
        one.close()


@pytest.fixture
def rig(make_rig: Callable[..., Rig]) -> Rig:
    return make_rig()
