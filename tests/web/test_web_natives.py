"""Gemini's, Bedrock's, Ollama's and the Vercel AI SDK's UI streams on the server: stored and
shown like any stream (they were refused with a 422 while streamviz did not read them), their
page saying how they were read and the calls they mean, their trace without a quirk."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

NATIVE = Path(__file__).resolve().parents[1] / "corpus" / "native"
RECORDED = sorted(path.name for path in NATIVE.iterdir() if path.suffix != ".md")


@pytest.mark.parametrize("name", RECORDED)
def test_a_native_stream_is_stored_and_its_page_says_what_it_means(
    client: TestClient, name: str
) -> None:
    files = {"file": (name, (NATIVE / name).read_bytes(), "application/octet-stream")}
    sent = client.post("/api/streams", files=files)
    assert sent.status_code == 201, sent.text
    stream_id = sent.json()["id"]
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert trace["quirks"] == []
    assert trace["intended"]["calls"]
    page = client.get(f"/s/{stream_id}")
    assert page.status_code == 200
    assert "read in its own terms" in page.text
    first = trace["intended"]["calls"][0]["name"]
    assert first in page.text


def test_a_pasted_ollama_stream_is_stored_not_refused(client: TestClient) -> None:
    text = (NATIVE / "ollama-llama32-docs-tool.jsonl").read_text()
    page = client.post("/streams", data={"text": text, "title": "ollama"}, follow_redirects=True)
    assert page.status_code == 200
    assert "Ollama&#39;s native /api/chat stream, read in its own terms" in page.text
    assert 'role="alert"' not in page.text
