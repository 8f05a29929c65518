"""Gemini's streamGenerateContent, Bedrock's ConverseStream events, Ollama's native /api/chat and
the Vercel AI SDK's UI message stream are read in their own terms: the calls they mean from
their own fields, and only the quirks their own bytes prove (these streams were refused by
name before: test_not_streams kept that refusal until they were read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.readers.native_streams import (
    OLLAMA_DOCS,
    OLLAMA_GENERATE,
    OLLAMA_NEWER,
    VERCEL_PARIS,
    VERCEL_PARTS,
    VERCEL_UI,
)
from webapp.core.contract import Contract, read_contract
from webapp.core.readers import decode, read, read_bytes
from webapp.core.readers.cassette import to_cassette
from webapp.core.records import ReaderError, ReadResult

NATIVE = Path(__file__).resolve().parents[2] / "corpus" / "native"


def calls(contract: Contract) -> list[tuple[object, object, object]]:
    assert contract.intended is not None, contract.why
    return [(c.id, c.name, json.loads(c.arguments)) for c in contract.intended.calls]


def reading(text: str) -> tuple[ReadResult, Contract]:
    result = read(text)
    return result, read_contract(result.records)


# (file, what it is read as, the calls it means: id, name, arguments)
RECORDED = [
    pytest.param(
        "gemini3pro-wholecall.sse",
        "gemini",
        [(None, "weather", {"location": "San Francisco"})],
        id="gemini-3-pro-whole-call",
    ),
    pytest.param(
        "gemini31pro-vertex-streamed-args.sse",
        "gemini",
        [
            (None, "getWeather", {"location": "Boston"}),
            (None, "getWeather", {"location": "San Francisco"}),
        ],
        id="gemini-3.1-pro-streamed-arguments",
    ),
    pytest.param(
        "bedrock-kimi-k2-thinking-read-file.jsonl",
        "bedrock",
        [("functions.read_file:1", "read_file", {"target_file": "src/cursor-config.ts"})],
        id="bedrock-kimi-k2-thinking",
    ),
    pytest.param(
        "bedrock-claude-get-weather.jsonl",
        "bedrock",
        [("toolu_01PQjhxo3eirCdKNvCJrKc8f", "get-weather", {"location": "San Francisco"})],
        id="bedrock-claude",
    ),
    pytest.param(
        "bedrock-nova-micro-get-temperature.eventstream",
        "bedrock",
        [("tooluse_lAG_zP8QRHmSYOwZzzaCqA", "get_temperature", {"city": "Paris"})],
        id="bedrock-nova-micro-binary-event-stream",
    ),
    pytest.param(
        "ollama-llama32-docs-tool.jsonl",
        "ollama",
        [(None, "get_weather", {"city": "Tokyo"})],
        id="ollama-docs",
    ),
    pytest.param(
        "vercel-ui-openrouter-claude-parallel.sse",
        "vercel",
        [
            ("toolu_bdrk_01L6Xsux1sqgXSsd2xi64poF", "add", {"a": 2, "b": 3}),
            ("toolu_bdrk_014pCKe2FHbyMZerLY1JxG4a", "multiply", {"a": 2, "b": 3}),
        ],
        id="vercel-ui-from-a-recording",
    ),
]


@pytest.mark.parametrize(("name", "kind", "expected"), RECORDED)
def test_a_recorded_stream_reads_as_the_calls_its_own_fields_say(
    name: str, kind: str, expected: list[tuple[object, object, object]]
) -> None:
    data = (NATIVE / name).read_bytes()
    result = read_bytes(data)
    assert result.meta["mapped_from"] == kind
    assert "read in its own terms" in result.notes[0]
    contract = read_contract(result.records)
    assert calls(contract) == expected
    assert contract.codes == frozenset(), contract.quirks
    assert contract.error is None


def test_gemini_stop_after_a_call_is_its_normal_end() -> None:
    result, contract = reading((NATIVE / "gemini3pro-wholecall.sse").read_text())
    finishes = [
        r.value["choices"][0]["finish_reason"]
        for r in result.records
        if r.kind == "chunk" and r.value["choices"][0]["finish_reason"]
    ]
    assert finishes == ["tool_calls"]
    assert result.model == "gemini-3-pro-preview"
    assert "stop-with-calls" not in contract.codes


GEMINI_CALL = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}


def _gemini(parts: list[object], finish: str | None = "STOP") -> str:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    return json.dumps({"candidates": [candidate], "modelVersion": "gemini-2.5-flash"})


@pytest.mark.parametrize(
    "text",
    [
        json.dumps([json.loads(_gemini([GEMINI_CALL]))], indent=2),
        f"data: {_gemini([GEMINI_CALL])}\r\n\r\n",
        _gemini([GEMINI_CALL]),
    ],
    ids=["alt-json-array", "alt-sse", "one-response"],
)
def test_gemini_is_read_however_it_was_saved(text: str) -> None:
    result, contract = reading(text)
    assert result.meta["mapped_from"] == "gemini"
    assert calls(contract) == [(None, "get_weather", {"city": "Paris"})]
    assert contract.codes == frozenset()


def test_gemini_parallel_calls_in_one_response_are_two_calls_and_text_is_content() -> None:
    second = {"functionCall": {"id": "fc_2", "name": "get_time", "args": {"tz": "CET"}}}
    parts = [{"text": "Checking.", "thought": True}, {"text": "Sure."}, GEMINI_CALL, second]
    result, contract = reading(f"data: {_gemini(parts)}\n\n")
    assert calls(contract) == [
        (None, "get_weather", {"city": "Paris"}),
        ("fc_2", "get_time", {"tz": "CET"}),
    ]
    deltas = [r.value["choices"][0]["delta"] for r in result.records]
    assert {"reasoning_content": "Checking."} in deltas and {"content": "Sure."} in deltas


def test_gemini_without_a_finish_reason_is_said_to_have_none() -> None:
    """The bytes prove it: no response carries finishReason (a stream cut short)."""
    _, contract = reading(f"data: {_gemini([GEMINI_CALL], finish=None)}\n\n")
    assert contract.codes == {"no-finish"}


def test_a_gemini_call_with_no_args_has_empty_arguments() -> None:
    _, contract = reading(_gemini([{"functionCall": {"name": "get_time"}}]))
    assert calls(contract) == [(None, "get_time", {})]


BEDROCK = [
    {"messageStart": {"role": "assistant"}},
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Let me look."}}},
    {"contentBlockStop": {"contentBlockIndex": 0}},
    {
        "contentBlockStart": {
            "contentBlockIndex": 1,
            "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
        }
    },
    {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":'}}}},
    {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '"Paris"}'}}}},
    {"contentBlockStop": {"contentBlockIndex": 1}},
    {"messageStop": {"stopReason": "tool_use"}},
    {"metadata": {"usage": {"inputTokens": 10, "outputTokens": 5}}},
]


def _lines(events: list[dict[str, object]]) -> str:
    return "".join(json.dumps(event) + "\n" for event in events)


def _payloads(events: list[dict[str, object]]) -> str:
    """The event-stream's payloads alone, each with the `p` padding AWS adds."""
    return "".join(
        json.dumps({**body, "p": "abcdefgh"}) + "\n"
        for event in events
        for body in event.values()
        if isinstance(body, dict)
    )


@pytest.mark.parametrize("text", [_lines(BEDROCK), _payloads(BEDROCK)], ids=["sdk", "payloads"])
def test_bedrock_is_read_by_its_content_block_index(text: str) -> None:
    result, contract = reading(text)
    assert result.meta["mapped_from"] == "bedrock"
    assert calls(contract) == [("tooluse_1", "get_weather", {"city": "Paris"})]
    assert contract.codes == frozenset()


def test_bedrock_end_turn_after_a_call_is_said_since_its_bytes_say_it() -> None:
    ended = [*BEDROCK[:-2], {"messageStop": {"stopReason": "end_turn"}}]
    _, contract = reading(_lines(ended))
    assert contract.codes == {"stop-with-calls"}


def test_bedrock_input_for_a_block_never_started_names_no_call() -> None:
    stray = [
        {"contentBlockDelta": {"contentBlockIndex": 3, "delta": {"toolUse": {"input": "{}"}}}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]
    _, contract = reading(_lines([*BEDROCK[:-2], *stray]))
    assert contract.intended is None
    assert "name no call" in str(contract.why)


def test_a_bedrock_exception_is_the_providers_error() -> None:
    failed = [*BEDROCK[:5], {"modelStreamErrorException": {"message": "boom"}}]
    _, contract = reading(_lines(failed))
    assert contract.error is not None and "boom" in contract.error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (OLLAMA_DOCS, [(None, "get_weather", {"city": "Tokyo"})]),
        (OLLAMA_NEWER, [("call_k1", "get_weather", {"city": "Paris"})]),
        (
            json.dumps([json.loads(line) for line in OLLAMA_NEWER.splitlines()], indent=2),
            [("call_k1", "get_weather", {"city": "Paris"})],
        ),
    ],
    ids=["docs", "newer", "pretty-printed"],
)
def test_ollama_reads_each_tool_call_whole(
    text: str, expected: list[tuple[object, object, object]]
) -> None:
    result, contract = reading(text)
    assert result.meta["mapped_from"] == "ollama"
    assert calls(contract) == expected
    assert contract.codes == frozenset()  # done_reason "stop" is Ollama's normal end


def test_ollama_parallel_calls_naming_one_index_are_two_calls() -> None:
    """Ollama's native API sends each call whole: two entries are two calls, whatever
    `function.index` they name (its OpenAI-compatible endpoint's shared-index is not this)."""
    line = json.loads(OLLAMA_NEWER.splitlines()[0])
    first = line["message"]["tool_calls"][0]
    second = {"id": "call_k2", "function": {"index": 0, "name": "get_time", "arguments": {}}}
    line["message"]["tool_calls"] = [first, second]
    text = json.dumps(line) + "\n" + OLLAMA_NEWER.splitlines()[1] + "\n"
    _, contract = reading(text)
    assert calls(contract) == [
        ("call_k1", "get_weather", {"city": "Paris"}),
        ("call_k2", "get_time", {}),
    ]
    assert contract.codes == frozenset()


def test_ollama_generate_is_its_text() -> None:
    result, contract = reading(OLLAMA_GENERATE)
    assert result.meta["mapped_from"] == "ollama"
    assert [r.value["choices"][0]["delta"] for r in result.records[1:3]] == [
        {"content": "That"},
        {"content": "!"},
    ]
    assert calls(contract) == [] and contract.codes == frozenset()


def test_a_hostile_name_is_kept_as_the_stream_sent_it() -> None:
    hostile = OLLAMA_NEWER.replace("get_weather", "get\\u001b[31m_weather")
    _, contract = reading(hostile)
    assert calls(contract) == [("call_k1", "get\x1b[31m_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VERCEL_UI, [("call-1", "tool1", {"value": "value"})]),
        (VERCEL_PARIS, [("call_1", "get_weather", {"city": "Paris"})]),
        (VERCEL_PARTS, [("call-1", "tool1", {"value": "value"})]),
    ],
    ids=["ui-snapshot", "ui-docs", "stream-parts"],
)
def test_the_vercel_streams_read_as_their_calls(
    text: str, expected: list[tuple[object, object, object]]
) -> None:
    result, contract = reading(text)
    assert result.meta["mapped_from"] == "vercel"
    assert calls(contract) == expected
    assert contract.codes == frozenset()  # a finish naming "stop" after a call is no quirk


def test_a_vercel_input_other_than_its_pieces_is_noted_and_the_pieces_kept() -> None:
    text = VERCEL_PARIS.replace('"input":{"city":"Paris"}', '"input":{"city":"Lyon"}')
    result, contract = reading(text)
    assert calls(contract) == [("call_1", "get_weather", {"city": "Paris"})]
    assert any(
        "1 tool-input-available gave an input other than its pieces" in n for n in result.notes
    )


EVENT_STREAM = (NATIVE / "bedrock-nova-micro-get-temperature.eventstream").read_bytes()


def test_the_binary_event_stream_reads_as_its_events_one_a_line() -> None:
    text = decode(EVENT_STREAM)
    lines = text.splitlines()
    assert len(lines) == 26  # one a frame
    assert lines[0].startswith('{"messageStart": {')
    assert json.loads(lines[-2]) == {
        "messageStop": {"p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNO", "stopReason": "tool_use"}
    }


def test_an_event_stream_cut_short_keeps_the_frames_before_the_cut() -> None:
    cut = EVENT_STREAM[: len(EVENT_STREAM) - 40]  # into the last frame (metadata)
    result = read_bytes(cut)
    assert result.records[-1].kind == "invalid"
    assert "the event stream breaks at byte" in result.records[-1].text
    contract = read_contract(result.records)
    assert calls(contract) == [
        ("tooluse_lAG_zP8QRHmSYOwZzzaCqA", "get_temperature", {"city": "Paris"})
    ]


def test_a_frame_whose_checksum_fails_ends_the_events_there() -> None:
    broken = bytearray(EVENT_STREAM)
    broken[200] ^= 0xFF  # inside the second frame
    lines = decode(bytes(broken)).splitlines()
    assert len(lines) == 2
    assert "a frame whose checksum fails" in lines[1] or "does not check" in lines[1]


def test_a_cassette_holding_the_event_stream_reads_it() -> None:
    cassette = to_cassette("")
    document = yaml.safe_load(cassette)
    response = document["interactions"][0]["response"]
    response["body"]["string"] = EVENT_STREAM
    response["headers"] = {"content-type": ["application/vnd.amazon.eventstream"]}
    text = yaml.safe_dump(document)
    result = read(text)
    assert result.format == "cassette" and result.meta["mapped_from"] == "bedrock"
    assert calls(read_contract(result.records))[0][1] == "get_temperature"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.integers(0, len(EVENT_STREAM)),
    st.lists(st.tuples(st.integers(0, len(EVENT_STREAM) - 1), st.integers(0, 255)), max_size=4),
)
def test_no_change_to_an_event_stream_makes_the_reader_fail_but_in_words(
    cut: int, changes: list[tuple[int, int]]
) -> None:
    data = bytearray(EVENT_STREAM[:cut] if cut > 16 else EVENT_STREAM)
    for at, byte in changes:
        if at < len(data):
            data[at] = byte
    try:
        result = read_bytes(bytes(data))
    except ReaderError as error:
        assert str(error).strip()
        return
    read_contract(result.records)


def test_a_vercel_stream_cut_by_its_length_says_so_even_after_a_call() -> None:
    text = VERCEL_PARIS.replace(
        'data: {"type":"finish"}', 'data: {"type":"finish","finishReason":"length"}'
    )
    result, _ = reading(text)
    finishes = [
        r.value["choices"][0]["finish_reason"]
        for r in result.records
        if r.kind == "chunk" and r.value["choices"][0]["finish_reason"]
    ]
    assert finishes == ["length"]
