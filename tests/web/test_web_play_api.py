"""`POST /api/play` answers the trace as JSON (the playground's partial is `POST /play/run`).

Before, `/api/play` answered an htmx partial of HTML, the one `/api/` route that was no JSON."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tests.web.webkit import CONTINUATION


def test_the_trace_of_a_posted_stream_is_the_stored_streams(client: TestClient) -> None:
    body = {"text": CONTINUATION, "policy": "exact-key", "path": "client"}
    answered = client.post("/api/play", json=body)
    assert answered.status_code == 200, answered.text
    assert answered.headers["content-type"].startswith("application/json")
    trace = answered.json()
    assert trace["schema"] == 1 and trace["policy"] == "exact-key" and trace["path"] == "client"
    stored = client.post("/api/streams", json={"text": CONTINUATION}).json()["id"]
    same = client.get(f"/api/streams/{stored}/trace?policy=exact-key&path=client").json()
    assert trace == same
    adr = client.post("/api/play", json={"text": CONTINUATION}).json()
    assert adr["policy"] == "adr-0019" and adr["blocks"] != trace["blocks"]
    assert client.get("/api/streams").json()["streams"] == []  # nothing more was stored


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b"not json", 400, "not JSON"),
        (b'{"policy": "exact-key"}', 400, '"text"'),
        (b'{"text": "hello"}', 422, "not a stream"),
        (b'{"text": "data: {}\\n\\n", "policy": "nope"}', 422, "policy"),
        (b'{"text": "data: {}\\n\\n", "policy": 3}', 422, '"policy" must be a string'),
        (b'{"text": "data: {}\\n\\n", "path": "sideways"}', 422, "path"),
        (b'{"text": "data: {}\\n\\n", "format": "csv"}', 422, "format"),
    ],
)
def test_bad_bodies_are_json_problems(
    client: TestClient, body: bytes, status: int, said: str
) -> None:
    answered = client.post("/api/play", content=body, headers={"content-type": "application/json"})
    assert answered.status_code == status, answered.text
    assert said in answered.json()["detail"]


def test_over_the_size_limit_is_a_413(client: TestClient) -> None:
    answered = client.post("/api/play", json={"text": "data: {}\n\n" * 10_000})
    assert answered.status_code == 413 and "detail" in answered.json()


def test_it_is_documented_in_openapi(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    play = spec["paths"]["/api/play"]["post"]
    body = play["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["text"] and {"text", "policy", "path"} <= set(body["properties"])
    assert {"200", "400", "413", "422"} <= set(play["responses"])
    assert "/play/run" not in spec["paths"]  # the page's route is no API


def test_every_api_post_answers_json(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    posts = [re.sub(r"\{[^}]+\}", "nope", path) for path, ops in paths.items() if "post" in ops]
    assert "/api/play" in posts and all(path.startswith("/api/") for path in posts)
    for url in posts:
        answered = client.post(url, content=b"<not json>", headers={"content-type": "text/html"})
        kind = answered.headers.get("content-type", "")
        assert kind.startswith("application/json"), (url, answered.status_code, kind)
