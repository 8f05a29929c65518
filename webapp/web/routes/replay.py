"""`/replay/ID/v1/chat/completions` on the server: the stored streams as the replay's library.

The replay itself is the proxy wing's middleware (`webapp.proxy.replay`), mounted in front of
the routes; this is where its streams come from: the store's bytes (a capture's arrivals, a
cassette's or a HAR entry's timing), the entry a HAR's page opens on when the URL names none,
and the contract for the non-stream twin. It reads and never stores.
"""

from __future__ import annotations

from typing import Any

from webapp.core.contract import read_contract
from webapp.core.options import Options
from webapp.core.readers.timing import read_timing, record_arrivals, record_lines
from webapp.proxy.replay import Missing, Unavailable
from webapp.storage.capture import Captures
from webapp.triage.replay import NoTwin, Paced, body, piece_arrivals, pieces, twin
from webapp.web.backend.memory.inflight import Busy
from webapp.web.backend.service import Gone, NotFound, Reading, Service, Unreadable
from webapp.web.views.entries import opening


class StoredReplays:
    """The replay's `Library` over the server's store."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def _reading(self, stream_id: str, entry: int | None) -> Reading:
        """The stream read (its entry `entry`, or the one its page opens on); Missing when
        there is no such stream, or it does not read."""
        service = self.service
        try:
            reading = service.reading(stream_id, entry)
            if entry is None and len(reading.result.entries) > 1:
                chosen = opening(service, service.view(stream_id, Options()))
                if chosen is not None:
                    reading = service.reading(stream_id, chosen)
        except Gone:
            raise Missing(f"stream {stream_id} was deleted") from None
        except NotFound:
            raise Missing(f"no stream has the id {stream_id[:100]!r}") from None
        except Unreadable as error:
            raise Missing(f"stream {stream_id} does not read as a stream: {error}") from None
        except Busy as error:
            raise Unavailable(f"stream {stream_id} cannot be read now: {error}") from None
        return reading

    def paced(self, stream_id: str, entry: int | None) -> Paced:
        """The stored bytes one piece per record, with each one's recorded arrival."""
        reading = self._reading(stream_id, entry)
        found = reading.result
        raw = self.service.raw_lines(reading.info).data
        data = body(found, raw, self.service.max_bytes)
        cut = pieces(found, data)
        captures = Captures(self.service.storage)
        arrivals = captures.arrivals(reading.info.id) if captures.get(reading.info.id) else None
        if arrivals is not None and data is not None:
            lines = record_lines(found.records)
            per_record = record_arrivals(data, arrivals, lines)
            return Paced(tuple(cut), tuple(piece_arrivals(found, data, per_record)),
                         arrivals.headers_ms)  # fmt: skip
        carried = read_timing(found)
        if carried is None:
            return Paced(tuple(cut), None)
        per_record = carried["arrivals"][:-1]
        timed = tuple(piece_arrivals(found, data, per_record))
        return Paced(tuple(cut), timed, carried["first_byte"])

    def twin(self, stream_id: str, entry: int | None) -> dict[str, Any] | NoTwin:
        """The stream's non-stream twin, from its intended reading."""
        reading = self._reading(stream_id, entry)
        records = reading.result.records
        contract = read_contract(records)
        capture = Captures(self.service.storage).get(reading.info.id)
        if capture is not None and capture.live and not reading.info.end:
            contract = contract.without_end("it is still arriving")
        else:
            contract = contract.as_recorded(reading.info.end, recorded=reading.info.recorded)
        return twin(contract, records, name=reading.info.id)
