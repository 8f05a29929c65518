"""Secrets sent through the web app are neither stored nor shown."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.streamkit import RECORDINGS
from tests.web.webkit import CONTINUATION, Store
from webapp.settings import Settings
from webapp.web.routes import home

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


@pytest.fixture
def settings(db_url: str) -> Settings:
    """Room for the longest real recording (243 KB)."""
    return Settings(db=db_url, max_bytes=1_000_000, timeline_window=40)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_real_recording_is_stored_at_once_and_whole(client: TestClient, path: Path) -> None:
    """No real recording holds a secret: the form stores it without the "Secrets found" page,
    and the API's default masking changes no byte of it."""
    text = path.read_text(encoding="utf-8")
    posted = client.post("/streams", data={"text": text})
    assert posted.status_code == 303, getattr(posted, "context", {}).get("preview")
    created = client.post("/api/streams", json={"text": text})
    assert created.status_code == 201
    assert created.json()["redacted"] == []
    raw = client.get(f"/api/streams/{created.json()['id']}/raw")
    assert raw.text == text


def test_the_home_forms_secrets_preview_is_read_off_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form's stream is decoded for the secrets preview in a worker thread: it was
    decoded on the event loop (tens of megabytes: every other request waited)."""
    seen: dict[str, set[int]] = {}
    read_form, decode = home.read_form, home.decode

    async def reading(*args: Any, **kwargs: Any) -> Any:
        seen.setdefault("loop", set()).add(threading.get_ident())
        return await read_form(*args, **kwargs)

    def decoding(raw: bytes) -> str:
        seen.setdefault("decode", set()).add(threading.get_ident())
        return decode(raw)

    monkeypatch.setattr(home, "read_form", reading)
    monkeypatch.setattr(home, "decode", decoding)
    files = {"file": ("s.sse", CONTINUATION.encode(), "text/plain")}
    response = client.post("/streams", data={"format": "auto"}, files=files)
    assert response.status_code == 303, response.text[:500]
    (loop,) = seen["loop"]
    assert seen["decode"] and loop not in seen["decode"]
