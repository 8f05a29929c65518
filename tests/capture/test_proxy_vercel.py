"""The Vercel AI SDK (Node.js, installed for the lenses) through the proxy, on the real fetch."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from tests.capture.aisdk import run_ai_sdk
from tests.capture.conftest import KEY, Rig
from tests.capture.fake import corpus_pieces
from tests.capture.test_proxy import ended, raw


def test_the_vercel_ai_sdk_gets_its_calls_and_the_bytes_the_fake_sent(rig: Rig) -> None:
    pieces = corpus_pieces("interleaved-parallel-calls.sse")
    rig.fake.script = pieces
    found = run_ai_sdk(rig.proxy, KEY)
    assert found["errors"] == []
    assert [call["name"] for call in found["calls"]] == ["get_weather", "get_time"]
    assert base64.b64decode(found["received"]) == b"".join(pieces)
    stream_id = found["streamId"]
    assert ended(rig, stream_id)["state"] == "complete"
    assert raw(rig, stream_id) == b"".join(pieces)
    assert rig.fake.seen[-1].headers["authorization"] == f"Bearer {KEY}"
    capture = httpx.get(f"{rig.base}/api/streams/{stream_id}/timing").json()["capture"]
    assert capture["tools"] == ["get_weather", "get_time"] and capture["model"] == "gpt-4o"


REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"


@pytest.mark.parametrize(
    ("name", "size", "pause"),
    [
        ("openai-gpt4o-parallel-obfuscation.sse", 0, 0.0),
        ("openrouter-claude45haiku-parallel.sse", 0, 0.01),
        ("vercel-gateway-claude-sonnet4-signature-tool.sse", 64, 0.0),
        ("mistral-large-parallel-noindex.sse", 7, 0.002),
        ("groq-kimi-k2-parallel-wholecalls.sse", 0, 0.005),
    ],
)
def test_the_vercel_ai_sdk_reads_real_recordings_and_the_capture_holds_what_it_got(
    rig: Rig, name: str, size: int, pause: float
) -> None:
    """Stored bytes are received bytes for the AI SDK's own fetch too, on real recordings cut
    in events or small pieces, at several pacings (issue 31)."""
    data = (REAL / name).read_bytes()
    rig.fake.script = (
        [data[at : at + size] for at in range(0, len(data), size)] if size
        else corpus_pieces(f"real/{name}")
    )  # fmt: skip
    rig.fake.pause_s = pause
    found = run_ai_sdk(rig.proxy, KEY)
    received = base64.b64decode(found["received"])
    assert received == data
    capture = ended(rig, found["streamId"])
    assert raw(rig, found["streamId"]) == received
    assert capture["state"] == "complete", capture["detail"]
