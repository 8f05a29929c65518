"""The replay's pure part: the bytes one piece per record, their pace, the non-stream twin."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from webapp.core.contract import read_contract
from webapp.core.readers import read, read_bytes
from webapp.examples import EXAMPLES
from webapp.triage.replay import (
    NoTwin,
    Paced,
    body,
    parse_speed,
    piece_arrivals,
    pieces,
    schedule,
    twin,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


@pytest.mark.parametrize(
    "name",
    ["interleaved-parallel-calls.sse", "real/openai-gpt4o-parallel-obfuscation.sse",
     "real/mistral-large-parallel-noindex.sse"],
)  # fmt: skip
def test_the_pieces_are_the_stored_bytes_exactly_one_per_record(name: str) -> None:
    data = (CORPUS / name).read_bytes()
    found = read_bytes(data, "auto", None, None)
    assert body(found, data) == data
    cut = pieces(found, data)
    assert b"".join(cut) == data
    assert len(cut) == len(found.records)
    for piece, record in zip(cut, found.records, strict=True):
        assert record.text.encode() in bytes(piece)


def test_comments_and_a_tail_ride_with_the_record_they_stand_by() -> None:
    data = b': keep-alive\n\ndata: {"a":1}\r\n\r\n: ping\n\ndata: [DONE]\n\n\n'
    found = read_bytes(data, "sse", None, None)
    cut = pieces(found, data)
    assert b"".join(cut) == data
    assert len(cut) == 2
    assert bytes(cut[1]).startswith(b": ping") and bytes(cut[1]).endswith(b"[DONE]\n\n\n")


def test_a_stream_that_is_not_plain_sse_is_served_as_one_event_per_record() -> None:
    lines = [
        {"choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    text = "\n".join(json.dumps(line) for line in lines)
    found = read(text, "jsonl")
    assert body(found, text.encode()) is None
    cut = pieces(found, None)
    assert cut == [f"data: {json.dumps(line)}\n\n".encode() for line in lines]


def test_the_pace_is_the_recorded_gaps_divided_by_the_speed() -> None:
    paced = Paced((b"a", b"b", b"c", b"d"), (150.0, 150.0, None, 400.0), first_byte=100.0)
    assert schedule(paced, 1.0) == [0.05, 0.05, 0.05, 0.3]
    assert schedule(paced, 2.0) == [0.025, 0.025, 0.025, 0.15]
    assert schedule(paced, 0.0) == [0.0] * 4
    assert schedule(Paced((b"a", b"b"), None), 1.0) == [0.0, 0.0]
    without_headers = Paced((b"a", b"b"), (70.0, 90.0))
    assert schedule(without_headers, 1.0) == pytest.approx([0.0, 0.02])


def test_times_never_go_back() -> None:
    paced = Paced((b"a", b"b", b"c"), (10.0, 5.0, 20.0), first_byte=0.0)
    assert schedule(paced, 1.0) == [0.01, 0.01, 0.02]


def test_a_piece_that_holds_two_records_arrives_with_the_later() -> None:
    data = b'data: {"a":1}\ndata: {"b":2}\n\ndata: [DONE]\n\n'
    found = read_bytes(data, "sse", None, None)
    cut = pieces(found, data)
    assert b"".join(cut) == data
    assert piece_arrivals(found, data, [5.0, 7.0, 9.0][: len(found.records)])[-1] == 9.0


@pytest.mark.parametrize(
    ("text", "why"),
    [("fast", "must be a number"), ("-1", "from 0 to"), ("nan", "from 0 to"),
     ("1e9", "from 0 to")],
)  # fmt: skip
def test_a_bad_speed_says_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_speed(text)
    assert parse_speed(None) is None
    assert parse_speed(" 2 ") == 2.0


def test_the_twin_holds_the_intended_calls() -> None:
    found = read(EXAMPLES["interleaved"].data().decode(), "auto")
    answer = twin(read_contract(found.records), found.records, name="x")
    assert isinstance(answer, dict)
    assert answer["object"] == "chat.completion" and answer["id"] == "chatcmpl-demo"
    (choice,) = answer["choices"]
    assert choice["finish_reason"] == "tool_calls"
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"])
             for c in choice["message"]["tool_calls"]]  # fmt: skip
    assert calls == [
        ("call_w1", "get_weather", '{"city":"Paris"}'),
        ("call_t1", "get_time", '{"tz":"Europe/Paris"}'),
    ]


def test_the_twin_repairs_a_resent_argument_string() -> None:
    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "f", "arguments": '{"a":'}}]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "1}"}}]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"a":1}'}}]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    found = read(text, "sse")
    answer = twin(read_contract(found.records), found.records, name="x")
    assert isinstance(answer, dict)
    (call,) = answer["choices"][0]["message"]["tool_calls"]
    assert call["function"]["arguments"] == '{"a":1}'


def test_a_stream_with_two_readings_has_no_twin() -> None:
    found = read(EXAMPLES["ambiguous"].data().decode(), "auto")
    answer = twin(read_contract(found.records), found.records, name="x")
    assert isinstance(answer, NoTwin)
    assert answer.message.startswith("the stream admits two readings: ")
    assert "most recently opened" in answer.message


def test_the_twin_carries_the_text_and_a_stop() -> None:
    text = (
        'data: {"model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
    )
    found = read(text, "sse")
    answer = twin(read_contract(found.records), found.records, name="abc")
    assert isinstance(answer, dict)
    assert answer["id"] == "chatcmpl-replay-abc" and answer["model"] == "m"
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "Hello"}
    assert answer["choices"][0]["finish_reason"] == "stop"


def _har_of(*bodies: str, encode: bool = False) -> str:
    entries = []
    for text in bodies:
        content: dict[str, str] = {"mimeType": "text/event-stream", "text": text}
        if encode:
            content = {**content, "text": base64.b64encode(text.encode()).decode(),
                       "encoding": "base64"}  # fmt: skip
        entries.append({"request": {"method": "POST", "url": "https://x/v1/chat/completions"},
                        "response": {"status": 200, "content": content}})  # fmt: skip
    return json.dumps({"log": {"version": "1.2", "entries": entries}})


@pytest.mark.parametrize("encode", [False, True])
def test_a_har_entry_is_cut_from_its_own_response_body(encode: bool) -> None:
    first = EXAMPLES["clean"].data().decode()
    second = ': OPENROUTER PROCESSING\n\nid: 7\ndata: {"choices":[]}\r\n\r\ndata: [DONE]\n\n'
    har = _har_of(first, second, encode=encode)
    found = read(har, "auto", har_entry=2)
    data = body(found, har.encode())
    assert data == second.encode()
    cut = pieces(found, data)
    assert b"".join(cut) == second.encode() and len(cut) == len(found.records) == 2
    assert pieces(read(har, "auto", har_entry=1), body(read(har, "auto", 1), har)) == [
        piece for piece in pieces(read(first, "sse"), first.encode())
    ]


def test_a_cassettes_interaction_is_cut_from_its_inflated_body() -> None:
    text = (CORPUS / "cassettes" / "gemini-openai-compat-gzip-list-of-int.yaml").read_text()
    found = read(text, "auto")
    data = body(found, text)
    assert data is not None
    cut = pieces(found, data)
    assert b"".join(cut) == data and len(cut) == len(found.records)
