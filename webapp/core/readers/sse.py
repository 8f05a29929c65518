"""Raw server-sent events, decoded exactly as the OpenAI Node SDK (which upstream uses) does.

Lines split on CRLF, CR or LF. An empty line dispatches the pending event if it has an event
name or any data. A line starting with `:` is a comment. Otherwise the field name is the text
before the first `:` (the whole line if there is none) and the value what follows, with one
leading space removed; `event` sets the name, `data` appends a data line (joined with `\\n`),
other fields are ignored. At the end of the input a pending event is flushed. Data equal to
`[DONE]` ends the stream; any other data is parsed as JSON.

One paste is not the wire: log lines grepped down to their `data:` lines have no blank line
between them, so they join into one event that is not JSON. When at least two of an event's
data lines are each a complete JSON value (and any other is a last `[DONE]`), they are read one
record per line instead, and a note says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, AnyStr, Generic, cast

from webapp.core.jsoncheck import cut_short
from webapp.core.readers.parse import TRUNCATED, parse_json, split_lines
from webapp.core.records import Payload, Payloads, ReadResult, Record
from webapp.core.words import count

_KNOWN_FIELDS = frozenset({"event", "data", "id", "retry"})


def has_data_line(text: str) -> bool:
    """Whether some line starts with `data:`, the mark of a server-sent event stream."""
    return text.startswith("data:") or "\ndata:" in text or "\rdata:" in text


class _Tally:
    """Lines worth a note, counted rather than listed so a long stream gives short notes."""

    def __init__(self) -> None:
        self.count = 0
        self.first: tuple[int, str] | None = None

    def add(self, line: int, what: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = (line, what)


def _per_line(data: list[str], lines: list[int], event: str | None) -> list[Record] | None:
    """One record per data line, when each is a complete JSON value (a last may be `[DONE]`)."""
    if len(data) < 2 or (len(data) == 2 and data[-1] == "[DONE]"):
        return None
    records: list[Record] = []
    for position, (part, line) in enumerate(zip(data, lines, strict=True)):
        if part == "[DONE]" and position == len(data) - 1:
            records.append(Record(kind="done", line=line, text=part, event=event))
            continue
        value, error = parse_json(part)
        if error is not None:
            return None
        records.append(Record(kind="chunk", line=line, value=value, text=part, event=event))
    return records


def _records(
    data: list[str], lines: list[int], start: int, event: str | None, at_end: bool, split: _Tally
) -> list[Record]:
    """The event's record; or, when its data lines are each a chunk, one record per line."""
    record = _record(data, event, start, at_end)
    if record.kind != "invalid" or len(data) < 2:
        return [record]
    records = _per_line(data, [start, *lines[1:]], event)
    if records is None:
        return [record]
    split.add(start, "")
    return records


def _record(data: list[str], event: str | None, line: int, at_end: bool) -> Record:
    payload = data[0] if len(data) == 1 else "\n".join(data)
    if payload == "[DONE]":
        return Record(kind="done", line=line, text=payload, event=event)
    value, error = parse_json(payload)
    if error is None:
        return Record(kind="chunk", line=line, value=value, text=payload, event=event)
    if at_end and cut_short(payload):
        error += TRUNCATED
    elif payload.strip() == "[DONE]":
        error += '; upstream recognises only data exactly equal to "[DONE]"'
    elif len(data) > 1 and sum(parse_json(part)[1] is None for part in data) >= 1:
        error += (
            f"; this event has {len(data)} data: lines, which SSE joins with a newline: "
            "is a blank line missing between two events, or a line cut short?"
        )
    return Record(kind="invalid", line=line, text=payload, error=error, event=event)


def read_sse(text: str, first_line: int = 1) -> ReadResult:
    """Read server-sent events; `first_line` is the number of the text's first line."""
    plain = _plain(text, first_line)
    if plain is not None:
        notes = _notes(plain[-1:], _Tally(), _Tally(), _Tally())
        return ReadResult(format="sse", records=plain, notes=notes)
    records: list[Record] = []
    empty, unknown, split = _Tally(), _Tally(), _Tally()
    event: str | None = None
    data: list[str] = []
    data_lines: list[int] = []
    start: int | None = None
    for number, line in enumerate(split_lines(text), first_line):
        if not line:
            if data:
                records.extend(_records(data, data_lines, start or number, event, False, split))
            elif event:
                empty.add(start or number, event)
            event, data, data_lines, start = None, [], [], None
            continue
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
            data_lines.append(number)
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value or None
            elif name == "data":
                data.append(value)
                data_lines.append(number)
            elif name not in _KNOWN_FIELDS:
                unknown.add(number, line)
        if start is None:
            start = number
    if data:
        records.extend(_records(data, data_lines, start or first_line, event, True, split))
    elif event:
        empty.add(start or first_line, event)
    notes = _notes(records, empty, unknown, split)
    return ReadResult(format="sse", records=tuple(records), notes=notes)


@dataclass(frozen=True, slots=True)
class _Marks(Generic[AnyStr]):
    """The characters `_cut` looks for, as text or as bytes."""

    cr: AnyStr
    lf: AnyStr
    blank: AnyStr
    colon: AnyStr
    data: AnyStr
    separator: AnyStr
    empty: AnyStr


_TEXT = _Marks("\r", "\n", "\n\n", ":", "data: ", "\n\ndata: ", "")
_BYTES = _Marks(b"\r", b"\n", b"\n\n", b":", b"data: ", b"\n\ndata: ", b"")
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_REPLACEMENT = "\ufffd".encode()
SEGMENT = 256 * 1024
"""The least a segment of a plain stream's `Payloads` holds but the last (bytes, or characters
of a text): a segment is about this long and its block."""
BLOCK = SEGMENT // 4
"""How much of a plain stream a reader takes at a time: blocks are smaller than segments, so
that glibc serves them from its heap, reused from one block to the next, and maps each
segment on its own, given back once it is assembled (`webapp.tuning.mapped_blocks`)."""


@dataclass(frozen=True, slots=True)
class _Cut(Generic[AnyStr]):
    """A plain stream cut into segments of whole payloads (`Payloads.segments`)."""

    segments: list[AnyStr]
    firsts: list[int]
    head: AnyStr
    """What comes before the first payload: comment and blank lines, then `data: `."""
    at_end: bool


def _plain(text: str, first_line: int) -> Payloads | None:
    """A plain stream's payloads, or None when the text is anything else.

    Plain: every event is one `data: ` line, and one blank line follows each but perhaps the
    last (LF line breaks only), after perhaps some comment lines and blank lines at the start
    (a proxy's keep-alives while the model thinks, OpenRouter's `: OPENROUTER PROCESSING`).
    The line-by-line reading above gives exactly these records, one per event, each from
    `_record` with its one data line, so long streams keep their payload text instead of
    parsed chunks. Checked with C-speed counts, not a Python loop.
    """
    cut = _cut(split_blocks(text), _TEXT)
    if cut is None:
        return None
    first = first_line + cut.head.count("\n")
    segments = cast("list[Payload | None]", cut.segments)
    return Payloads(segments, cut.firsts, "\n\ndata: ", first, _one, at_end=cut.at_end)


def plain_blocks(blocks: Iterable[bytes]) -> tuple[ReadResult, int] | None:
    """`read_sse(decode(data))` and how many U+FFFD the text holds, when `data`, the blocks'
    bytes joined, is a plain stream (`_plain`) of valid UTF-8 without a BOM; else None.

    The blocks are taken one at a time: a file read so is never held whole (`streamviz check`
    reads one so; `split_blocks` cuts bytes held whole). The payloads are kept as their bytes
    (orjson parses bytes; a record decodes its own): neither the whole text nor the payloads'
    texts are made, where a long stream with one character beyond Latin-1 takes two or four
    bytes a character as one text."""
    cut = _cut(iter(blocks), _BYTES)
    if cut is None or cut.head.startswith(_BOMS):
        return None
    replacements = 0
    for part in (cut.head, *cut.segments):  # valid UTF-8, as the text would be without U+FFFD
        if not part.isascii():
            try:
                part.decode("utf-8")
            except UnicodeDecodeError:  # the text's reading says where
                return None
            replacements += part.count(_REPLACEMENT)
    first = 1 + cut.head.count(b"\n")
    segments = cast("list[Payload | None]", cut.segments)
    plain = Payloads(segments, cut.firsts, b"\n\ndata: ", first, _one, at_end=cut.at_end)
    notes = _notes(plain[-1:], _Tally(), _Tally(), _Tally())
    return ReadResult(format="sse", records=plain, notes=notes), replacements


def split_blocks(text: AnyStr) -> Iterator[AnyStr]:
    """A text or its bytes, `BLOCK` at a time."""
    return (text[at : at + BLOCK] for at in range(0, len(text), BLOCK))


def _cut(blocks: Iterator[AnyStr], marks: _Marks[AnyStr]) -> _Cut[AnyStr] | None:
    """`_plain`'s test and cut, of a text's blocks or of its UTF-8 bytes' (every mark is
    ASCII, and no byte of a multi-byte UTF-8 character is); None when it is not plain.

    The input is read until its first separator (or its end) to find where the first event
    starts; then blocks are carried until they hold `SEGMENT` or more, and their payloads up
    to the last block's last separator are joined as a segment (a separator across two blocks
    is inside the next segment). A segment is joined from views of bytes: one copy.
    """
    separator = marks.separator
    head = _head(blocks, marks)
    start = _after_comments(head, marks) if head.startswith(marks.colon) else 0
    if start is None or not head.startswith(marks.data, start) or marks.cr in head[:start]:
        return None
    start += len(marks.data)
    segments: list[AnyStr] = []
    firsts = [0]
    carried: list[Any] = []  # the blocks (or their views) of the next segment
    size = 0
    for block in itertools.chain([head], blocks):
        begin = start if block is head else 0
        size += len(block) - begin
        end = block.rfind(separator, begin) if size >= SEGMENT else -1
        if end < 0:
            carried.append(block[begin:] if begin else block)
            continue
        piece: Any = memoryview(block)[begin:end] if isinstance(block, bytes) else block[begin:end]
        carried.append(piece)
        segment = marks.empty.join(carried)
        carried = [block[end + len(separator) :]]
        size = len(carried[0])
        found = _payloads(segment, marks, 0)
        if found is None:
            return None
        segments.append(segment)
        firsts.append(firsts[-1] + found)
    last = marks.empty.join(carried)
    tail = 2 if last.endswith(marks.blank) else 1 if last.endswith(marks.lf) else 0
    found = _payloads(last, marks, tail)
    if found is None:
        return None
    segments.append(last[:-tail] if tail else last)
    firsts.append(firsts[-1] + found)
    return _Cut(segments, firsts, head[:start], tail < 2)


def _head(blocks: Iterator[AnyStr], marks: _Marks[AnyStr]) -> AnyStr:
    """The first blocks, up to the first with a separator in it or across its start."""
    separator = marks.separator
    parts = [next(blocks, marks.empty)]
    end = parts[0]  # the end of what was read, enough to hold a separator across blocks
    while separator not in end:
        block = next(blocks, None)
        if block is None:
            break
        parts.append(block)
        end = end[1 - len(separator) :] + block
    return marks.empty.join(parts)


def _payloads(segment: AnyStr, marks: _Marks[AnyStr], tail: int) -> int | None:
    """How many payloads a segment holds; None if a line break or a CR is inside one.

    Every line break is half of a separator, but the one or two after the last event (`tail`,
    in the last segment): any other is a line inside an event (or a blank line too many).
    """
    if marks.cr in segment:
        return None
    separators = segment.count(marks.separator)
    if segment.count(marks.lf) != 2 * separators + tail:
        return None
    return separators + 1


def _after_comments(text: AnyStr, marks: _Marks[AnyStr]) -> int | None:
    """Where the first line that is neither a comment nor blank starts (None: no such line)."""
    position = 0
    while position < len(text):
        if text.startswith(marks.colon, position):
            position = text.find(marks.lf, position) + 1
            if position == 0:
                return None
        elif text.startswith(marks.lf, position):
            position += 1
        else:
            break
    return position


def _one(payload: str, line: int, at_end: bool) -> Record:
    return _record([payload], None, line, at_end)


def payload_record(payload: str, line: int) -> Record:
    """The record of one event's data, as a stream's reader makes it (`[DONE]`, a chunk, or
    invalid with why)."""
    return _record([payload], None, line, False)


def _notes(
    records: Sequence[Record], empty: _Tally, unknown: _Tally, split: _Tally
) -> tuple[str, ...]:
    notes: list[str] = []
    if split.first is not None:
        notes.append(
            f"{count(split.count, 'event')} joined data: lines that are each a complete chunk "
            f"(first on line {split.first[0]}): read one record per line; a live stream like "
            "that would have failed upstream; a paste is not the wire"
        )
    if empty.first is not None:
        line, name = empty.first
        notes.append(
            f"skipped {count(empty.count, 'event')} with no data (first on line {line}, "
            f'event "{name}"); upstream\'s client would stop there with an error, '
            "since it parses the empty data as JSON"
        )
    if unknown.first is not None:
        line, what = unknown.first
        short = what if len(what) <= 60 else what[:59] + "…"
        notes.append(
            f"ignored {count(unknown.count, 'line')} whose field name is not an SSE field "
            f"(first on line {line}: {short!r}); upstream ignores them too"
        )
    if records and records[-1].kind == "invalid" and TRUNCATED in (records[-1].error or ""):
        notes.append(f"the input seems cut off inside the last record (line {records[-1].line})")
    return tuple(notes)
