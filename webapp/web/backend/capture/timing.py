"""When each step of a trace view arrived: made once per view and cached beside it.

A captured stream's pieces (`webapp.storage.capture.Captures.arrivals`) are mapped onto its
records by their lines (`webapp.core.readers.timing.record_arrivals`), read from the view's
trace, not from a reading of the records; a cassette or a HAR entry carries its own timing
(`read_timing`). `Timing` keeps one arrival per step (the `end` step's too) in an `array` of
floats, NaN where unknown, and the steps that stalled (the gap before them over the server's
`stall_ms`), so that a page asks for a step's gap in constant time however long the stream.
`timing_of` is a stream's `timing` document as the API and the comparison give it (the arrival
of every step for a captured stream, the HAR entry's `timings` for a HAR, null when the input
has none).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.options import Options
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import (
    Arrivals,
    read_timing,
    record_arrivals,
    record_ends,
    record_lines,
    timing_document,
)
from webapp.core.records import ReadResult
from webapp.storage.capture import Capture, Captures
from webapp.web.backend.service import Service, Unreadable
from webapp.web.backend.trace.view import TraceView

UNKNOWN = math.nan
TIMING_BASE = 400
"""A cached timing's heap beside its arrays (8 bytes a step, 8 a stall)."""


@dataclass(frozen=True, slots=True)
class Timing:
    """When each step of a view arrived, in ms since the request was sent."""

    arrivals: array[float]
    """One per step, the `end` step's last (when the stream ended); NaN where unknown."""
    first_byte: float | None
    """When the response's status and headers (a HAR: its first byte) came."""
    end: float | None
    source: str
    """"capture", "cassette" or "har": where the times come from."""
    stall_ms: float
    stalls: array[int]
    """The steps the gap before which is over `stall_ms`, in order."""

    @classmethod
    def of(cls, document: dict[str, Any], stall_ms: float) -> Timing:
        """From a `timing_document`."""
        arrivals = array("d", (UNKNOWN if t is None else float(t) for t in document["arrivals"]))
        timing = cls(
            arrivals, document["first_byte"], document["end"], document["source"], stall_ms,
            array("q"),
        )  # fmt: skip
        timing.stalls.extend(
            step
            for step in range(len(arrivals))
            if (gap := timing.gap(step)) is not None and gap > stall_ms
        )
        return timing

    @property
    def steps(self) -> int:
        """How many steps (the `end` step included)."""
        return len(self.arrivals)

    @property
    def per_step(self) -> bool:
        """Whether any step but the end has a known arrival (a HAR entry's timings have none)."""
        return any(not math.isnan(t) for t in self.arrivals[:-1])

    def at(self, step: int) -> float | None:
        """When step `step` arrived (None when unknown or out of range)."""
        if not 0 <= step < len(self.arrivals):
            return None
        value = self.arrivals[step]
        return None if math.isnan(value) else value

    def gap(self, step: int) -> float | None:
        """The time between the step before (the first byte, for step 0) and this one."""
        here = self.at(step)
        before = self.first_byte if step == 0 else self.at(step - 1)
        if here is None or before is None:
            return None
        return max(0.0, here - before)

    def document(self) -> dict[str, Any]:
        """The trace document's `timing`: `{"unit": "ms", "arrivals": [...], ...}`."""
        per_step = [self.at(step) for step in range(len(self.arrivals))]
        return timing_document(
            len(per_step) - 1,
            per_step[:-1],
            first_byte=self.first_byte,
            end=self.end,
            source=self.source,
        )

    @property
    def weight(self) -> int:
        """Its size in memory, in bytes (about)."""
        return TIMING_BASE + 8 * len(self.arrivals) + 8 * len(self.stalls)


def view_timing(service: Service, view: TraceView, stall_ms: float) -> Timing | None:
    """The view's timing (cached per view), or None when its input carries none."""
    source = view.source
    info = source.info
    key = ("timing", info.id, source.har_entry, info.size, view.options.canonical(), stall_ms)

    def make() -> Timing | None:
        document = _document(service, view)
        return None if document is None else Timing.of(document, stall_ms)

    found = service.cache.get(key, make)
    return found if isinstance(found, Timing) else None


def _document(service: Service, view: TraceView) -> dict[str, Any] | None:
    source = view.source
    capture = Captures(service.storage).get(source.info.id)
    if capture is None:
        return read_timing(source.found, source.records)
    return captured(service, view, capture)


def captured(service: Service, view: TraceView, capture: Capture) -> dict[str, Any]:
    """The timing document of a captured stream's view (of the bytes it was made of)."""
    source = view.source
    info = source.info
    arrivals = Captures(service.storage).arrivals(info.id)
    per_record = None
    if arrivals is not None:
        raw = service.raw_lines(info).data
        data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
        lines = [view.trace.line_of(step) for step in range(source.records)]
        per_record = record_arrivals(data, arrivals, lines, sse=source.found.format == "sse")
    end = None
    if not capture.live and arrivals is not None and arrivals.ms:
        end = arrivals.ms[-1]
    return timing_document(
        source.records,
        per_record,
        first_byte=capture.facts.headers_ms,
        end=end,
        source="capture",
    )


def timing_of(service: Service, stream_id: str, har_entry: int | None = None) -> dict[str, Any]:
    """`{"timing", "live", "capture"}` for a stream (NotFound when there is none): the timing
    of its view under the default options (of the bytes that have arrived, while live)."""
    info = service.info(stream_id)
    capture = Captures(service.storage).get(info.id)
    try:
        view = service.view(info.id, Options(), har_entry)
    except Unreadable:  # no bytes came yet, or none that read
        if capture is None:
            raise
        document = timing_document(0, first_byte=capture.facts.headers_ms, source="capture")
        return {"timing": document, "live": capture.live, "capture": capture.to_json()}
    if capture is None:
        return {"timing": read_timing(view.source.found, view.source.records), "live": False,
                "capture": None}  # fmt: skip
    timing = captured(service, view, capture)
    return {"timing": timing, "live": capture.live, "capture": capture.to_json()}


def record_timing(
    service: Service, stream_id: str, har_entry: int | None = None
) -> list[float | None] | None:
    """When each record of the stream (of its HAR entry) arrived, when any is known, else None."""
    timing = timing_of(service, stream_id, har_entry)["timing"]
    if timing is None:
        return None
    per_record: list[float | None] = timing["arrivals"][:-1]
    return per_record if any(ms is not None for ms in per_record) else None


def fixture_cassette(
    text: str, replay: ReadResult, model: str | None, per_record: Sequence[float | None] | None
) -> str:
    """A vcrpy cassette of a fixture's stream.sse (`text`, read again as `replay`), with each
    record's arrival (those of the stream it was written from, record by record) when known."""
    arrivals = None
    if per_record:
        data = text.encode("utf-8", "backslashreplace")
        ends = record_ends(data, record_lines(replay.records))
        pieces: list[tuple[int, float]] = []
        for end, ms in zip(ends, per_record, strict=False):
            if ms is not None and (not pieces or end + 1 > pieces[-1][0]):
                pieces.append((end + 1, max(ms, pieces[-1][1]) if pieces else ms))
        if pieces:
            arrivals = Arrivals(tuple(e for e, _ in pieces), tuple(t for _, t in pieces))
    return to_cassette(text, model=model, arrivals=arrivals)
