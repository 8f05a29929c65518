"""Secrets sent through the web app are neither stored nor shown."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.web.webkit import Store

TOKEN = "sk-proj-WEBSECRET-0123456789"
SSE = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"f","arguments":"{}"}}]}}]}\n\ndata: [DONE]\n\n'
)
INPUTS = {
    "prompt and curl": f"user@box:~$ curl https://x \\\n> -H 'Authorization: Bearer {TOKEN}'\n"
    + SSE,
    "pasted headers": f"Authorization: Bearer {TOKEN}\nopenai-project: {TOKEN}\n\n" + SSE,
    "folded header": f"HTTP/1.1 200 OK\nAuthorization: Bearer\n {TOKEN}\n\n" + SSE,
}


@pytest.mark.parametrize("name", list(INPUTS))
def test_a_secret_posted_to_the_api_is_not_stored_nor_shown(
    client: TestClient, store: Store, name: str
) -> None:
    stream_id = store(INPUTS[name])
    raw = client.get(f"/api/streams/{stream_id}/raw")
    assert raw.status_code == 200
    assert TOKEN not in raw.text and "[redacted]" in raw.text
    page = client.get(f"/s/{stream_id}")
    assert page.status_code == 200
    assert TOKEN not in page.text
    assert "removed" in page.text.lower() or "redacted" in page.text.lower()
    trace = client.get(f"/api/streams/{stream_id}/trace")
    assert TOKEN not in trace.text
