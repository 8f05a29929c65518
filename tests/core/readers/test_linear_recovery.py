"""Recovery after broken values that stay open costs time linear in the input, and says so.

A value nested in a broken one that never closes (`[` on every line) used to be parsed again
from each line to the same far error, and a depth error made the window grow to the end of the
input each time: 192 KB of such lines took 17-20 s. Now a wider window is not tried after a
depth error (it would meet it again), and what windows read past a broken value's end is
counted: past a budget linear in the input, values are read only as far as the resumer ends
them, with a note.

The old cost was the input's length times the log of it times a large constant (each window
doubled up to the end of the input), so a ratio of times at n and 8n stays near the bound of
20 there; the characters handed to the parser say it plainly (27,000 per character of 50 KB of
`[` lines before, 3 after), so they are counted too. The ratio tests are those of
tests/readers/test_linear_readers.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

import pytest

from tests.streamkit import chunk, frag
from tests.timing import GROWTH, assert_linear
from webapp.core.readers import read, recovery
from webapp.core.readers.recovery import WASTE_FLOOR, WASTE_PER_CHAR
from webapp.core.records import ReaderError

GOOD = json.dumps(chunk(frag(0, "call_1", "get_weather", "{}")))

CHAINS: dict[str, Callable[[int], str]] = {
    "an array opened on every line": lambda n: "[\n" * (n // 2),
    "an object and an array opened on every line": lambda n: '{"a": [\n' * (n // 8),
    "long lines that each open an array": lambda n: ("[" + "1," * 50 + "\n") * (n // 102),
    "arrays opened on every line, closed at the end": lambda n: (
        "[\n" * (n // 4) + "x" + "]" * (n // 4)
    ),
}
SHAPES = {
    **CHAINS,
    "open arrays between good chunks": lambda n: (GOOD + "\n" + "[\n" * 20) * (n // 140),
}


def _reading(text: str) -> Callable[[], object]:
    def run() -> None:
        with contextlib.suppress(ReaderError):
            read(text, "json")

    return run


@pytest.mark.parametrize("name", list(SHAPES))
def test_recovery_time_grows_linearly(name: str) -> None:
    build = SHAPES[name]
    n = 8_000
    small, large = build(n), build(GROWTH * n)
    assert_linear(name, _reading(small), _reading(large))


@pytest.mark.parametrize("name", list(CHAINS))
def test_the_windows_grow_with_the_input_not_with_its_square(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = 0
    scan_json = recovery.scan_json

    def counting(window: str, pos: int) -> object:
        nonlocal grown
        grown += max(0, len(window) - recovery._WINDOW)  # what a window grew to hold
        return scan_json(window, pos)

    monkeypatch.setattr(recovery, "scan_json", counting)
    text = CHAINS[name](50_000)
    with contextlib.suppress(ReaderError):
        read(text, "json")
    assert grown <= 3 * (WASTE_PER_CHAR * len(text) + WASTE_FLOOR), grown / len(text)


def test_past_the_budget_the_rest_of_the_stream_is_kept_with_a_note() -> None:
    junk = "[\n" * (WASTE_FLOOR // 10)  # each of these read about 2 KB past its end
    text = junk + "\n".join([GOOD] * 3) + "\n" + json.dumps(chunk(finish="tool_calls"), indent=2)
    result = read(text, "json")
    kinds = [record.kind for record in result.records]
    assert kinds.count("chunk") == 4  # the chunks after the junk, the pretty one too
    invalid = [record for record in result.records if record.kind == "invalid"]
    # the first line opens the array of which each line after it is a broken element
    assert invalid[0].line == 2 and invalid[0].error  # what is wrong, at which line
    (note,) = [note for note in result.notes if "parsed again" in note]
    assert "from line 2 on" in note and "read only until its brackets close" in note


@pytest.mark.parametrize(
    "text",
    [
        f"{GOOD}\n" + '{"choices": [{"index": 0, "delta": {"content": tru}}]}\n' + f"{GOOD}\n",
        f'[\n  {GOOD},\n  {{"choices": [\n    {{"index": 0,\n]\n{GOOD}\n',
        "[" * 5000 + f"\n{GOOD}\n",
        f"{GOOD}\n" * 3 + "[\n" * 100 + f"{GOOD}\n",
    ],
)
def test_an_ordinary_broken_paste_stays_far_from_the_budget(text: str) -> None:
    assert not any("parsed again" in note for note in read(text, "json").notes)


def test_a_value_deeper_than_the_parser_is_one_invalid_record_read_once() -> None:
    deep = "[" * 3000 + "]" * 3000
    result = read(f"{GOOD}\n{deep}\n{GOOD}\n", "json")
    assert [record.kind for record in result.records] == ["chunk", "invalid", "chunk"]
