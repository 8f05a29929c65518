"""vcrpy / pytest-recording cassettes: the recorded response body of an HTTP interaction.

A cassette is YAML (vcrpy's default serializer) or JSON (its `json` serializer) holding
`{"interactions": [{"request": {...}, "response": {...}}, ...], "version": 1}`. An interaction
is a stream when its response's Content-Type is `text/event-stream` or its body's first
non-blank line starts with `data:`, or another API's stream of JSON values (Bedrock's
`application/vnd.amazon.eventstream`, Ollama's `application/x-ndjson`); a JSON body answering a
chat completion is one record.
Without a chosen interaction (`--har-entry N`, its 1-based place, as for a HAR's entries), the
first stream whose URI has `chat/completions` is read, else the first stream. The body is
`response.body.string` (text, or bytes under YAML's `!!binary`), inflated when the cassette
kept it gzip- or deflate-encoded (`codings`). YAML is read with the safe loader: no tag builds
an object. What a cassette holds is bounded by `limit` (the input's size limit): its aliases
written out (`yamldoc`), and its bodies inflated, each use of one counted (an alias to one body
in every interaction counts it in every interaction).

Only the request's model and tools, the method, the URI without its query and the status are
kept. A cassette written by streamviz (`to_cassette`) also carries, per interaction, when
each record of the body arrived (`streamviz_timing`); vcrpy ignores the key.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from webapp.core.readers.codings import Budget, OverLimit, decode_body, encoded
from webapp.core.readers.har import dig, public_url
from webapp.core.readers.jsontext import read_any_json
from webapp.core.readers.parse import decode_bytes, parse_json
from webapp.core.readers.sse import read_sse
from webapp.core.readers.timing import Arrivals, record_arrivals
from webapp.core.readers.yamldoc import load_yaml
from webapp.core.records import Entry, ReaderError, ReadResult
from webapp.core.words import count
from webapp.settings import DEFAULT_MAX_BYTES

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


def input_limit(text: str, limit: int | None) -> int:
    """What a cassette may hold inflated or written out: `limit`, or without one (the command
    line) the default upload limit or the text's own length, the larger."""
    return limit if limit is not None else max(DEFAULT_MAX_BYTES, len(text))


def _load(text: str, limit: int) -> Any:
    if _JSON_START.match(text):
        value, error = parse_json(text)
        if error is not None:
            raise ReaderError(f"not a cassette: the JSON does not parse ({error})")
        return value
    return load_yaml(text, limit)


def _header(headers: Any, name: str) -> str:
    """A header's first value, whatever the case of its name (vcrpy keeps lists of values)."""
    if not isinstance(headers, dict):
        return ""
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            first = value[0] if isinstance(value, list) and value else value
            return first if isinstance(first, str) else ""
    return ""


class _Bodies:
    """The interactions' bodies as text, each binary one decoded once however many
    interactions hold it, every use spent from the budget."""

    def __init__(self, limit: int) -> None:
        self.budget = Budget(limit, "the cassette's bodies")
        self._done: dict[tuple[int, str], tuple[str, int]] = {}
        self.codings: dict[int, str] = {}
        """The Content-Encoding of each interaction (by number) whose body was inflated."""

    def text(self, number: int, response: Any) -> str:
        """Interaction `number`'s body as text: a string as it is (text holds no gzip data),
        bytes with their Content-Encoding undone, then decoded."""
        body = dig(response, "body")
        data = dig(body, "string") if isinstance(body, dict) else body
        if isinstance(data, str):
            return data
        if not isinstance(data, bytes):
            return ""
        header = _header(dig(response, "headers"), "content-encoding")
        where = f"interaction {number}"
        done = self._done.get((id(data), header))
        if done is None:
            inflated = decode_body(data, header, self.budget, where)
            done = self._done[(id(data), header)] = (decode_bytes(inflated), len(inflated))
        else:
            self.budget.spend(done[1], where)
        if encoded(header):
            self.codings[number] = header.strip()
        return done[0]


_NATIVE_STREAMS = ("application/vnd.amazon.eventstream", "application/x-ndjson")
"""Bedrock's ConverseStream (its binary frames decoded to JSON Lines, `parse.decode_bytes`) and
Ollama's native stream."""


def _kind(interaction: Any, body: str) -> str | None:
    """ "sse", "json" (a chat completion's JSON answer) or None (not a stream)."""
    response = dig(interaction, "response")
    mime = _header(dig(response, "headers"), "content-type").lower()
    if mime.startswith("text/event-stream") or _FIRST_DATA.match(body):
        return "sse"
    uri = dig(interaction, "request", "uri")
    if mime.startswith("application/json") and isinstance(uri, str) and "chat/completions" in uri:
        return "json"
    if mime.startswith(_NATIVE_STREAMS):
        return "json"  # its events, one JSON value a line (`natives` reads them)
    return None


def _label(number: int, interaction: Any) -> str:
    method = dig(interaction, "request", "method")
    uri = dig(interaction, "request", "uri")
    status = dig(interaction, "response", "status", "code")
    shown = public_url(uri) if isinstance(uri, str) else "?"
    return f"interaction {number}: {method if isinstance(method, str) else '?'} {shown} ({status})"


def read_cassette(text: str, entry: int | None = None, limit: int | None = None) -> ReadResult:
    """Read a cassette's chosen stream (1-based `entry`), or its first one; OverLimit when
    its aliases written out or its bodies inflated pass `limit` (`input_limit`)."""
    bound = input_limit(text, limit)
    interactions = dig(_load(text, bound), "interactions")
    if not isinstance(interactions, list):
        raise ReaderError("not a cassette: no interactions list")
    bodies = _Bodies(bound)
    found, failed = _streams(interactions, bodies)
    if entry is not None and entry in failed:
        raise ReaderError(failed[entry])
    if not found:
        raise ReaderError(
            next(iter(failed.values()), None)
            or f"the cassette has {len(interactions)} interactions but none holds an event "
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
    result = _result(pick, listed, len(interactions))
    coding = bodies.codings.get(pick[0])
    said = [f"its response body was kept {coding}-encoded, and was inflated"] if coding else []
    said += [f"not read: {why}" for why in failed.values()]
    if not said:
        return result
    return replace(result, notes=(result.notes[0], *said, *result.notes[1:]))


def entry_body(text: str, number: int, limit: int | None = None) -> str | None:
    """The response body of interaction `number` (1-based) as `read_cassette` reads it
    (inflated), when it is an event stream; else None. ReaderError (OverLimit) as it says."""
    bound = input_limit(text, limit)
    interactions = dig(_load(text, bound), "interactions")
    if not isinstance(interactions, list) or not 1 <= number <= len(interactions):
        return None
    interaction = interactions[number - 1]
    body = _Bodies(bound).text(number, dig(interaction, "response"))
    return body if _kind(interaction, body) == "sse" else None


def _streams(
    interactions: list[Any], bodies: _Bodies
) -> tuple[list[tuple[int, Any, str, str]], dict[int, str]]:
    """The interactions that hold a stream (number, interaction, body, kind), and why each
    body that could not be decoded was not (by number); OverLimit passes through."""
    found: list[tuple[int, Any, str, str]] = []
    failed: dict[int, str] = {}
    for number, interaction in enumerate(interactions, 1):
        try:
            body = bodies.text(number, dig(interaction, "response"))
        except OverLimit:
            raise
        except ReaderError as error:
            failed[number] = str(error)
            continue
        kind = _kind(interaction, body)
        if kind is not None and body and not body.isspace():
            found.append((number, interaction, body, kind))
    return found, failed


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


def decoded_cassette(text: str, limit: int | None = None) -> str | None:
    """The YAML cassette with each binary response body written as the text the reader reads
    from it (inflated when it was kept gzip- or deflate-encoded, its Content-Encoding dropped
    and its Content-Length made the text's): what a page masks secrets in and stores, which
    reads as the cassette does. None when no body is binary (or the text is no YAML cassette);
    OverLimit when what it holds, or the cassette written out, passes `limit`."""
    if _JSON_START.match(text) or not looks_like_cassette(text):
        return None  # JSON holds no bytes: vcrpy's JSON cassettes keep text bodies only
    bound = input_limit(text, limit)
    value = _load(text, bound)
    interactions = dig(value, "interactions")
    if not isinstance(interactions, list):
        return None
    bodies = _Bodies(bound)
    decoded: dict[int, tuple[dict[str, Any], Any, str]] = {}
    for number, interaction in enumerate(interactions, 1):
        response = dig(interaction, "response")
        body = dig(response, "body")
        if isinstance(body, dict) and isinstance(body.get("string"), bytes):
            try:
                decoded[id(body)] = (body, dig(response, "headers"), bodies.text(number, response))
            except OverLimit:
                raise
            except ReaderError:
                continue  # left as it is: the reader says why it is not read
    if not decoded:
        return None
    for body, headers, body_text in decoded.values():
        body["string"] = body_text
        if isinstance(headers, dict):
            _inflated_headers(headers, len(body_text.encode("utf-8", "surrogatepass")))
    written = _dump(value)
    size = len(written.encode("utf-8", "surrogatepass"))
    if size > bound:
        raise OverLimit(
            f"the cassette with its bodies inflated is {count(size, 'byte')}, past the size "
            f"limit of {count(bound, 'byte')}",
            bound,
        )
    return written


def _inflated_headers(headers: dict[str, Any], size: int) -> None:
    """A decoded body's headers: no Content-Encoding, its Content-Length (if any) its own,
    as vcrpy's `decode_compressed_response` leaves them."""
    for key in list(headers):
        name = key.lower() if isinstance(key, str) else ""
        if name == "content-encoding":
            del headers[key]
        elif name == "content-length":
            headers[key] = [str(size)]


def _dump(document: Any) -> str:
    """The document as YAML, as vcrpy writes a cassette (its keys in their order)."""
    import yaml

    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True)
    return text


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
    return _dump({"interactions": [interaction], "version": 1})
