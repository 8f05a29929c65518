"""`/replay/ID/v1`: real clients (openai-python, the Vercel AI SDK) pointed at stored streams.

A stream is captured through the proxy from the fake provider (so it has recorded arrivals),
then replayed to the clients as their base URL; the pace is checked with a fake clock."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.capture.aisdk import run_ai_sdk
from tests.capture.conftest import KEY, Client, Rig
from tests.capture.fake import corpus_pieces
from tests.capture.test_proxy import MESSAGES, TOOLS, cut_by_the_upstream, ended, raw
from webapp.examples import EXAMPLES
from webapp.proxy.replay import ReplayRoutes, Unavailable
from webapp.settings import Settings
from webapp.triage.replay import NoTwin, Paced
from webapp.web.backend.service import Service
from webapp.web.routes.replay import StoredReplays

FAST = {"streamviz-replay-speed": "0"}


def captured(rig: Rig, name: str, pause: float = 0.0) -> tuple[str, bytes]:
    """A corpus stream captured through the proxy: (its id, its bytes)."""
    rig.fake.script = corpus_pieces(name)
    rig.fake.pause_s = pause
    with openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0) as proxied:
        response = proxied.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=MESSAGES, tools=TOOLS, stream=True,  # type: ignore[arg-type]
        )  # fmt: skip
        stream_id = response.headers["streamviz-stream-id"]
        for _ in response.parse():
            pass
    assert ended(rig, stream_id)["state"] == "complete"
    return stream_id, raw(rig, stream_id)


def replayed(rig: Rig, stream_id: str, entry: str = "") -> str:
    return f"{rig.base}/replay/{stream_id}/{entry}v1"


def stream_count(rig: Rig) -> int:
    with sqlite3.connect(rig.folder / "s.sqlite3") as db:
        count: int = db.execute("SELECT count(*) FROM streams").fetchone()[0]
    return count


def test_openai_python_streams_the_stored_bytes_and_assembles_the_calls(
    rig: Rig, make_client: Client
) -> None:
    stream_id, data = captured(rig, "interleaved-parallel-calls.sse")
    before = stream_count(rig)
    client = make_client(replayed(rig, stream_id), default_headers=FAST)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=MESSAGES, tools=TOOLS, stream=True,  # type: ignore[arg-type]
    )  # fmt: skip
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["streamviz-stream-id"] == stream_id
    assert response.http_response.read() == data
    with client.chat.completions.stream(
        model="gpt-4o",
        messages=MESSAGES,
        tools=TOOLS,  # type: ignore[arg-type]
    ) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"timezone": "Europe/Paris"}),
    ]
    assert stream_count(rig) == before  # nothing a replay serves is stored


def test_openai_python_without_stream_gets_the_non_stream_twin(
    rig: Rig, make_client: Client
) -> None:
    stream_id, _ = captured(rig, "interleaved-parallel-calls.sse")
    client = make_client(replayed(rig, stream_id))
    completion = client.chat.completions.create(
        model="gpt-4o",
        messages=MESSAGES,
        tools=TOOLS,  # type: ignore[arg-type]
    )
    assert completion.object == "chat.completion"
    message = completion.choices[0].message
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    assert calls == [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "Europe/Paris"})]
    assert completion.choices[0].finish_reason == "tool_calls"


def test_a_stream_with_two_readings_has_no_twin_409(rig: Rig, make_client: Client) -> None:
    client = make_client(replayed(rig, "example:ambiguous"))
    with pytest.raises(openai.ConflictError) as raised:
        client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    body: Any = raised.value.body
    assert body["code"] == "no_intended_reading"
    assert body["message"].startswith("the stream admits two readings: ")
    streamed = client.chat.completions.create(
        model="m",
        messages=MESSAGES,
        stream=True,  # type: ignore[arg-type]
    )
    assert len(list(streamed)) > 3  # the bytes are still replayed


def test_an_unknown_id_is_an_openai_shaped_404(rig: Rig, make_client: Client) -> None:
    client = make_client(replayed(rig, "nosuchstream"))
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # type: ignore[call-overload]
    assert raised.value.status_code == 404
    answer = httpx.post(f"{replayed(rig, 'nosuchstream')}/chat/completions", json={})
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "code"}
    assert error["code"] == "stream_not_found" and "nosuchstream" in error["message"]
    assert httpx.get(f"{replayed(rig, 'nosuchstream')}/models").status_code == 404


def test_the_replay_keeps_the_hosts_and_the_sites_rules(rig: Rig) -> None:
    url = f"{replayed(rig, 'example:clean')}/chat/completions"
    assert httpx.post(url, json={}, headers={"host": "evil.example"}).status_code == 400
    other = {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}
    assert httpx.post(url, json={}, headers=other).status_code == 403
    assert httpx.get(url, headers=other).status_code == 403
    assert httpx.get(url, params={"speed": "fast"}).json()["error"]["code"] == "bad_speed"
    assert httpx.get(url).content == EXAMPLES["clean"].data()


def test_the_vercel_ai_sdk_reads_its_calls_from_the_replay(rig: Rig) -> None:
    stream_id, data = captured(rig, "interleaved-parallel-calls.sse")
    found = run_ai_sdk(replayed(rig, stream_id))
    assert found["errors"] == []
    assert found["streamId"] == stream_id
    assert [(c["name"], c["input"]) for c in found["calls"]] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"timezone": "Europe/Paris"}),
    ]
    assert base64.b64decode(found["received"]) == data


def _har(*bodies: bytes) -> str:
    entries = [
        {
            "request": {"method": "POST", "url": "https://api.example/v1/chat/completions"},
            "response": {"status": 200, "content": {"mimeType": "text/event-stream",
                                                    "text": body.decode()}},
        }
        for body in bodies
    ]  # fmt: skip
    return json.dumps({"log": {"version": "1.2", "entries": entries}})


def test_a_har_replays_the_entry_its_page_shows_or_the_one_named(
    rig: Rig, make_client: Client
) -> None:
    clean = EXAMPLES["clean"].data()
    ambiguous = b": keep-alive\r\n\r\n" + EXAMPLES["ambiguous"].data() + b": the end\n"
    created = httpx.post(f"{rig.base}/api/streams", json={"text": _har(clean, ambiguous)})
    stream_id = created.json()["id"]
    shown = httpx.get(f"{replayed(rig, stream_id)}/chat/completions", params={"speed": 0})
    assert shown.content == ambiguous  # the page's entry (with anomalies), its body exactly
    assert shown.headers["content-type"] == "text/event-stream"
    first = httpx.get(f"{replayed(rig, stream_id, '1/')}/chat/completions")
    assert first.content == clean
    client = make_client(replayed(rig, stream_id, "1/"))
    completion = client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert [c.function.name for c in completion.choices[0].message.tool_calls or []] == [
        "get_weather"
    ]
    missing = httpx.get(f"{replayed(rig, stream_id, '7/')}/chat/completions")
    assert missing.status_code == 404 and "entry 7" in missing.json()["error"]["message"]


class FakeClock:
    """Time that passes only when a replay sleeps."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds


async def _sent_at(routes: ReplayRoutes, clock: FakeClock, path: str) -> list[tuple[float, bytes]]:
    """Each piece of the body the replay sends, with the fake time it was sent at."""
    sent: list[tuple[float, bytes]] = []
    request = [{"type": "http.request", "body": b'{"stream": true}', "more_body": False}]

    async def receive() -> dict[str, Any]:
        if request:
            return request.pop()
        await asyncio.Event().wait()  # the client stays
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message["body"]:
            sent.append((clock.t, message["body"]))

    scope = {"type": "http", "method": "POST", "path": path, "query_string": b"", "headers": []}
    await routes(scope, receive, send)
    return sent


def test_the_replay_keeps_the_recorded_pace_at_any_speed(rig: Rig) -> None:
    stream_id, data = captured(rig, "interleaved-parallel-calls.sse", pause=0.03)
    timing = httpx.get(f"{rig.base}/api/streams/{stream_id}/timing").json()["timing"]
    arrivals = timing["arrivals"][:-1]
    assert all(ms is not None for ms in arrivals)
    service = Service(Settings(db=str(rig.folder / "s.sqlite3")))
    try:
        at: dict[float, list[tuple[float, bytes]]] = {}
        for speed in (1.0, 2.0, 0.0):
            clock = FakeClock()
            routes = ReplayRoutes(rig, StoredReplays(service), speed=speed, clock=clock)  # type: ignore[arg-type]
            at[speed] = asyncio.run(
                _sent_at(routes, clock, f"/replay/{stream_id}/v1/chat/completions")
            )
    finally:
        service.close()
    assert all(b"".join(p for _, p in sent) == data for sent in at.values())
    assert len(at[1.0]) == len(arrivals)  # one piece per record
    recorded = [(ms - timing["first_byte"]) / 1000 for ms in arrivals]
    assert [t for t, _ in at[1.0]] == pytest.approx(recorded, abs=1e-3)
    assert [t for t, _ in at[2.0]] == pytest.approx([t / 2 for t in recorded], abs=1e-3)
    assert [t for t, _ in at[0.0]] == [0.0] * len(arrivals)
    gaps = [b - a for a, b in itertools.pairwise(recorded)]
    assert max(gaps) > 0.02  # the fake's pauses were recorded, and replayed


def test_a_capture_cut_short_is_replayed_as_it_came_and_has_no_twin(
    rig: Rig, make_client: Client
) -> None:
    pieces = corpus_pieces("interleaved-parallel-calls.sse")
    stream_id = cut_by_the_upstream(rig, pieces, 4)
    assert ended(rig, stream_id)["state"] == "cut by the upstream"
    url = f"{replayed(rig, stream_id)}/chat/completions"
    assert httpx.post(url, json={"stream": True}).content == b"".join(pieces[:4])
    with pytest.raises(openai.ConflictError) as raised:
        make_client(replayed(rig, stream_id)).chat.completions.create(
            model="m",
            messages=MESSAGES,  # type: ignore[arg-type]
        )
    assert "end was not recorded (cut by the upstream)" in str(raised.value)


def test_the_vercel_ai_sdks_generate_text_reads_the_twin_or_the_409(rig: Rig) -> None:
    script = Path(__file__).with_name("vercel_generate.mjs")
    found = {
        key: run_ai_sdk(replayed(rig, f"example:{key}"), script=script)
        for key in ("interleaved", "ambiguous")
    }
    assert found["interleaved"]["error"] is None
    assert [(c["id"], c["name"], c["input"]) for c in found["interleaved"]["calls"]] == [
        ("call_w1", "get_weather", {"city": "Paris"}),
        ("call_t1", "get_time", {"tz": "Europe/Paris"}),
    ]
    assert found["ambiguous"]["calls"] == []
    assert found["ambiguous"]["error"]["status"] == 409
    assert "admits two readings" in found["ambiguous"]["error"]["message"]


class StoppedClock(FakeClock):
    """A pace so slow that the next piece never comes."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()


def test_a_client_that_goes_away_stops_a_paced_replay() -> None:
    class One:
        def paced(self, stream_id: str, entry: int | None) -> Paced:
            return Paced((b"data: 1\n\n", b"data: 2\n\n"), (10.0, 5000.0), first_byte=10.0)

        def twin(self, stream_id: str, entry: int | None) -> NoTwin:
            return NoTwin("unused")

    routes = ReplayRoutes(None, One(), clock=StoppedClock())  # type: ignore[arg-type]
    sent: list[bytes] = []
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        while not sent:  # the client reads the first piece, then goes
            await asyncio.sleep(0)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])

    scope = {"type": "http", "method": "GET", "path": "/replay/x/v1/chat/completions",
             "query_string": b"", "headers": []}  # fmt: skip
    asyncio.run(asyncio.wait_for(routes(scope, receive, send), timeout=30))
    assert sent == [b"data: 1\n\n"]  # the second piece, due 5 s later, was never sent


def test_a_busy_server_answers_503_not_500() -> None:
    class Busy:
        def paced(self, stream_id: str, entry: int | None) -> Paced:
            raise Unavailable("stream x cannot be read now: waited 5 s")

        twin = paced

    routes = ReplayRoutes(None, Busy())  # type: ignore[arg-type]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/replay/x/v1/chat/completions",
             "query_string": b"", "headers": []}  # fmt: skip
    asyncio.run(routes(scope, receive, send))
    assert sent[0]["status"] == 503
    assert json.loads(sent[1]["body"])["error"]["code"] == "server_busy"
