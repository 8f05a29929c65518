"""Input readers: a pasted or uploaded stream in, records with their start lines out.

`read(text)` detects the format; these are tried in this order, the first that applies reads:

1. HAR: a JSON object that opens with `"log"`, or parses to one with a `log.entries` list;
   a vcrpy cassette: a top-level `interactions:` (YAML) or a JSON object opening with it.
2. HTTP dump: a status line (`HTTP/1.1 200 OK`, or `< HTTP/2 200` from `curl -v`) before the
   body, perhaps after a pasted curl command and curl's own lines; the body is then read as
   SSE if a line starts with `data:`, else as JSON Lines or JSON (steps 5 and 6).
3. SSE: some line starts with `data:`.
4. openai-python repr: some line starts with `ChatCompletionChunk(`, `Choice(`,
   `ChoiceDelta(` or `ChoiceDeltaToolCall(` (or `[` and one of them).
5. JSON Lines: several non-blank lines, each one JSON value (or `[DONE]`) on its own.
6. JSON: an array or values one after another (`jq`); at least one must parse.

A leading BOM is dropped first. With a named format, that reader alone runs (SSE, JSON and
JSON Lines still skip an HTTP dump's head). Another API's stream is named (`foreign`):
Anthropic Messages and OpenAI Responses events are mapped to chat-completions chunks, Gemini's
native stream and LangChain's reprs are refused with a message. Nothing here does I/O or
imports web code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from webapp.core.readers import foreign, http
from webapp.core.readers.cassette import looks_like_cassette, read_cassette
from webapp.core.readers.har import entries_of as _har_entries
from webapp.core.readers.har import looks_like_har, might_be_har, read_har, read_har_value
from webapp.core.readers.jsontext import read_any_json, read_json, read_jsonl
from webapp.core.readers.logs import looks_like_log, read_log
from webapp.core.readers.parse import decode_bytes, first_nonblank, parse_json, snippet
from webapp.core.readers.pyrepr import has_repr_line, read_repr
from webapp.core.readers.sse import has_data_line, read_plain_bytes, read_sse
from webapp.core.records import ReaderError, ReadResult
from webapp.tuning import paused_gc

FORMATS = ("sse", "json", "jsonl", "har", "repr", "cassette")

__all__ = ["FORMATS", "ReaderError", "decode", "read", "read_bytes", "read_plain"]


def decode(data: bytes) -> str:
    """Bytes to text: UTF-8 (UTF-16 if it has a BOM), BOM dropped, bad bytes as U+FFFD."""
    return decode_bytes(data)


def read_plain(data: bytes, fmt: str = "auto", har_entry: int | None = None) -> ReadResult | None:
    """`read(decode(data), fmt, har_entry)` when the bytes are a plain SSE stream, what most long
    streams are (`sse.read_plain_bytes`), without making the whole text; None for any other
    input (the caller decodes it and reads the text). Of the formats `read` tries before SSE,
    none takes a text that starts with `data: ` or with comment lines, so skipping their tests
    changes nothing (the payload tests check it on byte soup and on the corpus)."""
    if fmt not in ("auto", "sse") or har_entry is not None:
        return None
    plain = read_plain_bytes(data)
    if plain is None:
        return None
    result, replacements = plain
    with paused_gc():
        result = foreign.adapt(result)
    return _with_model(_with_replacement_note(result, replacements))


def read_bytes(data: bytes, fmt: str = "auto", har_entry: int | None = None) -> ReadResult:
    """`read(decode(data), fmt, har_entry)`: a plain SSE stream through `read_plain`, any other
    input decoded and read (a caller that can let the bytes go before reading the text,
    as the CLI does, calls the two itself)."""
    return read_plain(data, fmt, har_entry) or read(decode(data), fmt, har_entry)


def read(text: str, fmt: str = "auto", har_entry: int | None = None) -> ReadResult:
    """Read a stream in the named format, or the detected one with "auto".

    `har_entry` picks a HAR's entry by its 1-based place in `log.entries`, or a cassette's
    interaction by its place in `interactions` (default: the first event stream);
    `ReadResult.entries` lists the ones there are.
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise ReaderError(f"unknown format {fmt!r}: choose auto, {', '.join(FORMATS)}")
    text = text.removeprefix("\ufeff")
    if not text or text.isspace():  # `not text.strip()`, without copying a long text
        raise ReaderError("the input is empty")
    with paused_gc():
        try:
            auto = fmt == "auto"
            result = _detect(text, har_entry) if auto else _read_as(text, fmt, har_entry)
        except ReaderError as error:
            if foreign.is_langchain(text):
                raise ReaderError(foreign.langchain_message()) from None
            raise error from None
        if har_entry is not None and result.format not in ("har", "cassette"):
            raise ReaderError(
                f"an entry ({har_entry}) was chosen, but the input is not a HAR file or a cassette "
                f"(it reads as {_NAMES.get(result.format, result.format)})"
            )
        result = foreign.adapt(result)
    return _with_model(_with_replacement_note(result, text.count("\ufffd")))


def _with_model(result: ReadResult) -> ReadResult:
    """Without a request to name the model (a HAR has one), take the first chunk's `model`."""
    if result.model is not None:
        return result
    for record in result.records[:50]:
        if isinstance(record.value, dict) and isinstance(record.value.get("model"), str):
            return replace(result, model=record.value["model"])
    return result


def _found(result: ReadResult) -> bool:
    return any(record.kind != "invalid" for record in result.records)


def _first_error(result: ReadResult) -> str:
    for record in result.records:
        if record.kind == "invalid":
            return f"line {record.line}: {record.error}"
    return "nothing in it"


def _detect(text: str, har_entry: int | None) -> ReadResult:
    if looks_like_har(text):
        return read_har(text, har_entry)
    if might_be_har(text):
        value, error = parse_json(text)
        if error is None and _har_entries(value) is not None:
            return read_har_value(value, har_entry)
    if looks_like_cassette(text):
        return read_cassette(text, har_entry)
    dump = http.split_dump(text)
    if dump is not None:
        return _read_body(dump, None)
    if has_data_line(text):
        return _require(read_sse(text), "SSE")
    if looks_like_log(text):  # read as JSON, its "chunks" were its timestamps' numbers
        return read_log(text)
    if has_repr_line(text):
        return read_repr(text)
    if foreign.is_langchain(text):
        raise ReaderError(foreign.langchain_message())
    result = read_any_json(text)
    if _found(result):
        return result
    raise ReaderError(_unrecognised(text, _first_error(result)))


_INDENTED_DATA = re.compile(r"(?m)^[ \t]++data:")


def _unrecognised(text: str, json_error: str) -> str:
    start = first_nonblank(text)
    where = f"; the input starts with {snippet(start[1])} on line {start[0]}" if start else ""
    if _INDENTED_DATA.search(text):
        where += '; some lines have spaces before "data:", which upstream does not read as data'
    return (
        "not a stream streamviz can read: tried HAR (not a HAR object), "
        "cassette (no top-level interactions:), "
        'HTTP dump (no status line), SSE (no line starts with "data:"), '
        "openai-python repr (no line starts with ChatCompletionChunk( or ChoiceDelta...), "
        f"JSON/JSON Lines ({json_error}){where}"
    )


_PLAIN: dict[str, Callable[[str, int], ReadResult | None]] = {
    "sse": read_sse,
    "json": read_json,
    "jsonl": read_jsonl,
}
_NAMES = {
    "sse": "SSE",
    "json": "JSON",
    "jsonl": "JSON Lines",
    "har": "HAR",
    "repr": "repr",
    "cassette": "cassette",
}


def _read_as(text: str, fmt: str, har_entry: int | None) -> ReadResult:
    if fmt == "har":
        return read_har(text, har_entry)
    if fmt == "cassette":
        return read_cassette(text, har_entry)
    if fmt == "repr" and foreign.is_langchain(text):
        raise ReaderError(foreign.langchain_message())
    if fmt == "repr":
        return _require(read_repr(text), "openai-python repr", valid=True)
    dump = http.split_dump(text)
    if dump is not None:
        return _read_body(dump, fmt)
    result = _PLAIN[fmt](text, 1)
    assert result is not None
    return _require(result, _NAMES[fmt], valid=fmt != "sse")


def _require(result: ReadResult, name: str, valid: bool = False) -> ReadResult:
    """The result, or ReaderError when the reader found nothing (nothing valid, if `valid`)."""
    if valid and not _found(result):
        raise ReaderError(f"no {name} record found in the input: {_first_error(result)}")
    if not result.records:
        what = 'no line starts with "data:"' if name == "SSE" else "nothing in it"
        raise ReaderError(f"no {name} record found in the input: {what}")
    return result


def _read_body(dump: http.Dump, fmt: str | None) -> ReadResult:
    if not dump.body.strip():
        raise ReaderError(f"the HTTP response ({dump.status_line}) has no body")
    if fmt is None:
        fmt = "sse" if has_data_line(dump.body) else "auto-json"
    body, cleaned = http.clean_body(dump, ":" if fmt == "sse" else "")
    if fmt == "auto-json":
        result = read_any_json(body, dump.first_line)
        if not _found(result):
            raise ReaderError(
                f"the HTTP response body ({dump.status_line}) is neither SSE nor JSON: "
                f"{_first_error(result)}"
            )
    else:
        read_body = _PLAIN[fmt](body, dump.first_line)
        assert read_body is not None
        result = _require(read_body, _NAMES[fmt], valid=fmt != "sse")
    meta = {**result.meta, "container": "http", "status": dump.status}
    meta["status_line"] = dump.status_line
    if dump.content_type:
        meta["content_type"] = dump.content_type
    notes = (*http.notes(dump, cleaned), *result.notes)
    return replace(result, notes=notes, meta=meta)


def _with_replacement_note(result: ReadResult, count: int) -> ReadResult:
    if not count:
        return result
    note = (
        f"the input holds {count} U+FFFD replacement character(s): where it was decoded "
        "from bytes, those stand for bytes that were not valid UTF-8"
    )
    return replace(result, notes=(*result.notes, note))
