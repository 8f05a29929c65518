"""Fixtures for the CLI tests: a click runner and stream files written under tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.cli.clikit import Invoke, Write
from webapp.cli import main


@pytest.fixture
def invoke() -> Invoke:
    """Run `streamviz ARGS...` in-process; stdin from `input`; colour from the environment."""

    def run(
        *args: str, input: bytes | str | None = None, env: dict[str, Any] | None = None
    ) -> Result:
        environment = {"NO_COLOR": None, "FORCE_COLOR": None, "TERM": "xterm-256color"}
        environment.update(env or {})
        return CliRunner(env=environment).invoke(main, list(args), input=input)

    return run


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Write text to a file under tmp_path and return its path."""

    def put(text: str, name: str = "stream.txt") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return put
