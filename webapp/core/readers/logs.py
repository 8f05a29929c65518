"""Logs: lines that start with a timestamp, or carry a chunk after some words, some of which
carry a stream's chunks.

A pasted application log is no stream, but it often holds one: a client's debug log writes
each chunk after its timestamp, as `data: {...}` or as the bare JSON object. Read as JSON, a
log's "chunks" were the numbers of its first timestamp (2026, -01, -01). A text whose lines
mostly start with a timestamp is read here instead: each line's `data:` payload (the rest of
the line), else its JSON object that looks like a chunk (it has "choices" or "delta"), one
record per line with the line's own number, and a note says so. A log that carries none
is refused with what to paste instead.

So is a text whose lines mostly carry a chunk after some words and no timestamp
(`carries_chunks`): `console.log("chunk", JSON.stringify(chunk))`, Python's logging without
a time (`DEBUG:app:chunk: {...}`), rows copied from a table (`message<TAB>{...}<TAB>12:00:01`).
As JSON they read as an error per word, and the chunks were lost in them; they read here
instead, words before and after the chunk skipped.
"""

from __future__ import annotations

import re

from webapp.core.readers.parse import JsonError, parse_json, scan_json, snippet, split_lines
from webapp.core.readers.sse import payload_record
from webapp.core.records import ReaderError, ReadResult, Record
from webapp.core.words import count, number

LINES_LOOKED_AT = 50
"""Whether a text is a log is decided from its first this many non-blank lines."""
STAMP = re.compile(
    r"\s*[\[(]?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"  # 2026-01-01 12:00, ISO 8601
    r"|\d{4}/\d{2}/\d{2} \d{2}:\d{2}"  # 2026/01/01 12:00 (Go's log)
    r"|\d{2}:\d{2}:\d{2}[.,]\d"  # 12:00:00.123
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})"  # Jan  1 12:00:00 (syslog)
)
"""A line that starts with a timestamp (a log's line; `refusal` names one so too)."""
_DATA = re.compile(r"\bdata: ?")
_CHUNK_KEYS = ("choices", "delta")
_NOT_AFTER_WORDS = ("{", "[", "data:")

WHAT_TO_PASTE = (
    "paste the stream itself: the response body's data: lines (in Chrome or Firefox, the "
    "request in the Network panel, its EventStream or Response tab), a HAR file of the page, "
    "or a log whose lines carry the chunks as data: {...} or as JSON objects"
)


def _first_lines(text: str) -> list[str]:
    """The text's first `LINES_LOOKED_AT` non-blank lines (from its first 200,000 characters)."""
    lines = [line for line in text[:200_000].splitlines()[: LINES_LOOKED_AT * 4] if line.strip()]
    return lines[:LINES_LOOKED_AT]


def looks_like_log(text: str) -> bool:
    """Whether most of the text's first lines (at least two) start with a timestamp."""
    lines = _first_lines(text)
    stamped = sum(1 for line in lines if STAMP.match(line))
    return stamped >= 2 and 2 * stamped >= len(lines)


def carries_chunks(text: str) -> bool:
    """Whether most of the text's first lines (at least two) carry a chunk after some words:
    a `data:` payload or a JSON object with "choices" or "delta" that the line does not start
    with (a line that starts with its JSON is JSON Lines', or a pretty-printed array's; one
    that starts with an indented `data:` is refused with its own hint, `detect._unrecognised`)."""
    lines = _first_lines(text)
    carrying = 0
    for at, line in enumerate(lines, 1):
        if line.lstrip().startswith(_NOT_AFTER_WORDS):
            continue
        record = _chunk_of(line, at)
        carrying += record is not None and record.kind in ("chunk", "done")
    return carrying >= 2 and 2 * carrying >= len(lines)


def _chunk_of(line: str, number: int) -> Record | None:
    """The line's chunk: its `data:` payload (even one that is not JSON), else a JSON object
    with "choices" or "delta" from its first `{` on; None when it carries neither."""
    stamp = STAMP.match(line)
    rest = line[stamp.end() :] if stamp else line
    data = _DATA.search(rest)
    if data is not None:
        payload = rest[data.end() :].strip()
        return payload_record(payload, number) if payload else None
    brace = rest.find("{")
    if brace < 0:
        return None
    end = len(rest.rstrip())
    value, error = parse_json(rest[brace:end])
    if error is not None:  # the object, and not what follows it (a copied table's next column)
        try:
            value, end = scan_json(rest, brace)
        except JsonError:
            return None
    if not isinstance(value, dict):
        return None
    if not any(key in value or key in _first_choice(value) for key in _CHUNK_KEYS):
        return None
    return payload_record(rest[brace:end], number)


def _first_choice(value: dict[str, object]) -> dict[str, object]:
    choices = value.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return first if isinstance(first, dict) else {}


def read_log(text: str) -> ReadResult:
    """The chunks a log's lines carry, one record per line (ReaderError when there are none:
    it says this is a log and what to paste)."""
    records: list[Record] = []
    lines = 0
    for at, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        lines += 1
        record = _chunk_of(line, at)
        if record is not None:
            records.append(record)
    if not records:  # only a log of stamped lines can carry none (`carries_chunks` saw two)
        first = next((line for line in split_lines(text) if line.strip()), "")
        raise ReaderError(
            f"this looks like a log, not a stream: its lines start with a timestamp "
            f"({snippet(first)}) and none carries a chunk; {WHAT_TO_PASTE}"
        )
    first_line = records[0].line
    note = (
        f"this looks like a log: {number(len(records))} of its {count(lines, 'line')} carry "
        "chunks (data: payloads, or JSON objects with choices; the first on line "
        f"{first_line}), read one record per line; the other lines were skipped"
    )
    return ReadResult(
        format="sse", records=tuple(records), notes=(note,), meta={"container": "log"}
    )
