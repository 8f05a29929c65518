"""JSON text: one array of chunks, JSON Lines, or values printed one after another (`jq`).

A top-level array stands for its elements, one record each, unless it is a bare
`delta.tool_calls` array (one record). Every value goes through `shape.as_chunk`, so bare
deltas, choices and fragments are wrapped into chunks. A value that does not parse becomes an
`invalid` record and reading resumes where it ends (`recovery`: where its brackets close, or
at the next line that opens a value no deeper than its own), so a broken record in `jq`
output, a pretty-printed array or JSON Lines costs only itself, in time linear in the input.
Comments and trailing commas are blanked out first (`comments`); records keep the text as it
was pasted.
"""

from __future__ import annotations

import re
from typing import Any

from webapp.core.jsoncheck import cut_short
from webapp.core.readers.comments import Cleaned, clean
from webapp.core.readers.parse import (
    LINE_BREAK,
    TRUNCATED,
    LineCounter,
    parse_json,
    split_lines,
    strip_js,
)
from webapp.core.readers.recovery import Resumer, Waste, WindowError, scan_window
from webapp.core.readers.shape import as_chunk, is_fragment_list, members
from webapp.core.records import ReadResult, Record

_WS = re.compile(r"[ \t\r\n]*")
_DONE = "[DONE]"


def _chunk(value: Any, line: int, text: str) -> Record:
    chunk, wrapped = as_chunk(value)
    return Record(kind="chunk", line=line, value=chunk, text=text, wrapped=wrapped)


_Item = tuple[Any, int, str]
"""A value that parsed, with its start line and text."""


class _Scanner:
    """Walks concatenated JSON values, keeping each record's start line."""

    def __init__(self, cleaned: Cleaned, first_line: int) -> None:
        self.cleaned = cleaned
        self.text = text = cleaned.text
        self.source = cleaned.source
        self.first_line = first_line
        self.lines = LineCounter(text, first_line)
        self.resumer = Resumer(text)
        self.waste = Waste(len(text))
        self.last_size = 0
        self.records: list[Record] = []
        self.notes: list[str] = []
        self.loose_line: int | None = None

    def run(self) -> None:
        text, end = self.text, len(self.text)
        pos = _skip(text, 0)
        while pos < end:
            if text.startswith(_DONE, pos):
                self.records.append(Record(kind="done", line=self.lines.line_at(pos), text=_DONE))
                pos += len(_DONE)
            elif text[pos] == "[":
                pos = self._array(pos)
            else:
                item, pos = self._take(pos)
                self.records.append(item if isinstance(item, Record) else _chunk(*item))
            pos = _skip(text, pos)

    def _take(self, pos: int) -> tuple[_Item | Record, int]:
        limit = None
        if self.waste.spent_at is not None and self.text[pos] in "[{":
            limit = self.resumer.resume(pos)  # past the budget: no further than this
        try:
            value, end = scan_window(self.text, pos, self.last_size, limit)
        except WindowError as error:
            return self._broken(pos, error.reach, limit)
        self.last_size = end - pos
        return (value, self.lines.line_at(pos), self.source[pos:end]), end

    def _array(self, start: int) -> int:
        text, end = self.text, len(self.text)
        line = self.lines.line_at(start)
        items: list[_Item | Record] = []
        expect_value = True
        pos = _skip(text, start + 1)
        while True:
            if pos >= end:
                if not (items and isinstance(items[-1], Record)):
                    self.notes.append(f"the JSON array opened on line {line} is not closed")
                break
            char = text[pos]
            if char == "]":
                if expect_value and items:
                    self._loose(pos)
                pos += 1
                break
            if char == ",":
                if expect_value:
                    self._loose(pos)
                expect_value = True
                pos = _skip(text, pos + 1)
                continue
            if not expect_value:
                self._loose(pos)
            item, pos = self._take(pos)
            items.append(item)
            pos = _skip(text, pos)
            expect_value = False
        self._add_array(items, line, self.source[start:pos])
        return pos

    def _add_array(self, items: list[_Item | Record], line: int, raw: str) -> None:
        values = [item[0] for item in items if not isinstance(item, Record)]
        if len(values) == len(items) and is_fragment_list(values):
            self.records.append(_chunk(values, line, raw))
            return
        for item in items:
            self.records.append(item if isinstance(item, Record) else _chunk(*item))

    def _loose(self, pos: int) -> None:
        if self.loose_line is None:
            self.loose_line = self.lines.line_at(pos)

    def _broken(self, pos: int, reach: int, resume: int | None) -> tuple[_Item | Record, int]:
        text = self.text
        if resume is None:
            resume = self.resumer.resume(pos)
            self.waste.add(pos, resume, reach)
        raw = text[pos:resume].rstrip(" \t\r\n")
        if raw.endswith(","):
            raw = raw[:-1].rstrip(" \t\r\n")
        line = self.lines.line_at(pos)
        pasted = self.source[pos : pos + len(raw)]
        value, error = parse_json(raw)
        if error is None:  # orjson copes with nesting the stdlib scanner refused
            return (value, line, pasted), resume
        if resume == len(text) and cut_short(raw):
            error += TRUNCATED
            self.notes.append(f"the input seems cut off inside the record on line {line}")
        if self.cleaned.marks:
            error += self.cleaned.remark(line, self.lines.line_at(pos + len(raw)))
        return Record(kind="invalid", line=line, text=pasted, error=error), resume


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def read_json(text: str, first_line: int = 1) -> ReadResult:
    """Read a JSON array, JSON Lines or concatenated JSON values, recovering from broken ones."""
    return _read_json(clean(text, first_line), first_line)


def _read_json(cleaned: Cleaned, first_line: int) -> ReadResult:
    scanner = _Scanner(cleaned, first_line)
    scanner.run()
    notes = _cleaning_note(cleaned)
    notes.extend(scanner.notes)
    notes.extend(_waste_note(scanner))
    if scanner.loose_line is not None:
        notes.append(
            f"the separators between array elements are not strict JSON "
            f"(first on line {scanner.loose_line}); read the elements one by one"
        )
    return ReadResult(format="json", records=tuple(scanner.records), notes=tuple(notes))


def _waste_note(scanner: _Scanner) -> list[str]:
    waste = scanner.waste
    if waste.spent_at is None or waste.first is None:
        return []
    lines = LineCounter(scanner.text, scanner.first_line)
    first, cut = lines.line_at(waste.first), lines.line_at(waste.spent_at)
    return [
        f"broken values from line {first} on stay open far past where they were cut, so each "
        "value after them would be parsed again to the same far error: from line "
        f"{cut} on, a value that opens with a bracket is read only until its brackets close or "
        "a line opens another value no deeper than its own (a valid value that goes on past "
        "such a line is reported broken there)"
    ]


def _cleaning_note(cleaned: Cleaned) -> list[str]:
    note = cleaned.note()
    return [note] if note else []


def read_jsonl(text: str, first_line: int = 1, strict: bool = False) -> ReadResult | None:
    """Read JSON Lines, one value per line; with `strict`, None as soon as a line does not parse."""
    return _read_jsonl(clean(text, first_line), first_line, strict)


def _read_jsonl(cleaned: Cleaned, first_line: int, strict: bool) -> ReadResult | None:
    records: list[Record] = []
    lines = split_lines(cleaned.text)
    pasted = split_lines(cleaned.source) if cleaned.marks else lines
    last = _last_nonblank(lines, first_line)
    for number, (line, source) in enumerate(zip(lines, pasted, strict=True), first_line):
        payload = strip_js(line)
        if not payload:
            continue
        text = strip_js(source) if cleaned.marks else payload
        if payload == _DONE:
            records.append(Record(kind="done", line=number, text=_DONE))
            continue
        value, error = parse_json(payload)
        if error is not None:
            if strict:
                return None
            if number == last and cut_short(payload):
                error += TRUNCATED
            if cleaned.marks:
                error += cleaned.remark(number, number)
            records.append(Record(kind="invalid", line=number, text=text, error=error))
            continue
        parts = members(value)
        if parts is None:
            records.append(_chunk(value, number, text))
        else:
            records.extend(_chunk(part, number, text) for part in parts)
    notes = _cleaning_note(cleaned)
    if records and records[-1].kind == "invalid" and TRUNCATED in (records[-1].error or ""):
        notes.append(f"the input seems cut off inside the last record (line {records[-1].line})")
    return ReadResult(format="jsonl", records=tuple(records), notes=tuple(notes))


def _last_nonblank(lines: list[str], first_line: int) -> int:
    for index in range(len(lines) - 1, -1, -1):
        if strip_js(lines[index]):
            return first_line + index
    return first_line


def read_any_json(text: str, first_line: int = 1) -> ReadResult:
    """JSON Lines when there are several lines and each parses alone, else `read_json`."""
    cleaned = clean(text, first_line)
    if _first_line_parses_and_more_follow(cleaned.text):
        result = _read_jsonl(cleaned, first_line, strict=True)
        if result is not None:
            return result
    return _read_json(cleaned, first_line)


_SOMETHING = re.compile(r"[^ \t\r\n]")


def _first_line_parses_and_more_follow(text: str) -> bool:
    first = _SOMETHING.search(text)
    if first is None:
        return False
    brk = LINE_BREAK.search(text, first.end())
    if brk is None or _SOMETHING.search(text, brk.end()) is None:
        return False
    line = text[first.start() : brk.start()]
    return strip_js(line) == _DONE or parse_json(line)[1] is None
