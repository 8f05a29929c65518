"""Captured streams in the store: the proxy's recorder, and the timing a page or the API shows.

`StoreRecorder` opens a live stream in the library for each recorded response and writes its
batches (`webapp.storage.capture`); when the stream ends, this worker forgets what it cached of
the stream while it was live (other workers' caches are keyed by the stream's size, so theirs
is not taken for the whole stream either). `timing_of` is a stream's `timing` document
(`webapp.web.backend.capture.timing`): the arrival of every step for a captured stream, the
HAR entry's `timings` for a HAR, null when the input has none.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Hashable, Sequence
from typing import Any

from webapp.core.options import Options
from webapp.core.readers.cassette import to_cassette
from webapp.core.readers.timing import (
    Arrivals,
    read_timing,
    record_ends,
    record_lines,
    timing_document,
)
from webapp.core.records import ReadResult
from webapp.storage.capture import Captures, Facts, Part
from webapp.storage.owners import owner_tag
from webapp.web.backend.capture.timing import captured
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
        """A new live stream (a kept request's keys masked), owned by this process."""
        info = self.captures.start(facts.masked(), title=title, format=format, owner=owner_tag())
        return StoreSink(self, info.id)

    def sweep(self) -> list[str]:
        """End the live captures of a recording process of this host that has stopped (a
        worker killed, or crashed); their ids."""
        return self.captures.end_gone(socket.gethostname())

    async def sweeping(self, every: float) -> None:
        """`sweep` now and every `every` seconds, until cancelled (a worker's life)."""
        while True:
            try:
                ended = await asyncio.to_thread(self.sweep)
            except Exception:  # a store down now may be up at the next sweep
                log.warning("the sweep of stopped workers' captures failed", exc_info=True)
            else:
                if ended:
                    log.warning("ended %d capture(s) of a worker that stopped", len(ended))
            await asyncio.sleep(every)

    def forget(self, stream_id: str) -> None:
        """Drop what this worker cached of the stream (made from the bytes it had then)."""

        def of_stream(key: Hashable) -> bool:
            return isinstance(key, tuple) and key[1:2] == (stream_id,)

        self.service.cache.discard(of_stream)


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
