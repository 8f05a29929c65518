"""An upstream that compresses although asked for identity: the client gets the bytes as sent,
the capture stores what the stream says, inflated as it arrives (issue 31)."""

from __future__ import annotations

import gzip
import itertools
import json
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
from hypothesis import given
from hypothesis import strategies as st

from tests.capture.conftest import KEY, Rig
from tests.capture.fake import Fake, corpus_pieces, serving
from tests.capture.test_processes import running
from tests.capture.test_proxy import MESSAGES, TOOLS, ended, raw
from webapp.proxy.coding import Inflater, inflater_for

STREAM = b"".join(corpus_pieces("two-calls-open-continuations.sse"))


def cut(data: bytes, at: list[int]) -> list[bytes]:
    points = sorted({min(max(point, 0), len(data)) for point in at})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def inflated(coding: str, pieces: list[bytes], most: int = 1 << 30) -> tuple[bytes, str]:
    inflater = inflater_for(coding)
    assert isinstance(inflater, Inflater)
    out = b"".join(inflater.feed(piece, most) for piece in pieces)
    return out, inflater.finish()


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@given(st.binary(max_size=3000), st.lists(st.integers(0, 4000), max_size=12))
def test_gzip_cut_anywhere_inflates_to_the_stream(data: bytes, at: list[int]) -> None:
    out, said = inflated("gzip", cut(gzip.compress(data), at))
    assert out == data and said.endswith("stored inflated")


def test_every_form_of_the_codings_is_undone() -> None:
    forms = {
        "gzip": gzip.compress(STREAM),
        "x-gzip": gzip.compress(STREAM),
        "deflate": zlib.compress(STREAM),  # with its zlib wrapper
        "Deflate": raw_deflate(STREAM),  # without it, as some servers send it
    }
    for coding, body in forms.items():
        pieces = [body[:1], body[1:2], body[2:50], body[50:]]  # the header a byte at a time
        assert inflated(coding, pieces)[0] == STREAM, coding
    members = gzip.compress(STREAM[:100]) + gzip.compress(STREAM[100:]) + b"\x00" * 4
    assert inflated("gzip", cut(members, [7, 150]))[0] == STREAM


def test_a_body_that_stops_inflating_keeps_what_came_before_and_says_so() -> None:
    body = gzip.compress(STREAM)
    out, said = inflated("gzip", [body[: len(body) // 2]])
    assert STREAM.startswith(out) and "ended before its compressed end" in said
    out, said = inflated("gzip", [body[:40], b"\xff" * 64])
    assert STREAM.startswith(out) and "stopped inflating" in said


def test_inflating_stops_at_the_room_left() -> None:
    bomb = gzip.compress(b"\x00" * (64 << 20))  # 64 MiB in about 64 KiB
    inflater = inflater_for("gzip")
    assert isinstance(inflater, Inflater)
    assert len(inflater.feed(bomb, 1000)) == 1001  # one byte past the room: over


def test_codings_not_undone_are_named() -> None:
    assert inflater_for("") is None and inflater_for("identity") is None
    assert inflater_for("br") == "sent br-encoded, which streamviz does not undo: stored as sent"
    assert "gzip, br" in str(inflater_for("gzip, br"))


def test_a_compressing_upstream_is_stored_inflated(make_rig: Callable[..., Rig]) -> None:
    rig = make_rig()
    body = gzip.compress(STREAM)
    rig.fake.script = [body[at : at + 64] for at in range(0, len(body), 64)]
    rig.fake.headers = [(b"content-encoding", b"gzip")]
    client = openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=MESSAGES, tools=TOOLS, stream=True,  # type: ignore[arg-type]
    )  # fmt: skip
    stream_id = response.headers["streamviz-stream-id"]
    assert response.headers["content-encoding"] == "gzip"  # the client's bytes, as sent
    assert len(list(response.parse())) == 4
    capture = ended(rig, stream_id)
    assert raw(rig, stream_id) == STREAM
    assert capture["state"] == "complete"
    assert "sent gzip-encoded though asked for identity" in str(capture["detail"])
    trace = httpx.get(f"{rig.base}/api/streams/{stream_id}/trace").json()
    assert not [a for a in trace["anomalies"] if a["code"] == "invalid-chunk"]


def test_record_stores_the_stream_inflated(tmp_path: Path) -> None:
    body = gzip.compress(STREAM)
    fake = Fake(script=[body[:30], body[30:]], headers=[(b"content-encoding", b"gzip")])
    out = tmp_path / "out"
    with (
        serving(fake) as upstream,
        running("record", "--upstream", f"up={upstream}", "--out", str(out)) as (base, _),
    ):
        url = f"{base}/proxy/up/v1/chat/completions"
        answer = httpx.post(url, json={"model": "m", "stream": True})
        assert answer.content == STREAM  # httpx inflated what the proxy passed on as sent
        deadline = time.monotonic() + 15
        while not list(out.glob("*.timing.json")):
            assert time.monotonic() < deadline, "no timing file within 15 s"
            time.sleep(0.02)
    (stored,) = out.glob("*.sse")
    assert stored.read_bytes() == STREAM
    timing = json.loads(stored.with_suffix(".timing.json").read_text())
    assert "sent gzip-encoded though asked for identity" in timing["detail"]
