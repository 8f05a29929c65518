"""Properties: every reader returns exactly what its writer wrote; no input breaks a reader."""

from __future__ import annotations

import json
import keyword
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.readers.stream_writers import (
    Expected,
    HarStyle,
    SseStyle,
    har,
    jq,
    json_array,
    jsonl,
    pyrepr,
    sse,
)
from webapp.core.readers import FORMATS, decode, read
from webapp.core.records import ReaderError, ReadResult

KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: not keyword.iskeyword(k) and k != "log"
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
CHOICE = st.fixed_dictionaries(
    {"index": st.integers(0, 3), "delta": st.dictionaries(KEYS, VALUES, max_size=3)},
    optional={"finish_reason": st.none() | st.sampled_from(["stop", "tool_calls"])},
)
CHUNK = st.fixed_dictionaries(
    {"choices": st.lists(CHOICE, max_size=2)},
    optional={
        "id": st.text(max_size=8),
        "usage": VALUES,
        "object": st.just("chat.completion.chunk"),
    },
)
CHUNKS = st.lists(CHUNK, min_size=1, max_size=6)
FLAGS = st.lists(st.booleans(), min_size=1, max_size=4).map(tuple)
SSE_STYLE = st.builds(
    SseStyle,
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    data_space=FLAGS,
    comment_before=FLAGS,
    comment_inside=FLAGS,
    extra_fields=FLAGS,
    event_names=st.lists(st.none() | st.sampled_from(["message", "chunk"]), min_size=1).map(tuple),
    multiline=FLAGS,
    ascii=st.booleans(),
    bom=st.booleans(),
    final_blank=st.booleans(),
)
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def canonical(value: Any) -> str:
    """JSON text with sorted keys: tells `True` from `1`, unlike `==`."""
    return json.dumps(value, sort_keys=True)


def found(result: ReadResult) -> Expected:
    return [(r.kind, r.value, r.line, r.event) for r in result.records]


def assert_same(result: ReadResult, expected: Expected) -> None:
    assert [r.kind for r in result.records] == [e[0] for e in expected]
    assert [r.line for r in result.records] == [e[2] for e in expected]
    assert [r.event for r in result.records] == [e[3] for e in expected]
    assert [canonical(r.value) for r in result.records] == [canonical(e[1]) for e in expected]
    assert all(r.wrapped is None for r in result.records)


@PROPERTY
@given(CHUNKS, st.booleans(), SSE_STYLE)
def test_sse_round_trip(chunks: list[Any], done: bool, style: SseStyle) -> None:
    text, expected = sse(chunks, done, style)
    assert_same(read(text, "sse"), expected)
    assert_same(read(text), expected)


@PROPERTY
@given(CHUNKS, st.none() | st.integers(1, 4))
def test_json_array_round_trip(chunks: list[Any], indent: int | None) -> None:
    text, expected = json_array(chunks, indent)
    assert_same(read(text, "json"), expected)
    assert_same(read(text), expected)


@PROPERTY
@given(CHUNKS, st.booleans(), st.sampled_from(["\n", "\r\n"]), FLAGS)
def test_jsonl_round_trip(
    chunks: list[Any], done: bool, newline: str, blanks: tuple[bool, ...]
) -> None:
    text, expected = jsonl(chunks, done, newline, blanks)
    assert_same(read(text, "jsonl"), expected)
    assert_same(read(text), expected)
    assert_same(read(text, "json"), expected)


@PROPERTY
@given(CHUNKS)
def test_jq_round_trip(chunks: list[Any]) -> None:
    text, expected = jq(chunks)
    assert_same(read(text, "json"), expected)
    assert_same(read(text), expected)


@PROPERTY
@given(
    CHUNKS,
    st.booleans(),
    SSE_STYLE,
    st.builds(HarStyle, base64=st.booleans(), before=st.integers(0, 2), after=st.integers(0, 2)),
)
def test_har_round_trip(chunks: list[Any], done: bool, style: SseStyle, where: HarStyle) -> None:
    body, expected = sse(chunks, done, style)
    text = har(body.removeprefix("\ufeff"), where)
    for result in (read(text, "har"), read(text)):
        assert_same(result, expected)
        assert result.model == "gpt-test"
        assert result.meta["entry"] == where.before + 1
        assert "sk-writer-secret" not in repr(result)


@PROPERTY
@given(CHUNKS, FLAGS)
def test_repr_round_trip(chunks: list[Any], multiline: tuple[bool, ...]) -> None:
    text, expected = pyrepr(chunks, multiline)
    assert_same(read(text, "repr"), expected)
    assert_same(read(text), expected)


# --- no input breaks a reader ---------------------------------------------------------------


def read_safely(text: str) -> None:
    """Every format on `text`: a result with sane lines, or ReaderError, nothing else."""
    total = text.count("\n") + text.count("\r") + 1
    for fmt in ("auto", *FORMATS):
        try:
            result = read(text, fmt)
        except ReaderError as error:
            assert str(error)
            continue
        lines = [r.line for r in result.records]
        assert all(isinstance(n, int) and n >= 1 for n in lines)
        assert lines == sorted(lines)  # type: ignore[type-var]
        if result.format != "har":
            assert all(n <= total for n in lines)  # type: ignore[operator]
        for record in result.records:
            assert record.kind in ("chunk", "done", "invalid")
            assert (record.error is not None) == (record.kind == "invalid")


@PROPERTY
@given(st.text())
def test_any_text(text: str) -> None:
    read_safely(text)


@PROPERTY
@given(st.binary())
def test_any_bytes(data: bytes) -> None:
    read_safely(decode(data))


def written(draw: st.DrawFn) -> str:
    chunks = draw(CHUNKS)
    kind = draw(st.sampled_from(["sse", "array", "jsonl", "jq", "har", "repr", "http"]))
    if kind == "sse":
        return sse(chunks, True, draw(SSE_STYLE))[0]
    if kind == "array":
        return json_array(chunks, 2)[0]
    if kind == "jsonl":
        return jsonl(chunks, True, "\n", (False,))[0]
    if kind == "jq":
        return jq(chunks)[0]
    if kind == "har":
        return har(sse(chunks, True)[0], HarStyle(base64=draw(st.booleans())))
    if kind == "http":
        return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sse(chunks, True)[0]
    return pyrepr(chunks, (True, False))[0]


JUNK = st.sampled_from(
    ["{", "}", "[", "]", '"', "\\", ":", ",", "\n", "\r", "data:", "(", ")", "'"]
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = written(draw)
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["cut", "insert", "delete", "duplicate"]))
        if action == "cut":
            text = text[:at]
        elif action == "insert":
            text = text[:at] + draw(JUNK | st.text(max_size=6)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        else:
            text = text[:at] + text[max(0, at - 30) : at] + text[at:]
    return text


@PROPERTY
@given(mutated())
def test_mutated_streams(text: str) -> None:
    read_safely(text)


DEEP = 100_000


@pytest.mark.parametrize(
    "text",
    [
        "[" * DEEP,
        "[" * DEEP + "]" * DEEP,
        '{"a":' * DEEP,
        '{"choices": ' + "[" * DEEP + "]" * DEEP + "}",
        "data: " + "[" * DEEP + "]" * DEEP + "\n\n",
        "ChatCompletionChunk(x=" * DEEP,
        "ChatCompletionChunk(x=" + "-" * DEEP + "1)",
        "ChatCompletionChunk(x=" + "[" * DEEP + "]" * DEEP + ")",
        "ChatCompletionChunk(x=1" + "+1" * DEEP + ")",
        '{"log": {"entries": ' + "[" * DEEP + "]" * DEEP + "}}",
        "HTTP/1.1 200 OK\n\n" + "[" * DEEP,
        "ChoiceDelta(" + "x" * 2_000_000 + ")",
    ],
    ids=lambda text: text[:24],
)
def test_deep_nesting_and_huge_records(text: str) -> None:
    read_safely(text)
