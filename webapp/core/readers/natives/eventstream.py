"""AWS's binary event stream (`application/vnd.amazon.eventstream`, what Bedrock's
ConverseStream sends on the wire) as JSON Lines: one `{"<event type>": payload}` per frame, as
the AWS SDKs decode it, so that a recording of the bytes reads like a log of the events.

A frame is a prelude (its total length, its headers' length, the prelude's CRC32), headers
(`:message-type`, `:event-type` or `:exception-type`, ...), the JSON payload and the frame's
CRC32. Bytes are taken for an event stream only when the first prelude's CRC holds. A frame
cut short or whose CRC fails ends the lines with one saying where, which reads as an invalid
record: the frames before it are kept.
"""

from __future__ import annotations

import json
import struct
import zlib

_PRELUDE = 12
_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
"""The value size of each fixed-size header type (6, bytes, and 7, string, carry a length)."""


def is_event_stream(data: bytes) -> bool:
    """Whether the bytes open with an event-stream frame (its prelude's CRC32 holds)."""
    if len(data) < _PRELUDE + 4:
        return False
    total, headers, crc = struct.unpack_from(">III", data)
    return bool(total >= 16 and headers <= total - 16 and zlib.crc32(data[:8]) == crc)


def as_lines(data: bytes) -> str:
    """The frames as JSON Lines (see the module's docstring)."""
    lines: list[str] = []
    at = 0
    while at < len(data):
        frame = _frame(data, at)
        if isinstance(frame, str):
            lines.append(f"(the event stream breaks at byte {at}: {frame})")
            break
        line, at = frame
        lines.append(line)
    return "".join(line + "\n" for line in lines)


def _frame(data: bytes, at: int) -> tuple[str, int] | str:
    """The frame's line and where the next begins, or what is wrong with it."""
    if len(data) - at < _PRELUDE + 4:
        return "a frame cut short"
    total, size, crc = struct.unpack_from(">III", data, at)
    if zlib.crc32(data[at : at + 8]) != crc or total < 16 or size > total - 16:
        return "a prelude that does not check"
    end = at + total
    if end > len(data):
        return "a frame cut short"
    if zlib.crc32(data[at : end - 4]) != struct.unpack_from(">I", data, end - 4)[0]:
        return "a frame whose checksum fails"
    headers = _headers(data[at + _PRELUDE : at + _PRELUDE + size])
    if headers is None:
        return "headers that do not parse"
    payload = data[at + _PRELUDE + size : end - 4].decode("utf-8", errors="replace") or "{}"
    kind = headers.get(":message-type", "event")
    if kind == "error":
        message = headers.get(":error-message", "")
        code = headers.get(":error-code", "")
        return _json_line("error", json.dumps({"code": code, "message": message})), end
    name = headers.get(":exception-type" if kind == "exception" else ":event-type", "event")
    return _json_line(name, payload), end


def _headers(block: bytes) -> dict[str, str] | None:
    """The string headers (others are skipped), or None when the block does not parse."""
    found: dict[str, str] = {}
    at = 0
    try:
        while at < len(block):
            length = block[at]
            name = block[at + 1 : at + 1 + length].decode("utf-8", errors="replace")
            at += 1 + length
            kind = block[at]
            at += 1
            if kind in (6, 7):
                (size,) = struct.unpack_from(">H", block, at)
                value = block[at + 2 : at + 2 + size]
                at += 2 + size
                if kind == 7:
                    found[name] = value.decode("utf-8", errors="replace")
            elif kind in _SIZES:
                at += _SIZES[kind]
            else:
                return None
    except (IndexError, struct.error):
        return None
    return found if at == len(block) else None


def _json_line(name: str, payload: str) -> str:
    """`{"name": payload}` with the payload's text as it came (a broken one reads as broken),
    on one line."""
    text = payload.strip().replace("\r", " ").replace("\n", " ")
    return f"{{{json.dumps(name, ensure_ascii=False)}: {text}}}"
