"""A capture whose end was not recorded is never judged on how it ends (issue 31): the page, the
trace JSON, the report and the library say the end is missing instead of reporting
`no-finish` or `missing-finish-reason`, which the same bytes, ended, do report."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse
from tests.web.livekit import captured, events, start
from webapp.core.contract import UNFINISHED
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage.capture import ENDINGS
from webapp.storage.search import Search
from webapp.storage.team import Library
from webapp.web.app import create_app
from webapp.web.backend.intake.ingest import prepare
from webapp.web.backend.library import indexing
from webapp.web.backend.service import Service

CUT = sse(
    chunk(content="", role="assistant"),
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(0, args='{"city": "Par')),
    done=False,
)
"""What a capture holds when the exchange stopped mid-arguments: no finish_reason, no [DONE]."""

AT_END = {"no-finish", "arguments-not-json", "missing-finish-reason", "incomplete-arguments"}
OLD_STATS = ("chunks", "calls", "errors", "warnings", "model", "tools", "quirks")
"""A library row's numbers as builds before the end of a paste was judged kept them."""


def judged(client: TestClient, stream_id: str) -> tuple[set[str], set[str], dict[str, object]]:
    """(quirk codes, anomaly codes, the trace's "end") as the API answers them."""
    document = client.get(f"/api/streams/{stream_id}/trace").json()
    quirks = {quirk["code"] for quirk in document["quirks"]}
    anomalies = {anomaly["code"] for anomaly in document["anomalies"]}
    return quirks, anomalies, document.get("end") or {}


@pytest.mark.parametrize("state", ["client", "upstream", "server", "truncated"])
def test_a_cut_capture_is_not_judged_on_its_end(
    app: FastAPI, client: TestClient, state: str
) -> None:
    cut = captured(app.state.service.storage, CUT, [20.0] * 3, end=False)
    cut.end(ENDINGS[state])
    quirks, anomalies, end = judged(client, cut.stream_id)
    assert not (quirks | anomalies) & AT_END
    assert end == {"recorded": False, "why": ENDINGS[state], "withheld": sorted(AT_END)}
    page = client.get(f"/s/{cut.stream_id}").text
    assert f"end was not recorded ({ENDINGS[state]})" in page
    assert "keeps the contract" not in page and "admits more than one reading" not in page
    assert "never sent" not in page  # the finish_reason: not recorded, not "never sent"
    report = client.get(f"/s/{cut.stream_id}/report.md").text
    assert "Nothing to file from these bytes" in report and "File with" not in report


def test_the_same_bytes_ended_are_judged(app: FastAPI, client: TestClient) -> None:
    whole = captured(app.state.service.storage, CUT, [20.0] * 3)  # complete: the upstream ended
    quirks, anomalies, end = judged(client, whole.stream_id)
    assert quirks | anomalies >= AT_END and end == {}
    assert "end was not recorded" not in client.get(f"/s/{whole.stream_id}").text


def test_a_paste_that_shows_no_end_is_not_judged_on_it(client: TestClient) -> None:
    """Pasted (or uploaded) bytes that stop with neither a finish_reason nor [DONE] may be a
    log's first lines or a copy cut short: nothing is said of an end they do not hold, and
    nobody is blamed for it. With [DONE] after them, the same bytes prove that no
    finish_reason came; with a finish_reason and no [DONE], they hold their end."""

    def pasted(text: str) -> str:
        response = client.post("/api/streams", json={"text": text})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    cut = pasted(CUT)
    quirks, anomalies, end = judged(client, cut)
    assert not (quirks | anomalies) & AT_END
    assert end == {"recorded": False, "why": UNFINISHED, "withheld": sorted(AT_END)}
    page = client.get(f"/s/{cut}").text
    assert f"end was not recorded ({UNFINISHED})" in page and "never sent" not in page
    report = client.get(f"/s/{cut}/report.md").text
    assert "Nothing to file from these bytes" in report and "File with" not in report
    assert "None in what was recorded (its end was not)." in report
    assert "keeps the contract" not in report
    quirks, anomalies, end = judged(client, pasted(CUT + "data: [DONE]\n\n"))
    assert quirks | anomalies >= AT_END and end == {}
    finished = CUT + sse(chunk(finish="tool_calls"), done=False)
    quirks, _, end = judged(client, pasted(finished))
    assert "no-finish" not in quirks and end == {}


def test_a_minimised_stream_is_judged_on_its_end(app: FastAPI, client: TestClient) -> None:
    """The minimiser's output ends where it chose to (it keeps what a property needs, a
    missing finish_reason included): a stream with a parent is judged on its end, as a capture
    that ended is, though its bytes show no end."""
    service: Service = app.state.service
    parent = client.post("/api/streams", json={"text": CUT}).json()["id"]
    prepared = prepare(CUT.encode(), "auto", 1 << 20)
    made = indexing.store(service, prepared, title="minimised", parent=parent)
    quirks, anomalies, end = judged(client, made.id)
    assert quirks | anomalies >= AT_END and end == {}


def test_a_view_made_while_live_is_not_served_once_the_capture_is_cut(settings: Settings) -> None:
    """The same bytes, live then cut: a cached view of the live bytes (judged as if ended) is
    not the cut capture's view, in this worker or another."""
    recorder, other = Service(settings), Service(settings)
    try:
        recording = start(recorder.storage)
        recording.add(events(CUT), [20.0] * 3)
        for service in (recorder, other):
            live = service.view(recording.stream_id, Options()).trace
            assert live.contract is not None and live.contract.end is None
        recording.end(ENDINGS["client"])
        for service in (recorder, other):
            cut = service.view(recording.stream_id, Options()).trace
            assert cut.contract is not None and cut.contract.end == ENDINGS["client"]
            assert not cut.contract.codes & AT_END
    finally:
        recorder.close()
        other.close()


def test_the_library_says_a_pastes_end_is_missing_and_counts_nothing_of_it(
    settings: Settings,
) -> None:
    """The library's row of a paste cut short counts no anomaly of its end, says the end was
    not recorded, and its search does not find it by a code of that end; numbers and terms
    made before that end was judged (an older build's) are made again."""
    listing = replace(settings, list_streams=True)
    with TestClient(create_app(listing)) as client:
        cut = client.post("/api/streams", json={"text": CUT}).json()["id"]
        ended = client.post("/api/streams", json={"text": CUT + "data: [DONE]\n\n"}).json()["id"]
        rows = {row["id"]: row for row in client.get("/api/streams").json()["streams"]}
        assert rows[cut]["end"] == UNFINISHED and rows[ended]["end"] is None
        assert rows[cut]["errors"] == 0 and not set(rows[cut]["quirks"]) & AT_END
        assert rows[ended]["errors"] and set(rows[ended]["quirks"]) & AT_END
        found = [row["id"] for row in client.get("/api/streams?q=no-finish").json()["streams"]]
        assert found == [ended]
        page = client.get("/streams").text
        assert page.count("end not recorded") == 1 and "none in what was recorded" in page
        # what an older build kept: the numbers and terms of the end, judged as if it were there
        storage = client.app.state.service.storage  # type: ignore[attr-defined]
        old = {key: value for key, value in rows[ended].items() if key in OLD_STATS}
        size = client.app.state.service.info(cut).size  # type: ignore[attr-defined]
        assert Library(storage).keep_stats(cut, old, size)
        assert Search(storage).index(cut, {"quirk": ["no-finish"]})
        storage.backend.run("UPDATE streams SET terms_version = 2 WHERE id = ?", (cut,))
        rows = {row["id"]: row for row in client.get("/api/streams").json()["streams"]}
        assert rows[cut]["end"] == UNFINISHED and rows[cut]["errors"] == 0
    with TestClient(create_app(listing)) as client:
        assert client.app.state.backfill.finished.wait(30)  # type: ignore[attr-defined]
        found = [row["id"] for row in client.get("/api/streams?q=no-finish").json()["streams"]]
        assert found == [ended]
