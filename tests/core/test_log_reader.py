"""A pasted log is read as the chunks its lines carry, or refused as a log with what to paste.

Before, a log (lines starting with a timestamp) read as a JSON stream whose "chunks" were the
numbers 2026, -01, -01, with an invalid-chunk error for every other token."""

from __future__ import annotations

import json

import pytest

from tests.streamkit import chunk, frag
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.logs import carries_chunks, looks_like_log
from webapp.core.records import ReaderError

CHUNKS = [
    chunk(frag(0, "call_1", "get_weather", ""), model="gpt-4o"),
    chunk(frag(0, args='{"city":"Paris"}'), model="gpt-4o"),
    chunk(finish="tool_calls", model="gpt-4o"),
]


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def test_a_log_of_data_lines_is_read_as_its_chunks() -> None:
    lines = ["2026-01-01 12:00:00,001 INFO httpx: POST /v1/chat/completions 200"]
    lines += [
        f"2026-01-01 12:00:00,{n:03d} DEBUG sse data: {_json(c)}" for n, c in enumerate(CHUNKS)
    ]
    lines += ["2026-01-01 12:00:01,000 DEBUG sse data: [DONE]", "2026-01-01 12:00:01 INFO done"]
    result = read("\n".join(lines) + "\n")
    assert [(record.kind, record.line) for record in result.records] == [
        ("chunk", 2), ("chunk", 3), ("chunk", 4), ("done", 5),
    ]  # fmt: skip
    assert result.notes[0].startswith("this looks like a log: 4 of its 6 lines carry chunks")
    trace = assemble(result.records, Options())
    assert [(block.name, block.text) for block in trace.blocks] == [
        ("get_weather", '{"city":"Paris"}')
    ]
    assert not [anomaly for anomaly in trace.anomalies if anomaly.code == "invalid-chunk"]


def test_a_log_of_json_objects_is_read_too() -> None:
    lines = [f"[2026-01-01T12:00:0{n}Z] chunk received {_json(c)}" for n, c in enumerate(CHUNKS)]
    lines.insert(1, '[2026-01-01T12:00:00Z] request {"model": "gpt-4o", "stream": true}')
    result = read("\n".join(lines))
    assert [record.line for record in result.records] == [1, 3, 4]  # the request is no chunk


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-01 12:00:00 INFO start\n2026-01-01 12:00:01 INFO nothing streamed\n",
        "Jan  1 12:00:00 host app[1]: start\nJan  1 12:00:01 host app[1]: stop\n",
        "12:00:00.120 start\n12:00:00.300 stop\n",
    ],
)
def test_a_log_without_chunks_says_it_is_a_log_and_what_to_paste(text: str) -> None:
    with pytest.raises(ReaderError) as raised:
        read(text)
    said = str(raised.value)
    assert said.startswith("this looks like a log, not a stream")
    assert "paste the stream itself" in said and "data:" in said


def test_streams_are_no_logs() -> None:
    sse = "".join(f"data: {_json(c)}\n\n" for c in CHUNKS)
    assert not looks_like_log(sse)
    assert not looks_like_log("\n".join(_json(c) for c in CHUNKS))
    assert not looks_like_log("2026-01-01 one stamped line\n" + sse)


@pytest.mark.parametrize(
    "line",
    [
        "chunk {chunk}",  # console.log("chunk", JSON.stringify(chunk))
        "DEBUG:app.stream:chunk: {chunk}",  # Python's logging, no time in its format
        "message\t{chunk}\t12:00:00.{n}",  # a table's rows copied: type, data, time
    ],
)
def test_lines_that_carry_a_chunk_after_some_words_are_read_as_its_chunks(line: str) -> None:
    """Read as JSON, such lines were an invalid-chunk error per word and per time, and the
    chunks were lost among them (a trace of errors and no call)."""
    lines = [line.format(chunk=_json(c), n=100 + n) for n, c in enumerate(CHUNKS)]
    text = "\n".join(["starting the agent", *lines, "done"])
    assert carries_chunks(text)
    result = read(text)
    assert [(record.kind, record.line) for record in result.records] == [
        ("chunk", 2), ("chunk", 3), ("chunk", 4),
    ]  # fmt: skip
    assert result.notes[0].startswith("this looks like a log: 3 of its 5 lines carry chunks")
    trace = assemble(result.records, Options())
    assert [(block.name, block.text) for block in trace.blocks] == [
        ("get_weather", '{"city":"Paris"}')
    ]
    assert not trace.anomalies


def test_json_that_starts_its_lines_is_no_such_log() -> None:
    """JSON Lines, and an array with a chunk per line, start their lines with the JSON: they
    stay JSON's to read."""
    assert not carries_chunks("\n".join(_json(c) for c in CHUNKS))
    listed = "[\n" + ",\n".join(f"  {_json(c)}" for c in CHUNKS) + "\n]"
    assert not carries_chunks(listed)
    assert read(listed).format == "json"
    assert not carries_chunks(
        f"chunk {_json(CHUNKS[0])}\nsome words\nmore words\nand more"
    )  # one line of four: not most
