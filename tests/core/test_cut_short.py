"""One answer to "was this JSON cut short?": a table over the probes that used to disagree."""

from __future__ import annotations

import pytest

from webapp.core.jsoncheck import Completion, classify, cut_short
from webapp.core.readers import read

PROBES = [
    # (text, cut short?, what classify says)
    ('{"a":', True, "partial"),
    ('{"a": "Par', True, "partial"),
    ('"abc', True, "partial"),
    ('"\\u12', True, "partial"),
    ('"\\', True, "partial"),
    ("[1,", True, "partial"),
    ("[", True, "partial"),
    ("tru", True, "partial"),
    ("-", True, "partial"),
    ("1.", True, "partial"),
    ("1e", True, "partial"),  # a valid prefix of 1e5
    ("1e+", True, "partial"),
    ('{"a" ', True, "partial"),
    ("[1 2]", False, "invalid"),
    ('{"a": NaN}', False, "invalid"),
    ('{"a": Infinity}', False, "invalid"),
    ('{"a":1}x', False, "invalid"),
    ('{"a":1} {', False, "invalid"),  # two values glued: no suffix mends it
    ('"a" "b"', False, "invalid"),
    ("trux", False, "invalid"),
    ("01", False, "invalid"),
    ("[1,]", False, "invalid"),
    ('{"a": "\\x"}', False, "invalid"),
    ('{"a":1}', False, "complete"),
    ("1e5", False, "complete"),
    ("   ", False, "empty"),
    ("", False, "empty"),
]


@pytest.mark.parametrize(("text", "short", "state"), PROBES)
def test_one_answer(text: str, short: bool, state: str) -> None:
    assert cut_short(text) is short
    assert classify(text).state == state


@pytest.mark.parametrize(("text", "short", "state"), [p for p in PROBES if p[2] != "empty"])
def test_the_last_sse_record_is_called_cut_off_only_when_it_is(
    text: str, short: bool, state: str
) -> None:
    result = read(f'data: {{"choices": []}}\n\ndata: {text}\n', "sse")
    said_cut_off = any("cut off" in note for note in result.notes)
    assert said_cut_off is short


@pytest.mark.parametrize(
    ("prefix", "rest"),
    [("1e", "5"), ("1e+", "5"), ("-", "1"), ("tru", "e"), ("nul", "l"), ("1.", "5")],
)
def test_a_top_level_scalar_completes_once_it_is_whole(prefix: str, rest: str) -> None:
    completion = Completion()
    assert not completion.feed(prefix)
    assert completion.feed(rest)


def test_a_dead_scalar_never_completes() -> None:
    completion = Completion()
    for piece in ("1", "x", "1"):
        completion.feed(piece)
    assert not completion.complete
