"""Cassettes on the command line: bodies kept gzip-encoded are read (with `--redact` too, which
masks what they hold), and one that holds more than the limit is refused naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.clikit import Invoke, Write
from tests.core.readers.test_cassette_bounds import bomb
from tests.web.test_web_cassettes import KEY, _with_secret

CASSETTES = Path(__file__).resolve().parents[1] / "corpus" / "cassettes"


@pytest.mark.parametrize("path", sorted(CASSETTES.glob("*.yaml")), ids=lambda path: path.name)
@pytest.mark.parametrize("redact", [False, True], ids=["as is", "--redact"])
def test_a_real_gzip_cassette_is_checked(invoke: Invoke, path: Path, redact: bool) -> None:
    result = invoke("check", str(path), *(["--redact"] if redact else []))
    assert result.exit_code in (0, 1), result.output  # 1: the stream's quirks, as `check` says
    assert "input  cassette | 2 records | model gemini-2.0-flash" in result.stdout
    assert "base64 secret" not in result.stderr  # --redact reads the text, not its base64


def test_redact_masks_a_secret_inside_a_gzip_body(invoke: Invoke, write: Write) -> None:
    path = write(_with_secret(), "c.yaml")
    result = invoke("trace", path, "--redact", "--format", "json")
    assert result.exit_code == 0, result.output
    assert KEY not in result.stdout and "sk-proj-" in result.stdout
    assert "redacted 1 secret: API key" in result.stderr


def test_the_alias_bomb_is_refused_naming_the_limit(invoke: Invoke, write: Write) -> None:
    result = invoke("check", write(bomb(1 << 20, 6100), "bomb.yaml"))
    assert result.exit_code == 2
    assert "pass the size limit of 67,108,864 bytes at interaction 65" in result.stderr
