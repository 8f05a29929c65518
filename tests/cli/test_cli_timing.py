"""`trace --format json` adds `timing` when its input carries it: a cassette's arrivals, a HAR
entry's `timings`, the `.timing.json` `streamviz record` writes beside a stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.clikit import CLEAN, Invoke, Write
from tests.streamkit import chunk, frag, har, sse
from webapp.core.contract import UNFINISHED
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import Arrivals


def _document(invoke: Invoke, path: str) -> dict[str, object]:
    result = invoke("trace", path, "--format", "json")
    assert result.exit_code == 0, result.output
    document: dict[str, object] = json.loads(result.stdout)
    return document


def _sidecar(path: Path, data: bytes, **changes: object) -> None:
    """The `.timing.json` of `streamviz record`: each event's end, 10 ms apart after 5 ms."""
    ends, total = [], 0
    for event in data.split(b"\n\n")[:-1]:
        total += len(event) + 2
        ends.append(total)
    document = {"unit": "ms", "state": "complete", "headers_ms": 5.0, "ends": ends,
                "ms": [10.0 * (n + 1) for n in range(len(ends))], **changes}  # fmt: skip
    path.with_suffix(".timing.json").write_text(json.dumps(document))


def test_a_recorded_stream_gets_its_timing_from_beside_it(tmp_path: Path, invoke: Invoke) -> None:
    path = tmp_path / "20260101T000000-gpt-4o-1.sse"
    data = sse(*CLEAN).encode()
    path.write_bytes(data)
    assert "timing" not in _document(invoke, str(path))
    _sidecar(path, data)
    timing = _document(invoke, str(path))["timing"]
    assert timing == {"unit": "ms", "arrivals": [10.0, 20.0, 30.0, 40.0, 40.0],
                      "first_byte": 5.0, "end": 40.0, "source": "capture"}  # fmt: skip


def test_a_timing_file_of_other_bytes_is_not_used(tmp_path: Path, invoke: Invoke) -> None:
    path = tmp_path / "s.sse"
    data = sse(*CLEAN).encode()
    path.write_bytes(data + b": edited since\n\n")
    _sidecar(path, data)
    result = invoke("trace", str(path), "--format", "json")
    assert result.exit_code == 0 and "timing" not in json.loads(result.stdout)
    assert "s.timing.json: not used (it is not the timing of" in result.stderr


def test_a_cassette_and_a_har_entry_carry_their_own(write: Write, invoke: Invoke) -> None:
    body = sse(*CLEAN)
    ends = [len(body.encode())]
    cassette = write(to_cassette(body, arrivals=Arrivals(tuple(ends), (42.0,))), "c.yaml")
    assert _document(invoke, cassette)["timing"]["arrivals"] == [42.0] * 5  # type: ignore[index]
    document = json.loads(har(*CLEAN))
    document["log"]["entries"][0]["timings"] = {"wait": 50, "receive": 25}
    timing = _document(invoke, write(json.dumps(document), "h.har"))["timing"]
    assert timing["source"] == "har" and timing["first_byte"] == 50.0  # type: ignore[index]
    assert timing["end"] == 75.0  # type: ignore[index]


@pytest.mark.parametrize("bad", ["Infinity", "NaN", "1" + "0" * 400, "-3"])
def test_a_timing_file_whose_times_are_no_times_is_not_used(
    tmp_path: Path, invoke: Invoke, bad: str
) -> None:
    """Python's json reads `Infinity`, `NaN` and any integer: the sidecar is read by it."""
    path = tmp_path / "s.sse"
    data = sse(*CLEAN).encode()
    path.write_bytes(data)
    _sidecar(path, data, headers_ms="BAD")
    sidecar = path.with_suffix(".timing.json")
    sidecar.write_text(sidecar.read_text().replace('"BAD"', bad))
    result = invoke("trace", str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    assert "timing" not in json.loads(result.stdout)
    assert "s.timing.json: not used" in result.stderr


def test_a_har_entrys_timings_past_the_float_range_are_a_note(write: Write, invoke: Invoke) -> None:
    document = json.loads(har(*CLEAN))
    document["log"]["entries"][0]["timings"] = {"blocked": 1e308, "dns": 1e308,
                                                "connect": 1e308, "wait": 1}  # fmt: skip
    path = write(json.dumps(document), "h.har")
    assert "timing" not in _document(invoke, path)
    checked = invoke("check", path)
    assert "timings.blocked is 1e+308, not a time in ms" in checked.output


def test_a_recording_cut_short_is_not_judged_on_its_end(tmp_path: Path, invoke: Invoke) -> None:
    """A `.sse` that `streamviz record` wrote of an exchange cut short: `trace` and `check`
    report nothing only its end could show (issue 31), as the same bytes ended are judged."""
    path = tmp_path / "cut.sse"
    data = sse(chunk(frag(0, "c1", "get_weather", "")), chunk(frag(0, args='{"a": ')), done=False)
    path.write_bytes(data.encode())
    _sidecar(path, data.encode())
    ended = _document(invoke, str(path))
    assert "no-finish" in {q["code"] for q in ended["quirks"]} and "end" not in ended
    _sidecar(path, data.encode(), state="cut by the client")
    cut = _document(invoke, str(path))
    assert not {q["code"] for q in cut["quirks"]} & {"no-finish", "arguments-not-json"}
    assert "missing-finish-reason" not in {a["code"] for a in cut["anomalies"]}
    assert cut["end"]["why"] == "cut by the client"
    checked = json.loads(invoke("check", str(path), "--format", "json").stdout)
    assert not {a["code"] for a in checked["anomalies"]} & {"missing-finish-reason"}
    assert not {q["code"] for q in checked["quirks"]} & {"no-finish"}
    assert "no-finish" in checked["end"]["withheld"]


def test_a_file_that_shows_no_end_is_not_judged_on_it(tmp_path: Path, invoke: Invoke) -> None:
    """A file with no recording's sidecar that stops with neither a finish_reason nor [DONE]
    (a log's first lines, say): `trace`, `check`, `compare` and `report` say its end is not
    in it and report nothing of that end (`check` exits 0, and 1 with --strict: it cannot
    call the stream clean); with [DONE] after it, no finish_reason is proven."""
    path = tmp_path / "pasted.sse"
    data = sse(chunk(frag(0, "c1", "get_weather", "")), chunk(frag(0, args='{"a": ')), done=False)
    path.write_bytes(data.encode())
    cut = _document(invoke, str(path))
    assert not {q["code"] for q in cut["quirks"]} & {"no-finish", "arguments-not-json"}
    assert cut["end"] == {
        "recorded": False,
        "why": UNFINISHED,
        "withheld": ["arguments-not-json", "incomplete-arguments", "missing-finish-reason",
                     "no-finish"],
    }  # fmt: skip
    checked = invoke("check", str(path), "--format", "json")
    assert checked.exit_code == 0, checked.output
    assert not json.loads(checked.stdout)["anomalies"]
    said = invoke("check", str(path)).output
    assert "anomalies: none in what was recorded (its end was not)" in said
    assert "quirks: none in what was recorded (its end was not)" in said
    assert "keeps the contract" not in said
    assert invoke("check", str(path), "--strict").exit_code == 1
    compared = invoke("compare", str(path))
    assert compared.exit_code == 0 and "missing-finish-reason" not in compared.output
    reported = invoke("report", str(path)).output
    assert "nothing is filed" in reported and "None in what was recorded" in reported
    path.write_bytes((data + "data: [DONE]\n\n").encode())
    ended = _document(invoke, str(path))
    assert "no-finish" in {q["code"] for q in ended["quirks"]} and "end" not in ended
