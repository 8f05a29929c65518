"""An input that holds no chat-completions stream is refused, saying what was expected and
what was seen.

A reading holds a stream when one of its records is a chunk-shaped object (it has `choices`
or `error`, or its `object` is `chat.completion.chunk` or `chat.completion`; a bare delta,
choice or fragment was wrapped into one already), the `[DONE]` sentinel, an SSE `event: error`
(a provider's error, whatever its data: upstream's SDK throws on it), or a record that does
not parse but carries a chunk's own mark (`"choices":`, `"delta":`, `"tool_calls":`,
`"finish_reason":`, `chat.completion.chunk` or an id `"chatcmpl-…`): a chunk cut short or
broken on the wire is the stream's, reported as its invalid chunk, as are broken lines beside
a real chunk. Anything else (a Python traceback whose line numbers parse as JSON numbers, a
log line, an HTML error page, JSON objects of another shape) would be assembled into an empty
trace and accused of the provider quirks of a stream that never was.

What was seen is named from the text when it is a known kind of non-stream (a traceback, an
HTML page, a log line, Node's printing of chunk objects) and was not read as SSE (the bytes
of a plain SSE stream are read without their text: both readings must say the same) nor out
of a HAR or a cassette; else from the records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from webapp.core.readers.logs import STAMP, WHAT_TO_PASTE
from webapp.core.readers.parse import LineCounter, snippet
from webapp.core.records import ReaderError, ReadResult, Record
from webapp.core.words import count, quote

EXPECTED = (
    "streamviz reads OpenAI chat-completions streams: SSE data: lines of chat.completion.chunk "
    'objects ({"choices": [{"index": 0, "delta": …}]}), or the same objects as JSON or JSON '
    "Lines, in a HAR file, an HTTP dump or a vcrpy cassette"
)
ANSWER = "chat.completion"
"""A non-stream answer's `object` (`webapp.core.contract.answer` reads its calls)."""
_OBJECTS = ("chat.completion.chunk", ANSWER)
ANSWER_RECORDS = 8
"""A reading of more records than this is no answer (an answer is one body)."""
_CONTAINERS = ("sse", "har", "cassette")
"""Readings whose records were not read from the text as a whole (an SSE stream's data: lines,
which a plain stream's bytes give without their text; a HAR's or a cassette's body)."""
_LOOK = 256 * 1024
"""What was seen is looked for in the text's first this many characters."""
_DESCRIBED = 1_000
"""What was seen is said from the first this many records."""

_CHUNK_MARK = re.compile(
    r'"(?:choices|delta|tool_calls|finish_reason)"\s*:|chat\.completion\.chunk|"chatcmpl-'
)
_TRACEBACK = re.compile(r"(?m)^[ \t]*Traceback \(most recent call last\):")
_JS_FRAME = re.compile(r"(?m)^[ \t]+at [^\r\n]*?:\d+:\d+\)?[ \t]*$")
_HTML = re.compile(r"(?i)<!doctype html|<html[\s>]|<head[\s>]|<body[\s>]|<title[\s>]")
_TITLE = re.compile(r"(?is)<(title|h1)[^>]*>([^<]{1,200})</\1>")
_SERVER = re.compile(
    r"(?i)\b(nginx|openresty|cloudflare|apache|envoy|caddy|varnish|microsoft-iis|awselb)\b"
)
_INSPECTED = re.compile(r"(?m)^[ \t]*(?:object|choices|delta|tool_calls): ['\[{]")
"""An unquoted key of a chunk at a line's start: Node's `console.log` of the object (its
`util.inspect`), JavaScript and not JSON."""
_LEVEL = re.compile(r"\s*\[?(?:DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|TRACE)\]?:?\s")


def is_chunk(value: Any) -> bool:
    """Whether a parsed value is shaped like a chat-completions chunk (or an error, or a whole
    `chat.completion` answer)."""
    return isinstance(value, dict) and (
        "choices" in value or "error" in value or value.get("object") in _OBJECTS
    )


def looks_like_answer(value: Any) -> bool:
    """Whether a parsed value is a non-stream answer: `object` is `chat.completion`, or (no
    `object`) a choice holds a `message` and none a `delta`."""
    if not isinstance(value, dict):
        return False
    kind = value.get("object")
    if kind == ANSWER:
        return True
    choices = value.get("choices")
    if kind is not None or not isinstance(choices, list) or not choices:
        return False
    held = [choice for choice in choices if isinstance(choice, dict)]
    return any("message" in c for c in held) and not any("delta" in c for c in held)


def is_answer(records: Sequence[Record]) -> bool:
    """Whether a reading is one answer: a record is an answer and none is a stream's chunk or
    `[DONE]` (at most the first few records are looked at: an answer is one body)."""
    found = False
    for record in records[:ANSWER_RECORDS]:
        if record.kind == "done":
            return False
        if record.kind != "chunk":
            continue
        if not looks_like_answer(record.value):
            return False
        found = True
    return found and len(records) <= ANSWER_RECORDS


def holds_stream(records: Sequence[Record]) -> bool:
    """Whether some record is a chunk-shaped object, `[DONE]`, or a broken chunk (the first
    record usually is one)."""
    for record in records:
        kind = record.kind
        if kind == "done" or record.event == "error":
            return True
        if kind == "chunk" and is_chunk(record.value):
            return True
        if kind == "invalid" and _CHUNK_MARK.search(record.text):
            return True
    return False


def require_stream(result: ReadResult, text: str | None = None) -> ReadResult:
    """The result, or ReaderError when it holds no stream; `text` is the input, when there is
    one, to name what it is."""
    if holds_stream(result.records):
        return result
    seen = None
    if text is not None and result.format not in _CONTAINERS:
        seen = seen_in(text)
    raise ReaderError(message(_where(result), seen or _records_seen(result)))


def unparsed(text: str, where: str = "the input") -> str | None:
    """The refusal of a text no reader found any value in, when it is a known kind of
    non-stream (None: the caller says what it tried)."""
    seen = seen_in(text)
    return None if seen is None else message(where, seen)


def message(where: str, seen: str) -> str:
    """The refusal: no chunk in `where`, what was `seen` there, what streamviz reads."""
    return f"no chat-completions chunk in {where}: {seen}. {EXPECTED}. {_capital(WHAT_TO_PASTE)}"


def seen_in(text: str) -> str | None:
    """'this is a Python traceback (ending "…")', an HTML page, a log line, or "this holds"
    several of them, in their order; None when the text is none of these."""
    head = text[:_LOOK]
    kinds = (_traceback(head), _html(head), _log_line(head), _inspected(head))
    found = [kind for kind in kinds if kind]
    if not found:
        return None
    found.sort()
    parts = [part[1] for part in found]
    if len(parts) == 1:
        return f"this is {parts[0]}"
    return f"this holds {', '.join(parts[:-1])} and {parts[-1]}"


def _inspected(text: str) -> tuple[int, str] | None:
    """Node's `console.log(chunk)`: its keys unquoted, and what is nested deeper than two
    levels printed as `[Object]`, the deltas with it."""
    match = _INSPECTED.search(text)
    if match is None:
        return None
    said = "Node's console.log of chunk objects (JavaScript, not JSON"
    if "[Object]" in text or "[Array]" in text:
        said += "; what is nested deeper, the deltas and their calls, is cut to [Object]"
    return match.start(), said + "): log JSON.stringify(chunk) instead"


def _traceback(text: str) -> tuple[int, str] | None:
    match = _TRACEBACK.search(text)
    if match is not None:
        ending = _raised(text[match.end() :])
        return match.start(), f"a Python traceback{_at(text, match.start(), ending)}"
    frame = _JS_FRAME.search(text)
    if frame is not None:
        return frame.start(), f"a JavaScript stack trace{_at(text, frame.start())}"
    return None


def _raised(rest: str) -> str:
    """'ending "ValueError: …"': the exception line a traceback ends with."""
    for line in rest.splitlines()[1:200]:
        if line.strip() and not line[:1].isspace():
            return f"ending {snippet(line)}"
    return ""


def _html(text: str) -> tuple[int, str] | None:
    match = _HTML.search(text)
    if match is None:
        return None
    title = _TITLE.search(text, match.start())
    what = " ".join(title.group(2).split()) if title else ""
    server = _SERVER.search(text, match.start())
    if server and server.group(1).lower() not in what.lower():
        what = f"{server.group(1)} {what}".strip()
    return match.start(), f"an HTML page{_at(text, match.start(), what)}"


def _log_line(text: str) -> tuple[int, str] | None:
    start = 0
    for line in text.splitlines(keepends=True):
        if STAMP.match(line) or _LEVEL.match(line):
            return start, f"a log line{_at(text, start, snippet(line))}"
        start += len(line)
    return None


def _at(text: str, pos: int, what: str = "") -> str:
    """ " (what, line N)", the line left out when it is the first: where a part was seen."""
    line = LineCounter(text).line_at(pos)
    parts = [part for part in (what, f"line {line}" if line > 1 else "") if part]
    return f" ({', '.join(parts)})" if parts else ""


def _where(result: ReadResult) -> str:
    meta = result.meta
    if meta.get("container") == "http":
        return http_body(str(meta.get("status_line")))
    if result.format in ("har", "cassette") and "entry" in meta:
        what = "HAR's entry" if result.format == "har" else "cassette's interaction"
        request = " ".join(str(meta[key]) for key in ("method", "url") if meta.get(key))
        return f"the {what} {meta['entry']} ({request or '?'}, status {meta.get('status')})"
    return "the input"


def http_body(status_line: str, neither: bool = False) -> str:
    """Where the records were: an HTTP dump's body (`neither`: that read as no format)."""
    return f"the HTTP response body ({status_line})" + (
        ", which is neither SSE nor JSON" if neither else ""
    )


def _records_seen(result: ReadResult) -> str:
    records = result.records
    if not len(records):
        return "it holds no record"
    reads = f"it reads as {count(len(records), 'record')}"
    objects = values = invalid = None
    for record in records[:_DESCRIBED]:
        if record.kind == "chunk" and isinstance(record.value, dict):
            objects = objects or record
        elif record.kind == "chunk":
            values = values or record
        elif record.kind == "invalid":
            invalid = invalid or record
    if objects is not None:
        keys = ", ".join(quote(str(key), 30) for key in list(objects.value)[:6])
        keys += ", …" if len(objects.value) > 6 else ""
        return (
            f"{reads}, none an object shaped like a chunk: the first object, on line "
            f"{objects.line}, has " + (f"the keys {keys}" if keys else "no key")
        )
    if values is not None:
        return (
            f"{reads}, none a JSON object: the first value, on line {values.line}, is "
            f"{snippet(values.text)}"
        )
    assert invalid is not None
    return f"{reads}, none of which parses: line {invalid.line} is {snippet(invalid.text)}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
