"""What a request is told when it is not one the API takes: 405s list every method of the
path, and a field's bad value is a 422 that says which field (a body with no stream, a 400)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.web.webkit import CONTINUATION


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/streams", "GET, POST"),  # the library (GET) and the paste form (POST)
        ("PUT", "/api/streams", "GET, POST"),
        ("PUT", "/api/streams/abc", "DELETE, GET, PATCH"),
        ("POST", "/api/streams/abc/notes/1", "DELETE, GET, PATCH"),
        ("DELETE", "/api/streams/abc/notes", "GET, POST"),
        ("GET", "/api/play", "POST"),
        ("POST", "/", "GET"),
    ],
)
def test_a_405_lists_every_method_of_its_path(
    client: TestClient, method: str, path: str, allowed: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("redact", None),  # was stored as if "auto" had been sent
        ("redact", 5),
        ("redact", "some"),
        ("redact", ["none"]),
        ("format", None),
        ("format", []),  # was read as auto
        ("format", "xml"),
        ("title", 7),
    ],
)
def test_a_field_of_the_wrong_value_is_a_422_naming_it(
    client: TestClient, field: str, value: Any
) -> None:
    response = client.post("/api/streams", json={"text": CONTINUATION, field: value})
    assert response.status_code == 422, response.text
    assert field in response.json()["detail"]


def test_a_multipart_redact_of_the_wrong_value_is_a_422(client: TestClient) -> None:
    files = {"file": ("s.sse", CONTINUATION.encode())}
    response = client.post("/api/streams", files=files, data={"redact": "maybe"})
    assert response.status_code == 422 and "redact" in response.json()["detail"]


def test_leaving_a_field_out_takes_its_default(client: TestClient) -> None:
    response = client.post("/api/streams", json={"text": CONTINUATION, "title": None})
    assert response.status_code == 201
    assert response.json()["format"] == "sse"
