"""No real recording holds a secret, and none is taken for one: every pass leaves each whole.

The header and command pass (`redact`), the content scan the home form previews and the API
masks with (`scan`), and both together as the CLI's --redact runs them (`scrub`). Before the
fix, 4 of the 17 recordings then kept here lost a chunk id or a reasoning signature to the scan.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.streamkit import RECORDINGS
from webapp.core.redact import redact
from webapp.core.redact.content import scan, scrub

KEY = b"real-recordings-key"


def test_the_recordings_are_all_here() -> None:
    assert len(RECORDINGS) >= 40
    assert {path.parent.name for path in RECORDINGS} == {"real", "recordings"}


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_secret_is_found_in_a_real_recording(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert redact(text).removed == ()
    found = scan(text, KEY)
    assert [(f.kind, f.line, text[f.start : f.start + 12]) for f in found] == []
    assert scrub(text) == (text, [])
