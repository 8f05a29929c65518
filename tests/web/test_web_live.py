"""A live capture's page and its poll, the library's captures (live first), and the pace at
which a worker makes a growing capture's view again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.core.readers.not_streams import NGINX_502
from tests.web.livekit import FACTS, PIECES, TOOL_CALL, Recording, captured, start
from tests.web.webkit import HX
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage.capture import ENDINGS
from webapp.web.app import create_app
from webapp.web.backend.capture.live import Pace
from webapp.web.backend.service import Service
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS


def live(app: FastAPI, pieces: int = 3) -> Recording:
    """A live capture with its first `pieces` events arrived, on an app that makes the view
    again as soon as more has arrived: at the configured pace, a poll right after a growth
    would wait for as long as the machine took to make the last view (three times that), so
    what it answers would depend on the machine's speed. The pace itself is tested below,
    on a clock of its own."""
    app.state.pace = Pace(share=1.0, stall_ms=app.state.pace.stall_ms)
    recording = start(app.state.service.storage)
    recording.add(PIECES[:pieces], [50.0] * pieces)
    return recording


def poll_url(page: str) -> str:
    found = re.search(r'hx-get="([^"]*/live\?[^"]*)"', page)
    assert found, "no poll on the page"
    return found.group(1).replace("&amp;", "&")


def test_a_live_page_follows_the_last_record_and_polls(app: FastAPI, client: TestClient) -> None:
    recording = live(app, 4)  # role, header, two continuations: no finish yet
    page = client.get(f"/s/{recording.stream_id}").text
    assert 'id="live-view"' in page and 'hx-trigger="every 1000ms"' in page
    assert "4 records so far" in page and "becomes the ordinary stream page" in page
    assert 'data-step="3"' in page  # the last record, not the end step that has not come
    assert 'id="row-3"' in page and 'id="row-4"' not in page
    assert 'id="live-pin"' not in page  # following: the poll sends no step
    assert "add-note" not in page and "Rename" not in page and 'id="player"' not in page
    # The end would report missing-finish-reason now: named as provisional, not listed.
    assert "its end would report missing-finish-reason" in page
    listed = page[page.index('id="anomalies"') : page.index('id="timeline"')]
    assert "missing-finish-reason" not in listed and "No anomalies." in listed
    assert "missing-finish-reason" not in page[page.index('class="facts"') : page.index("</dl>")]


def test_a_live_page_judges_nothing_by_an_end_that_has_not_come(
    app: FastAPI, client: TestClient
) -> None:
    recording = live(app, 3)  # the header and the first half of get_weather's arguments
    page = client.get(f"/s/{recording.stream_id}?step=2").text
    # The quirk panel would say the arguments are cut short and no chunk has finish_reason.
    assert 'id="quirks"' not in page and "Provider quirks are judged" in page
    assert "no-finish" not in page and "arguments-not-json" not in page
    assert "(as things stand: the stream is still arriving)" in page
    assert "no more arguments arrive for it" not in page
    recording.add(PIECES[3:], [30.0] * (len(PIECES) - 3))
    recording.end()
    ended = client.get(f"/s/{recording.stream_id}?step=2").text
    assert 'id="quirks"' in ended and "still arriving" not in ended


def test_the_poll_answers_204_until_more_arrives_then_the_page(
    app: FastAPI, client: TestClient
) -> None:
    recording = live(app, 2)
    poll = poll_url(client.get(f"/s/{recording.stream_id}").text)
    assert client.get(poll, headers=HX).status_code == 204
    recording.add(PIECES[2:4], [30.0, 30.0])
    grown = client.get(poll, headers=HX)
    assert grown.status_code == 200 and 'id="live-view"' in grown.text
    assert "4 records so far" in grown.text and poll_url(grown.text) != poll
    assert client.get(poll_url(grown.text), headers=HX).status_code == 204
    recording.end()
    ended = client.get(poll_url(grown.text), headers=HX)  # it followed the latest chunk
    end = Links(recording.stream_id, DEFAULTS).step(4)  # four records, then the end step
    assert ended.status_code == 200 and ended.headers["HX-Redirect"] == end
    assert "HX-Refresh" not in ended.headers and ended.text == ""
    chosen = client.get(poll_url(grown.text) + "&step=2", headers=HX)  # its URL names step 2
    assert chosen.headers["HX-Refresh"] == "true" and "HX-Redirect" not in chosen.headers
    page = client.get(end).text  # the ordinary page, once
    assert 'data-step="4"' in page
    assert 'id="live-view"' not in page and 'hx-trigger="every' not in page
    assert 'id="timing"' in page and "add-note" in page


def test_a_browser_that_opens_the_poll_is_sent_to_the_page(
    app: FastAPI, client: TestClient
) -> None:
    recording = live(app)
    links = Links(recording.stream_id, DEFAULTS)
    followed = client.get(links.live(0))
    assert followed.status_code == 303 and followed.headers["location"] == links.following
    chosen = client.get(links.live(0) + "&step=1")
    assert chosen.status_code == 303 and chosen.headers["location"] == links.step(1)


def test_a_chosen_step_stays_while_the_stream_grows(app: FastAPI, client: TestClient) -> None:
    recording = live(app, 3)
    links = Links(recording.stream_id, DEFAULTS)
    page = client.get(links.step(1)).text
    assert 'id="live-pin" name="step" value="1"' in page
    assert "Follow the latest chunk again" in page and 'data-step="1"' in page
    stage = client.get(links.step(2), headers=HX).text  # a row clicked: the stage alone
    assert 'id="live-pin" name="step" value="2"' in stage and "add-note" not in stage
    recording.add(PIECES[3:5], [30.0, 30.0])
    grown = client.get(poll_url(page) + "&step=2", headers=HX).text  # hx-include: #live-pin
    assert 'data-step="2"' in grown and "5 records so far" in grown


def test_a_capture_with_nothing_readable_yet_waits(app: FastAPI, client: TestClient) -> None:
    recording = start(app.state.service.storage)
    page = client.get(f"/s/{recording.stream_id}")
    assert page.status_code == 200 and "waiting for the first bytes" in page.text
    poll = poll_url(page.text)
    assert client.get(poll, headers=HX).status_code == 204
    assert client.get(f"/s/{recording.stream_id}?step=0", headers=HX).status_code == 204
    recording.add(PIECES[:2], [10.0, 10.0])
    assert "2 records so far" in client.get(poll, headers=HX).text


def test_a_capture_that_ended_with_nothing_readable_stops_the_poll(
    app: FastAPI, client: TestClient
) -> None:
    recording = start(app.state.service.storage)
    poll = poll_url(client.get(f"/s/{recording.stream_id}").text)
    recording.end("cut by the upstream")
    ended = client.get(poll, headers=HX)
    assert ended.status_code == 200 and ended.headers["HX-Refresh"] == "true"
    assert client.get(f"/s/{recording.stream_id}").status_code == 422  # no poll on it


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"502 Bad Gateway\n", 'it reads as 2 records, none a JSON object: the first value, on '
         'line 1, is &#34;502&#34;'),
        (NGINX_502.replace("\n", "\r\n").encode(),
         "this is an HTML page (nginx 502 Bad Gateway)"),
    ],
    ids=["a-proxys-words", "an-nginx-page"],
)  # fmt: skip
def test_a_capture_that_holds_no_chunk_says_so_and_reports_no_quirk(
    app: FastAPI, client: TestClient, body: bytes, said: str
) -> None:
    """An upstream that answered an error page as text/event-stream: while it arrives the page
    waits; once ended, it says what the upstream answered and that no chunk came, never a
    trace with `no-finish` or `no-choices-chunk` (read as JSON, "502" was a chunk)."""
    recording = start(app.state.service.storage, replace(FACTS, status=502))
    recording.add([body], [10.0])
    waiting = client.get(f"/s/{recording.stream_id}")
    assert waiting.status_code == 200 and "no complete record yet" in waiting.text
    recording.end()
    page = client.get(f"/s/{recording.stream_id}")
    assert page.status_code == 422
    assert (
        "This capture holds no stream streamviz can read: upstream default answered POST "
        in page.text
    )
    assert (
        "/v1/chat/completions with 502 (text/event-stream); the capture is complete." in page.text
    )
    assert "No chat-completions chunk in the input" in page.text and said in page.text
    for quirk in ("no-finish", "no-choices-chunk", "invalid-chunk", 'id="quirks"'):
        assert quirk not in page.text
    trace = client.get(f"/api/streams/{recording.stream_id}/trace")
    assert trace.status_code == 422 and "no chat-completions chunk" in trace.json()["detail"]


def test_the_timing_of_a_live_stream_has_no_end_yet(app: FastAPI, client: TestClient) -> None:
    recording = live(app, 3)
    page = client.get(f"/s/{recording.stream_id}").text
    text = re.sub(r"<[^>]+>", " ", page[page.index('id="timing"') : page.index('id="overview"')])
    assert re.search(r"end\s+not yet · the last chunk came at 250 ms", text)
    assert re.search(r"finish_reason\s+not yet", text)


# The library.


@pytest.fixture
def recording_app(settings: Settings) -> Iterator[tuple[FastAPI, TestClient]]:
    app = create_app(Settings(db=settings.db, upstreams=("default=http://127.0.0.1:9",)))
    with TestClient(app) as client:
        yield app, client


def test_a_recording_servers_library_lists_its_captures_live_first(
    recording_app: tuple[FastAPI, TestClient],
) -> None:
    app, client = recording_app
    storage = app.state.service.storage
    first = captured(storage, TOOL_CALL, [10.0] * 6)
    ongoing = live(app)
    newest = captured(storage, TOOL_CALL, [10.0] * 6)
    cut = captured(storage, TOOL_CALL, [10.0] * 6, end=False)
    cut.end(ENDINGS["client"])
    client.post("/api/streams", json={"text": TOOL_CALL, "title": "pasted, not ours"})
    listed = client.get("/api/streams").json()  # a browser that stored nothing itself
    rows = listed["streams"]
    assert rows[0]["id"] == ongoing.stream_id and rows[0]["live"] is True  # live first
    assert {row["id"] for row in rows[1:]} == {first.stream_id, newest.stream_id, cut.stream_id}
    assert not any(row["live"] for row in rows[1:])
    assert {row["capture"] for row in rows[1:]} == {"complete", "cut by the client"}
    assert "chunks" not in rows[0] and rows[1]["chunks"] == 5  # not counted while it arrives
    page = client.get("/streams").text
    assert page.index("● live") < page.index("captured · complete")
    assert "still arriving" in page and "captured · cut by the client" in page
    assert "This server records: it lists every stream its proxy captured" in page


def test_captures_are_unlisted_on_request_and_without_upstreams(settings: Settings) -> None:
    for chosen in (Settings(db=settings.db, upstreams=("http://127.0.0.1:9",),
                            list_captures=False), Settings(db=settings.db)):  # fmt: skip
        app = create_app(chosen)
        with TestClient(app) as client:
            captured(app.state.service.storage, TOOL_CALL, [10.0] * 6)
            assert client.get("/api/streams").json()["streams"] == []


# The pace of a live view.


class Slow(Service):
    """A service whose every view "takes" `cost` seconds of the test's clock to make."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.now = 0.0
        self.cost = 0.0

    def view(self, *args: Any, **kwargs: Any) -> TraceView:
        self.now += self.cost
        return super().view(*args, **kwargs)


def test_a_live_view_is_made_again_only_after_its_cost_allows(settings: Settings) -> None:
    service = Slow(settings)
    pace = Pace(share=0.25, clock=lambda: service.now)
    try:
        recording = start(service.storage)
        recording.add(PIECES[:2], [1.0, 1.0])
        service.cost = 2.0  # each making takes 2 s: the next may start 6 s after it ends
        first = pace.view(service, recording.stream_id, Options())
        assert pace.makings == 1 and first.every == 8.0 and first.behind == 0
        assert pace.view(service, recording.stream_id, Options()).view is first.view
        recording.add(PIECES[2:4], [1.0, 1.0])
        service.now += 3.0
        behind = pace.view(service, recording.stream_id, Options())
        assert pace.makings == 1 and behind.view is first.view and behind.behind > 0
        service.now += 3.5
        fresh = pace.view(service, recording.stream_id, Options())
        assert pace.makings == 2 and fresh.behind == 0
        assert len(fresh.view.trace.steps) == len(first.view.trace.steps) + 2
        assert fresh.seen is not None and fresh.seen.provisional == ("missing-finish-reason",)
        recording.end()
        ended = pace.view(service, recording.stream_id, Options())
        assert not ended.live and ended.seen is None and pace.makings == 2
        assert ended.timing is not None and ended.timing.end is not None
    finally:
        service.close()
