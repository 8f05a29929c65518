"""Which format a text is in, and its reading by that format's reader: `read_text`, which
`webapp.core.readers.read` calls (see there for the order of the tests)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from webapp.core.readers import foreign, http
from webapp.core.readers.cassette import looks_like_cassette, read_cassette
from webapp.core.readers.har import entries_of as _har_entries
from webapp.core.readers.har import looks_like_har, might_be_har, read_har, read_har_value
from webapp.core.readers.jsontext import read_any_json, read_json, read_jsonl
from webapp.core.readers.logs import carries_chunks, looks_like_log, read_log
from webapp.core.readers.parse import first_nonblank, parse_json, snippet
from webapp.core.readers.pyrepr import has_repr_line, read_repr
from webapp.core.readers.refusal import http_body, unparsed
from webapp.core.readers.sse import has_data_line, read_sse
from webapp.core.records import ReaderError, ReadResult


def read_text(text: str, fmt: str, har_entry: int | None, limit: int | None = None) -> ReadResult:
    """The reading of a non-empty text without a BOM, in format `fmt` (one of `FORMATS`, or
    "auto"), before another API's events are mapped (`foreign.adapt`); `limit` bounds what a
    cassette holds (`cassette.input_limit`)."""
    try:
        if fmt == "auto":
            result = _detect(text, har_entry, limit)
        else:
            result = _read_as(text, fmt, har_entry, limit)
    except ReaderError as error:
        if foreign.is_langchain(text):
            raise ReaderError(foreign.langchain_message()) from None
        raise error from None
    if har_entry is not None and result.format not in ("har", "cassette"):
        raise ReaderError(
            f"an entry ({har_entry}) was chosen, but the input is not a HAR file or a cassette "
            f"(it reads as {_NAMES.get(result.format, result.format)})"
        )
    return result


def _found(result: ReadResult) -> bool:
    return any(record.kind != "invalid" for record in result.records)


def _first_error(result: ReadResult) -> str:
    for record in result.records:
        if record.kind == "invalid":
            return f"line {record.line}: {record.error}"
    return "nothing in it"


def _detect(text: str, har_entry: int | None, limit: int | None) -> ReadResult:
    if looks_like_har(text):
        return read_har(text, har_entry)
    if might_be_har(text):
        value, error = parse_json(text)
        if error is None and _har_entries(value) is not None:
            return read_har_value(value, har_entry)
    if looks_like_cassette(text):
        return read_cassette(text, har_entry, limit)
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
    if carries_chunks(text):  # as JSON, an error per word, the chunks lost among them
        return read_log(text)
    result = read_any_json(text)
    if _found(result):
        return result
    raise ReaderError(_unrecognised(text, _first_error(result)))


_INDENTED_DATA = re.compile(r"(?m)^[ \t]++data:")


def _unrecognised(text: str, json_error: str) -> str:
    known = unparsed(text)
    if known is not None:
        return known
    start = first_nonblank(text)
    where = f"; the input starts with {snippet(start[1])} on line {start[0]}" if start else ""
    if _INDENTED_DATA.search(text):
        where += '; some lines have spaces before "data:", which upstream does not read as data'
    return (
        "not a stream streamviz can read: tried HAR (not a HAR object), "
        "cassette (no top-level interactions:), "
        'HTTP dump (no status line), SSE (no line starts with "data:"), '
        "openai-python repr (no line starts with ChatCompletionChunk( or ChoiceDelta..., nor a "
        "chunk's dict as Python prints it), "
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


def _read_as(text: str, fmt: str, har_entry: int | None, limit: int | None) -> ReadResult:
    if fmt == "har":
        return read_har(text, har_entry)
    if fmt == "cassette":
        return read_cassette(text, har_entry, limit)
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
            known = unparsed(body, http_body(dump.status_line, neither=True))
            raise ReaderError(
                known
                or f"the HTTP response body ({dump.status_line}) is neither SSE nor JSON: "
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
