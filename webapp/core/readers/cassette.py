"""vcrpy / pytest-recording cassettes: the recorded response body of an HTTP interaction.

A cassette is YAML (vcrpy's default serializer) or JSON (its `json` serializer) holding
`{"interactions": [{"request": {...}, "response": {...}}, ...], "version": 1}`. An interaction
is a stream when its response's Content-Type is `text/event-stream` or its body's first
non-blank line starts with `data:`; a JSON body answering a chat completion is one record.
Without a chosen interaction (`--har-entry N`, its 1-based place, as for a HAR's entries), the
first stream whose URI has `chat/completions` is read, else the first stream. The body is
`response.body.string` (text, or bytes under YAML's `!!binary`), inflated when the cassette
kept it gzip- or deflate-encoded. YAML is read with the safe loader: no tag builds an object.

Only the request's model and tools, the method, the URI without its query and the status are
kept. A cassette written by streamviz (`to_cassette`) also carries, per interaction, when
each record of the body arrived (`streamviz_timing`); vcrpy ignores the key.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from webapp.core.readers.har import dig, public_url
from webapp.core.readers.jsontext import read_any_json
from webapp.core.readers.parse import decode_bytes, parse_json
from webapp.core.readers.sse import read_sse
from webapp.core.readers.timing import Arrivals, record_arrivals
from webapp.core.records import Entry, ReaderError, ReadResult

_YAML_START = re.compile(r"interactions:(?:[ \t]|$)", re.MULTILINE)
"""Matched where a line starts (`looks_like_cassette` finds the line with `str.find`)."""
_JSON_START = re.compile(r'\s*\{\s*"interactions"\s*:')
_FIRST_DATA = re.compile(r"\s*data:")
TIMING_KEY = "streamviz_timing"
_UNTIMED = (
    f"its {TIMING_KEY} is not increasing byte counts with times in ms (from 0 to 10^12, "
    "one each): the arrivals are ignored"
)


def looks_like_cassette(text: str) -> bool:
    """Whether the text is shaped like a cassette: a top-level `interactions:` in YAML, or a
    JSON object that opens with `"interactions"`."""
    if _JSON_START.match(text) is not None or _YAML_START.match(text) is not None:
        return True
    # A multiline `^` search walks a long stream character by character; `find` does not.
    at = text.find("\ninteractions:")
    while at != -1:
        if _YAML_START.match(text, at + 1) is not None:
            return True
        at = text.find("\ninteractions:", at + 1)
    return False


def _load(text: str) -> Any:
    if _JSON_START.match(text):
        value, error = parse_json(text)
        if error is not None:
            raise ReaderError(f"not a cassette: the JSON does not parse ({error})")
        return value
    import yaml  # only for a cassette: the other readers start without it

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # the safe loader: plain data only
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise ReaderError(f"not a cassette: the YAML does not read{line}: {problem}") from None
    except (ValueError, TypeError, RecursionError) as error:
        raise ReaderError(f"not a cassette: the YAML does not read ({error})") from None


def _header(headers: Any, name: str) -> str:
    """A header's first value, whatever the case of its name (vcrpy keeps lists of values)."""
    if not isinstance(headers, dict):
        return ""
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            first = value[0] if isinstance(value, list) and value else value
            return first if isinstance(first, str) else ""
    return ""


def _body(response: Any) -> str:
    """The response body as text (inflated if it was kept encoded)."""
    body = dig(response, "body")
    data = dig(body, "string") if isinstance(body, dict) else body
    if isinstance(data, str):
        raw = data.encode("utf-8", "surrogatepass")
        if not _header(dig(response, "headers"), "content-encoding"):
            return data
    elif isinstance(data, bytes):
        raw = data
    else:
        return ""
    encoding = _header(dig(response, "headers"), "content-encoding").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        try:
            raw = zlib.decompress(raw, 47 if encoding != "deflate" else zlib.MAX_WBITS)
        except zlib.error:
            try:
                raw = zlib.decompress(raw, -zlib.MAX_WBITS)  # raw deflate
            except zlib.error as error:
                why = f"the cassette's body is {encoding}-encoded and does not inflate ({error})"
                raise ReaderError(why) from None
    elif encoding and encoding != "identity":
        raise ReaderError(
            f"the cassette kept the body {encoding}-encoded, which streamviz cannot decode: "
            "record it with vcrpy's decode_compressed_response=True"
        )
    return decode_bytes(raw)


def _kind(interaction: Any, body: str) -> str | None:
    """ "sse", "json" (a chat completion's JSON answer) or None (not a stream)."""
    response = dig(interaction, "response")
    mime = _header(dig(response, "headers"), "content-type").lower()
    if mime.startswith("text/event-stream") or _FIRST_DATA.match(body):
        return "sse"
    uri = dig(interaction, "request", "uri")
    if mime.startswith("application/json") and isinstance(uri, str) and "chat/completions" in uri:
        return "json"
    return None


def _label(number: int, interaction: Any) -> str:
    method = dig(interaction, "request", "method")
    uri = dig(interaction, "request", "uri")
    status = dig(interaction, "response", "status", "code")
    shown = public_url(uri) if isinstance(uri, str) else "?"
    return f"interaction {number}: {method if isinstance(method, str) else '?'} {shown} ({status})"


def read_cassette(text: str, entry: int | None = None) -> ReadResult:
    """Read a cassette's chosen stream (1-based `entry`), or its first one."""
    value = _load(text)
    interactions = dig(value, "interactions")
    if not isinstance(interactions, list):
        raise ReaderError("not a cassette: no interactions list")
    found: list[tuple[int, Any, str, str]] = []
    for number, interaction in enumerate(interactions, 1):
        body = _body(dig(interaction, "response"))
        kind = _kind(interaction, body)
        if kind is not None and body.strip():
            found.append((number, interaction, body, kind))
    if not found:
        raise ReaderError(
            f"the cassette has {len(interactions)} interactions but none holds an event "
            "stream or a chat completion's JSON"
        )
    listed = tuple(Entry(_label(n, i), "", n) for n, i, _, _ in found)
    if entry is not None:
        chosen = [item for item in found if item[0] == entry]
        if not chosen:
            names = "; ".join(e.label for e in listed)
            why = f"interaction {entry} of the cassette is not a stream; its streams: {names}"
            raise ReaderError(why)
        pick = chosen[0]
    else:
        chat = [item for item in found if "chat/completions" in str(dig(item[1], "request", "uri"))]
        pick = (chat or found)[0]
    return _result(pick, listed, len(interactions))


def _request(interaction: Any) -> tuple[str | None, tuple[dict[str, Any], ...]]:
    body = dig(interaction, "request", "body")
    if isinstance(body, dict):
        body = body.get("string")
    if isinstance(body, bytes):
        body = decode_bytes(body)
    value, error = parse_json(body) if isinstance(body, str) and body.strip() else (None, "none")
    if error is not None or not isinstance(value, dict):
        return None, ()
    model, tools = value.get("model"), value.get("tools")
    kept = tuple(t for t in tools if isinstance(t, dict)) if isinstance(tools, list) else ()
    return (model if isinstance(model, str) else None), kept


def _result(pick: tuple[int, Any, str, str], listed: tuple[Entry, ...], total: int) -> ReadResult:
    number, interaction, body, kind = pick
    read = read_sse(body) if kind == "sse" else read_any_json(body)
    if not read.records:
        raise ReaderError(f"the cassette's {_label(number, interaction)} holds no record")
    model, tools = _request(interaction)
    uri = dig(interaction, "request", "uri")
    meta: dict[str, Any] = {
        "entry": number,
        "method": dig(interaction, "request", "method"),
        "url": public_url(uri) if isinstance(uri, str) else None,
        "status": dig(interaction, "response", "status", "code"),
    }
    kept = dig(interaction, TIMING_KEY)
    arrivals = Arrivals.from_json(kept)
    if arrivals is not None:
        lines = [record.line for record in read.records]
        data = body.encode("utf-8", "surrogatepass")
        meta["arrivals"] = record_arrivals(data, arrivals, lines, sse=kind == "sse")
    others = tuple(e for e in listed if e.number != number)
    notes = (
        f"read {_label(number, interaction)} (of {total} interactions); "
        "line numbers count lines within its response body",
        *([f"{len(others)} other streams in the cassette not read"] if others else []),
        *([_UNTIMED] if kept is not None and arrivals is None else []),
        *read.notes,
    )
    return ReadResult(
        format="cassette",
        records=read.records,
        notes=notes,
        model=model,
        tools=tools,
        others=others,
        entries=listed,
        meta=meta,
    )


def to_cassette(
    body: str,
    *,
    uri: str = "https://api.openai.com/v1/chat/completions",
    model: str | None = None,
    arrivals: Arrivals | None = None,
) -> str:
    """A one-interaction vcrpy cassette (YAML) whose response is `body` as an event stream;
    `arrivals` (offsets into `body`'s UTF-8 bytes) is kept beside it when known."""
    request = {"model": model or "streamviz-model", "stream": True, "messages": []}
    interaction: dict[str, Any] = {
        "request": {
            "body": json.dumps(request, separators=(",", ":")),
            "headers": {"Content-Type": ["application/json"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "body": {"string": body},
            "headers": {"Content-Type": ["text/event-stream; charset=utf-8"]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    if arrivals is not None:
        interaction[TIMING_KEY] = {"unit": "ms", **arrivals.to_json()}
    document = {"interactions": [interaction], "version": 1}
    import yaml

    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True)
    return text
