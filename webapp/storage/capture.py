"""Captured streams: what the recording proxy keeps beside a stream's bytes, and its live parts.

A capture is a stream row (in the library at once, titled from the request) plus a row of
`captures`: the request's facts, its state (`live` until it ends, then how it ended) and, once
ended, when every piece of its bytes arrived. While live its bytes arrive as parts, in bounded
batches (`append`); `Storage.raw` joins them, so a page can ask for what has arrived so far and
`get(...).live` says whether more may come. `finish` ends it: its parts stay its bytes (written
once: copying them into a row of `stream_bytes` at the end was half the recording's store
CPU, bench/README.md), their arrivals become its timing. Credentials never reach this module:
the proxy hands it facts, not headers, and a recorder keeps `Facts.masked()`, a kept request
body with its keys masked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import orjson

from webapp.core.readers.timing import Arrivals
from webapp.core.redact.request import mask_request
from webapp.storage import owners
from webapp.storage.store import ENDINGS, LIVE, Storage, StreamInfo, new_id

ORPHANED = "still live when its server stopped; ended when the next one started"
"""The detail of a capture `Captures.end_orphans` ended."""

_COLUMNS = (
    "stream_id, upstream, method, path, model, streamed, tools, status, content_type, state, "
    "detail, started, ended, headers_ms, pieces, twin_of"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class Facts:
    """What the proxy knows of an exchange when its response starts."""

    upstream: str
    """The upstream's name (`--upstream NAME=URL`), not its URL."""
    method: str
    path: str
    """The path under the upstream, without its query (where keys travel)."""
    status: int
    content_type: str = ""
    model: str = ""
    streamed: bool | None = None
    """The request's `stream` flag (None when it had none)."""
    tools: tuple[str, ...] = ()
    """The names of the tools the request declared."""
    request: bytes | None = None
    """The request body, only with `--keep-requests` (its keys masked)."""
    headers_ms: float | None = None
    """When the response's status and headers came, in ms since the request was sent."""
    request_masked: tuple[str, ...] | None = None
    """What was masked in the kept request body, in words; None when it was not looked at (a
    body kept before keys were masked: `/api/streams/ID/request` masks it as it serves it)."""
    twin_of: str = ""
    """The stream this capture is the non-stream twin of (`serve --twin`); "" when none."""
    sent: str = ""
    """When the request was sent upstream (wall clock, ISO, to the microsecond): the capture's
    `started` (when it is blank, the moment the capture is stored). Hops are linked by it."""

    def masked(self) -> Facts:
        """The facts to keep: the keys in the kept request masked as an upload's are, and what
        was masked said (`mask_request`); as they are without a request or once masked."""
        if self.request is None or self.request_masked is not None:
            return self
        request, masked = mask_request(self.request)
        return replace(self, request=request, request_masked=masked)

    def exchange_json(self) -> dict[str, Any]:
        """The exchange as the API and `.timing.json` files say it (never the request body)."""
        return {
            "upstream": self.upstream,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "content_type": self.content_type,
            "model": self.model,
            "stream": self.streamed,
            "tools": list(self.tools),
        }


@dataclass(frozen=True, slots=True)
class Capture:
    """A captured stream's row."""

    stream_id: str
    facts: Facts
    state: str
    detail: str
    started: str
    """When the request was sent upstream (for a capture stored before `Facts.sent` was kept:
    when its response's headers came)."""
    ended: str
    pieces: int
    """How many pieces (network reads) of bytes have been stored."""

    @property
    def live(self) -> bool:
        """Whether more bytes may still come."""
        return self.state == LIVE

    def to_json(self) -> dict[str, Any]:
        """The row as the API answers it (the request body is not in it)."""
        facts = self.facts
        return {
            "id": self.stream_id,
            "live": self.live,
            "state": self.state,
            "detail": self.detail,
            **facts.exchange_json(),
            "request_kept": facts.request is not None,
            "request_masked": _listed(facts.request_masked) if facts.request is not None else None,
            "started": self.started,
            "ended": self.ended,
            "headers_ms": facts.headers_ms,
            "pieces": self.pieces,
            "twin_of": facts.twin_of or None,
        }


@dataclass(frozen=True, slots=True)
class Part:
    """A batch of bytes in arrival order, with when each of its pieces came."""

    data: bytes
    ends: tuple[int, ...]
    """Cumulative byte counts of the whole stream after each piece."""
    ms: tuple[float, ...]


def _listed(masked: tuple[str, ...] | None) -> list[str] | None:
    return None if masked is None else list(masked)


def _listed_text(facts: Facts) -> str | None:
    """What was masked in the kept request, as stored (NULL without one, or unmasked)."""
    if facts.request is None or facts.request_masked is None:
        return None
    return json.dumps(list(facts.request_masked))


def _arrivals_text(ends: Sequence[int], ms: Sequence[float], *, rounded: bool = False) -> str:
    """The arrivals kept as text, `{"ends":[...],"ms":[...]}` (times to the microsecond; with
    `rounded` they already are)."""
    times = ms if rounded else [round(t, 3) for t in ms]
    return orjson.dumps({"ends": ends, "ms": times}).decode()


class Captures:
    """The captures of one store."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._run = storage.backend.run

    def start(self, facts: Facts, *, title: str, format: str, owner: str = "") -> StreamInfo:
        """A new live stream, in the library at once, with no bytes yet; `owner` is the
        process recording it (`webapp.storage.owners.owner_tag`)."""
        created = datetime.now(UTC).isoformat(timespec="seconds")
        info = StreamInfo(new_id(), title, created, 0, format, "auto", (), captured=True)
        with self.storage.backend.transaction() as run:
            run(
                "INSERT INTO streams (id, title, created, size, format, input_format, "
                "redactions, parent) VALUES (?, ?, ?, 0, ?, 'auto', '[]', '')",
                (info.id, info.title, info.created, info.format),
            )
            run(
                "INSERT INTO captures (stream_id, upstream, method, path, model, streamed, "
                "tools, status, content_type, state, started, headers_ms, request, "
                "request_masked, owner, twin_of) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info.id,
                    facts.upstream,
                    facts.method,
                    facts.path,
                    facts.model,
                    None if facts.streamed is None else int(facts.streamed),
                    json.dumps(list(facts.tools)),
                    facts.status,
                    facts.content_type,
                    LIVE,
                    facts.sent or _now(),
                    facts.headers_ms,
                    facts.request,
                    _listed_text(facts),
                    owner,
                    facts.twin_of,
                ),
            )
        return info

    def append(self, stream_id: str, seq: int, part: Part) -> None:
        """Store the next batch of a live capture's bytes (LookupError when it is gone), not
        waiting for the disk: a machine that stops loses at most the last batches of a live
        capture, as a process that stops loses those not yet batched (half the writers' CPU
        went to waiting for the disk, a batch every 64 KiB)."""
        with self.storage.backend.transaction(durable=False) as run:
            rows = run(
                "UPDATE captures SET pieces = pieces + ? WHERE stream_id = ? AND state = ? "
                "RETURNING stream_id",
                (len(part.ends), stream_id, LIVE),
            )
            if not rows:
                raise LookupError(f"no live capture {stream_id}")
            run(
                "INSERT INTO capture_parts (stream_id, seq, data, arrivals) VALUES (?, ?, ?, ?)",
                (stream_id, seq, part.data, _arrivals_text(part.ends, part.ms)),
            )
            run("UPDATE streams SET size = size + ? WHERE id = ?", (len(part.data), stream_id))

    def finish(self, stream_id: str, state: str, detail: str = "") -> bool:
        """End a live capture: its parts stay its bytes (`Storage.raw` joins them, as while it
        was live: written once, not copied into a row of their own), their arrivals become its
        timing (False when there is no such live capture, e.g. it was deleted meanwhile)."""
        with self.storage.backend.transaction() as run:
            rows = run(
                "UPDATE captures SET state = ?, detail = ?, ended = ? "
                "WHERE stream_id = ? AND state = ? RETURNING stream_id",
                (state, detail, _now(), stream_id, LIVE),
            )
            if not rows:
                return False
            parts = run(
                "SELECT arrivals FROM capture_parts WHERE stream_id = ? ORDER BY seq",
                (stream_id,),
            )
            ends: list[int] = []
            ms: list[float] = []
            for row in parts:
                kept = orjson.loads(row[0])
                ends += kept["ends"]
                ms += kept["ms"]
            run(
                "UPDATE captures SET arrivals = ? WHERE stream_id = ?",
                (_arrivals_text(ends, ms, rounded=True), stream_id),
            )
            # The library's numbers, if a listing kept them while it was live, are of fewer
            # bytes (its size has grown with each batch: `append`).
            run("UPDATE streams SET stats = '' WHERE id = ?", (stream_id,))
            # A view made of the stream while it was live is of fewer bytes: made again.
            run("DELETE FROM artefacts WHERE stream_id = ?", (stream_id,))
        return True

    def get(self, stream_id: str) -> Capture | None:
        """The capture's row, or None when the stream was not captured (or does not exist)."""
        return self._one("stream_id = ?", stream_id)

    def twin(self, stream_id: str) -> Capture | None:
        """The non-stream twin of a captured stream (the latest, should there be several), or
        None when it has none (yet)."""
        return self._one("twin_of = ? ORDER BY started DESC", stream_id)

    def _one(self, where: str, value: str) -> Capture | None:
        rows = self._run(
            f"SELECT {_COLUMNS}, request IS NOT NULL, request_masked FROM captures "
            f"WHERE {where} LIMIT 1",
            (value,),
        )
        if not rows:
            return None
        row = rows[0]
        facts = Facts(
            upstream=str(row[1]),
            method=str(row[2]),
            path=str(row[3]),
            model=str(row[4]),
            streamed=None if row[5] is None else bool(row[5]),
            tools=tuple(json.loads(row[6])),
            status=int(row[7]),
            content_type=str(row[8]),
            request=b"" if row[16] else None,  # the body itself: `request(stream_id)`
            request_masked=None if row[17] is None else tuple(json.loads(row[17])),
            headers_ms=None if row[13] is None else float(row[13]),
            twin_of=str(row[15]),
        )
        return Capture(
            stream_id=str(row[0]),
            facts=facts,
            state=str(row[9]),
            detail=str(row[10]),
            started=str(row[11]),
            ended=str(row[12]),
            pieces=int(row[14]),
        )

    def arrivals(self, stream_id: str) -> Arrivals | None:
        """When each piece of the capture's bytes arrived (so far, while live), or None."""
        rows = self._run(
            "SELECT 0, 0, arrivals, headers_ms FROM captures WHERE stream_id = ? UNION ALL "
            "SELECT 1, seq, arrivals, NULL FROM capture_parts WHERE stream_id = ? ORDER BY 1, 2",
            (stream_id, stream_id),
        )
        if not rows:
            return None
        headers = None if rows[0][3] is None else float(rows[0][3])
        kept = [str(row[2]) for row in rows if row[2]]
        if rows[0][2]:  # ended: the whole list is on the capture's row
            kept = kept[:1]
        ends: list[int] = []
        ms: list[float] = []
        for text in kept:
            value = orjson.loads(text)
            ends += value["ends"]
            ms += value["ms"]
        return Arrivals(tuple(ends), tuple(ms), headers)

    def request(self, stream_id: str) -> bytes | None:
        """The request body kept with `--keep-requests`, or None."""
        rows = self._run("SELECT request FROM captures WHERE stream_id = ?", (stream_id,))
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else None

    def end_orphans(self, detail: str = ORPHANED) -> list[str]:
        """End every capture still marked live as "cut: the server stopped" (its bytes kept);
        their ids. Only for a server's start, before it records anything: no capture can be
        live then but one its server left when it crashed or was killed."""
        return [
            stream_id
            for stream_id in self.live()
            if self.finish(stream_id, ENDINGS["server"], detail)
        ]

    def end_gone(self, host: str) -> list[str]:
        """End the live captures whose recording process, on `host`, has stopped (killed, or
        crashed: a worker of a server run with --workers) as "cut: the worker stopped", their
        bytes kept; their ids. Another host's captures, and those of a live process, stay."""
        rows = self._run(
            "SELECT stream_id, owner FROM captures WHERE state = ? AND owner LIKE ?",
            (LIVE, host.replace("%", "_") + " %"),  # `gone` checks the host exactly
        )
        ended = []
        for stream_id, owner in ((str(row[0]), str(row[1])) for row in rows):
            why = f"its recording process ({owner}) stopped"
            if owners.gone(owner, host) and self.finish(stream_id, ENDINGS["worker"], why):
                ended.append(stream_id)
        return ended

    def live(self) -> list[str]:
        """The ids of the captures still live, newest first."""
        rows = self._run(
            "SELECT stream_id FROM captures WHERE state = ? ORDER BY started DESC", (LIVE,)
        )
        return [str(row[0]) for row in rows]
