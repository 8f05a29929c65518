"""Captured streams in the store: the proxy's recorder, and the timing a page or the API shows.

`StoreRecorder` opens a live stream in the library for each recorded response and writes its
batches (`webapp.storage.capture`); when the stream ends, this worker forgets what it cached of
the stream while it was live. `timing_of` is a stream's `timing` document: the arrival of every
step for a captured stream, the HAR entry's `timings` for a HAR, null when the input has none.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from typing import Any

from webapp.core.readers import decode, read
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import (
    Arrivals,
    har_timing,
    record_arrivals,
    record_ends,
    timing_document,
)
from webapp.core.records import Payloads, ReaderError, ReadResult, Record
from webapp.storage.capture import Capture, Captures, Facts, Part
from webapp.web.backend.library.indexing import index
from webapp.web.backend.service import Service, Unreadable

log = logging.getLogger(__name__)


class StoreSink:
    """One recorded stream going into the store."""

    def __init__(self, recorder: StoreRecorder, stream_id: str) -> None:
        self.recorder = recorder
        self.stream_id = stream_id

    def write(self, seq: int, part: Part) -> None:
        """Store the next batch."""
        self.recorder.captures.append(self.stream_id, seq, part)

    def end(self, state: str, detail: str) -> None:
        """The parts become the stream's bytes; this worker's cached views of it go; what it
        holds is indexed for the library's search."""
        self.recorder.captures.finish(self.stream_id, state, detail)
        self.recorder.forget(self.stream_id)
        try:
            index(self.recorder.service, self.stream_id)
        except Exception:  # the library misses its terms until the next start, nothing else
            log.warning("stream %s: not indexed", self.stream_id, exc_info=True)


class StoreRecorder:
    """The proxy's recorder for `streamviz serve`: each stream a live stream in the library."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.captures = Captures(service.storage)

    def open(self, facts: Facts, title: str, format: str) -> StoreSink:
        """A new live stream."""
        info = self.captures.start(facts, title=title, format=format)
        return StoreSink(self, info.id)

    def forget(self, stream_id: str) -> None:
        """Drop what this worker cached of the stream (made from the bytes it had then)."""

        def of_stream(key: Hashable) -> bool:
            return isinstance(key, tuple) and key[1:2] == (stream_id,)

        self.service.cache.discard(of_stream)


def record_lines(records: Sequence[Record]) -> list[int | None]:
    """Each record's first line (a plain stream's without parsing its payloads)."""
    if isinstance(records, Payloads):
        return [records.line(at) for at in range(len(records))]
    return [record.line for record in records]


def captured_timing(
    raw: bytes, result: ReadResult | None, capture: Capture, arrivals: Arrivals | None
) -> dict[str, Any]:
    """The timing of a captured stream's bytes (so far, while live); `result` is their
    reading (None when they do not read yet)."""
    records = result.records if result is not None else ()
    per_record = None
    if arrivals is not None:
        sse = result is not None and result.format == "sse"
        per_record = record_arrivals(raw, arrivals, record_lines(records), sse=sse)
    end = None
    if not capture.live and arrivals is not None and arrivals.ms:
        end = arrivals.ms[-1]
    return timing_document(
        len(records),
        per_record,
        first_byte=capture.facts.headers_ms,
        end=end,
        source="capture",
    )


def read_timing(result: ReadResult) -> dict[str, Any] | None:
    """The timing an input carries itself (a HAR entry's `timings`, a cassette's arrivals),
    or None."""
    per_record = result.meta.get("arrivals")
    if isinstance(per_record, list):
        return timing_document(len(result.records), per_record, source=result.format)
    first, end = har_timing(result.meta.get("timings"))
    if first is None:
        return None
    return timing_document(len(result.records), first_byte=first, end=end, source="har")


def timing_of(service: Service, stream_id: str, har_entry: int | None = None) -> dict[str, Any]:
    """`{"timing", "live", "capture"}` for a stream (NotFound when there is none)."""
    info = service.info(stream_id)
    captures = Captures(service.storage)
    capture = captures.get(info.id)
    if capture is None:
        result = service.reading(info.id, har_entry).result
        return {"timing": read_timing(result), "live": False, "capture": None}
    raw = service.raw(info.id)
    if capture.live:  # read as it is now, not cached: more is coming
        try:
            reading: ReadResult | None = read(decode(raw)) if raw.strip() else None
        except ReaderError:
            reading = None
    else:
        try:
            reading = service.reading(info.id).result
        except Unreadable:  # no bytes came, or none that read
            reading = None
    timing = captured_timing(raw, reading, capture, captures.arrivals(info.id))
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
