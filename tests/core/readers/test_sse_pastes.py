"""SSE as people paste it: log lines grepped down to `data:` lines, with no blank line between."""

from __future__ import annotations

import pytest

from webapp.core.readers import read

A = '{"choices":[{"index":0,"delta":{"content":"a"}}]}'
B = '{"choices":[{"index":0,"delta":{"content":"b"}}]}'


def test_grepped_data_lines_are_read_one_record_per_line() -> None:
    text = f"data: {A}\ndata: {B}\ndata: {A}\ndata: [DONE]\n"
    result = read(text)
    assert [(r.kind, r.line) for r in result.records] == [
        ("chunk", 1),
        ("chunk", 2),
        ("chunk", 3),
        ("done", 4),
    ]
    assert [r.text for r in result.records] == [A, B, A, "[DONE]"]
    (note,) = result.notes
    assert note.startswith("1 event joined data: lines that are each a complete chunk")
    assert "read one record per line" in note and "a paste is not the wire" in note


def test_split_events_keep_their_event_line_and_are_counted() -> None:
    text = f"event: x\ndata: {A}\ndata: {B}\n\ndata: {A}\n\ndata: {B}\ndata: {A}\n"
    result = read(text)
    assert [(r.kind, r.line, r.event) for r in result.records] == [
        ("chunk", 1, "x"),
        ("chunk", 3, "x"),
        ("chunk", 5, None),
        ("chunk", 7, None),
        ("chunk", 8, None),
    ]
    assert result.notes[0].startswith("2 events joined data: lines")
    assert "(first on line 1)" in result.notes[0]


@pytest.mark.parametrize(
    "data",
    [
        ['{"choices":', "[]}"],  # the joined text parses: SSE's own multi-line data
        [A, "{oops"],  # a line that is not JSON on its own
        [A, "[DONE]", B],  # [DONE] not last
        [A, "[DONE]"],  # a chunk and [DONE] only: a missing blank line on the wire
    ],
)
def test_otherwise_the_data_lines_are_joined_as_upstream_joins_them(data: list[str]) -> None:
    text = "".join(f"data: {line}\n" for line in data)
    result = read(text, "sse")
    assert len(result.records) == 1
    assert result.records[0].text == "\n".join(data)
    assert not any("one record per line" in note for note in result.notes)
