"""`/replay/ID/...` through TestClient: what odd requests get, deleted and non-SSE streams."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.web.webkit import Store

CLEAN = "/replay/example:clean/v1/chat/completions"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("POST", "/replay/", b"", 404, "not_found"),
        ("POST", "/replay//v1/chat/completions", b"{}", 404, "stream_not_found"),
        ("GET", "/replay/example:clean", b"", 404, "not_found"),
        ("GET", "/replay/example:clean/v1/embeddings", b"", 404, "not_found"),
        ("POST", "/replay/example:clean/0/v1/chat/completions", b"", 404, "stream_not_found"),
        ("POST", "/replay/example:clean/99999999999999999999/v1/chat/completions", b"{}", 404,
         "stream_not_found"),
        ("POST", "/replay/%00%ff/v1/chat/completions", b"{}", 404, "stream_not_found"),
        ("POST", CLEAN + "?speed=-1", b"", 400, "bad_speed"),
        ("POST", CLEAN + "?speed=inf", b"", 400, "bad_speed"),
        ("PUT", "/replay/example:ambiguous/v1/chat/completions", b'{"stream": 0}', 409,
         "no_intended_reading"),
    ],
)  # fmt: skip
def test_odd_requests_get_an_openai_shaped_error_never_a_500(
    client: TestClient, method: str, path: str, body: bytes, status: int, code: str
) -> None:
    answer = client.request(method, path, content=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == code and error["type"] == "replay_error" and error["message"]


@pytest.mark.parametrize("body", [b"", b"not json", b"[1]", b'{"stream": true}', b"\xff\xfe"])
def test_a_request_without_a_json_object_or_with_stream_true_gets_the_bytes(
    client: TestClient, body: bytes
) -> None:
    answer = client.post(CLEAN, content=body, headers={"streamviz-replay-speed": "0"})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream"
    assert answer.headers["streamviz-stream-id"] == "example:clean"
    assert answer.content.startswith(b"data: ")


def test_a_bad_speed_header_is_a_400(client: TestClient) -> None:
    answer = client.get(CLEAN, headers={"streamviz-replay-speed": "warp"})
    assert answer.status_code == 400 and "must be a number" in answer.json()["error"]["message"]


def test_a_deleted_stream_is_a_404_that_says_so(client: TestClient) -> None:
    created = client.post("/api/streams", json={"text": 'data: {"choices":[]}\n\n'}).json()
    headers = {"Authorization": f"Bearer {created['delete_token']}"}
    assert client.delete(f"/api/streams/{created['id']}", headers=headers).status_code == 204
    answer = client.post(f"/replay/{created['id']}/v1/chat/completions", json={"stream": True})
    assert answer.status_code == 404
    assert "deleted" in answer.json()["error"]["message"]


def test_json_lines_are_replayed_one_event_per_record_and_have_a_twin(
    client: TestClient, store: Store
) -> None:
    chunks = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":'}}]}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '"Oslo"}'}}]}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    stream_id = store("\n".join(json.dumps(chunk) for chunk in chunks))
    url = f"/replay/{stream_id}/v1/chat/completions"
    streamed = client.post(url, json={"stream": True})
    assert streamed.content == b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    twin = client.post(url, json={"stream": False}).json()
    (call,) = twin["choices"][0]["message"]["tool_calls"]
    assert call["id"] == "call_1" and call["function"]["arguments"] == '{"city":"Oslo"}'
    assert twin["id"] == "c1" and twin["model"] == "m"
