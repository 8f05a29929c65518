"""Stored bytes are received bytes: real clients read real recordings through the proxy, at
many pacings and piece sizes, and every capture read to its end holds exactly what its client
received and is marked complete (issue 31: 1 in 60 httpx reads lost its last events, and 1 in
40 openai-python reads was called "cut by the client")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.capture.conftest import KEY
from tests.capture.fake import Fake, serving
from tests.capture.test_proxy import MESSAGES, WAIT, wait_for
from webapp.settings import Settings
from webapp.web.app import create_app

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
RECORDINGS = {path.name: path.read_bytes() for path in sorted(REAL.glob("*.sse"))}
WHOLE = sorted(
    name for name, data in RECORDINGS.items()
    if data.rstrip().endswith(b"data: [DONE]") and b"event: error" not in data
)  # fmt: skip
"""The recordings openai-python reads to their end (it stops at [DONE], raises on errors)."""


class Proxy:
    """A fake provider and a streamviz in front of it, for the whole module."""

    def __init__(self, fake: Fake, base: str) -> None:
        self.fake = fake
        self.base = base

    def __repr__(self) -> str:
        return f"Proxy({self.base!r})"  # not the fake's script: the example says what it sent

    def capture(self, stream_id: str) -> dict[str, object]:
        """The capture's row once it has ended, and the bytes it stored."""
        url = f"{self.base}/api/streams/{stream_id}"

        def row() -> dict[str, object]:
            found: dict[str, object] = httpx.get(f"{url}/timing", timeout=WAIT).json()["capture"]
            return found

        wait_for(lambda: not row()["live"], "the capture to end")
        return {**row(), "raw": httpx.get(f"{url}/raw", timeout=WAIT).content}


@pytest.fixture(scope="module", params=[100, 3], ids=["batches-100ms", "batches-3ms"])
def proxy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxy]:
    """The proxy with its batches written every 100 ms (the default) or every 3 ms, when
    the timer's last write races the stream's end most often."""
    with ExitStack() as stack:
        fake = Fake()
        upstream = stack.enter_context(serving(fake))
        folder = tmp_path_factory.mktemp("fidelity")
        app = create_app(
            Settings(
                db=str(folder / "s.sqlite3"),
                upstreams=(f"default={upstream}",),
                capture_batch_ms=request.param,
            )
        )
        yield Proxy(fake, stack.enter_context(serving(app)))


def script(fake: Fake, data: bytes, size: int, pause: float, lead: float) -> None:
    """The fake sends `data` in pieces, `pause` apart, after `lead` (at most 2,000 pieces,
    paused for at most about 0.3 s in all: a run's cost stays near a real stream's)."""
    fake.script = pieces(data, max(size, -(-len(data) // MOST_PIECES)) if size else 0)
    fake.pause_s = min(pause, 0.3 / len(fake.script))
    fake.lead_s = lead


def pieces(data: bytes, size: int) -> list[bytes]:
    """The recording cut into its events (`size` 0) or into pieces of `size` bytes."""
    if size:
        return [data[at : at + size] for at in range(0, len(data), size)]
    events = data.split(b"\n\n")
    out = [event + b"\n\n" for event in events[:-1]]
    return [*out, events[-1]] if events[-1] else out


MOST_PIECES = 2000
PACINGS = st.sampled_from([0.0, 0.001, 0.005, 0.02])
SIZES = st.sampled_from([0, 0, 1, 7, 64, 1024])
SLOW = settings(
    max_examples=int(os.environ.get("FIDELITY_RUNS", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@SLOW
@given(name=st.sampled_from(sorted(RECORDINGS)), size=SIZES, pause=PACINGS, lead=PACINGS)
def test_httpx_reads_to_the_end_and_the_capture_holds_every_byte(
    proxy: Proxy, name: str, size: int, pause: float, lead: float
) -> None:
    script(proxy.fake, RECORDINGS[name], size, pause, lead)
    with httpx.stream(
        "POST", f"{proxy.base}/proxy/default/v1/chat/completions",
        json={"model": "m", "stream": True}, timeout=WAIT,
    ) as response:  # fmt: skip
        received = b"".join(response.iter_raw())
        stream_id = response.headers["streamviz-stream-id"]
    assert received == RECORDINGS[name]
    capture = proxy.capture(stream_id)
    assert capture["raw"] == received
    assert capture["state"] == "complete", capture["detail"]


@SLOW
@given(name=st.sampled_from(WHOLE), size=SIZES, pause=PACINGS, lead=PACINGS)
def test_openai_python_reads_to_done_and_the_capture_is_complete(
    proxy: Proxy, name: str, size: int, pause: float, lead: float
) -> None:
    script(proxy.fake, RECORDINGS[name], size, pause, lead)
    url = f"{proxy.base}/proxy/default/v1"
    with openai.OpenAI(base_url=url, api_key=KEY, max_retries=0) as client:
        response = client.chat.completions.with_raw_response.create(
            model="m", messages=MESSAGES, stream=True,  # type: ignore[arg-type]
        )  # fmt: skip
        stream_id = response.headers["streamviz-stream-id"]
        for _ in response.parse():  # as an application does, to [DONE]; then it closes
            pass
    capture = proxy.capture(stream_id)
    assert capture["raw"] == RECORDINGS[name]  # what it was sent: every byte, [DONE] included
    assert capture["state"] == "complete", capture["detail"]
