"""The state panel on long arguments: clipped from offsets, parse state from marks."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.streamkit import frag, tool_stream
from webapp.core.assembler import assemble
from webapp.core.jsoncheck import classify
from webapp.core.options import Options
from webapp.web.backend.service import Source, TraceView
from webapp.web.backend.trace.arguments import LONG, LongText
from webapp.web.http import text as textmod
from webapp.web.http.text import clipped_head, excerpt, one_line, one_line_head
from webapp.web.views import panels, quirks


def _arguments(size: int) -> str:
    rng = random.Random(size)
    words = ["alpha", 'b\\"q', "\u00e9t\u00e9", "{x}", "[1, 2]", "\n"]
    content = " ".join(rng.choice(words) for _ in range(size // 5))
    return json.dumps({"path": "a.txt", "content": content, "n": [1, 2.5, None, True]})


def _view(pieces: list[str]) -> TraceView:
    chunks = [[frag(index=0, id="call_1", name="write", args="")]]
    chunks += [[frag(index=0, args=piece)] for piece in pieces]
    records = tool_stream(chunks)
    trace = assemble(records, Options())
    source: Any = Source(None, None, len(records))  # type: ignore[arg-type]
    return TraceView.build(source, Options(), trace)


def _split(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces, at = [], 0
    while at < len(text):
        size = rng.choice((0, 1, 7, 150, 900))
        pieces.append(text[at : at + size])
        at += size
    return pieces


def _check(view: TraceView, steps: list[int]) -> int:
    """Every step's card against `classify` and `excerpt` of the text so far; long ones counted."""
    block = view.trace.blocks[0]
    long = 0
    for step in steps:
        card = next(c for c in panels.state(view, step).cards if c.number == 0)
        state = block.state_at(step)
        assert state is not None
        expected = excerpt(state.text, state.appended)
        assert card.text == expected, step
        assert card.parse == classify(state.text).state, step
        long += len(state.text) >= LONG
    return long


@pytest.mark.parametrize(
    "tail",
    [
        [],  # stays partial, then complete at the end
        ["  ", "\n", "x", "}"],  # complete, whitespace, then invalid
    ],
)
def test_long_arguments_parse_state_equals_classify(tail: list[str]) -> None:
    text = _arguments(100_000)
    assert len(text) > LONG
    view = _view([*_split(text, 1), *tail])
    steps = list(range(view.last + 1))
    long_steps = _check(view, steps[::7] + steps[-12:])
    assert long_steps > 10


def test_long_arguments_broken_midway_stay_invalid() -> None:
    text = _arguments(100_000)
    broken = text[:70_000] + '"]]' + text[70_000:]
    view = _view(_split(broken, 2))
    steps = list(range(view.last + 1))
    assert _check(view, steps[::5] + steps[-3:]) > 10
    card = panels.state(view, view.last).cards[0]
    assert card.parse == "invalid" and card.parse_error


def test_long_arguments_are_clipped_with_counts() -> None:
    text = _arguments(200_000)
    view = _view(_split(text, 3))
    step = view.last - 1
    card = next(c for c in panels.state(view, step).cards if c.number == 0)
    block = view.trace.blocks[0]
    state = block.state_at(step)
    assert state is not None and len(state.text) >= LONG
    cut = len(state.text) - len(state.appended)
    assert card.text.total == len(state.text)
    assert card.text.hidden_before == cut - panels.BEFORE_LIMIT
    assert card.text.before == state.text[cut - panels.BEFORE_LIMIT : cut]
    assert card.parse == "partial" or card.parse == "complete"


def test_long_partial_value_is_its_heads() -> None:
    text = _arguments(200_000)
    view = _view(_split(text, 4))
    step = view.last // 2
    card = next(c for c in panels.state(view, step).cards if c.number == 0)
    assert card.parse == "partial"
    assert card.parsed_head == panels.HEAD_CHARS
    assert card.parsed is not None and len(card.parsed.head) == panels.VALUE_LIMIT
    assert card.parsed.head.startswith('{\n  "path": "a.txt",\n  "content": "')
    # a long text holds more than a head at every step: later steps show the same head's value
    assert panels.HEAD_CHARS < LONG
    later = next(c for c in panels.state(view, step + 7).cards if c.number == 0)
    assert later.parse == "partial" and later.parsed == card.parsed
    assert later.parsed_head == panels.HEAD_CHARS


def test_long_text_offsets() -> None:
    pieces = ["ab", "", "cde", "f", "ghij"]
    text = LongText(pieces)
    joined = "".join(pieces)
    for count in range(len(pieces) + 1):
        so_far = "".join(pieces[:count])
        assert text.length(count) == len(so_far)
        for chars in (0, 1, 3, 5, 20):
            assert text.tail(count, chars) == (so_far[-chars:] if chars else "")
            assert text.head(count, chars) == so_far[:chars]
    assert text.text(len(pieces)) == joined


def test_quirk_panel_reads_only_the_head_of_long_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The intended reading shows a call's first `ARGUMENTS_SHOWN` characters on one line:
    it reads a few of them, not the megabytes of a long call (at a million chunks, 10 MB three
    times per full page)."""
    text = _arguments(300_000)
    view = _view(_split(text, 3))
    contract = view.trace.contract
    assert contract is not None and contract.intended is not None
    assert len(contract.intended.calls[0].arguments) > 300_000
    expected = clipped_head(one_line(text), quirks.ARGUMENTS_SHOWN).head + "…"
    read: list[int] = []
    real = textmod._LINE_BREAKING

    class Spy:
        def sub(self, new: str, value: str) -> str:
            read.append(len(value))
            return real.sub(new, value)

    monkeypatch.setattr(textmod, "_LINE_BREAKING", Spy())
    shown = quirks.reading(contract)
    assert shown.calls
    assert shown.calls[0].arguments == expected
    assert read and max(read) <= 8 * quirks.ARGUMENTS_SHOWN


@given(st.text(alphabet=" \n\tab\x00\ud800é", max_size=80), st.integers(0, 30))
def test_one_line_head_is_the_head_of_one_line(text: str, limit: int) -> None:
    whole = clipped_head(one_line(text), limit)
    head = one_line_head(text, limit)
    assert head.head == whole.head
    assert bool(head.hidden) == bool(whole.hidden)
