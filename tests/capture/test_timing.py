"""Arrival times onto records and steps (the pure core), HAR timings, the timing document."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from tests.capture.fake import CORPUS
from webapp.core.readers import read
from webapp.core.readers.timing import (
    Arrivals,
    har_timing,
    record_arrivals,
    record_ends,
    timing_document,
)
from webapp.settings import Settings
from webapp.web.app import create_app

SSE = b': hello\n\ndata: {"a":1}\n\nevent: x\ndata: {"b":2}\n\ndata: [DONE]\n\n'


def lines(data: bytes) -> list[int | None]:
    return [record.line for record in read(data.decode()).records]


def test_a_record_arrives_with_the_blank_line_that_dispatches_it() -> None:
    first = SSE.index(b"\n\n", SSE.index(b"data")) + 1  # the blank line's break
    ends = record_ends(SSE, lines(SSE))
    assert ends[0] == first
    assert SSE[ends[1]] == 10 and SSE[ends[1] - 1] == 10
    assert ends[-1] == len(SSE) - 1


def test_each_record_takes_the_time_of_the_piece_that_completed_it() -> None:
    cut = SSE.index(b"\n\n", SSE.index(b"data")) + 1  # the first event's dispatch is here
    arrivals = Arrivals(ends=(cut, cut + 1, len(SSE)), ms=(10.0, 20.0, 30.0))
    # piece 1 holds everything up to the blank line's break but for its last byte
    assert record_arrivals(SSE, arrivals, lines(SSE)) == [20.0, 30.0, 30.0]


def test_a_record_whose_end_never_came_has_no_arrival() -> None:
    partial = SSE[: SSE.index(b"data: [DONE]") + 5]
    arrivals = Arrivals(ends=(len(partial),), ms=(5.0,))
    found = record_arrivals(SSE, arrivals, lines(SSE))
    assert found[:2] == [5.0, 5.0] and found[2] is None


def test_crlf_and_lone_cr_count_as_line_breaks() -> None:
    data = b"data: {}\r\n\r\ndata: {}\r\rdata: [DONE]\n\n"
    ends = record_ends(data, lines(data))
    assert ends == [data.index(b"\r\n\r\n") + 3, data.index(b"\r\r") + 1, len(data) - 1]


def test_not_sse_the_record_arrives_at_the_end() -> None:
    assert record_ends(b'{"object": "chat.completion"}', [1], sse=False) == [28]


def test_har_timings() -> None:
    timings = {"blocked": 1, "dns": -1, "connect": 10, "ssl": 5, "send": 1, "wait": 100,
               "receive": 900}  # fmt: skip
    assert har_timing(timings) == (112.0, 1012.0)
    assert har_timing({"wait": -1}) == (None, None)
    assert har_timing("nonsense") == (None, None)
    assert har_timing({"wait": 3, "receive": True}) == (3.0, None)


def test_the_document_has_one_arrival_per_step() -> None:
    document = timing_document(2, [1.0, None], first_byte=0.5, source="capture")
    assert document == {
        "unit": "ms", "arrivals": [1.0, None, 1.0], "first_byte": 0.5, "end": 1.0,
        "source": "capture",
    }  # fmt: skip
    assert timing_document(3, None, source="har")["arrivals"] == [None] * 4


def test_arrivals_round_trip_through_json_and_refuse_other_shapes() -> None:
    arrivals = Arrivals((3, 9), (1.5, 2.0), 0.5)
    assert Arrivals.from_json(arrivals.to_json()) == arrivals
    for bad in (None, [], {"ends": [1], "ms": []}, {"ends": [2, 1], "ms": [0, 0]},
                {"ends": [1], "ms": [-1]}, {"ends": [True], "ms": [1]}):  # fmt: skip
        assert Arrivals.from_json(bad) is None


def test_the_timing_api_reads_a_har_entrys_timings_and_none_from_plain_sse(tmp_path: Path) -> None:
    body = (CORPUS / "no-index.sse").read_text()
    entry = {
        "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions",
                    "headers": [{"name": "Authorization", "value": "Bearer sk-x"}]},
        "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": body}},
        "timings": {"blocked": 1, "dns": -1, "connect": 10, "send": 1, "wait": 100,
                    "receive": 900},
    }  # fmt: skip
    har = json.dumps({"log": {"version": "1.2", "entries": [entry]}})
    with TestClient(create_app(Settings(db=str(tmp_path / "t.sqlite3")))) as client:
        stream_id = client.post("/api/streams", json={"text": har}).json()["id"]
        found = client.get(f"/api/streams/{stream_id}/timing").json()
        plain = client.post("/api/streams", json={"text": body}).json()["id"]
        none = client.get(f"/api/streams/{plain}/timing").json()
        missing = client.get("/api/streams/nope/timing")
    timing = found["timing"]
    assert (timing["first_byte"], timing["end"], timing["source"]) == (112.0, 1012.0, "har")
    assert timing["arrivals"] == [None] * 6 + [1012.0]
    assert found["live"] is False and found["capture"] is None
    assert none == {"timing": None, "live": False, "capture": None}
    assert missing.status_code == 404
