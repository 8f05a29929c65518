"""JSON arrays, JSON Lines and `jq` output, bare values wrapped, broken values recovered from."""

from __future__ import annotations

import json

import pytest

from webapp.core.readers import read
from webapp.core.readers.jsontext import read_any_json
from webapp.core.records import ReaderError

CHUNK_A = {
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"role": "assistant"}}],
}
CHUNK_B = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}
FRAGMENT = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
MORE = {"index": 0, "function": {"arguments": '{"a":1}'}}


def summary(text: str, fmt: str = "auto") -> list[tuple[str, int | None, str | None]]:
    return [(r.kind, r.line, r.wrapped) for r in read(text, fmt).records]


def test_json_array_pretty_keeps_element_lines() -> None:
    text = json.dumps([CHUNK_A, CHUNK_B], indent=2)
    result = read(text, "json")
    assert result.format == "json"
    assert [r.value for r in result.records] == [CHUNK_A, CHUNK_B]
    assert [r.line for r in result.records] == [2, 13]
    assert read(text).records == result.records


def test_json_array_compact_is_all_line_one() -> None:
    text = json.dumps([CHUNK_A, CHUNK_B])
    assert summary(text) == [("chunk", 1, None), ("chunk", 1, None)]


def test_json_lines_with_done_and_crlf() -> None:
    text = f"{json.dumps(CHUNK_A)}\r\n\r\n{json.dumps(CHUNK_B)}\r\n[DONE]\r\n"
    result = read(text)
    assert result.format == "jsonl"
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 1), ("chunk", 3), ("done", 4)]
    assert read(text, "jsonl").records == result.records


def test_jq_pretty_concatenation() -> None:
    text = json.dumps(CHUNK_A, indent=2) + "\n" + json.dumps(CHUNK_B, indent=2) + "\n"
    result = read(text)
    assert result.format == "json"
    assert [(r.value, r.line) for r in result.records] == [(CHUNK_A, 1), (CHUNK_B, 12)]


def test_bare_deltas_from_jq_are_wrapped() -> None:
    text = '{\n  "role": "assistant",\n  "content": null\n}\n{\n  "tool_calls": []\n}\n{}\n'
    records = read(text).records
    assert [(r.line, r.wrapped) for r in records] == [(1, "delta"), (5, "delta"), (8, None)]
    assert records[0].value == {
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]
    }


def test_bare_choice_is_wrapped_and_keeps_its_index() -> None:
    choice = {"index": 1, "delta": {"content": "x"}, "finish_reason": "stop"}
    (record,) = read(json.dumps(choice)).records
    assert record.wrapped == "choice"
    assert record.value == {"choices": [choice]}
    (record,) = read('{"delta": {}}').records
    assert record.value == {"choices": [{"index": 0, "delta": {}}]}


def test_bare_fragments_each_become_a_one_fragment_chunk() -> None:
    text = json.dumps(FRAGMENT, indent=2) + "\n" + json.dumps(MORE, indent=2) + "\n"
    records = read(text).records
    assert [(r.line, r.wrapped) for r in records] == [(1, "tool_calls"), (9, "tool_calls")]
    assert records[1].value == {"choices": [{"index": 0, "delta": {"tool_calls": [MORE]}}]}


def test_an_array_of_fragments_is_one_delta() -> None:
    text = json.dumps([FRAGMENT, MORE], indent=2)
    (record,) = read(text).records
    assert record.wrapped == "tool_calls"
    assert record.line == 1
    assert record.value == {"choices": [{"index": 0, "delta": {"tool_calls": [FRAGMENT, MORE]}}]}


def test_jq_tool_calls_arrays_one_after_another_with_nulls() -> None:
    text = "null\n" + json.dumps([FRAGMENT], indent=2) + "\n" + json.dumps([MORE]) + "\n"
    records = read(text).records
    assert [(r.kind, r.line, r.wrapped) for r in records] == [
        ("chunk", 1, None),
        ("chunk", 2, "tool_calls"),
        ("chunk", 12, "tool_calls"),
    ]
    assert records[0].value is None


def test_non_object_values_stay_chunk_records() -> None:
    """The JSON reader keeps them (`read` then refuses an input of nothing else: `refusal`)."""
    records = read_any_json('42\n"x"\ntrue\n').records
    assert [(r.kind, r.value) for r in records] == [("chunk", 42), ("chunk", "x"), ("chunk", True)]


def test_invalid_json_mid_stream_in_jq_output_resumes_at_the_next_value() -> None:
    broken = '{\n  "choices": [\n    {"index": 0, "delta": {"content": tru}}\n  ]\n}'
    text = json.dumps(CHUNK_A, indent=2) + "\n" + broken + "\n" + json.dumps(CHUNK_B, indent=2)
    records = read(text).records
    assert [(r.kind, r.line) for r in records] == [("chunk", 1), ("invalid", 12), ("chunk", 17)]
    assert records[1].text == broken
    assert records[1].error == "Expecting value: line 3 column 39 (char 55)"
    assert records[2].value == CHUNK_B


def test_invalid_element_mid_array_resumes_at_the_next_element() -> None:
    lines = json.dumps([CHUNK_A, CHUNK_B, CHUNK_A], indent=2).split("\n")
    broken = next(i for i, line in enumerate(lines) if '"hi"' in line)
    lines[broken] = lines[broken].replace('"hi"', "'hi'")
    text = "\n".join(lines)
    records = read(text).records
    assert [(r.kind, r.line) for r in records] == [("chunk", 2), ("invalid", 13), ("chunk", 24)]
    assert records[1].error is not None and "line 6 column 22" in records[1].error
    assert records[1].text.startswith("{") and records[1].text.endswith("}")


def test_invalid_line_in_json_lines_costs_only_that_line() -> None:
    text = f"{json.dumps(CHUNK_A)}\n{{oops\n{json.dumps(CHUNK_B)}\n[DONE]\n"
    records = read(text).records
    assert [(r.kind, r.line) for r in records] == [
        ("chunk", 1),
        ("invalid", 2),
        ("chunk", 3),
        ("done", 4),
    ]
    assert records[1].text == "{oops"
    records = read(text, "jsonl").records
    assert [(r.kind, r.line) for r in records] == [
        ("chunk", 1),
        ("invalid", 2),
        ("chunk", 3),
        ("done", 4),
    ]


def test_truncated_json_says_the_input_ends_inside_the_record() -> None:
    text = json.dumps(CHUNK_A, indent=2) + "\n" + json.dumps(CHUNK_B, indent=2)[:-20]
    result = read(text)
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 1), ("invalid", 12)]
    assert "seems to end inside this record" in (result.records[1].error or "")
    assert any("cut off" in note for note in result.notes)


def test_truncated_array_is_noted() -> None:
    text = json.dumps([CHUNK_A, CHUNK_B], indent=2)[:-2]
    result = read(text)
    assert [r.kind for r in result.records] == ["chunk", "chunk"]
    assert any("not closed" in note for note in result.notes)


def test_loose_separators_are_read_and_noted() -> None:
    text = f"[{json.dumps(CHUNK_A)} {json.dumps(CHUNK_B)},]"
    result = read(text)
    assert [r.value for r in result.records] == [CHUNK_A, CHUNK_B]
    assert any("separators" in note for note in result.notes)


def test_nan_is_refused_like_javascript() -> None:
    text = '{"choices": [], "x": NaN}\n{"choices": []}\n'
    records = read(text).records
    assert [(r.kind, r.line) for r in records] == [("invalid", 1), ("chunk", 2)]
    assert "NaN" in (records[0].error or "")


def test_deeply_nested_values_beyond_the_stdlib_limit_still_parse() -> None:
    deep = "[" * 900 + "]" * 900
    (record,) = read(f'{{"choices": {deep}}}').records
    assert record.kind == "chunk"


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_explicit_json_format_that_finds_nothing_is_an_error(fmt: str) -> None:
    with pytest.raises(
        ReaderError, match=r"no JSON.* record found in the input: line 1: Expecting value"
    ):
        read("hello\n", fmt)
