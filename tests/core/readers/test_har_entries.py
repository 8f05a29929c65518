"""Picking a HAR's entry: the listing in the result, a chosen entry, and a wrong one refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webapp.core.readers import read
from webapp.core.records import ReaderError

ONE = 'data: {"choices":[{"index":0,"delta":{"content":"one"}}]}\n\ndata: [DONE]\n\n'
TWO = 'data: {"choices":[{"index":0,"delta":{"content":"two"}}]}\n\ndata: [DONE]\n\n'


def entry(url: str, mime: str, body: str) -> dict[str, Any]:
    return {
        "request": {"method": "POST", "url": url},
        "response": {"status": 200, "content": {"mimeType": mime, "text": body}},
    }


HAR = json.dumps(
    {
        "log": {
            "entries": [
                entry("https://example.com/", "text/html", "<html></html>"),
                entry("https://a.example/v1/chat/completions", "text/event-stream", ONE),
                entry("https://b.example/v1/chat/completions", "text/event-stream", TWO),
                entry("https://c.example/v1/chat/completions", "text/event-stream", ""),
            ]
        }
    }
)


def content(text: str, **options: Any) -> list[str]:
    result = read(text, **options)
    return [r.value["choices"][0]["delta"]["content"] for r in result.records if r.kind == "chunk"]


def test_the_result_lists_every_event_stream_entry_with_its_number() -> None:
    result = read(HAR)
    assert [(e.number, e.label, e.detail) for e in result.entries] == [
        (2, "entry 2: POST https://a.example/v1/chat/completions (200)", ""),
        (3, "entry 3: POST https://b.example/v1/chat/completions (200)", ""),
        (4, "entry 4: POST https://c.example/v1/chat/completions (200)", "no response body saved"),
    ]
    assert result.meta["entry"] == 2
    assert [e.number for e in result.others] == [3, 4]
    assert content(HAR) == ["one"]


@pytest.mark.parametrize("fmt", ["auto", "har"])
def test_a_chosen_entry_is_read(fmt: str) -> None:
    result = read(HAR, fmt, har_entry=3)
    assert result.meta["entry"] == 3
    assert content(HAR, fmt=fmt, har_entry=3) == ["two"]
    assert [e.number for e in result.others] == [2, 4]
    assert result.notes[0].startswith("read entry 3: POST https://b.example")


@pytest.mark.parametrize(
    ("number", "why"),
    [
        (9, "there is no entry 9 (the HAR has entries 1-4)"),
        (1, "entry 1 is not an event stream"),
        (4, "HAR entry 4: POST https://c.example/v1/chat/completions (200) holds no response"),
    ],
)
def test_a_wrong_entry_is_refused_with_the_list(number: int, why: str) -> None:
    with pytest.raises(ReaderError) as caught:
        read(HAR, har_entry=number)
    message = str(caught.value)
    assert message.startswith(why)
    assert "entry 2: POST https://a.example/v1/chat/completions (200); entry 3:" in message
    assert "entry 4: POST https://c.example/v1/chat/completions (200) (no response body" in message


def test_an_entry_for_input_that_is_not_a_har_is_an_error() -> None:
    with pytest.raises(ReaderError, match=r"an entry \(2\) was chosen, but the input is not a HAR"):
        read(ONE, har_entry=2)
