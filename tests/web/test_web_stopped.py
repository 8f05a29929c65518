"""A stream whose finish_reason says the generation stopped inside its last call (the token
limit) is judged so on the page, the clients' verdict and report.md: no provider quirk,
nothing filed, what cut the call said with what to do."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse

LENGTH = sse(
    chunk(frag(0, "call_1", "write_file", ""), model="gpt-4o"),
    chunk(frag(0, args='{"path": "a.txt", "content": "hello wor'), model="gpt-4o"),
    chunk(finish="length", model="gpt-4o"),
)


def test_a_call_cut_at_the_token_limit_is_nobodys_fault(client: TestClient) -> None:
    stream_id = client.post("/api/streams", json={"text": LENGTH}).json()["id"]
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert trace["quirks"] == [] and trace["intended"] is None
    assert trace["stopped"].startswith("the generation stopped at its token limit (finish_reason")
    page = client.get(f"/s/{stream_id}").text
    assert "What this stream means is not whole:" in page
    assert "none: the stream keeps the contract" in page
    assert "raise the request&#39;s max_tokens" in page
    report = client.get(f"/s/{stream_id}/report.md").text
    assert "**Whose fault:** Nobody broke the contract: the generation stopped" in report
    assert "arguments-not-json" not in report and "File with" not in report
