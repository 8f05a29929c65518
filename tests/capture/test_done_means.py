"""Issue 21's "done means", end to end: openai-python pointed at `/proxy/default/v1` of a running
`streamviz serve --upstream ...` (the loopback fake) makes a streamed tool call; the application
works as before, the response carries `streamviz-stream-id`, `/api/streams/ID/raw` holds exactly
the bytes the client received, and the stream's page shows its rules with the time to the first
byte, the gaps and the arrival plot. A server that was killed mid-capture and started again
ends that capture as cut by the server."""

from __future__ import annotations

import html
import itertools
import json
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai

from tests.capture.conftest import KEY
from tests.capture.fake import Fake, corpus_pieces, serving
from tests.capture.test_processes import running

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]
WAIT = 15.0


class Tee(httpx.HTTPTransport):
    """A client transport that keeps every byte of the response bodies it hands its client."""

    def __init__(self) -> None:
        super().__init__()
        self.received = bytearray()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Kept(response, self.received),
            extensions=response.extensions,
            request=request,
        )


class _Kept(httpx.SyncByteStream):
    def __init__(self, response: httpx.Response, into: bytearray) -> None:
        self.response = response
        self.into = into

    def __iter__(self) -> Iterator[bytes]:
        assert isinstance(self.response.stream, httpx.SyncByteStream)
        for piece in self.response.stream:
            self.into += piece
            yield piece

    def close(self) -> None:
        self.response.close()


def test_a_streamed_tool_call_through_a_running_serve(tmp_path: Path) -> None:
    pieces = corpus_pieces("clean-single-call.sse")
    fake = Fake(script=pieces, pause_s=0.02)  # a provider's pace: gaps of 20 ms or more
    db = str(tmp_path / "done.sqlite3")
    tee = Tee()
    with (
        serving(fake) as upstream,
        running("serve", "--db", db, "--upstream", upstream, "--stall-ms", "15") as (base, _),
    ):
        http = httpx.Client(transport=tee)
        client = openai.OpenAI(base_url=f"{base}/proxy/default/v1", api_key=KEY, max_retries=0,
                               http_client=http)  # fmt: skip
        response = client.chat.completions.with_raw_response.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=TOOLS,  # type: ignore[arg-type]
            stream=True,
        )
        stream_id = response.headers["streamviz-stream-id"]
        name, arguments, finish = "", "", None
        for chunk in response.parse():  # the application, as it works without the proxy
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for call in choice.delta.tool_calls or ():
                    name += call.function.name or "" if call.function else ""
                    arguments += call.function.arguments or "" if call.function else ""
        assert (name, json.loads(arguments), finish) == ("get_weather", {"city": "Paris"},
                                                          "tool_calls")  # fmt: skip
        timing_url = f"{base}/api/streams/{stream_id}/timing"
        for _ in range(int(WAIT * 50)):  # the last batch is written once the stream has ended
            if not httpx.get(timing_url).json()["live"]:
                break
            threading.Event().wait(0.02)
        raw = httpx.get(f"{base}/api/streams/{stream_id}/raw").content
        page = httpx.get(f"{base}/s/{stream_id}").text
        trace = httpx.get(f"{base}/api/streams/{stream_id}/trace").json()
        http.close()
    assert bytes(tee.received) == b"".join(fake.sent) and raw == bytes(tee.received)
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))
    assert "rules fired exact-index 5 exact-id 0 continuation 0 drop 0 new 1" in text
    assert re.search(r"first byte \d[\d.]* m?s \(the response's status and headers\)", text)
    assert re.search(r"first tool-call fragment \d[\d.]* m?s · step 0", text)
    assert re.search(r"finish_reason \d[\d.]* m?s · step 6", text)
    gaps = re.findall(r'<span class="gap[^"]*"[^>]*>\+([\d.]+ m?s)</span>', page)
    assert len(gaps) == len(trace["steps"])  # the gap before every step
    assert '<svg class="arrivals-plot"' in page and '<path class="ap-line" d="M' in page
    timing = trace["timing"]
    arrived = [timing["first_byte"], *timing["arrivals"][:-1]]
    stalls = sum(1 for before, at in itertools.pairwise(arrived) if at - before > 15)
    assert stalls >= 1  # 8 pieces 20 ms apart: some gap is over 15 ms, however they were read
    assert page.count('class="ap-band"') == stalls  # each drawn on the plot...
    assert f"stalls (gaps over 15 ms) {stalls}:" in text  # ... and counted
    assert len(trace["timing"]["arrivals"]) == len(trace["steps"]) == 9
    assert KEY not in page


def test_a_capture_a_killed_server_left_live_is_ended_at_the_next_start(tmp_path: Path) -> None:
    pieces = corpus_pieces("no-index.sse")
    fake = Fake(script=pieces, gates={3: threading.Event()})  # it holds back its fourth piece
    db = str(tmp_path / "killed.sqlite3")
    with httpx.Client(timeout=WAIT) as client, serving(fake) as upstream:
        with running("serve", "--db", db, "--upstream", upstream, stop=signal.SIGKILL) as (
            base,
            _,
        ):
            url = f"{base}/proxy/default/v1/chat/completions"
            request = client.build_request("POST", url, json={"model": "m", "stream": True})
            response = client.send(request, stream=True)  # still open when the server dies
            stream_id = response.headers["streamviz-stream-id"]
            arrived = b"".join(pieces[:3])  # in one read or several: a piece is a read
            for _ in range(int(WAIT * 50)):
                stored = httpx.get(f"{base}/api/streams/{stream_id}/raw").content
                if stored == arrived:
                    break
                threading.Event().wait(0.02)
            found = httpx.get(f"{base}/api/streams/{stream_id}/timing").json()
            assert found["live"] is True and stored == arrived
        response.close()
        fake.gates[3].set()
        with running("serve", "--db", db, "--upstream", upstream) as (base, stderr):
            found = httpx.get(f"{base}/api/streams/{stream_id}/timing").json()
            raw = httpx.get(f"{base}/api/streams/{stream_id}/raw").content
            page = httpx.get(f"{base}/s/{stream_id}").text
    assert found["live"] is False and found["capture"]["state"] == "cut: the server stopped"
    assert raw == b"".join(pieces[:3])  # what had arrived is kept
    assert 'id="live-view"' not in page and 'id="timing"' in page
    assert "ended 1 capture a previous server left live" in stderr[0]
