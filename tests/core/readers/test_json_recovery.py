"""Recovery after a broken JSON value follows its brackets, so it does not need indentation."""

from __future__ import annotations

from webapp.core.readers import read

GOOD = '{"choices": [{"index": 0, "delta": {"content": "a"}}]}'
BROKEN = '{"choices": [{"index": 0, "delta": {"content": tru}}]}'


def kinds(text: str, fmt: str = "json") -> list[tuple[str, int | None]]:
    return [(r.kind, r.line) for r in read(text, fmt).records]


def test_broken_values_on_one_line_each_cost_only_themselves() -> None:
    text = f"[{GOOD},{BROKEN},{GOOD}, {BROKEN} ,{GOOD}]"
    result = read(text)
    assert [r.kind for r in result.records] == ["chunk", "invalid", "chunk", "invalid", "chunk"]
    assert [r.text for r in result.records if r.kind == "invalid"] == [BROKEN, BROKEN]
    assert not any("separators" in note for note in result.notes)


def test_concatenated_values_on_one_line() -> None:
    text = f"{GOOD}{BROKEN}{GOOD} {BROKEN}\n{GOOD}"
    assert kinds(text) == [
        ("chunk", 1),
        ("invalid", 1),
        ("chunk", 1),
        ("invalid", 1),
        ("chunk", 2),
    ]


def test_a_truncated_record_ends_at_the_next_line_that_opens_a_value() -> None:
    text = f'{GOOD}\n{{"choices": [{{"index": 0, "delta": {{"content": "a\n{GOOD}\n'
    assert kinds(text) == [("chunk", 1), ("invalid", 2), ("chunk", 3)]


def test_a_truncated_element_ends_where_the_array_closes() -> None:
    text = f'[\n  {GOOD},\n  {{"choices": [\n    {{"index": 0,\n]\n{GOOD}\n'
    result = read(text)
    assert [(r.kind, r.line) for r in result.records] == [
        ("chunk", 2),
        ("invalid", 3),
        ("chunk", 6),
    ]


def test_a_stray_closing_bracket_or_comma_is_one_invalid_record() -> None:
    text = f"{GOOD}\n}}\n{GOOD}\n"
    assert kinds(text) == [("chunk", 1), ("invalid", 2), ("chunk", 3)]


def test_mismatched_brackets_close_at_the_outer_one() -> None:
    text = f'{{"choices": [{{"index": 0}}}}\n{GOOD}\n'
    assert kinds(text) == [("invalid", 1), ("chunk", 2)]


def test_a_long_valid_value_straddling_the_parse_window_is_read_whole() -> None:
    long = '{"choices": [{"index": 0, "delta": {"content": "' + "x" * 5000 + '"}}]}'
    number = '{"n": ' + "1" * 3000 + "}"
    result = read(f"{long}\n{number}\n{long}\n")
    assert [r.kind for r in result.records] == ["chunk", "chunk", "chunk"]
    assert result.records[1].value == {"n": int("1" * 3000)}
