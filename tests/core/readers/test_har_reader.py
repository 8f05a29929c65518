"""HAR files from devtools: the first event stream, its request's model and tools, no secrets."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from webapp.core.readers import read
from webapp.core.records import ReaderError

CHUNK = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
BODY = f": hello\n\ndata: {json.dumps(CHUNK)}\n\ndata: [DONE]\n\n"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
SECRETS = ("sk-har-secret-000001", "cookie-secret-000002", "query-secret-000003", "xk-000004")


def entry(url: str, mime: str, body: str, *, encode: bool = False, status: int = 200) -> Any:
    content: dict[str, Any] = {"size": len(body), "mimeType": mime, "text": body}
    if encode:
        content["text"] = base64.b64encode(body.encode()).decode()
        content["encoding"] = "base64"
    return {
        "startedDateTime": "2024-01-01T00:00:00.000Z",
        "request": {
            "method": "POST",
            "url": f"{url}?key={SECRETS[2]}",
            "headers": [
                {"name": "authorization", "value": f"Bearer {SECRETS[0]}"},
                {"name": "api-key", "value": SECRETS[3]},
                {"name": "Cookie", "value": f"sid={SECRETS[1]}"},
            ],
            "cookies": [{"name": "sid", "value": SECRETS[1]}],
            "queryString": [{"name": "key", "value": SECRETS[2]}],
            "postData": {
                "mimeType": "application/json",
                "text": json.dumps({"model": "gpt-4o", "stream": True, "tools": TOOLS}),
            },
        },
        "response": {
            "status": status,
            "headers": [{"name": "set-cookie", "value": f"sid={SECRETS[1]}"}],
            "content": content,
        },
    }


def har(*entries: Any) -> str:
    return json.dumps({"log": {"version": "1.2", "entries": list(entries)}}, indent=2)


CHAT = "https://api.example.com/v1/chat/completions"
PAGE = entry("https://example.com/", "text/html", "<html></html>")


def test_plain_body() -> None:
    result = read(har(PAGE, entry(CHAT, "text/event-stream", BODY)))
    assert result.format == "har"
    assert [(r.kind, r.line, r.value) for r in result.records] == [
        ("chunk", 3, CHUNK),
        ("done", 5, None),
    ]
    assert result.meta == {"entry": 2, "method": "POST", "url": CHAT, "status": 200}
    assert any("within its response body" in note for note in result.notes)


def test_base64_body() -> None:
    result = read(har(entry(CHAT, "text/event-stream; charset=utf-8", BODY, encode=True)), "har")
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 3), ("done", 5)]
    assert any("base64" in note for note in result.notes)


def test_stream_recognised_by_its_body_when_the_mime_type_says_nothing() -> None:
    result = read(har(entry(CHAT, "", BODY.removeprefix(": hello\n\n"))))
    assert [r.kind for r in result.records] == ["chunk", "done"]


def test_several_streams_prefer_chat_completions_and_list_the_others() -> None:
    other = entry("https://api.example.com/v1/events", "text/event-stream", BODY, status=201)
    second = entry(CHAT, "text/event-stream", f"data: {json.dumps({'choices': []})}\n\n")
    empty = entry(CHAT, "text/event-stream", "")
    result = read(har(PAGE, other, entry(CHAT, "text/event-stream", BODY), second, empty))
    assert result.meta["entry"] == 3
    assert [e.label for e in result.others] == [
        "entry 2: POST https://api.example.com/v1/events (201)",
        f"entry 4: POST {CHAT} (200)",
        f"entry 5: POST {CHAT} (200)",
    ]
    assert result.others[2].detail == "no response body saved"


def test_model_and_tools_come_from_the_request() -> None:
    result = read(har(entry(CHAT, "text/event-stream", BODY)))
    assert result.model == "gpt-4o"
    assert result.tools == tuple(TOOLS)


def test_no_secret_reaches_the_result() -> None:
    result = read(
        har(entry(CHAT, "text/event-stream", BODY), entry(CHAT, "text/event-stream", BODY))
    )
    shown = repr(result)
    for secret in SECRETS:
        assert secret not in shown
    assert "key=" not in shown


def test_har_without_a_stream_is_an_error() -> None:
    with pytest.raises(ReaderError, match="2 entries but none is an event stream"):
        read(har(PAGE, PAGE))


def test_har_whose_streams_have_no_body_is_an_error() -> None:
    with pytest.raises(ReaderError, match="hold no response body"):
        read(har(entry(CHAT, "text/event-stream", "")))


def test_truncated_har_is_an_error_that_says_so() -> None:
    text = har(entry(CHAT, "text/event-stream", BODY))
    with pytest.raises(ReaderError, match="not a HAR file: the JSON does not parse"):
        read(text[: len(text) // 2])


def test_har_with_log_not_first_is_still_found() -> None:
    text = json.dumps(
        {"comment": "x", "log": {"entries": [entry(CHAT, "text/event-stream", BODY)]}}
    )
    assert read(text).format == "har"


def test_explicit_har_on_other_json_is_an_error() -> None:
    with pytest.raises(ReaderError, match=r"no log\.entries"):
        read(json.dumps(CHUNK), "har")
