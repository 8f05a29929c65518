"""The recording proxy end to end: real clients, a real streamviz, a fake provider on loopback."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from tests.capture.conftest import KEY, Rig
from tests.capture.fake import Fake, corpus_pieces, serving
from webapp.settings import Settings
from webapp.web.app import create_app

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "book_flight", "parameters": {"type": "object"}}},
]
MESSAGES = [{"role": "user", "content": "PROMPT-TEXT-do-not-keep"}]
WAIT = 15.0


def wait_for(condition: Callable[[], object], what: str) -> None:
    """Until `condition()` is true, failing after WAIT seconds (a bound, not a timing)."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT} s for {what}")
        threading.Event().wait(0.01)


def capture_of(rig: Rig, stream_id: str) -> dict[str, object]:
    found = httpx.get(f"{rig.base}/api/streams/{stream_id}/timing", timeout=WAIT).json()
    capture: dict[str, object] = found["capture"]
    return capture


def ended(rig: Rig, stream_id: str) -> dict[str, object]:
    """The capture's row once it is no longer live."""
    wait_for(lambda: not capture_of(rig, stream_id)["live"], "the capture to end")
    return capture_of(rig, stream_id)


def stored_bytes(rig: Rig) -> bytes:
    """Every byte of the store's files (database, WAL): where a secret would be if kept."""
    return b"".join(path.read_bytes() for path in sorted(rig.folder.glob("s.sqlite3*")))


def raw(rig: Rig, stream_id: str) -> bytes:
    return httpx.get(f"{rig.base}/api/streams/{stream_id}/raw", timeout=WAIT).content


def test_openai_python_streams_through_byte_for_byte(rig: Rig) -> None:
    rig.fake.script = corpus_pieces("two-calls-open-continuations.sse")
    client = openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o",
        messages=MESSAGES,
        tools=TOOLS,
        stream=True,  # type: ignore[arg-type]
    )
    stream_id = response.headers["streamviz-stream-id"]
    chunks = list(response.parse())
    assert len(chunks) == 4  # the corpus stream's chunks, [DONE] not among them
    calls = [c.delta.tool_calls for chunk in chunks for c in chunk.choices if c.delta.tool_calls]
    assert calls and calls[0][0].function and calls[0][0].function.name == "get_weather"
    capture = ended(rig, stream_id)  # the last batch is written by then
    assert raw(rig, stream_id) == b"".join(rig.fake.script)
    assert capture["state"] == "complete"
    assert (capture["model"], capture["stream"], capture["tools"], capture["status"]) == (
        "gpt-4o", True, ["get_weather", "book_flight"], 200,
    )  # fmt: skip
    assert capture["upstream"] == "default" and capture["path"] == "/v1/chat/completions"
    assert httpx.get(f"{rig.base}/s/{stream_id}").status_code == 200
    seen = rig.fake.seen[-1]
    assert seen.headers["authorization"] == f"Bearer {KEY}"  # forwarded...
    assert seen.path == "/v1/chat/completions" and seen.headers["host"] == rig.upstream[7:]
    assert json.loads(seen.body)["model"] == "gpt-4o"
    store = stored_bytes(rig)
    assert KEY.encode() not in store  # ... and never kept
    assert b"PROMPT-TEXT-do-not-keep" not in store  # no --keep-requests: no prompt


def test_the_title_names_the_model_and_the_tools(rig: Rig) -> None:
    rig.fake.script = corpus_pieces("clean-single-call.sse")
    response = httpx.post(
        f"{rig.proxy}/chat/completions",
        json={"model": "gpt-4o", "stream": True, "tools": TOOLS, "messages": MESSAGES},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    page = httpx.get(f"{rig.base}/s/{stream_id}").text
    assert "gpt-4o: get_weather, book_flight" in page
    assert KEY not in page


def test_the_first_bytes_reach_the_client_before_the_fake_sends_its_last(rig: Rig) -> None:
    pieces = corpus_pieces("no-index.sse")
    last = len(pieces) - 1
    rig.fake.script = pieces
    rig.fake.gates = {last: threading.Event()}  # the fake waits for the test before its last
    with httpx.stream(
        "POST", f"{rig.proxy}/chat/completions", json={"model": "m", "stream": True},
        timeout=WAIT,
    ) as response:  # fmt: skip
        received = b""
        stream = response.iter_raw()
        received += next(stream)
        assert rig.fake.sent and len(rig.fake.sent) < len(pieces)  # the fake is still sending
        stream_id = response.headers["streamviz-stream-id"]
        live = capture_of(rig, stream_id)
        assert live["live"] is True and live["state"] == "live"
        rig.fake.gates[last].set()
        for piece in stream:
            received += piece
    assert received == b"".join(pieces)
    assert ended(rig, stream_id)["state"] == "complete"  # the last batch is written by then
    assert raw(rig, stream_id) == received


def test_a_client_that_goes_away_cancels_the_upstream_and_the_stream_is_kept(rig: Rig) -> None:
    pieces = corpus_pieces("no-index.sse")
    rig.fake.script = pieces
    rig.fake.gates = {3: threading.Event()}
    with httpx.stream(
        "POST", f"{rig.proxy}/chat/completions", json={"model": "m", "stream": True},
        timeout=WAIT,
    ) as response:  # fmt: skip
        stream_id = response.headers["streamviz-stream-id"]
        first = next(response.iter_raw())
        wait_for(lambda: len(rig.fake.sent) == 3, "the fake's first three pieces")
    # The client is gone; the fake, held before its fourth piece, sees its client go too.
    wait_for(rig.fake.cancelled.is_set, "the upstream request to be cancelled")
    capture = ended(rig, stream_id)
    assert capture["state"] == "cut by the client"
    kept = raw(rig, stream_id)
    assert kept.startswith(first) and b"".join(pieces).startswith(kept)
    assert not rig.fake.finished.is_set()


def test_a_client_that_leaves_after_done_before_the_body_ends_has_read_it_all(
    make_rig: Callable[..., Rig],
) -> None:
    """openai-python closes its connection as soon as it reads `[DONE]`; the upstream's end
    of body may reach the proxy just after. The capture is complete, never "cut by the
    client" (issue 31: one of 40 openai-python reads was)."""
    rig = make_rig(proxy_drain_s=WAIT)
    pieces = corpus_pieces("clean-single-call.sse")
    pieces[-1] = b"data: [DONE]\n\n"  # as providers send it: the event is whole before the end
    rig.fake.script = pieces
    end = threading.Event()
    rig.fake.gates = {len(pieces): end}  # the fake holds its end of body until the test says
    client = openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=MESSAGES, stream=True,  # type: ignore[arg-type]
    )  # fmt: skip
    stream_id = response.headers["streamviz-stream-id"]
    chunks = list(response.parse())  # then it closes, at [DONE]
    assert chunks and chunks[-1].choices[0].finish_reason == "tool_calls"
    # A proxy that cuts the exchange now cancels the upstream request, which the fake sees
    # while it holds its end; one that reads on sees the end once the fake sends it.
    rig.fake.cancelled.wait(1.0)
    end.set()
    capture = ended(rig, stream_id)
    assert capture["state"] == "complete"
    assert raw(rig, stream_id) == b"".join(pieces)
    assert rig.fake.finished.is_set()


def cut_by_the_upstream(rig: Rig, pieces: list[bytes], after: int) -> str:
    """The id of the capture of a stream whose upstream drops it after `after` of `pieces`,
    read by openai-python through the proxy to the error it meets there."""
    rig.fake.script = pieces
    rig.fake.drop_after = after
    with openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0) as client:
        response = client.chat.completions.with_raw_response.create(
            model="gpt-4o",
            messages=MESSAGES,
            stream=True,  # type: ignore[arg-type]
        )
        with pytest.raises((httpx.RemoteProtocolError, openai.APIError)):
            list(response.parse())
    return response.headers["streamviz-stream-id"]


def test_an_upstream_that_drops_mid_stream_is_kept_and_the_client_sees_the_break(
    rig: Rig,
) -> None:
    pieces = corpus_pieces("no-index.sse")
    stream_id = cut_by_the_upstream(rig, pieces, 2)
    capture = ended(rig, stream_id)
    assert capture["state"] == "cut by the upstream"
    assert raw(rig, stream_id) == b"".join(pieces[:2])


def test_an_upstream_that_is_down_gives_a_502_shaped_like_openai(
    make_rig: Callable[..., Rig], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with serving(Fake()) as gone:
        pass  # its port is closed now
    app = create_app(Settings(db=str(tmp_path / "d.sqlite3"), upstreams=(gone,)))
    with serving(app) as base:
        client = openai.OpenAI(base_url=f"{base}/proxy/default/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai.InternalServerError) as raised:
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES)  # type: ignore[arg-type]
    assert raised.value.status_code == 502
    error = raised.value.response.json()["error"]
    assert error["code"] == "upstream_unreachable" and error["type"] == "proxy_error"
    assert "could not be reached" in error["message"] and KEY not in error["message"]
    said = [r.getMessage() for r in caplog.records if r.name == "webapp.proxy.forward"]
    assert any("could not be reached" in line and "ConnectionRefusedError" in line for line in said)


def test_an_upstream_that_does_not_answer_gives_a_504(make_rig: Callable[..., Rig]) -> None:
    fake = Fake(script=corpus_pieces("no-index.sse"), hold_headers=threading.Event())
    rig = make_rig(fake, proxy_timeout=0.3)
    response = httpx.post(f"{rig.proxy}/chat/completions", json={"model": "m"}, timeout=WAIT)
    fake.hold_headers.set()  # type: ignore[union-attr]
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"
    assert "streamviz-stream-id" not in response.headers


def test_no_upstream_no_proxy(tmp_path: Path) -> None:
    fake = Fake(script=[b"data: {}\n\n"])
    with serving(fake):
        app = create_app(Settings(db=str(tmp_path / "n.sqlite3")))
        with serving(app) as base:
            for method in ("GET", "POST"):
                response = httpx.request(method, f"{base}/proxy/default/v1/chat/completions")
                assert response.status_code == 404
                assert response.json()["error"]["code"] == "no_upstream"
            assert httpx.get(f"{base}/proxy/").status_code == 404
    assert fake.seen == []


def test_an_unknown_upstream_name_is_404(rig: Rig) -> None:
    response = httpx.post(f"{rig.base}/proxy/other/v1/chat/completions", json={})
    assert response.status_code == 404 and response.json()["error"]["code"] == "upstream_not_found"
    assert rig.fake.seen == []


def test_another_sites_page_may_not_use_the_proxy(rig: Rig) -> None:
    rig.fake.script = [b"data: [DONE]\n\n"]
    url = f"{rig.proxy}/chat/completions"
    for method in ("GET", "POST"):
        refused = httpx.request(method, url, headers={"Origin": "https://evil.example"})
        assert refused.status_code == 403
    refused = httpx.get(url, headers={"Sec-Fetch-Site": "cross-site"})
    assert refused.status_code == 403
    assert rig.fake.seen == []
    own = httpx.post(url, json={"model": "m"}, headers={"Origin": rig.base})
    assert own.status_code == 200  # the server's own pages may
    assert httpx.post(url, json={"model": "m"}).status_code == 200  # API clients send no Origin
    assert len(rig.fake.seen) == 2


def test_hop_by_hop_headers_stay_on_their_hop(rig: Rig) -> None:
    rig.fake.script = [b"data: [DONE]\n\n"]
    response = httpx.post(
        f"{rig.proxy}/chat/completions?api-version=1",
        json={"model": "m"},
        headers={
            "Connection": "keep-alive, X-Hop",
            "X-Hop": "1",
            "Keep-Alive": "timeout=5",
            "TE": "trailers",
            "Trailer": "X-Checksum",
            "Upgrade": "h2c",
            "Proxy-Authorization": "Basic cHJveHk6cGFzcw==",
            "X-End-To-End": "kept",
            "Accept-Encoding": "gzip, br",
        },
    )
    assert response.status_code == 200 and response.headers["x-fake"] == "1"
    seen = rig.fake.seen[-1].headers
    for name in ("x-hop", "keep-alive", "te", "trailer", "upgrade", "proxy-authorization"):
        assert name not in seen, name
    assert seen["x-end-to-end"] == "kept" and seen["accept-encoding"] == "identity"
    assert seen["host"] == rig.upstream.removeprefix("http://")
    assert rig.fake.seen[-1].query == b"api-version=1"


def test_keys_in_the_query_and_headers_are_forwarded_never_stored_or_logged(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    rig.fake.script = corpus_pieces("clean-single-call.sse")
    response = httpx.post(
        f"{rig.proxy}/chat/completions?key={KEY}",
        json={"model": "gemini", "stream": True},
        headers={"api-key": KEY, "x-api-key": KEY, "Cookie": f"session={KEY}"},
    )
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    seen = rig.fake.seen[-1]
    assert seen.query == f"key={KEY}".encode() and seen.headers["api-key"] == KEY
    assert seen.headers["x-api-key"] == KEY and KEY in seen.headers["cookie"]
    assert KEY.encode() not in stored_bytes(rig)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert KEY not in logged
    capture = capture_of(rig, stream_id)
    assert KEY not in json.dumps(capture) and capture["path"] == "/v1/chat/completions"


def test_keep_requests_stores_the_request_body(make_rig: Callable[..., Rig]) -> None:
    rig = make_rig(keep_requests=True)
    rig.fake.script = corpus_pieces("clean-single-call.sse")
    body = {"model": "gpt-4o", "stream": True, "messages": MESSAGES}
    response = httpx.post(f"{rig.proxy}/chat/completions", json=body)
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    kept = httpx.get(f"{rig.base}/api/streams/{stream_id}/request")
    assert kept.status_code == 200 and json.loads(kept.content) == body
    assert capture_of(rig, stream_id)["request_kept"] is True


def test_without_keep_requests_no_request_is_served(rig: Rig) -> None:
    rig.fake.script = corpus_pieces("clean-single-call.sse")
    response = httpx.post(f"{rig.proxy}/chat/completions", json={"model": "m", "stream": True})
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    assert httpx.get(f"{rig.base}/api/streams/{stream_id}/request").status_code == 404


def test_a_json_chat_completion_is_kept_as_one_record(rig: Rig) -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}],
    }  # fmt: skip
    rig.fake.script = [json.dumps(completion).encode()]
    rig.fake.content_type = "application/json"
    client = openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o",
        messages=MESSAGES,  # type: ignore[arg-type]
    )
    assert response.parse().choices[0].message.content == "hi"
    stream_id = response.headers["streamviz-stream-id"]
    capture = ended(rig, stream_id)
    assert capture["stream"] is None and capture["content_type"] == "application/json"
    timing = httpx.get(f"{rig.base}/api/streams/{stream_id}/timing").json()["timing"]
    assert len(timing["arrivals"]) == 2  # the one record, then the end step


def test_other_responses_pass_through_unrecorded(rig: Rig) -> None:
    rig.fake.script = [b'{"data": [{"id": "gpt-4o"}]}']
    rig.fake.content_type = "application/json"
    response = httpx.get(f"{rig.proxy}/models", headers={"Authorization": f"Bearer {KEY}"})
    assert response.json() == {"data": [{"id": "gpt-4o"}]}
    assert "streamviz-stream-id" not in response.headers
    assert rig.fake.seen[-1].method == "GET" and rig.fake.seen[-1].body == b""


def test_several_upstreams_by_name(tmp_path: Path) -> None:
    first, second = Fake(script=[b"data: [DONE]\n\n"]), Fake(script=[b"data: [DONE]\n\n"])
    with serving(first) as a, serving(second) as b:
        app = create_app(Settings(db=str(tmp_path / "m.sqlite3"), upstreams=(f"a={a}", f"b={b}")))
        with serving(app) as base:
            for name in ("a", "b", "b"):
                response = httpx.post(f"{base}/proxy/{name}/v1/chat/completions", json={})
                assert response.status_code == 200
            stream_id = response.headers["streamviz-stream-id"]
            wait_for(
                lambda: not httpx.get(f"{base}/api/streams/{stream_id}/timing").json()["live"],
                "the capture to end",
            )
            found = httpx.get(f"{base}/api/streams/{stream_id}/timing").json()
    assert (len(first.seen), len(second.seen)) == (1, 2)
    assert found["capture"]["upstream"] == "b"


def test_a_rebound_page_may_not_use_the_proxy(rig: Rig) -> None:
    """A page that renamed itself to the server's address (DNS rebinding) sends its own name
    as Host and Origin: the proxy answers it 400, like every other route."""
    rig.fake.script = [b"data: [DONE]\n\n"]
    url = f"{rig.proxy}/chat/completions"
    rebound = {"Host": "evil.example", "Origin": "http://evil.example"}
    for method in ("GET", "POST"):
        refused = httpx.request(method, url, headers=rebound)
        assert refused.status_code == 400 and "--allowed-hosts" in refused.text
    assert rig.fake.seen == []
    assert httpx.post(url, json={"model": "m"}, headers={"Host": "localhost"}).status_code == 200


def test_more_streams_at_once_than_httpx_pools_all_start(make_rig: Callable[..., Rig]) -> None:
    """httpx bounds a client's connections to 100: the proxy's upstream client has no bound,
    so the 101st stream at once starts with the others instead of waiting for one to end."""
    pieces = corpus_pieces("clean-single-call.sse")
    hold = threading.Event()
    rig = make_rig(Fake(script=pieces, gates={1: hold}))  # each stream waits after its first
    many = 110
    started = threading.Semaphore(0)

    async def one(client: httpx.AsyncClient) -> bytes:
        async with client.stream("POST", f"{rig.proxy}/chat/completions", json={}) as response:
            received = b""
            async for piece in response.aiter_raw():
                if not received:
                    started.release()
                received += piece
            return received

    async def all_of_them() -> list[bytes]:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(limits=limits, timeout=WAIT * 2) as client:
            return await asyncio.gather(*(one(client) for _ in range(many)))

    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(asyncio.run, all_of_them())
        try:
            for number in range(many):
                assert started.acquire(timeout=WAIT), f"only {number} of {many} streams started"
        finally:
            hold.set()
        assert done.result(timeout=WAIT * 2) == [b"".join(pieces)] * many
