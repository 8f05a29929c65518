"""JSON parsing as JavaScript's `JSON.parse` does it, and the line bookkeeping readers share."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""Line breaks as the OpenAI Node SDK's `LineDecoder` splits them: CRLF, lone CR, lone LF."""

_JS_WHITESPACE = " \t\r\n"
_DEPTH_MESSAGE = "the value is nested too deeply for streamviz to parse"


def _reject_constant(name: str) -> Any:
    """Refuse `NaN` and `Infinity`, which Python's json accepts and `JSON.parse` does not."""
    raise ValueError(f"{name} is not valid JSON (JavaScript's JSON.parse rejects it)")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


class JsonError(ValueError):
    """A JSON value that does not parse; `pos` is where the parser gave up, if it said."""

    def __init__(self, message: str, pos: int | None) -> None:
        super().__init__(message)
        self.pos = pos


def parse_json(text: str) -> tuple[Any, str | None]:
    """Parse one JSON text; return `(value, None)` or `(None, the parser's message)`."""
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError:
        pass
    try:
        return _DECODER.decode(text), None
    except json.JSONDecodeError as error:
        return None, str(error)
    except ValueError as error:
        return None, str(error)
    except (RecursionError, MemoryError):
        return None, _DEPTH_MESSAGE


def scan_json(text: str, pos: int) -> tuple[Any, int]:
    """Parse the JSON value starting at `pos`; return it and where it ends, or raise JsonError.

    The stdlib's C scanner gives the end position orjson cannot; its rules are the
    fallback's rules of `parse_json` (big integers and lone surrogates accepted, NaN refused).
    """
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as error:
        raise JsonError(str(error), error.pos) from None
    except ValueError as error:
        raise JsonError(str(error), None) from None
    except (RecursionError, MemoryError):
        raise JsonError(_DEPTH_MESSAGE, None) from None


def split_lines(text: str) -> list[str]:
    """Split on CRLF, CR or LF; a final line break does not start another (empty) line."""
    lines = text.split("\n") if "\r" not in text else LINE_BREAK.split(text)
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def strip_js(text: str) -> str:
    """Strip the whitespace JSON allows around a value (not Python's wider idea of it)."""
    return text.strip(_JS_WHITESPACE)


TRUNCATED = "; the input seems to end inside this record"


class LineCounter:
    """Turns increasing offsets into 1-based line numbers without rescanning the text."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self._text = text
        self._has_cr = "\r" in text
        self._pos = 0
        self._line = first_line

    def line_at(self, pos: int) -> int:
        """The line holding offset `pos`; offsets must not decrease between calls."""
        if pos > self._pos:
            text, start = self._text, self._pos
            breaks = text.count("\n", start, pos)
            if self._has_cr:
                breaks += text.count("\r", start, pos) - text.count("\r\n", start, pos)
            self._line += breaks
            self._pos = pos
        return self._line


def snippet(line: str, limit: int = 60) -> str:
    """A short, quoted, escaped excerpt of a line for an error message."""
    short = line.strip()
    if len(short) > limit:
        short = short[: limit - 1] + "…"
    return json.dumps(short, ensure_ascii=False)


def first_nonblank(text: str, first_line: int = 1) -> tuple[int, str] | None:
    """The first line with something on it, and its number."""
    match = re.search(r"[^ \t\r\n]", text)
    if match is None:
        return None
    start = max(text.rfind("\n", 0, match.start()), text.rfind("\r", 0, match.start())) + 1
    end_match = LINE_BREAK.search(text, match.start())
    end = end_match.start() if end_match else len(text)
    return LineCounter(text, first_line).line_at(start), text[start:end]


def decode_bytes(data: bytes | bytearray) -> str:
    """Decode UTF-8 (or UTF-16 with its BOM, as Windows PowerShell writes); drop a BOM.

    Bytes that are not valid UTF-8 become U+FFFD, as a browser's `TextDecoder` makes them.
    AWS's binary event stream (Bedrock's ConverseStream as it was sent: a frame opens with its
    length, whose first byte is 0 below 16 MiB, which no text does) becomes its events' JSON
    Lines (`webapp.core.readers.natives.eventstream`).
    """
    if data[:1] == b"\x00":
        from webapp.core.readers.natives import eventstream  # a rare input: loaded for it alone

        if eventstream.is_event_stream(bytes(data)):
            return eventstream.as_lines(bytes(data))
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")
