"""HAR 1.2 from browser devtools: an event-stream response, read as server-sent events.

An entry is a stream when its response's mimeType is `text/event-stream` or its body's first
non-blank line starts with `data:`. Without a chosen entry, entries whose URL has
`chat/completions` come first and the first with a body is read; the others are listed, not
read. A chosen entry (its 1-based place in `log.entries`) is read, or refused with the list.
Only the request's model and tools, the method, the URL without its query and the status are
kept: no header, cookie or query string reaches the result.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from webapp.core.readers.jsontext import read_any_json
from webapp.core.readers.parse import decode_bytes, parse_json, snippet
from webapp.core.readers.sse import read_sse
from webapp.core.readers.timing import MOST_MS, as_ms
from webapp.core.records import Entry, ReaderError, ReadResult

_HAR_START = re.compile(r'\s*\{\s*"log"\s*:')
_FIRST_DATA = re.compile(r"\s*data:")
_PHASES = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")


def looks_like_har(text: str) -> bool:
    """Whether the text opens the way a HAR file does (a JSON object with `log` first)."""
    return _HAR_START.match(text) is not None


def might_be_har(text: str) -> bool:
    """Whether the text could be a HAR with `log` not first: worth a full parse."""
    return text.lstrip().startswith("{") and '"log"' in text and '"entries"' in text


@dataclass(frozen=True, slots=True)
class _Stream:
    number: int
    label: str
    body: str
    base64: bool
    chat: bool
    entry: dict[str, Any]
    answer: bool = False
    """A chat completion's JSON answer (`"stream": false`), not an event stream."""


def dig(value: Any, *keys: str) -> Any:
    """`value[k1][k2]...`, or None where a level is not an object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def public_url(url: str) -> str:
    """The URL without user info, query or fragment (where secrets travel)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("?", 1)[0].split("#", 1)[0]
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def entries_of(value: Any) -> list[Any] | None:
    """The `log.entries` list of a parsed HAR, or None if it is not a HAR."""
    entries = dig(value, "log", "entries")
    return entries if isinstance(entries, list) else None


def _body(content: Any) -> tuple[str, bool]:
    text = _text(dig(content, "text"))
    if dig(content, "encoding") != "base64":
        return text, False
    try:
        return decode_bytes(base64.b64decode(text)), True
    except (binascii.Error, ValueError):
        return "", True


def _stream(number: int, entry: Any) -> _Stream | None:
    content = dig(entry, "response", "content")
    body, encoded = _body(content)
    mime = _text(dig(content, "mimeType")).lower()
    if not (mime.startswith("text/event-stream") or _FIRST_DATA.match(body)):
        return None
    url = public_url(_text(dig(entry, "request", "url")))
    method = _text(dig(entry, "request", "method")) or "?"
    status = dig(entry, "response", "status")
    label = f"entry {number}: {method} {url} ({status})"
    chat = "chat/completions" in url
    return _Stream(number, label, body, encoded, chat, entry)


def _answer(number: int, entry: Any) -> _Stream | None:
    """The entry as a chat completion's non-stream JSON answer, or None when it is not one."""
    content = dig(entry, "response", "content")
    mime = _text(dig(content, "mimeType")).lower()
    url = public_url(_text(dig(entry, "request", "url")))
    if not mime.startswith("application/json") or "chat/completions" not in url:
        return None
    body, encoded = _body(content)
    method = _text(dig(entry, "request", "method")) or "?"
    label = f"entry {number}: {method} {url} ({dig(entry, 'response', 'status')}, JSON)"
    return _Stream(number, label, body, encoded, True, entry, answer=True)


def _request(entry: dict[str, Any]) -> tuple[str | None, tuple[dict[str, Any], ...]]:
    value, error = parse_json(_text(dig(entry, "request", "postData", "text")) or "null")
    if error is not None or not isinstance(value, dict):
        return None, ()
    model = value.get("model")
    tools = value.get("tools")
    kept = tuple(t for t in tools if isinstance(t, dict)) if isinstance(tools, list) else ()
    return (model if isinstance(model, str) else None), kept


def _timings(entry: dict[str, Any]) -> tuple[dict[str, float], str | None]:
    """The entry's `timings` (HAR 1.2: blocked, dns, connect, ssl, send, wait, receive, in
    ms; -1 where not applicable), and what is wrong with them: when a phase is no time in ms
    (`timing.as_ms`: NaN, infinite, negative, past the float range), none are kept."""
    found = dig(entry, "timings")
    if not isinstance(found, dict):
        return {}, None
    kept: dict[str, float] = {}
    for key in _PHASES:
        if key not in found:
            continue
        value = found[key]
        ms = -1.0 if value == -1 and not isinstance(value, bool) else as_ms(value)
        if ms is None:
            why = f"timings.{key} is {_shown(value)}, not a time in ms (from 0 to 10^12, or -1)"
            return {}, why
        kept[key] = ms
    return kept, None


def _shown(value: Any) -> str:
    """A JSON value in a few characters (a 401-digit integer by its length)."""
    if isinstance(value, str):
        return snippet(value, 40)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MOST_MS:
        sign = "a negative" if value < 0 else "an"
        return f"{sign} integer of {len(str(abs(value)))} digits"
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "an array"
    return json.dumps(value)


def read_har(text: str, entry: int | None = None) -> ReadResult:
    """Read a HAR file's chosen event-stream entry, or its first one."""
    value, error = parse_json(text)
    if error is not None:
        raise ReaderError(f"not a HAR file: the JSON does not parse ({error})")
    return read_har_value(value, entry)


def read_har_value(value: Any, entry: int | None = None) -> ReadResult:
    """Read an already parsed HAR's chosen event-stream entry, or its first one."""
    entries = entries_of(value)
    if entries is None:
        raise ReaderError("not a HAR file: no log.entries list")
    streams = [s for n, e in enumerate(entries, 1) if (s := _stream(n, e)) is not None]
    if entry is not None and 1 <= entry <= len(entries) and all(s.number != entry for s in streams):
        chosen = _answer(entry, entries[entry - 1])
        if chosen is not None and chosen.body.strip():
            return _result(chosen, streams, len(entries))
    if not streams:
        answers = [s for n, e in enumerate(entries, 1) if (s := _answer(n, e)) is not None]
        usable = [s for s in answers if s.body.strip()]
        if entry is None and usable:
            return _result(usable[0], [], len(entries))
        raise ReaderError(
            f"the HAR has {len(entries)} entries but none is an event stream "
            "(mimeType text/event-stream or a body starting with data:) nor a chat "
            "completion's JSON answer"
        )
    if entry is not None:
        return _result(_chosen(entry, streams, entries), streams, len(entries))
    usable = sorted((s for s in streams if s.body.strip()), key=lambda s: not s.chat)
    if not usable:
        labels = "; ".join(s.label for s in streams)
        raise ReaderError(
            f"the HAR's event-stream entries hold no response body ({labels}); "
            "browsers do not always save streamed bodies"
        )
    return _result(usable[0], streams, len(entries))


def entry_body(text: str, number: int) -> str | None:
    """The response body of HAR entry `number` (1-based) as `read_har` reads it (base64
    decoded), when that entry is an event stream; else None."""
    value, error = parse_json(text)
    entries = entries_of(value) if error is None else None
    if entries is None or not 1 <= number <= len(entries):
        return None
    stream = _stream(number, entries[number - 1])
    return None if stream is None else stream.body


def _listing(streams: list[_Stream]) -> str:
    return "; ".join(
        s.label + ("" if s.body.strip() else " (no response body saved)") for s in streams
    )


def _chosen(number: int, streams: list[_Stream], entries: list[Any]) -> _Stream:
    """The stream at entry `number`, or ReaderError listing the entries there are."""
    for stream in streams:
        if stream.number == number:
            if not stream.body.strip():
                raise ReaderError(
                    f"HAR {stream.label} holds no response body (browsers do not always save "
                    f"streamed bodies); its event-stream entries: {_listing(streams)}"
                )
            return stream
    if 1 <= number <= len(entries):
        why = f"entry {number} is not an event stream"
    else:
        why = f"there is no entry {number} (the HAR has entries 1-{len(entries)})"
    raise ReaderError(f"{why}; the HAR's event-stream entries: {_listing(streams)}")


def _result(chosen: _Stream, streams: list[_Stream], total: int) -> ReadResult:
    body = read_any_json(chosen.body) if chosen.answer else read_sse(chosen.body)
    model, tools = _request(chosen.entry)
    listed = tuple(
        Entry(s.label, "" if s.body.strip() else "no response body saved", s.number)
        for s in streams
    )
    others = tuple(e for s, e in zip(streams, listed, strict=True) if s is not chosen)
    notes = [
        f"read {chosen.label} (of {total} entries); "
        "line numbers count lines within its response body",
        *(["its response body was base64-encoded"] if chosen.base64 else []),
        *([f"{len(others)} other event-stream entries not read"] if others else []),
        *body.notes,
    ]
    meta = {
        "entry": chosen.number,
        "method": _text(dig(chosen.entry, "request", "method")),
        "url": public_url(_text(dig(chosen.entry, "request", "url"))),
        "status": dig(chosen.entry, "response", "status"),
    }
    timings, wrong = _timings(chosen.entry)
    if timings:
        meta["timings"] = timings  # time to the first byte and to the end (`readers.timing`)
    if wrong is not None:
        notes.append(f"{chosen.label}: {wrong}; its timings are ignored")
    return ReadResult(
        format="har",
        records=body.records,
        notes=tuple(notes),
        model=model,
        tools=tools,
        others=others,
        entries=listed,
        meta=meta,
    )
