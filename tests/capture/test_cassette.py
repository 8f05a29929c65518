"""vcrpy / pytest-recording cassettes: read as input, written into fixture.zip, replayed by
vcrpy itself, with the arrival times of a captured stream carried through."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path

import httpx
import openai
import pytest
import vcr
import yaml

from tests.capture.conftest import KEY, Rig
from tests.capture.fake import CORPUS, corpus_pieces
from tests.capture.test_proxy import ended
from webapp.core.readers import read
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import Arrivals
from webapp.core.records import ReaderError

BODY = (CORPUS / "no-index.sse").read_text()


def interaction(
    body: object, content_type: str = "text/event-stream", **response: object
) -> dict[str, object]:
    return {
        "request": {
            "body": json.dumps({"model": "gpt-4o", "tools": [{"type": "function",
                                "function": {"name": "search_docs"}}]}),
            "headers": {"Authorization": ["Bearer " + KEY]},
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions?key=" + KEY,
        },
        "response": {
            "body": {"string": body},
            "headers": {"Content-Type": [content_type], **response.pop("headers", {})},  # type: ignore[dict-item]
            "status": {"code": 200, "message": "OK"},
        },
    }  # fmt: skip


def cassette(*interactions: dict[str, object]) -> str:
    return yaml.safe_dump({"interactions": list(interactions), "version": 1})


def test_a_yaml_cassette_is_detected_and_read_like_its_body() -> None:
    found = read(cassette(interaction(BODY)))
    direct = read(BODY)
    assert found.format == "cassette" and tuple(found.records) == tuple(direct.records)
    assert found.model == "gpt-4o" and found.tools[0]["function"]["name"] == "search_docs"
    assert found.meta["url"] == "https://api.openai.com/v1/chat/completions"
    assert KEY not in json.dumps(found.meta) and KEY not in " ".join(found.notes)


def test_a_json_cassette_and_a_binary_body_and_a_gzipped_one() -> None:
    as_json = json.dumps({"interactions": [interaction(BODY)], "version": 1})
    assert read(as_json).format == "cassette"
    binary = "interactions:\n" + yaml.safe_dump([interaction(BODY.encode())])
    assert "!!binary" in binary and len(read(binary).records) == 6
    packed = interaction(gzip.compress(BODY.encode()), headers={"Content-Encoding": ["gzip"]})
    assert len(read(cassette(packed)).records) == 6
    brotli = interaction(b"\x00\x01", headers={"Content-Encoding": ["br"]})
    with pytest.raises(ReaderError, match="br-encoded"):
        read(cassette(brotli))


def test_the_interaction_is_picked_like_a_har_entry() -> None:
    other = (CORPUS / "clean-single-call.sse").read_text()
    models = interaction('{"data": []}', "application/json")
    models["request"]["uri"] = "https://api.openai.com/v1/models"  # type: ignore[index]
    text = cassette(models, interaction(BODY), interaction(other))
    first = read(text)
    assert first.meta["entry"] == 2 and [e.number for e in first.entries] == [2, 3]
    assert tuple(read(text, har_entry=3).records) == tuple(read(other).records)
    with pytest.raises(ReaderError, match="interaction 1 of the cassette is not a stream"):
        read(text, har_entry=1)
    with pytest.raises(ReaderError, match="not a HAR file or a cassette"):
        read(BODY, har_entry=1)


def test_the_safe_loader_builds_no_object() -> None:
    hostile = "interactions: !!python/object/apply:os.system ['echo owned']\n"
    with pytest.raises(ReaderError, match="does not read"):
        read(hostile)
    with pytest.raises(ReaderError, match="none holds an event stream"):
        read(cassette(interaction("hello", "text/plain")))
    with pytest.raises(ReaderError, match="YAML does not read"):
        read("interactions:\n  - [unclosed\n")


def test_a_written_cassette_reads_back_with_its_arrivals() -> None:
    data = BODY.encode()
    cut = data.index(b"data:", data.index(b"data:") + 1)
    text = to_cassette(BODY, model="gpt-4o", arrivals=Arrivals((cut, len(data)), (5.0, 9.0)))
    found = read(text)
    assert tuple(found.records) == tuple(read(BODY).records) and found.model == "gpt-4o"
    assert found.meta["arrivals"] == [5.0, 9.0, 9.0, 9.0, 9.0, 9.0]


def test_vcrpy_replays_a_written_cassette_to_the_openai_client(tmp_path: Path) -> None:
    path = tmp_path / "cassette.yaml"
    path.write_text(to_cassette(BODY, model="gpt-4o"))
    with vcr.use_cassette(
        str(path), record_mode="none", match_on=["method", "path"], allow_playback_repeats=True
    ):
        client = openai.OpenAI(api_key="sk-none", max_retries=0)
        chunks = list(client.chat.completions.create(model="gpt-4o", messages=[], stream=True))
        with httpx.Client() as plain:
            again = plain.post("https://api.openai.com/v1/chat/completions", json={})
    assert again.content == BODY.encode()
    calls = [c.delta.tool_calls for chunk in chunks for c in chunk.choices if c.delta.tool_calls]
    assert calls[0][0].function.name == "search_docs"  # type: ignore[union-attr]


def test_a_captured_streams_fixture_holds_a_cassette_with_its_timing(rig: Rig) -> None:
    rig.fake.script = corpus_pieces("no-index.sse")
    response = httpx.post(f"{rig.proxy}/chat/completions", json={"model": "gpt-4o", "stream": True})
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    timing = httpx.get(f"{rig.base}/api/streams/{stream_id}/timing").json()["timing"]
    assert all(ms is not None for ms in timing["arrivals"])
    bundle = zipfile.ZipFile(io.BytesIO(httpx.get(f"{rig.base}/s/{stream_id}/fixture.zip").content))
    found = read(bundle.read("cassette.yaml").decode())
    assert tuple(found.records) == tuple(read(bundle.read("stream.sse").decode()).records)
    # the fixture's stream.sse is written anew, record by record; each keeps its arrival
    assert found.meta["arrivals"][:5] == pytest.approx(timing["arrivals"][:5], abs=0.01)
    assert found.model == "example-model"  # what the chunks say: the stored bytes are SSE
