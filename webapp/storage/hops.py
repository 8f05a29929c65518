"""A gateway's two hops: which captures of one server are the same exchange seen twice.

One server can record both sides of a gateway: the application's request to the gateway (the
outer capture) and the gateway's request to the provider (the inner one). A capture's inner
hop is a capture of the same host (`owner`'s first word: one server, one clock) declaring the
same tool names, whose request was sent at or after the outer's and whose last piece came at
or before the outer's last piece; of several, the latest-sent that no other one holds (a retry
replaces the try before it; with two gateways in a row, the next hop, not the one after it).
Its outer hops are the captures whose inner hop it is. Only ended captures are linked: the
end is what holds one inside the other. The times are the request's wall clock
(`Facts.sent`) plus the milliseconds to its last piece, as its arrivals say.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from webapp.storage.store import LIVE, Storage

SLACK = timedelta(seconds=1)
"""How far the stored start times are widened before they are compared exactly (a capture
stored before starts were kept to the microsecond has them to the millisecond)."""


@dataclass(frozen=True, slots=True)
class Hops:
    """A capture's inner hop (at most one) and the captures whose inner hop it is."""

    inner: tuple[str, ...] = ()
    outer: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """`{"inner": [IDS], "outer": [IDS]}`."""
        return {"inner": list(self.inner), "outer": list(self.outer)}


@dataclass(frozen=True, slots=True)
class _Span:
    """One ended capture: where it was recorded, what it declared, when it ran."""

    stream_id: str
    host: str
    tools: frozenset[str]
    start: datetime
    end: datetime

    def holds(self, other: _Span) -> bool:
        """Whether `other` ran inside this one (and is not the same span)."""
        if (other.start, other.end) == (self.start, self.end):
            return False
        return self.start <= other.start and other.end <= self.end


_HEAD = "SELECT stream_id, owner, tools, started FROM captures "
_TIMES = "SELECT headers_ms, arrivals FROM captures WHERE stream_id = ?"
_SAME_HOST = "AND state <> ? AND (owner = ? OR owner LIKE ?) "
_NOT_TWIN = "AND (twin_of = '' OR twin_of IS NULL) "
"""A non-stream twin (`serve --twin`) is this server's own request, never a gateway's hop."""


class HopLinks:
    """The hops of one store's captures."""

    def __init__(self, storage: Storage) -> None:
        self._run = storage.backend.run

    def of(self, stream_id: str) -> Hops:
        """The capture's hops (none for a stream that is not an ended capture)."""
        where = "WHERE stream_id = ? AND state <> ? " + _NOT_TWIN
        rows = self._run(_HEAD + where, (stream_id, LIVE))
        span = self._span(rows[0]) if rows else None
        if span is None:
            return Hops()
        inner = self._inner(span)
        outer = [
            found.stream_id
            for found in self._around(span)
            if (chosen := self._inner(found)) is not None and chosen.stream_id == stream_id
        ]
        return Hops(() if inner is None else (inner.stream_id,), tuple(outer))

    def _inner(self, outer: _Span) -> _Span | None:
        """The outer capture's inner hop, or None."""
        low, high = _bound(outer.start - SLACK), _bound(outer.end + SLACK)
        held = self._spans(
            "started >= ? AND started <= ? ", (low, high), outer,
            lambda start: outer.start <= start <= outer.end, outer.holds,
        )  # fmt: skip
        direct = [span for span in held if not any(other.holds(span) for other in held)]
        return max(direct, key=lambda span: (span.start, span.stream_id), default=None)

    def _around(self, inner: _Span) -> list[_Span]:
        """The ended captures that hold this one."""
        # `ended` is when the store heard of the end, never before the last piece came: a
        # capture that ended before this one did cannot hold it, however long ago it started
        high, low = _bound(inner.start + SLACK), _bound(inner.end - SLACK)
        return self._spans(
            "started <= ? AND ended >= ? ", (high, low), inner, lambda start: start <= inner.start,
            lambda span: span.holds(inner),
        )  # fmt: skip

    def _spans(
        self,
        where: str,
        params: tuple[str, ...],
        near: _Span,
        early: Callable[[datetime], bool],
        keep: Callable[[_Span], bool],
    ) -> list[_Span]:
        """The ended captures of `near`'s host and tools, other than it, found by `where`,
        whose start `early` keeps and then whose span `keep` keeps (the arrivals are read
        only for those whose start could be kept)."""
        host = near.host
        rows = self._run(
            _HEAD + "WHERE " + where + _SAME_HOST + _NOT_TWIN + "AND stream_id <> ?",
            (*params, LIVE, host, host.replace("%", "_") + " %", near.stream_id),
        )
        out = []
        for row in rows:
            first = _start_of(row)
            if first is None or first[0] != host or first[1] != near.tools or not early(first[2]):
                continue
            span = self._span(row)
            if span is not None and keep(span):
                out.append(span)
        return out

    def _span(self, row: Any) -> _Span | None:
        first = _start_of(row)
        if first is None:
            return None
        found = self._run(_TIMES, (str(row[0]),))
        if not found:
            return None
        headers_ms, arrivals = found[0]
        last = _last_ms(str(arrivals or ""))
        if last is None:
            last = float(headers_ms or 0.0)
        host, tools, start = first
        return _Span(str(row[0]), host, tools, start, start + timedelta(milliseconds=last))


def _alike(a: _Span, b: _Span) -> bool:
    return a.host == b.host and a.tools == b.tools


def _bound(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _start_of(row: Any) -> tuple[str, frozenset[str], datetime] | None:
    """A row's host, tool names and start; None when they cannot be read."""
    _, owner, tools, started = row
    try:
        start = datetime.fromisoformat(str(started))
        names = json.loads(str(tools))
    except ValueError:
        return None
    declared = frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()
    return str(owner or "").split(" ", 1)[0], declared, start


def _last_ms(arrivals: str) -> float | None:
    """When the last piece came, in ms since the request, from the arrivals kept as text
    (`{"ends": [...], "ms": [...]}`): read from the text's tail, not parsed whole."""
    at = arrivals.rfind('"ms"')
    if at < 0:
        return None
    tail = arrivals[at:].rstrip().removesuffix("}").rstrip().removesuffix("]")
    last = tail.rsplit(",", 1)[-1].rsplit("[", 1)[-1].strip()
    try:
        return float(last) if last else None
    except ValueError:
        return None
