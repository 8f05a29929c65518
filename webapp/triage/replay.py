"""A stream replayed to a client: its bytes one piece per record at a pace, or its non-stream twin.

`pieces` cuts a stream's bytes after each record's dispatch (the blank line that ends its
event; `webapp.core.readers.timing.record_ends`), so the pieces joined are the stored bytes
exactly: a plain SSE stream's, or a HAR entry's or a cassette interaction's response body
(`body`); any other input (JSON lines, a `curl -i` dump, a mapped stream) has each record
written as one SSE event of its own payload. `schedule` says when each piece is due, from the
records' recorded arrivals, at a speed. `twin` is the `chat.completion` a `"stream": false`
request gets: the stream's intended reading as `message.tool_calls`, or `NoTwin` with why there
is none. The server (`webapp.proxy.replay`) and `streamviz replay` both serve these. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.chunks import content_text, select_choice
from webapp.core.contract import Contract
from webapp.core.jsoncheck import dumps
from webapp.core.readers import decode
from webapp.core.readers.cassette import entry_body as cassette_body
from webapp.core.readers.har import entry_body as har_body
from webapp.core.readers.timing import record_ends, record_lines
from webapp.core.records import ReaderError, ReadResult, Record

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
Piece = bytes | memoryview
"""One HTTP chunk of a replay: a view of the stored bytes, or an event written out."""
MOST_SPEED = 1000.0
"""The fastest pace asked for by a number (0 is as fast as possible)."""


@dataclass(frozen=True, slots=True)
class Paced:
    """What a streamed replay sends: one piece per record, and when each came (ms), if known."""

    pieces: tuple[Piece, ...]
    arrivals: tuple[float | None, ...] | None
    """One per piece: when it arrived, in ms since the request was sent (None: unknown)."""
    first_byte: float | None = None
    """When the recorded response's headers came (ms), if known."""


@dataclass(frozen=True, slots=True)
class NoTwin:
    """Why a stream has no non-stream twin (it admits more than one reading)."""

    why: str

    @property
    def message(self) -> str:
        """The 409's message."""
        return f"the stream admits two readings: {self.why}"


def plain(found: ReadResult) -> bool:
    """Whether the input's bytes are the stream itself, record by record (plain SSE, nothing
    mapped nor unwrapped from a container)."""
    return found.format == "sse" and not {"container", "mapped_from"} & found.meta.keys()


def body(found: ReadResult, raw: bytes | str, limit: int | None = None) -> bytes | None:
    """The bytes `found`'s records were read from, line for line, out of the input's `raw`
    bytes: a plain SSE stream's own, a HAR entry's or a cassette interaction's event-stream
    response body; None for any other input (its records are then written out as events)."""
    if plain(found):
        return raw if isinstance(raw, bytes) else None
    entry = found.meta.get("entry")
    if found.format not in ("har", "cassette") or not isinstance(entry, int):
        return None
    text = raw if isinstance(raw, str) else decode(raw)
    try:
        har = found.format == "har"
        kept = har_body(text, entry) if har else cassette_body(text, entry, limit)
    except ReaderError:
        return None
    return None if kept is None else kept.encode("utf-8", "surrogatepass")


def pieces(found: ReadResult, data: bytes | None) -> list[Piece]:
    """The stream as one piece per record: `data` (its bytes, from `body`) cut after each
    record (views of it, not copies), or without them each record written as an SSE event.
    A record whose bytes came with the one before has no piece of its own; bytes after the
    last record go with it."""
    if data is None:
        return [event(record) for record in found.records]
    whole = memoryview(data)
    ends = record_ends(data, record_lines(found.records))
    starts: list[int] = []
    start = 0
    for end in ends:
        stop = min(max(end + 1, start), len(data))
        if stop > start:
            starts.append(start)
            start = stop
    if not starts and data:
        starts.append(0)
    bounds = [*starts[1:], len(data)]
    return [whole[begin:stop] for begin, stop in zip(starts, bounds, strict=True)]


def piece_arrivals(
    found: ReadResult, data: bytes | None, per_record: Sequence[float | None]
) -> list[float | None]:
    """When each of `pieces(found, data)` arrived: that of the last record it completes."""
    if data is None:
        return list(per_record)[: len(found.records)]
    ends = record_ends(data, record_lines(found.records))
    out: list[float | None] = []
    start = 0
    for end, ms in zip(ends, per_record, strict=False):
        stop = min(max(end + 1, start), len(data))
        if stop > start:
            out.append(ms)
            start = stop
        elif out and ms is not None:
            out[-1] = ms
    if start < len(data) and not out:
        out.append(None)
    return out


def event(record: Record) -> bytes:
    """One record as an SSE event: its payload as it came (a wrapped bare value as its chunk),
    one `data:` line per line, its event name kept."""
    if record.kind == "chunk" and (record.wrapped is not None or not record.text):
        text = dumps(record.value).decode("utf-8")
    else:
        text = record.text or ("[DONE]" if record.kind == "done" else "")
    head = f"event: {record.event}\n" if record.event else ""
    lines = "".join(f"data: {line}\n" for line in _LINE_BREAK.split(text))
    return (head + lines + "\n").encode("utf-8", "surrogatepass")


def parse_speed(value: str | None) -> float | None:
    """A replay speed: 0 (as fast as possible) or a positive number up to `MOST_SPEED`; None
    when absent; ValueError saying what is wrong otherwise."""
    if value is None:
        return None
    try:
        speed = float(value.strip())
    except ValueError:
        why = f"speed must be a number (0: as fast as possible), not {value[:40]!r}"
        raise ValueError(why) from None
    if not math.isfinite(speed) or speed < 0 or speed > MOST_SPEED:
        raise ValueError(f"speed must be from 0 to {MOST_SPEED:g} (0: as fast as possible)")
    return speed


def schedule(paced: Paced, speed: float) -> list[float]:
    """When each piece is due, in seconds after the response's headers: the recorded gaps
    divided by `speed` (the first piece's counted from the recorded headers, when known);
    every piece at once at speed 0 or without any recorded arrival. A piece with no known
    arrival is due with the one before it; the times never go back."""
    known = paced.arrivals
    if speed <= 0 or known is None or all(ms is None for ms in known):
        return [0.0] * len(paced.pieces)
    first = next(ms for ms in known if ms is not None)
    base = paced.first_byte if paced.first_byte is not None else first
    base = min(base, first)
    due: list[float] = []
    last = 0.0
    for at in range(len(paced.pieces)):
        ms = known[at] if at < len(known) else None
        if ms is not None:
            last = max(last, (ms - base) / speed / 1000.0)
        due.append(last)
    return due


def twin(
    contract: Contract, records: Iterable[Record], *, name: str, choice: int = 0
) -> dict[str, Any] | NoTwin:
    """The non-stream `chat.completion` the stream means: the intended reading's calls as
    `message.tool_calls`, the text its deltas carry as `content`, the id, model and creation
    time of its first chunk (`chatcmpl-replay-NAME` when it has no id); `NoTwin` when there
    is no intended reading."""
    intended = contract.intended
    if intended is None:
        return NoTwin(contract.why or "there is no intended reading")
    first: dict[str, Any] = {}
    text: list[str] = []
    finish: Any = None
    for record in records:
        value = record.value
        if record.kind != "chunk" or not isinstance(value, dict):
            continue
        if not first:
            first = value
        picked = select_choice(value.get("choices"), choice).choice
        if not isinstance(picked, dict):
            continue
        delta = picked.get("delta")
        piece = content_text(delta) if isinstance(delta, dict) else None
        if piece:
            text.append(piece)
        if picked.get("finish_reason") is not None:
            finish = picked["finish_reason"]
    calls = [
        {"id": call.id, "type": "function",
         "function": {"name": call.name, "arguments": call.arguments}}
        for call in intended.calls
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": first.get("id") if isinstance(first.get("id"), str) else f"chatcmpl-replay-{name}",
        "object": "chat.completion",
        "created": first.get("created") if isinstance(first.get("created"), int) else 0,
        "model": contract.model or first.get("model") or "unknown",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish or ("tool_calls" if calls else "stop"),
            }
        ],
    }
