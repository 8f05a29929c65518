"""JSON and JSON Lines with `//` and `/* */` comments and trailing commas, as people annotate."""

from __future__ import annotations

from webapp.core.readers import read

A = '{"choices": [{"index": 0, "delta": {"content": "a"}}]}'
B = '{"choices": [{"index": 0, "delta": {"content": "b // not a comment /* nor this */"}}]}'


def test_json_lines_with_comments_read_on_with_a_note_naming_the_lines() -> None:
    text = f"{A}  // the first chunk\n{B}\n/* the end */\n[DONE]\n"
    result = read(text)
    assert result.format == "jsonl"
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 1), ("chunk", 2), ("done", 4)]
    assert result.records[1].value["choices"][0]["delta"]["content"].startswith("b // not")
    assert result.records[0].text == f"{A}  // the first chunk"
    (note,) = result.notes
    assert "comments" in note and "lines 1, 3" in note


def test_pretty_json_with_comments_and_trailing_commas() -> None:
    text = (
        "[\n"
        "  // the header\n"
        '  {"choices": [{"index": 0, "delta": {"tool_calls": [\n'
        '    {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""},},\n'
        "  ]}}]},\n"
        "  /* then the\n"
        "     arguments */\n"
        f"  {A},\n"
        "]\n"
    )
    result = read(text)
    assert result.format == "json"
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 3), ("chunk", 8)]
    (note,) = result.notes
    assert "comments and trailing commas" in note
    assert "lines 2, 4, 6, 8" in note


def test_a_record_that_still_fails_names_the_line_and_the_comment() -> None:
    text = f'{A}\n{{"choices": [tru]}} // fix me\n{A}\n'
    result = read(text)
    assert [(r.kind, r.line) for r in result.records] == [
        ("chunk", 1),
        ("invalid", 2),
        ("chunk", 3),
    ]
    error = result.records[1].error or ""
    assert "line 2: '// fix me'" in error
    assert result.records[1].text == '{"choices": [tru]}'


def test_a_record_that_still_fails_in_pretty_json_names_the_comment() -> None:
    text = '{\n  "choices": [\n    tru // was true\n  ]\n}\n' + A + "\n"
    result = read(text, "json")
    assert [(r.kind, r.line) for r in result.records] == [("invalid", 1), ("chunk", 6)]
    assert "line 3: '// was true'" in (result.records[0].error or "")


def test_comment_markers_inside_strings_are_left_alone() -> None:
    result = read(f"{B}\n{B}\n")
    assert result.notes == ()
    assert result.records[0].text == B
