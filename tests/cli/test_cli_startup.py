"""A fast start: `--version`, `--help` and `check` load only what they use; all commands listed."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.cli.clikit import CLEAN, Invoke, Write
from tests.streamkit import sse
from webapp import __version__
from webapp.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "fastapi",
    "starlette",
    "jinja2",
    "uvicorn",
    "rich",
    "webapp.web",
    "webapp.storage",
    "webapp.lenses",
    "webapp.triage",
    "webapp.core.readers.detect",
    "webapp.core.readers.har",
    "webapp.core.readers.cassette",
    "webapp.core.readers.http",
    "webapp.core.readers.jsontext",
    "pathlib",
)
"""What a piped `check` of a clean stream has no use for: the web stack, the terminal colours,
the store, the client lenses, the triage code, the readers of formats other than a plain SSE
stream, and `pathlib` (its import and urllib's cost every command's start-up)."""


def loaded_after(*args: str) -> list[str]:
    """Run `streamviz ARGS...` in a fresh interpreter; the HEAVY modules loaded by its end."""
    code = (
        "import json, sys\nfrom webapp.cli import main\n"
        f"try:\n    main({list(args)!r}, prog_name='streamviz')\nexcept SystemExit:\n    pass\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({m for m in sys.modules for h in heavy\n"
        "                         if m == h or m.startswith(h + '.')})))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        environment.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    loaded: list[str] = json.loads(done.stdout.decode().splitlines()[-1])
    return loaded


def test_version_loads_nothing_heavy() -> None:
    assert loaded_after("--version") == []


def test_check_of_a_small_file_loads_nothing_heavy(tmp_path: Path) -> None:
    path = tmp_path / "one.sse"
    path.write_text(sse(*CLEAN), encoding="utf-8")
    assert loaded_after("check", str(path)) == []
    assert loaded_after("check", str(path), "--format", "json") == []


def test_help_lists_every_command_without_loading_any() -> None:
    assert loaded_after("--help") == []


def test_help_lists_every_command_and_both_spellings_of_minimise(invoke: Invoke) -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    listed = result.stdout.partition("Commands:")[2].split()
    for name in COMMANDS:
        assert name in listed
    assert {"minimise", "minimize", "trace", "check", "serve", "delete"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_loads_and_shows_its_help(name: str, invoke: Invoke) -> None:
    command = main.get_command(click.Context(main), name)
    assert isinstance(command, click.Command)
    result = invoke(name, "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Usage: main {name} ")


def test_an_unknown_command_is_a_usage_error(invoke: Invoke) -> None:
    result = invoke("minimse")
    assert result.exit_code == 2
    assert "No such command 'minimse'" in result.stderr


def test_minimize_is_minimise_by_its_other_spelling(invoke: Invoke, write: Write) -> None:
    path = write(sse(*CLEAN))
    british = invoke("minimise", path, "--until", "rule:new")
    american = invoke("minimize", path, "--until", "rule:new")
    assert british.exit_code == american.exit_code == 0, british.stderr
    assert british.stdout == american.stdout
    assert "minimise: done" in british.stderr
    assert "minimize: done" in american.stderr


def test_the_version_is_the_package_s(invoke: Invoke) -> None:
    assert __version__ == importlib.metadata.version("streamviz")
    result = invoke("--version")
    assert result.stdout == f"streamviz, version {__version__}\n"
