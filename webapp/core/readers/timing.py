"""When a stream's records arrived: per-chunk arrival times mapped onto records and steps.

A capture keeps, for every piece of bytes the upstream sent (one network read), how many bytes
of the stream had arrived after it and when (ms since the request was sent): `Arrivals`. A
record arrived with the piece that completed it: for SSE, the blank line that dispatches the
event (the line after its data, or later); for anything else (a JSON body kept as one record),
the end of the bytes. A HAR entry carries only its `timings` (time to the first byte and to the
end), not when each record came: its steps' arrivals are unknown (`None`).

`timing_document` is what the trace JSON and `/api/streams/{id}/timing` show:
`{"unit": "ms", "arrivals": [one per step or null], "first_byte": ..., "end": ..., "source": ...}`,
the `end` step arriving when the stream ended.
"""

from __future__ import annotations

import itertools
import math
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from webapp.core.records import Payloads, ReadResult, Record

_BREAK = re.compile(rb"\r\n|\r|\n")
"""Line breaks as the readers count them (`webapp.core.readers.parse.LINE_BREAK`), on bytes."""
_HAR_PHASES = ("blocked", "dns", "connect", "send", "wait")
"""HAR 1.2 timings before the first byte of the response (`ssl` is included in `connect`)."""
MOST_MS = 10**12
"""The longest time a timing may hold, in ms (31 years): past it a value is no time (a HAR's
1e308, a 401-digit integer), and a sum of a few such times stays far inside the float range."""


@dataclass(frozen=True, slots=True)
class Arrivals:
    """When the bytes of a stream came: `ends[i]` bytes had arrived at `ms[i]`."""

    ends: Sequence[int]
    """Cumulative byte counts, one per piece, increasing."""
    ms: Sequence[float]
    """Milliseconds since the request was sent, one per piece, nondecreasing."""
    headers_ms: float | None = None
    """When the response's status and headers arrived (before any byte of the body)."""

    def at(self, offset: int) -> float | None:
        """When the byte at `offset` arrived (None past the last piece)."""
        piece = bisect_left(self.ends, offset + 1)
        return self.ms[piece] if piece < len(self.ms) else None

    def to_json(self) -> dict[str, Any]:
        """The pieces as JSON: `{"ends": [...], "ms": [...], "headers_ms": ...}`."""
        return {"ends": list(self.ends), "ms": list(self.ms), "headers_ms": self.headers_ms}

    @classmethod
    def from_json(cls, value: Any) -> Arrivals | None:
        """The pieces from `to_json`'s shape, or None when it is not that shape."""
        if not isinstance(value, Mapping):
            return None
        ends, ms, headers = value.get("ends"), value.get("ms"), value.get("headers_ms")
        if not isinstance(ends, list) or not isinstance(ms, list) or len(ends) != len(ms):
            return None
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in ends):
            return None
        times = [as_ms(t) for t in ms]
        headers_ms = as_ms(headers)
        if None in times or (headers is not None and headers_ms is None):
            return None
        if any(b <= a for a, b in itertools.pairwise(ends)):
            return None
        return cls(tuple(ends), tuple(t for t in times if t is not None), headers_ms)


def as_ms(value: Any) -> float | None:
    """A time in ms as a float: a number (not a boolean) from 0 to `MOST_MS`; else None (NaN,
    infinities, negatives, an integer too large for a float)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if 0 <= value <= MOST_MS else None  # compared as integers
    return value if 0 <= value <= MOST_MS else None  # NaN fails every comparison


def line_starts(data: bytes) -> array[int]:
    """The byte offset of every line's start (line 1 first), as the readers number lines
    (8 bytes a line: a long stream has millions)."""
    starts = array("q", [0])
    starts.extend(match.end() for match in _BREAK.finditer(data))
    return starts


def record_ends(data: bytes, lines: Sequence[int | None], sse: bool = True) -> list[int]:
    """For each record (by its first line), the offset of the last byte that completed it.

    SSE: the line break of the first blank line at or after the record's line (its dispatch);
    without one, the end of the bytes. Not SSE, or a record with no line: the end of the bytes.
    Linear in the bytes and records.
    """
    last = max(len(data) - 1, 0)
    if not sse:
        return [last] * len(lines)
    starts = line_starts(data)
    ends: list[int] = []
    blank = 0  # the line index (0-based) of the next blank line at or after the cursor
    for line in lines:
        if line is None or line < 1 or line > len(starts):
            ends.append(last)
            continue
        blank = max(blank, line - 1)
        while blank < len(starts) and not _is_blank(data, starts, blank):
            blank += 1
        if blank + 1 < len(starts):
            ends.append(starts[blank + 1] - 1)  # the last byte of the blank line's break
        else:
            ends.append(last)
    return ends


def _is_blank(data: bytes, starts: array[int], index: int) -> bool:
    """Whether line `index` (0-based) holds nothing before its break (a final empty line,
    with no break after it, is not a dispatch)."""
    start = starts[index]
    if index + 1 >= len(starts):
        return False
    return data[start : starts[index + 1]] in (b"\n", b"\r", b"\r\n")


def record_arrivals(
    data: bytes, arrivals: Arrivals, lines: Sequence[int | None], sse: bool = True
) -> list[float | None]:
    """When each record arrived (None for one whose bytes never all came)."""
    return [arrivals.at(end) for end in record_ends(data, lines, sse)]


def har_timing(timings: Any) -> tuple[float | None, float | None]:
    """(time to the first byte, time to the end) from a HAR entry's `timings`, in ms; a phase
    that is -1 (not applicable), missing or not a time (`as_ms`) counts 0, and `wait` must be
    known."""
    if not isinstance(timings, Mapping) or as_ms(timings.get("wait")) is None:
        return None, None
    first = 0.0
    for phase in _HAR_PHASES:
        first += as_ms(timings.get(phase)) or 0.0
    receive = as_ms(timings.get("receive"))
    return first, (None if receive is None else first + receive)


def timing_document(
    records: int,
    per_record: Sequence[float | None] | None = None,
    *,
    first_byte: float | None = None,
    end: float | None = None,
    source: str,
) -> dict[str, Any]:
    """The trace document's `timing`: one arrival per step (the records', then the `end`
    step's), null where unknown, with the time to the first byte and to the end."""
    known = list(per_record) if per_record is not None else [None] * records
    known = (known + [None] * records)[:records]
    if end is None:
        end = max((t for t in known if t is not None), default=None)
    return {
        "unit": "ms",
        "arrivals": [_round(t) for t in [*known, end]],
        "first_byte": _round(first_byte),
        "end": _round(end),
        "source": source,
    }


def _round(value: float | None) -> float | None:
    """To the microsecond; None for no time (nor a non-finite one, which no JSON holds)."""
    return None if value is None or not math.isfinite(value) else round(value, 3)


def read_timing(result: ReadResult, records: int | None = None) -> dict[str, Any] | None:
    """The timing an input carries itself, as `timing_document` writes it: a cassette's
    arrivals (`meta["arrivals"]`, one per record), a HAR entry's `timings` (the first byte and
    the end only); None when it carries none. `records` counts the records when `result` no
    longer holds them."""
    count = len(result.records) if records is None else records
    per_record = result.meta.get("arrivals")
    if isinstance(per_record, list):
        known = [as_ms(t) for t in per_record]
        return timing_document(count, known, source=result.format)
    first, end = har_timing(result.meta.get("timings"))
    if first is None:
        return None
    return timing_document(count, first_byte=first, end=end, source="har")


def with_timing(parts: Iterable[bytes], timing: Mapping[str, Any] | None) -> Iterator[bytes]:
    """The pieces of a JSON object's text (a trace document), with `"timing": ...` added as
    its last key when `timing` is given; the pieces are passed on as they come."""
    if timing is None:
        yield from parts
        return
    held: bytes | None = None
    for part in parts:
        if held is not None:
            yield held
        held = part
    text = (held or b"").rstrip()
    if not text.endswith(b"}"):
        raise ValueError("not the text of a JSON object")
    inner = text[:-1].rstrip()
    comma = b"" if inner.endswith(b"{") else b","
    yield inner + comma + b'"timing":' + orjson.dumps(dict(timing)) + b"}"


def record_lines(records: Sequence[Record]) -> list[int | None]:
    """Each record's first line (a plain stream's without parsing its payloads)."""
    if isinstance(records, Payloads):
        return [records.line(at) for at in range(len(records))]
    return [record.line for record in records]
