"""Timing on the page: the view models (milestones, plot, gaps, stalls) and the pages and the
trace JSON of a captured stream, a HAR entry with `timings`, a cassette, and plain SSE."""

from __future__ import annotations

import json
import re
from array import array

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, har
from tests.web.livekit import TOOL_CALL, captured, events
from tests.web.webkit import HX, Store
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import Arrivals, timing_document
from webapp.web.backend.capture.timing import Timing
from webapp.web.backend.trace.overview import Bucket, Cell, Strip
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS
from webapp.web.views.timeline import RunRow, TimelineRow, Window
from webapp.web.views.timing import (
    MAX_BANDS,
    PLOT_WIDTH,
    duration,
    plot,
    step_time,
    timed_strip,
    timed_window,
)

GAPS = [200, 20, 30, 1500, 40, 5]
"""TOOL_CALL's events after the headers (at 100 ms): step 3 comes 1.5 s late, a stall."""
ARRIVED = [300.0, 320.0, 350.0, 1850.0, 1890.0, 1895.0]


@pytest.mark.parametrize(
    ("ms", "shown"),
    [(0.42, "0.4 ms"), (9.96, "10.0 ms"), (120.4, "120 ms"), (1000, "1 s"), (1450, "1.45 s"),
     (2100, "2.1 s"), (14_250, "14.2 s"), (125_000, "2 min 5 s")],
)  # fmt: skip
def test_durations(ms: float, shown: str) -> None:
    assert duration(ms) == shown


def timing(arrivals: list[float | None], first_byte: float | None = 100.0, stall: float = 1000):
    document = timing_document(len(arrivals), arrivals, first_byte=first_byte, source="capture")
    return Timing.of(document, stall)


def test_gaps_are_measured_from_the_step_before_and_stalls_over_the_threshold() -> None:
    found = timing([300.0, 320.0, None, 1850.0, 1890.0])
    assert found.gap(0) == 200.0  # after the first byte
    assert found.gap(1) == 20.0
    assert found.gap(2) is None and found.gap(3) is None  # an unknown step breaks the chain
    assert list(found.stalls) == []
    assert list(timing([300.0, 320.0, 1850.0]).stalls) == [2]
    assert list(timing([300.0, 320.0, 1850.0], stall=10).stalls) == [0, 1, 2]
    assert found.document()["arrivals"] == [300.0, 320.0, None, 1850.0, 1890.0, 1890.0]
    assert found.per_step and found.steps == 6
    har_only = Timing.of(timing_document(3, first_byte=12.0, end=900.0, source="har"), 1000)
    assert not har_only.per_step and har_only.at(3) == 900.0 and har_only.gap(3) is None


def test_the_plot_has_a_point_per_pixel_column_not_per_step() -> None:
    arrivals: list[float | None] = [float(n) for n in range(100_000)]
    arrivals[50_000] = arrivals[49_999]
    for n in range(50_000, 100_000):
        arrivals[n] = float(n) + 5_000  # one stall, 5 s long, before step 50,000
    found = timing(arrivals, first_byte=0.0)
    drawn = plot(found, Links("s", DEFAULTS), 100_000, 3, 99_999)
    assert drawn is not None
    assert drawn.line.count("H") <= PLOT_WIDTH + 2
    assert [band.step for band in drawn.bands] == [50_000]
    assert drawn.bands[0].url == Links("s", DEFAULTS).step(50_000)
    assert [mark.kind for mark in drawn.marks] == ["byte", "fragment", "finish"]
    assert drawn.x_ticks[0].label == "0" and drawn.y_ticks[-1].label == "100,000"


def test_the_plot_draws_the_longest_stalls_when_there_are_too_many() -> None:
    steps = MAX_BANDS * 3
    arrivals: list[float | None] = [1000.0 * n + n * (n + 1) / 2 for n in range(1, steps + 1)]
    found = timing(arrivals, first_byte=0.0)  # the gap before step n is 1,001 + n ms
    assert len(found.stalls) == steps
    drawn = plot(found, Links("s", DEFAULTS), steps, None, None)
    assert drawn is not None
    assert [band.step for band in drawn.bands] == list(range(steps - MAX_BANDS, steps))


def _row(step: int) -> TimelineRow:
    return TimelineRow(step, 1, "chunk", f"/s?step={step}", False, True, (), (), (), None)


def test_rows_get_their_gaps_and_a_collapsed_run_its_longest_stall() -> None:
    run = RunRow(2, 4, "exact-index", "steps 2-4", "/s?step=2", None, expanded=False,
                 phantom=False)  # fmt: skip
    window = Window(0, 5, (_row(0), _row(1), run), None, None, None, None)
    found = timed_window(window, timing([300.0, 320.0, 350.0, 2000.0, 2010.0]))
    first, second, collapsed = found.rows
    assert isinstance(first, TimelineRow) and (first.gap, first.stall) == ("+200 ms", False)
    assert isinstance(second, TimelineRow) and second.gap == "+20 ms"
    assert isinstance(collapsed, RunRow) and collapsed.stall == "stall 1.65 s inside"
    assert timed_window(window, None) is window


def test_the_strip_marks_the_columns_that_hold_a_stall() -> None:
    buckets = (Bucket(0, 1, 0, (), 0, 0), Bucket(2, 3, 2, (), 0, 0))
    cells = (Cell("/a", "oc z", "steps 0-1", False), Cell("/b", "oc z", "steps 2-3", False))
    strip = Strip(cells, 4, "one column per step")
    found = timed_strip(strip, buckets, timing([300.0, 320.0, 2000.0, 2010.0]))
    assert [cell.classes for cell in found.cells] == ["oc z", "oc z st"]
    assert found.cells[1].title.endswith("stall 1.68 s")


def test_the_stage_says_when_its_step_came_and_the_gap_before_the_next() -> None:
    found = step_time(timing([300.0, 320.0, 1850.0]), 1)
    assert found is not None and found.next_gap == 1530.0
    assert found.text == "arrived 320 ms after the request, 20 ms after step 0"
    zero = step_time(timing([300.0, 320.0, 1850.0]), 0)
    assert zero is not None and zero.text.endswith("200 ms after the first byte")
    assert step_time(None, 0) is None


# Pages and the trace JSON.


def test_a_captured_streams_page_shows_its_timing(app: FastAPI, client: TestClient) -> None:
    stream_id = captured(app.state.service.storage, TOOL_CALL, GAPS).stream_id
    page = client.get(f"/s/{stream_id}?step=2").text
    section = page[page.index('id="timing"') : page.index('id="overview"')]
    text = re.sub(r"<[^>]+>", " ", section)
    assert re.search(r"first byte\s+100 ms", text)
    assert re.search(r"first chunk\s+300 ms · step 0", text)
    assert re.search(r"first tool-call fragment\s+320 ms · step 1", text)
    assert re.search(r"finish_reason\s+1.89 s · step 4", text)
    assert re.search(r"end\s+1.9 s", text)
    assert re.search(r"1.5 s before step 3", text)
    assert '<path class="ap-line"' in section
    band = Links(stream_id, DEFAULTS).step(3).replace("&", "&amp;")
    assert f'<a href="{band}" class="ap-band">' in section
    row = page[page.index('id="row-3"') - 200 : page.index('id="row-4"')]
    assert "stalled" in row and "+1.5 s" in row and ">stall<" in row
    assert "+20 ms" in page[page.index('id="row-1"') : page.index('id="row-2"')]
    assert page.count(' st" href=') == 1  # the strip's one column with a stall
    assert 'data-next-gap="1500.0"' in page  # the stage at step 2: step 3 comes 1.5 s later
    assert '<option value="recorded"' in page
    assert "style=" not in page  # the CSP allows no inline style: the plot uses classes


def test_the_trace_json_has_one_arrival_per_step(app: FastAPI, client: TestClient) -> None:
    stream_id = captured(app.state.service.storage, TOOL_CALL, GAPS).stream_id
    document = client.get(f"/api/streams/{stream_id}/trace").json()
    assert document["timing"] == {
        "unit": "ms", "arrivals": [*ARRIVED, 1895.0], "first_byte": 100.0, "end": 1895.0,
        "source": "capture",
    }  # fmt: skip
    assert len(document["timing"]["arrivals"]) == len(document["steps"])


def test_a_plain_stream_has_no_timing(client: TestClient, store: Store) -> None:
    stream_id = store(TOOL_CALL)
    assert 'id="timing"' not in client.get(f"/s/{stream_id}").text
    assert "timing" not in client.get(f"/api/streams/{stream_id}/trace").json()
    assert 'value="recorded"' not in client.get(f"/s/{stream_id}").text


def test_a_har_entrys_timings_give_the_first_byte_and_the_end(
    client: TestClient, store: Store
) -> None:
    document = json.loads(har(chunk(frag(0, "c", "f", "{}")), chunk(finish="tool_calls")))
    document["log"]["entries"][0]["timings"] = {"send": 2, "wait": 180, "receive": 720}
    stream_id = store(json.dumps(document))
    page = client.get(f"/s/{stream_id}").text
    text = re.sub(r"<[^>]+>", " ", page[page.index('id="timing"') : page.index('id="overview"')])
    assert re.search(r"first byte\s+182 ms", text) and re.search(r"end\s+902 ms", text)
    assert "not in a HAR entry · step 0" in text and "stalls" in text
    assert "ap-line" not in page and 'value="recorded"' not in page  # no arrival per step
    timing_json = client.get(f"/api/streams/{stream_id}/trace").json()["timing"]
    assert timing_json["source"] == "har" and timing_json["arrivals"] == [None] * 3 + [902.0]


def test_a_cassettes_arrivals_are_on_its_page(client: TestClient, store: Store) -> None:
    body = TOOL_CALL
    ends, total = [], 0
    for piece in events(body):
        total += len(piece)
        ends.append(total)
    arrivals = Arrivals(tuple(ends), tuple(ARRIVED), 100.0)
    stream_id = store(to_cassette(body, model="gpt-4o", arrivals=arrivals))
    page = client.get(f"/s/{stream_id}").text
    assert "from the cassette" in page and "ap-line" in page and "1.5 s before step 3" in page
    timing_json = client.get(f"/api/streams/{stream_id}/trace").json()["timing"]
    assert timing_json["source"] == "cassette" and timing_json["arrivals"][:6] == ARRIVED


def test_the_timeline_partials_carry_the_gaps(app: FastAPI, client: TestClient) -> None:
    stream_id = captured(app.state.service.storage, TOOL_CALL, GAPS).stream_id
    links = Links(stream_id, DEFAULTS)
    rows = client.get(links.rows(2, 5, 2, "after"), headers=HX).text
    assert "+1.5 s" in rows and "stalled" in rows
    window = client.get(links.timeline(3), headers=HX).text
    assert "+20 ms" in window


def test_the_timing_array_is_what_the_cache_weighs() -> None:
    found = timing([1.0] * 1000)
    assert isinstance(found.arrivals, array) and found.weight < 10_000
