"""The timing an input carries (a HAR entry's `timings`, a cassette's `streamviz_timing`):
a value that is no time in ms is ignored with a note naming the entry and field, never raised,
and the timing document never holds a non-finite number (JSON has none)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.core.readers import read
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import Arrivals, read_timing, timing_document
from webapp.core.records import ReaderError

BODY = 'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
PHASES = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")


def har(timings: str) -> str:
    """A one-entry HAR whose `timings` is the given JSON text, written as is."""
    entry = {
        "request": {"method": "POST", "url": "https://api.example.com/v1/chat/completions"},
        "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": BODY}},
        "timings": "TIMINGS",
    }
    return json.dumps({"log": {"entries": [entry]}}).replace('"TIMINGS"', timings)


def strict(document: Any) -> str:
    """The document as the API's JSONResponse writes it (no NaN, no Infinity)."""
    return json.dumps(document, allow_nan=False)


@pytest.mark.parametrize(
    ("timings", "first_end"),
    [
        ('{"blocked": 1, "dns": -1, "send": 1, "wait": 100, "receive": 900}', (102.0, 1002.0)),
        ('{"send": 0, "wait": 0.5}', (0.5, None)),
        ('{"send": 0, "wait": 1000000000000, "receive": 1000000000000}', (1e12, 2e12)),
    ],
)
def test_times_in_ms_give_the_first_byte_and_the_end(
    timings: str, first_end: tuple[float, float | None]
) -> None:
    found = read(har(timings))
    document = read_timing(found)
    assert document is not None and (document["first_byte"], document["end"]) == first_end
    assert not any("timings are ignored" in note for note in found.notes)


@pytest.mark.parametrize(
    ("timings", "said"),
    [
        # each finite, their sum past the float range (3 x 1e308): issue 31
        ('{"blocked": 1e308, "dns": 1e308, "connect": 1e308, "wait": 1}', "blocked is 1e+308"),
        ('{"wait": 1e400, "receive": 1}', "timings.wait is Infinity"),
        ('{"wait": -1e400}', "timings.wait is -Infinity"),
        # a 401-digit integer: Python's int -> float overflows
        ('{"send": 0, "wait": 1' + "0" * 400 + "}", "timings.wait is an integer of 401 digits"),
        ('{"wait": 5, "receive": -' + "9" * 401 + "}", "receive is a negative integer of 401"),
        ('{"send": -5, "wait": 3}', "timings.send is -5"),
        ('{"wait": 3, "receive": -0.5}', "timings.receive is -0.5"),
        ('{"wait": true}', "timings.wait is true"),
        ('{"wait": "12"}', 'timings.wait is "12"'),
        ('{"wait": [1]}', "timings.wait is an array"),
    ],
)  # fmt: skip
def test_a_value_that_is_no_time_is_ignored_with_a_note_naming_the_entry_and_field(
    timings: str, said: str
) -> None:
    found = read(har(timings))
    notes = [note for note in found.notes if "timings are ignored" in note]
    assert len(notes) == 1 and said in notes[0], found.notes
    assert notes[0].startswith("entry 1: POST https://api.example.com/v1/chat/completions")
    assert "timings" not in found.meta and read_timing(found) is None
    assert len(found.records) == 2  # the stream itself is read whole


def test_a_non_finite_time_never_reaches_the_document() -> None:
    document = timing_document(1, [math.inf], first_byte=math.nan, end=-math.inf, source="x")
    assert document["arrivals"] == [None, None] and document["first_byte"] is None
    strict(document)


@pytest.mark.parametrize(
    "kept",
    [
        {"ends": [10], "ms": [math.inf]},
        {"ends": [10], "ms": [math.nan]},
        {"ends": [10], "ms": [10**401]},
        {"ends": [10], "ms": [1.0], "headers_ms": math.inf},
        {"ends": [10], "ms": [-1]},
        {"ends": "all", "ms": []},
    ],
)
def test_a_cassettes_arrivals_that_are_no_times_are_ignored_with_a_note(
    kept: dict[str, Any],
) -> None:
    """YAML writes `.inf` and `.nan`, and any integer: the cassette reader gets floats that no
    JSON parser gives."""
    text = to_cassette(BODY).replace("version: 1\n", "")
    text = text.replace("  response:", "  streamviz_timing: " + _yaml_flow(kept) + "\n  response:")
    assert Arrivals.from_json(kept) is None
    found = read(text)
    assert "arrivals" not in found.meta and read_timing(found) is None
    assert any("streamviz_timing is not" in note for note in found.notes), found.notes


def _yaml_flow(value: dict[str, Any]) -> str:
    def one(item: Any) -> str:
        if isinstance(item, float) and math.isnan(item):
            return ".nan"
        if isinstance(item, float) and math.isinf(item):
            return ".inf" if item > 0 else "-.inf"
        if isinstance(item, list):
            return "[" + ", ".join(one(x) for x in item) + "]"
        return json.dumps(item)

    return "{" + ", ".join(f"{key}: {one(item)}" for key, item in value.items()) + "}"


_NUMBERS = st.one_of(
    st.integers().map(str),
    st.integers(min_value=10**300, max_value=10**420).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1e400", "1e308", "-1", "-0.0", "true", "null", '"7"', "[]", "{}"]),
)
_TIMINGS = st.dictionaries(st.sampled_from((*PHASES, "_comment")), _NUMBERS, max_size=8).map(
    lambda phases: "{" + ", ".join(f'"{k}": {v}' for k, v in phases.items()) + "}"
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(_TIMINGS | _NUMBERS)
def test_any_har_timings_read_or_give_the_readers_own_error(timings: str) -> None:
    """Whatever `timings` holds, the HAR reads (or the reader refuses it in words), and its
    timing document is JSON the API can send."""
    try:
        found = read(har(timings))
    except ReaderError as error:
        assert str(error)
        return
    document = read_timing(found)
    if document is not None:
        strict(document)
        known = [document["first_byte"], document["end"], *document["arrivals"]]
        assert all(t is None or 0 <= t <= 8e12 for t in known)
