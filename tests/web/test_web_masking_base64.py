"""Default content masking keeps a HAR body exported as base64: the preview does not tick it.

Browsers export binary or compressed bodies as base64 (`content.encoding: "base64"`); the body
looked like one long "base64 secret", ticked by default on the home form's preview and masked
by the API's default `redact: auto`: 311 of 311 such streams lost every fragment.
"""

from __future__ import annotations

import base64
import json

from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, har
from webapp.web.backend.intake.masking import preview


def _base64_har(prompt: str = "hi") -> str:
    value = json.loads(har(chunk(frag(0, "call_1", "get_weather", "{}")), chunk(finish="stop")))
    entry = value["log"]["entries"][0]
    content = entry["response"]["content"]
    content["text"] = base64.b64encode(content["text"].encode()).decode()
    content["encoding"] = "base64"
    entry["request"]["postData"]["text"] = json.dumps({"model": "m", "content": prompt})
    return json.dumps(value)


def test_the_preview_does_not_tick_a_base64_body(client: TestClient) -> None:
    # The body alone looked like a "base64 secret", ticked by default: stored masked, the
    # stream lost every fragment.
    stored = client.post("/streams", data={"text": _base64_har()})
    assert stored.status_code == 303, stored.text[:500]  # nothing to ask about: stored at once
    stream_id = stored.headers["location"].split("/s/")[1].split("?")[0]
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert trace["blocks"] and trace["blocks"][0]["name"] == "get_weather"

    key = "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx"
    shown = client.post("/streams", data={"text": _base64_har(f"my key {key}")})
    assert shown.template.name == "redact_preview.html"  # type: ignore[attr-defined]
    groups = shown.context["preview"].groups  # type: ignore[attr-defined]
    assert [group.kind for group in groups] == ["API key"]
    assert shown.text.count('type="checkbox" name="mask"') == 1
    assert preview(_base64_har()).groups == ()


def test_the_api_default_masking_keeps_a_base64_body(client: TestClient) -> None:
    created = client.post("/api/streams", json={"text": _base64_har()})
    assert created.status_code == 201
    assert created.json()["redacted"] == ["query parameter 'key' in a URL (HAR entry 1 request)"]
    trace = client.get(f"/api/streams/{created.json()['id']}/trace").json()
    assert [block["name"] for block in trace["blocks"]] == ["get_weather"]
