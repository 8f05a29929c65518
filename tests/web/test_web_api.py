"""The JSON API: store, trace, raw bytes, and its error answers."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import fields

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from tests.streamkit import chunk, sse
from tests.web.webkit import CONTINUATION, Store
from webapp.cli import main
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import decode, read
from webapp.storage import StreamInfo


def test_post_json_answers_201_with_id_and_url(client: TestClient) -> None:
    response = client.post("/api/streams", json={"text": CONTINUATION, "title": "weather"})
    assert response.status_code == 201
    body = response.json()
    assert body["url"] == f"/s/{body['id']}"
    assert body["format"] == "sse"
    assert len(body["id"]) >= 22  # 128+ random bits in URL-safe base64
    info = client.get(f"/api/streams/{body['id']}").json()
    assert info["title"] == "weather"
    assert info["size"] == len(CONTINUATION.encode())


def test_a_stream_record_is_the_stored_record_in_its_field_order(client: TestClient) -> None:
    stream_id = client.post("/api/streams", json={"text": CONTINUATION}).json()["id"]
    response = client.get(f"/api/streams/{stream_id}")
    names = [field.name for field in fields(StreamInfo)]
    stored = [n if n != "redactions" else "redacted" for n in names]
    # then what links it to other captures: its gateway hops, its non-stream twin (null: none)
    assert list(response.json()) == [*stored, "hops", "twin"]
    assert response.json()["hops"] == {"inner": [], "outer": []}
    assert response.json()["twin"] is None
    assert response.content.startswith(b'{"id":"' + stream_id.encode() + b'","title":"get_weather"')


def test_post_multipart_file(client: TestClient) -> None:
    files = {"file": ("stream.sse", CONTINUATION.encode(), "text/event-stream")}
    response = client.post("/api/streams", files=files)
    assert response.status_code == 201
    stream_id = response.json()["id"]
    # titled from what it holds, with the file's name
    assert client.get(f"/api/streams/{stream_id}").json()["title"] == "get_weather (stream.sse)"


def test_ids_are_unique_and_unguessable(store: Store) -> None:
    ids = {store(CONTINUATION) for _ in range(20)}
    assert len(ids) == 20
    assert all(len(stream_id) >= 22 for stream_id in ids)


@pytest.mark.parametrize(
    ("policy", "path", "server_tools"),
    [
        ("adr-0019", "client", ""),
        ("exact-key", "client", ""),
        ("adr-0019", "server-tools", "get_weather"),
        ("exact-key", "server-tools", "web_*,other"),
    ],
)
def test_trace_equals_the_core_trace(
    client: TestClient, store: Store, policy: str, path: str, server_tools: str
) -> None:
    stream_id = store(CONTINUATION)
    query = {"policy": policy, "path": path, "server_tools": server_tools}
    response = client.get(f"/api/streams/{stream_id}/trace", params=query)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    tools = tuple(name for name in server_tools.split(",") if name)
    options = Options(policy, path, tools)  # type: ignore[arg-type]
    expected = assemble(read(CONTINUATION).records, options).to_json()
    assert body.pop("input")["format"] == "sse"
    assert body == json.loads(json.dumps(expected))


def test_trace_of_a_choice(client: TestClient, store: Store) -> None:
    text = CONTINUATION.replace('"index": 0, "delta"', '"index": 1, "delta"')
    stream_id = store(text)
    body = client.get(f"/api/streams/{stream_id}/trace", params={"choice": 1}).json()
    assert body["choice"] == 1
    assert body["summary"]["blocks"] == 1


@pytest.mark.parametrize(
    "raw",
    [
        CONTINUATION.replace("\n", "\r\n").encode(),
        b"\xef\xbb\xbf" + CONTINUATION.encode(),
        CONTINUATION.encode().replace(b"get_weather", b"get_\xe9t\xe9\xff"),
        "\n".join(["data: " + json.dumps({"c": "\u00e9\u4e2d\U0001f600"}), ""]).encode()
        + CONTINUATION.encode(),
    ],
    ids=["crlf", "bom", "latin-1 bytes", "non-ascii"],
)
def test_raw_round_trips_byte_for_byte(client: TestClient, raw: bytes) -> None:
    files = {"file": ("s.txt", raw, "application/octet-stream")}
    response = client.post("/api/streams", files=files)
    assert response.status_code == 201, response.text
    stream_id = response.json()["id"]
    got = client.get(f"/api/streams/{stream_id}/raw")
    assert got.status_code == 200
    assert got.content == raw
    assert got.headers["content-type"] == "text/plain; charset=utf-8"
    assert got.headers["x-content-type-options"] == "nosniff"


def test_raw_of_a_json_text_is_its_utf8(client: TestClient) -> None:
    text = CONTINUATION.replace("Paris", "Zürich ☀")
    stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
    assert client.get(f"/api/streams/{stream_id}/raw").content == text.encode("utf-8")


def test_too_large_is_413_json(client: TestClient) -> None:
    big = sse(chunk(content="x" * 60_000))
    response = client.post("/api/streams", json={"text": big})
    assert response.status_code == 413
    assert "limit of 50,000 bytes" in response.json()["detail"]
    files = {"file": ("big.sse", big.encode(), "text/plain")}
    assert client.post("/api/streams", files=files).status_code == 413


def test_too_large_declared_length_is_refused_before_reading(client: TestClient) -> None:
    response = client.post(
        "/api/streams",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": str(10**9)},
    )
    assert response.status_code == 413


def test_unreadable_input_is_422(client: TestClient) -> None:
    response = client.post("/api/streams", json={"text": "hello, this is not a stream"})
    assert response.status_code == 422
    assert response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"not json", {"content-type": "application/json"}),
        (b'{"title": "no text"}', {"content-type": "application/json"}),
        (b'{"text": 5}', {"content-type": "application/json"}),
        (b"text=hello", {"content-type": "text/plain"}),
    ],
)
def test_malformed_requests_are_400(
    client: TestClient, body: bytes, headers: dict[str, str]
) -> None:
    response = client.post("/api/streams", content=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["detail"]


def test_unknown_id_is_404_json(client: TestClient) -> None:
    for url in ("/api/streams/nope", "/api/streams/nope/trace", "/api/streams/nope/raw"):
        response = client.get(url)
        assert response.status_code == 404
        assert "No stream has this id" in response.json()["detail"]
    assert client.get("/api/streams/..%2F..%2Fetc%2Fpasswd/raw").status_code == 404


@pytest.mark.parametrize(
    "query",
    [
        {"policy": "nope"},
        {"path": "server"},
        {"choice": "-1"},
        {"choice": "x"},
        {"choice": "99999999999999999999"},
        {"server_tools": "a" * 300},
    ],
)
def test_bad_query_values_are_400(client: TestClient, store: Store, query: dict[str, str]) -> None:
    stream_id = store(CONTINUATION)
    response = client.get(f"/api/streams/{stream_id}/trace", params=query)
    assert response.status_code == 400
    assert response.json()["detail"]


def test_lone_surrogates_do_not_break_the_api(client: TestClient) -> None:
    text = CONTINUATION.replace("get_weather", "get_\\ud800x")
    response = client.post("/api/streams", json={"text": text})
    assert response.status_code == 201
    stream_id = response.json()["id"]
    trace = client.get(f"/api/streams/{stream_id}/trace")
    assert trace.status_code == 200
    assert trace.json()["blocks"][0]["name"] == "get_\ud800x"


def test_a_title_with_a_lone_surrogate_is_stored_with_a_replacement(client: TestClient) -> None:
    body = json.dumps({"text": CONTINUATION, "title": "t\ud800x"}).encode()
    response = client.post(
        "/api/streams", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 201
    info = client.get(f"/api/streams/{response.json()['id']}").json()
    assert info["title"] == "t\ufffdx"


def test_openapi_documents_the_api(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert set(paths) == {
        "/api/streams",
        "/api/streams/{stream_id}",
        "/api/streams/{stream_id}/trace",
        "/api/streams/{stream_id}/raw",
        "/api/streams/{stream_id}/notes",
        "/api/streams/{stream_id}/notes/{note_id}",
        "/api/streams/{stream_id}/minimise",
        "/api/jobs/{job_id}",
        "/api/streams/{stream_id}/timing",
        "/api/streams/{stream_id}/request",
        "/api/diff",
        "/api/play",
    }
    create = paths["/api/streams"]["post"]
    assert create["summary"] == "Store a stream"
    assert set(create["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert "201" in create["responses"] and "413" in create["responses"]
    assert client.get("/docs").status_code == 200


def test_input_of_the_trace_names_the_format(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    data = client.get(f"/api/streams/{stream_id}/trace").json()
    result = read(decode(CONTINUATION.encode()))
    assert data["input"] == {
        "format": "sse",
        "records": len(result.records),
        "notes": list(result.notes),
        "model": None,
        "tools": [],
        "others": [],
        "meta": {},
    }


def test_the_api_trace_is_the_cli_trace_document(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    data = client.get(f"/api/streams/{stream_id}/trace?policy=exact-key").json()
    runner = CliRunner()
    printed = runner.invoke(main, ["trace", "-", "--policy", "exact-key", "--format", "json"],
                            input=CONTINUATION)  # fmt: skip
    assert printed.exit_code == 0
    assert data == json.loads(printed.stdout)


def test_docs_page_runs_its_one_inline_script_by_hash_only(client: TestClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200
    csp = response.headers["content-security-policy"]
    scripts = re.findall(r"<script>(.*?)</script>", response.text, flags=re.S)
    assert scripts
    for body in scripts:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    script_src = next(part for part in csp.split(";") if part.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src


def test_docs_page_uses_only_its_own_assets_and_they_are_served(client: TestClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200
    urls = re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", response.text)
    assets = [url for url in urls if url != "/openapi.json"]
    assert len(assets) == 3  # the script, the stylesheet, the icon
    expected = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for url in assets:
        assert url.startswith("/static/"), url
        served = client.get(url)
        assert served.status_code == 200, url
        suffix = url[url.rindex(".") :]
        assert served.headers["content-type"].split(";")[0] == expected[suffix], url
    assert "http" not in response.text.replace("http-equiv", "")
    csp = response.headers["content-security-policy"]
    assert "http" not in csp and "*" not in csp
