"""A non-stream answer beside a stream: read as the calls its `message.tool_calls` hold, held to
what the stream means and to what each client received (`webapp.triage.diff.Twin`)."""

from __future__ import annotations

import json

import pytest

from tests.streamanswer import answer_har, answer_text, completion
from tests.streamkit import chunk, frag, sse
from webapp.core.contract.answer import answer_in, as_records
from webapp.core.readers import read
from webapp.core.records import ReaderError
from webapp.lenses.results import Call, LensResult
from webapp.triage.diff import diff
from webapp.triage.sides import Side, side

STREAM = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(0, args='{"city": "Pa')),
    chunk(frag(0, args='ris", "unit": "C"}')),
    chunk(finish="tool_calls"),
)
SAME = answer_text(("call_9", "get_weather", '{"unit":"C","city":"Paris"}'))
LYON = answer_text(("call_9", "get_weather", '{"city":"Lyon","unit":"C"}'))


def _side(text: str, label: str, **kwargs: object) -> Side:
    return side(read(text), label=label, **kwargs)  # type: ignore[arg-type]


def test_an_answer_holding_the_same_calls_is_same() -> None:
    found = diff(_side(STREAM, "stream"), _side(SAME, "answer"))
    assert found.same and found.b.answer and not found.a.answer
    twin = found.twin
    assert twin is not None and twin.answer == "b" and twin.same
    assert twin.reading.words == "same calls as the stream's intended reading"
    assert found.summary == "The stream and the non-stream answer mean the same calls: 1 call."
    document = found.to_json()
    assert document["b"]["kind"] == "answer" and document["twin"]["same"] is True


def test_an_answer_with_other_arguments_differs_at_arguments_city() -> None:
    found = diff(_side(STREAM, "stream"), _side(LYON, "answer"))
    assert not found.same
    twin = found.twin
    assert twin is not None and not twin.same
    assert twin.reading.words == (
        "differs from the stream's intended reading at call 1, `arguments.city`"
    )
    assert [c.words for c in twin.clients] == [
        "differs from what adr-0019 (this build) received at call 1, `arguments.city`",
        "differs from what exact-key (this build) received at call 1, `arguments.city`",
    ]
    assert found.to_json()["calls"][0]["differences"] == ['arguments.city: "Paris" vs "Lyon"']


def test_the_answer_may_be_side_a() -> None:
    found = diff(_side(LYON, "answer"), _side(STREAM, "stream"))
    assert found.twin is not None and found.twin.answer == "a" and not found.twin.same


def test_each_client_is_held_to_the_answer() -> None:
    lenses = (
        LensResult("openai-python", "1.99.0", "ok",
                   (Call("call_1", "get_weather", '{"city": "Paris", "unit": "C"}'),)),
        LensResult("pi-ai", "1.6.0", "ok", (Call("call_1", "get_weather", "{}"),)),
        LensResult("langchain", "0.3", "unavailable"),
    )  # fmt: skip
    found = diff(_side(STREAM, "stream", lenses=lenses), _side(SAME, "answer"))
    assert found.twin is not None
    words = [client.words for client in found.twin.clients]
    assert words[:3] == [
        "same calls as what openai-python 1.99.0 received",
        "differs from what pi-ai 1.6.0 received at call 1, `arguments.unit`",
        "langchain 0.3: not run",
    ]
    assert "pi-ai 1.6.0 received at call 1" in found.twin.sentence


def test_a_missing_or_extra_call_is_named() -> None:
    two = answer_text(
        ("c1", "get_weather", '{"city":"Paris","unit":"C"}'), ("c2", "get_time", "{}")
    )
    found = diff(_side(STREAM, "stream"), _side(two, "answer"))
    assert found.twin is not None
    assert found.twin.reading.where == (
        "call 2: it lacks the answer's get_time (1 call, the answer 2)"
    )


def test_an_answer_in_a_har_entry_is_read() -> None:
    har = answer_har(STREAM, LYON)
    assert answer_in(read(har)) is None  # entry 1, the stream, by default
    found = answer_in(read(har, har_entry=2))
    assert found is not None and [c.name for c in found.calls] == ["get_weather"]
    only = json.dumps({"log": {"entries": [json.loads(har)["log"]["entries"][1]]}})
    assert answer_in(read(only)) is not None  # a HAR holding only the answer


def test_an_answer_without_tool_calls_means_no_call() -> None:
    text = json.dumps(completion(finish="stop"))
    found = answer_in(read(text))
    assert found is not None and found.calls == () and found.finish_reason == "stop"
    assert [r.kind for r in as_records(found)] == ["chunk", "done"]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"object": "chat.completion", "choices": []}, "has no choices"),
        ({"object": "chat.completion"}, "has no choices"),
        ({"object": "chat.completion", "choices": [{"index": 0}]}, "has no message object"),
        ({"object": "chat.completion", "choices": [{"index": 0, "message": {"tool_calls": 3}}]},
         "message.tool_calls is int, not a list"),
        ({"object": "chat.completion",
          "choices": [{"index": 0, "message": {"tool_calls": [{"id": "x"}]}}]},
         "tool call 1 has no function object"),
    ],
)  # fmt: skip
def test_an_answer_that_cannot_be_read_says_why(value: object, said: str) -> None:
    with pytest.raises(ReaderError, match=said):
        side(read(json.dumps(value)), label="answer")


def test_a_stream_is_no_answer() -> None:
    assert answer_in(read(STREAM)) is None


def test_an_answer_read_alone_is_said_to_be_one() -> None:
    from webapp.core.readers import ANSWER_NOTE

    assert ANSWER_NOTE in read(SAME).notes
    assert ANSWER_NOTE not in read(STREAM).notes


def test_an_answer_in_a_cassette_interaction_is_read() -> None:
    cassette = json.dumps({"interactions": [{
        "request": {"method": "POST", "uri": "https://api.example/v1/chat/completions",
                    "body": json.dumps({"model": "m", "stream": False})},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"Content-Type": ["application/json"]},
                     "body": {"string": LYON}},
    }], "version": 1})  # fmt: skip
    found = diff(_side(STREAM, "stream"), _side(cassette, "cassette"))
    assert found.b.answer and found.twin is not None
    assert found.twin.reading.where == "call 1, `arguments.city`"
