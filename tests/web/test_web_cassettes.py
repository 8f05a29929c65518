"""vcrpy cassettes whose bodies are kept gzip-encoded, uploaded under default masking: read on
every path, masked as the text they hold, stored so that they read back the same (issue 31: a
533-byte one got a 422, its base64 masked as a "secret"). The bounds on what a cassette holds
are in tests/web/test_web_limits.py."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from webapp.core.readers import read

CASSETTES = Path(__file__).resolve().parents[1] / "corpus" / "cassettes"
REAL = sorted(CASSETTES.glob("*.yaml"))
KEY = "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx"


def _body(text: str) -> str:
    """The stream a gzip cassette holds, gunzipped here."""
    packed = yaml.safe_load(text)["interactions"][0]["response"]["body"]["string"]
    return gzip.decompress(packed).decode()


def _stored(client: TestClient, response: Any) -> str:
    """The id of what an upload stored (a 201's or a 303's)."""
    if response.status_code == 303:
        return str(response.headers["location"].split("/s/")[1].split("?")[0])
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _uploads(client: TestClient, text: str) -> dict[str, Any]:
    """The cassette sent every way a user sends one, each under its default masking."""
    file = {"file": ("cassette.yaml", text.encode(), "application/yaml")}
    return {
        "api json": client.post("/api/streams", json={"text": text}),
        "api file": client.post("/api/streams", files=file),
        "form paste": client.post("/streams", data={"text": text}),
        "form file": client.post("/streams", data={"text": ""}, files=file),
    }


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.name)
def test_a_real_gzip_cassette_is_read_on_every_path_and_stored_to_read_back_the_same(
    client: TestClient, path: Path
) -> None:
    text = path.read_text()
    expected = tuple(read(_body(text)).records)
    name = expected[0].value["choices"][0]["delta"]["tool_calls"][0]["function"]["name"]
    for how, response in _uploads(client, text).items():
        stream_id = _stored(client, response)
        raw = client.get(f"/api/streams/{stream_id}/raw").text
        assert "!!binary" not in raw and "Content-Encoding" not in raw, how
        assert tuple(read(raw).records) == expected, how
        trace = client.get(f"/api/streams/{stream_id}/trace").json()
        assert [block["name"] for block in trace["blocks"]] == [name], how
        assert client.get(f"/s/{stream_id}").status_code == 200, how


def _with_secret() -> str:
    """A gzip cassette whose stream carries an API key in a chunk's content."""
    body = (
        'data: {"choices":[{"index":0,"delta":{"content":"my key ' + KEY + '"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
        '"type":"function","function":{"name":"get_weather","arguments":"{}"}}]},'
        '"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
    )
    interaction = {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions"},
        "response": {
            "body": {"string": gzip.compress(body.encode())},
            "headers": {"Content-Encoding": ["gzip"], "Content-Type": ["text/event-stream"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    return yaml.safe_dump({"interactions": [interaction], "version": 1})


def test_a_secret_inside_a_gzip_body_is_masked_and_the_stream_kept(client: TestClient) -> None:
    text = _with_secret()
    assert KEY not in text  # it is in the gzip data: masking the base64 found no key
    created = client.post("/api/streams", json={"text": text})
    assert created.status_code == 201, created.text
    stream_id = created.json()["id"]
    raw = client.get(f"/api/streams/{stream_id}/raw").text
    assert KEY not in raw and "sk-proj-" in raw
    line = next(n for n, text in enumerate(raw.splitlines(), 1) if "sk-proj-" in text)
    assert created.json()["redacted"] == [f"API key (line {line})"]  # a line of what is stored
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert [block["name"] for block in trace["blocks"]] == ["get_weather"]


def test_the_form_asks_about_a_secret_inside_a_gzip_body_and_masks_it(client: TestClient) -> None:
    text = _with_secret()
    shown = client.post("/streams", data={"text": text})
    assert shown.template.name == "redact_preview.html"  # type: ignore[attr-defined]
    preview = shown.context["preview"]  # type: ignore[attr-defined]
    assert [group.kind for group in preview.groups] == ["API key"]  # not the base64: the key
    form = {"text": text, "key": preview.key, "redact": "chosen"}
    stored = client.post("/streams", data=form | {"mask": [preview.groups[0].mask]})
    stream_id = _stored(client, stored)
    raw = client.get(f"/api/streams/{stream_id}/raw").text
    assert KEY not in raw and preview.groups[0].mask in raw
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert [block["name"] for block in trace["blocks"]] == ["get_weather"]
