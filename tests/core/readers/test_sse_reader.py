"""The SSE reader: the OpenAI Node SDK's decoding, line by line, with start lines kept."""

from __future__ import annotations

import pytest

from webapp.core.readers import read
from webapp.core.readers.sse import read_sse
from webapp.core.records import Record

CHUNK = '{"choices":[{"index":0,"delta":{"content":"hi"}}]}'
VALUE = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}


def kinds(text: str) -> list[tuple[str, int | None]]:
    return [(r.kind, r.line) for r in read(text, "sse").records]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(f"data: {CHUNK}\n\n", [("chunk", 1)], id="data-with-space"),
        pytest.param(f"data:{CHUNK}\n\n", [("chunk", 1)], id="data-without-space"),
        pytest.param(f"data: {CHUNK}", [("chunk", 1)], id="no-final-newline"),
        pytest.param(
            f"data: {CHUNK}\r\n\r\ndata: [DONE]\r\n\r\n", [("chunk", 1), ("done", 3)], id="crlf"
        ),
        pytest.param(
            f"data: {CHUNK}\r\rdata: [DONE]\r\r", [("chunk", 1), ("done", 3)], id="lone-cr"
        ),
        pytest.param(
            f"data: {CHUNK}\n\ndata: {CHUNK}\ndata: [DONE]\n\n",
            [("chunk", 1), ("invalid", 3)],
            id="two-data-lines-join-into-one-payload",
        ),
        pytest.param(
            f": comment\n\n:another\ndata: {CHUNK}\n\n",
            [("chunk", 4)],
            id="comments-are-not-the-start",
        ),
        pytest.param(
            f"id: 1\nretry: 10\ndata: {CHUNK}\n\n",
            [("chunk", 1)],
            id="id-and-retry-ignored-but-start-the-record",
        ),
        pytest.param(
            f"data: {CHUNK}\n\n\n\n\ndata: [DONE]\n",
            [("chunk", 1), ("done", 6)],
            id="extra-blank-lines",
        ),
        pytest.param(
            f"data: {CHUNK}\ndata: [DONE]\n", [("invalid", 1)], id="no-blank-line-between-events"
        ),
    ],
)
def test_events_and_their_start_lines(text: str, expected: list[tuple[str, int]]) -> None:
    assert kinds(text) == expected


def test_multi_line_data_is_joined_with_newlines() -> None:
    text = 'data: {"choices":\ndata: [{"index":0,\ndata:"delta":{}}]}\n\n'
    (record,) = read(text, "sse").records
    assert record.kind == "chunk"
    assert record.text == '{"choices":\n[{"index":0,\n"delta":{}}]}'
    assert record.value == {"choices": [{"index": 0, "delta": {}}]}
    assert record.line == 1


def test_only_one_leading_space_is_removed() -> None:
    (record,) = read_sse('data:  "x"\n\n').records
    assert record.text == ' "x"'
    assert record.value == "x"


def test_event_field_is_kept_on_the_record() -> None:
    text = 'event: error\ndata: {"error":{"message":"boom"}}\n\ndata: [DONE]\n\n'
    records = read(text, "sse").records
    assert records[0] == Record(
        kind="chunk",
        line=1,
        value={"error": {"message": "boom"}},
        text='{"error":{"message":"boom"}}',
        event="error",
    )
    assert records[1].event is None


def test_event_name_does_not_leak_into_the_next_event() -> None:
    text = f"event: message\ndata: {CHUNK}\n\ndata: {CHUNK}\n\n"
    assert [r.event for r in read(text, "sse").records] == ["message", None]


def test_event_without_data_is_skipped_with_a_note() -> None:
    text = f"event: ping\n\ndata: {CHUNK}\n\nevent: ping\n\n"
    result = read(text, "sse")
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 3)]
    (note,) = [n for n in result.notes if "no data" in n]
    assert "2 events" in note and "line 1" in note and '"ping"' in note
    assert "upstream" in note and "JSON" in note


def test_a_data_line_without_colon_adds_empty_data() -> None:
    (record,) = read_sse("data\n\n").records
    assert record.kind == "invalid" and record.text == ""


def test_unknown_field_lines_are_ignored_and_noted() -> None:
    text = f'{{"a": 1}}\ndata: {CHUNK}\n\nhello world\n\n'
    result = read(text, "sse")
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 1)]
    (note,) = [n for n in result.notes if "not an SSE field" in n]
    assert "2 lines" in note and "line 1" in note


def test_done_must_be_exact() -> None:
    (record,) = read_sse("data: [DONE] \n\n").records
    assert record.kind == "invalid"
    assert "exactly" in (record.error or "")


def test_truncated_last_line_is_an_invalid_record_not_an_error() -> None:
    text = f'data: {CHUNK}\n\ndata: {{"choices":[{{"index":0,"delta":{{"cont'
    result = read(text, "sse")
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 1), ("invalid", 3)]
    last = result.records[-1]
    assert last.error is not None
    assert "Unterminated string" in last.error
    assert "seems to end inside this record" in last.error
    assert any("cut off" in note and "line 3" in note for note in result.notes)


def test_invalid_json_mid_stream_keeps_reading() -> None:
    text = f"data: {CHUNK}\n\ndata: {{not json}}\n\n: hi\ndata: {CHUNK}\n\ndata: [DONE]\n\n"
    records = read(text, "sse").records
    assert [(r.kind, r.line) for r in records] == [
        ("chunk", 1),
        ("invalid", 3),
        ("chunk", 6),
        ("done", 8),
    ]
    assert (
        records[1].error
        == "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    assert "seems to end" not in (records[1].error or "")


def test_bom_is_dropped() -> None:
    (record,) = read(f"\ufeffdata: {CHUNK}\n\n", "sse").records
    assert record.value == VALUE and record.line == 1


@pytest.mark.parametrize(
    ("payload", "ok"),
    [
        ("NaN", False),
        ('{"a": Infinity}', False),
        ("123456789012345678901234567890", True),
        ('"\\ud800"', True),
        ("[1,]", False),
        ("{'a': 1}", False),
        ('{"a":1}{"b":2}', False),
    ],
)
def test_json_rules_are_javascripts(payload: str, ok: bool) -> None:
    (record,) = read_sse(f"data: {payload}\n\n").records
    assert (record.kind == "chunk") is ok


def test_first_line_offsets_every_line() -> None:
    records = read_sse(f"\n\ndata: {CHUNK}\n\n", first_line=10).records
    assert [r.line for r in records] == [12]


def test_sse_explicitly_chosen_without_data_lines_is_an_error() -> None:
    from webapp.core.records import ReaderError

    with pytest.raises(ReaderError, match='no line starts with "data:"'):
        read('{"a": 1}\n', "sse")


def test_two_events_run_together_get_a_hint_and_the_rest_is_read() -> None:
    broken = 'data: {"choices":[{"index":0,"delta":{"content":"Par'
    text = f"{broken}\ndata: {CHUNK}\n\ndata: {CHUNK}\n\n"
    first, second = read_sse(text).records
    assert first.kind == "invalid" and first.line == 1
    assert "2 data: lines" in (first.error or "") and "blank line missing" in (first.error or "")
    assert second.kind == "chunk" and second.line == 4


def test_a_value_spread_over_data_lines_needs_no_hint() -> None:
    (record,) = read_sse('data: {"choices":\ndata: []}\n\n').records
    assert record.kind == "chunk" and record.value == {"choices": []}
