"""A finished trace as compact bytes, and back: to keep beside a stored stream, not reassemble it.

Layout (version 2), all integers little-endian:

    b"SVZTRACE"  u32 version  u32 sections
    per section: u8 name length, name (ASCII), u8 type, u64 payload length, payload

A section's type is an `array` typecode (`b`, `h`, `i`, `q`: the column's integers in the
smallest type that holds them), `j` (JSON text in UTF-8, lone surrogates kept) or `z` (the
same, zlib-compressed: the stream's contract, whose intended arguments repeat the text). Every text
value of the trace (a fragment's arguments, an event's delta, a block's piece) is stored once
in the `strings` section, and the columns that held it hold its number instead; other values
(an index, an id of an unexpected type) go to `values`, an integer once (every fragment's
index refers to the one 0), any other value each time. A reference is -1 for None, k >= 0
for `strings[k]`, and -2 - k for `values[k]`. An anomaly judged on a final block (a phantom
call, arguments that are not a JSON object) keeps no message: it is worded again from the
loaded block when read (version 1 kept every message).

A fragment's rule is stored as its row in the rules table, and `meta` names the table's rules in
that order (`rules`), so that a trace stored before a rule was added, removed or moved loads
with each fragment's rule by name (a trace without `rules` was stored with the five rules in
the order they had then). A rule this streamviz does not know is refused.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, cast

from webapp.core.blocks import Block, Fold
from webapp.core.columns import Columns
from webapp.core.contract import contract_from_json
from webapp.core.diagnosis import FINAL_CODES, final_words
from webapp.core.rules import RULE_NAMES
from webapp.core.steps import Anomaly
from webapp.core.trace import Trace

MAGIC = b"SVZTRACE"
VERSION = 4
"""4: the same sections as 2 and 3, kept since a call cut where the finish_reason says the
generation stopped (the token limit, the content filter) is no provider quirk
(`Contract.stopped`); 3: since a paste's or an upload's trace that shows no end is judged
without it (`webapp.core.contract.unended`). A view kept by an older version is assembled
again."""
_HEAD = struct.Struct("<8sII")
_SECTION = struct.Struct("<BQ")
_INT_TYPES = ("b", "h", "i", "q")
_ARRAYS = (
    "step_kind",
    "step_line",
    "step_fragment",
    "step_event",
    "fragment_rule",
    "fragment_block",
    "fragment_piece",
    "fragment_index_miss",
    "fragment_id_miss",
    "event_type",
    "event_index",
)
_REFERENCES = (
    "fragment_index",
    "fragment_id",
    "fragment_name",
    "fragment_arguments",
    "event_delta",
)
SLICE = 1 << 16
"""Values a column is gone through at a time by one C call (a conversion, a lookup, `min`: a
millisecond or two each). Such a call holds the GIL until it returns, and a page served while
the keeper packs a view waits for it at every hand-off between its threads: whole
million-value columns (20-50 ms a call) made the pages asked in the first seconds after a
1M-chunk upload take a second each (bench/README.md)."""


_MIXED = object()
"""A slice that holds more than one value (`_Interner.references`)."""
_PLAIN = frozenset({str, int, type(None)})
"""The types of a column numbered in C (`_Interner.references`)."""


class TraceFileError(ValueError):
    """The bytes are not a trace this version can read."""


class _Interner:
    """Numbers every text once, every integer once (among the values), and every other value
    in order."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}
        self.values: list[Any] = []
        self.integers: dict[int, int] = {}
        """The reference of each integer in `values` (an `int`: not a bool, which equals one)."""

    def reference(self, value: Any) -> int:
        if value is None:
            return -1
        if type(value) is str:
            found = self.strings.get(value)
            if found is None:
                found = self.strings[value] = len(self.strings)
            return found
        if type(value) is int:
            found = self.integers.get(value)
            if found is None:
                self.values.append(value)
                found = self.integers[value] = -1 - len(self.values)
            return found
        self.values.append(value)
        return -1 - len(self.values)

    def references(self, values: list[Any]) -> array[int]:
        strings, integers = self.strings, self.integers
        alone: list[Any] = []  # each slice's one value when it holds only one, else _MIXED
        try:  # texts, integers and None only, the usual column: numbered and looked up in C
            for part in _slices(values):
                numbers = []
                distinct = dict.fromkeys(part)
                alone.append(next(iter(distinct)) if len(distinct) == 1 else _MIXED)
                for value in distinct:
                    if type(value) is str:
                        strings.setdefault(value, len(strings))
                    elif type(value) is int:
                        numbers.append(value)
                    elif value is not None:
                        raise TypeError("not a text nor an integer")
                if numbers and not _PLAIN.issuperset(map(type, part)):  # `fromkeys` hides
                    raise TypeError("a bool or a float equal to an integer")  # True behind 1
                for number in numbers:
                    if number not in integers:
                        self.values.append(number)
                        integers[number] = -1 - len(self.values)
            codes = cast(dict[Any, int], strings)  # None and the integers for the moment only
            codes[None] = -1  # (not a copy: a million texts' dict is tens of megabytes; a text
            codes.update(integers)  # and an integer are never the same key)
            try:
                found = array("q")
                for part, one in zip(_slices(values), alone, strict=True):
                    if one is _MIXED:
                        found.extend(map(codes.__getitem__, part))
                    else:  # a column of None or of one id, say: repeated in C
                        found.extend(array("q", [codes[one]]) * len(part))
                return found
            finally:
                del codes[None]
                for number in integers:
                    del codes[number]
        except TypeError:  # unhashable, neither text nor integer, or a bool beside an integer:
            reference = self.reference  # one value at a time, in order
            return array("q", [reference(value) for value in values])


def dump(trace: Trace) -> bytes:
    """The trace as bytes (see the module docstring)."""
    return b"".join(dump_parts(trace))


def dump_parts(trace: Trace) -> list[bytes]:
    """`dump`'s bytes in parts, to be joined once with others (a large trace's are tens of
    megabytes: not copied twice)."""
    columns = trace.columns
    interner = _Interner()
    out = [b""]  # the head, once the sections are counted; each section is made into bytes

    def add(name: str, payload: Any) -> None:  # as soon as it is found, not held beside the
        out.extend(_section_parts(name, payload))  # others' until the end

    for name in _ARRAYS:
        add(name, _integers(getattr(columns, name)))
    for name in _REFERENCES:
        add(name, interner.references(getattr(columns, name)))
    every = _every_block(trace)
    add("block_pieces", array("q", [len(block.pieces) for block in every]))
    pieces = [piece for block in every for piece in block.pieces]
    add("piece_text", interner.references(pieces))
    del pieces
    piece_steps = array("q")
    for block in every:  # copied, not converted value by value, when assembled (a loaded
        steps = block.piece_steps  # trace's are of the smallest type that held them)
        piece_steps.extend(steps if steps.typecode == "q" else array("q", steps))
    add("piece_steps", piece_steps)
    del piece_steps
    position = {id(block): number for number, block in enumerate(every)}
    add("meta", _meta(trace, every, position))
    strings = list(interner.strings)
    interner.strings.clear()  # numbered: a million texts' dict goes before their JSON is made
    add("strings", strings)
    del strings
    add("values", interner.values)
    if trace.contract is not None:  # its intended arguments repeat the text: compressed
        found = trace.contract
        contract = {**found.to_json(), "model": found.model, "error": found.error}
        add("contract", _Compressed(contract))
    out[0] = _HEAD.pack(MAGIC, VERSION, (len(out) - 1) // 2)
    return out


def _every_block(trace: Trace) -> list[Block]:
    """Tool-call blocks in opening order, then the content blocks that are not among them."""
    seen = {id(block) for block in trace.blocks}
    return [*trace.blocks, *(block for block in trace.content if id(block) not in seen)]


def _meta(trace: Trace, every: list[Block], position: dict[int, int]) -> dict[str, Any]:
    columns = trace.columns
    return {
        "policy": trace.policy,
        "path": trace.path,
        "server_tools": list(trace.server_tools),
        "choice": trace.choice,
        "stop_reason": trace.stop_reason,
        "rules": list(RULE_NAMES),
        "rule_counts": list(trace.rule_counts.items()),
        "tool_blocks": len(trace.blocks),
        "content": [position[id(block)] for block in trace.content],
        "blocks": [_block_meta(block) for block in every],
        # A verdict on a final block is worded again from the loaded block: no text kept.
        "anomalies": [
            [a.code, a.step, a.block, None if a.worded else a.message] for a in trace.anomalies
        ],
        "server_path": columns.server_path,
        "lines": list(columns.lines.items()),
        "notes": list(columns.notes.items()),
        "errors": list(columns.errors.items()),
        "finish_reasons": list(columns.finish_reasons.items()),
        "unassembled": sorted(columns.unassembled),
        "late": sorted(columns.late),
        "oddities": [[row, list(found)] for row, found in columns.oddities.items()],
        "weighed": list(columns.weighed.items()),
        "event_stop": [[row, *stop] for row, stop in columns.event_stop.items()],
    }


def _block_meta(block: Block) -> dict[str, Any]:
    return {
        "kind": block.kind,
        "number": block.number,
        "opened_step": block.opened_step,
        "content_index": block.content_index,
        "content_step": block.content_step,
        "ids": block.ids,
        "names": block.names,
        "aliases": block.aliases,
        "indexes": block.indexes,
        "start_steps": block.start_steps,
        "fold": None if block.fold is None else [block.fold.step, block.fold.as_],
        "custom_input": block.custom_input,
    }


class _Compressed:
    """A JSON section stored zlib-compressed (type `z`)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _section(name: str, payload: Any) -> bytes:
    return b"".join(_section_parts(name, payload))


def _section_parts(name: str, payload: Any) -> tuple[bytes, bytes]:
    """A section's head (name, type, length) and its payload."""
    if isinstance(payload, array):
        kind, data = _packed(payload)
    elif isinstance(payload, _Compressed):
        kind = "z"
        text = json.dumps(payload.value, ensure_ascii=False, separators=(",", ":"))
        data = zlib.compress(text.encode("utf-8", "surrogatepass"))
    else:
        kind = "j"
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        data = text.encode("utf-8", "surrogatepass")
    label = name.encode("ascii")
    return bytes([len(label)]) + label + _SECTION.pack(ord(kind), len(data)), data


def _integers(column: array[int] | bytearray) -> array[int]:
    """An integer column as an array (the byte-sized ones are bytearrays: `Columns`)."""
    return column if isinstance(column, array) else array("B", column)  # unsigned, as a byte


def _slices(column: Any) -> Iterator[Any]:
    """The column's values `SLICE` at a time (copies: a list's or an array's slice)."""
    for start in range(0, len(column), SLICE):
        yield column[start : start + SLICE]


def _bounds(column: array[int]) -> tuple[int, int]:
    """The column's least and greatest values ((0, 0) when empty), a slice at a time."""
    low = high = column[0] if len(column) else 0
    for part in _slices(column):
        low, high = min(low, min(part)), max(high, max(part))
    return low, high


def _within(column: array[int], low: int, high: int) -> bool:
    """Whether every value of the column is from `low` to `high`. A column of bytes (the usual
    reference column: a few texts and values) is checked in one C call, its bytes with the
    allowed ones deleted (`bytes.translate`), not by its least and greatest values."""
    if column.typecode != "b":
        least, greatest = _bounds(column)
        return not len(column) or (low <= least and greatest <= high)
    allowed = bytes(value & 0xFF for value in range(max(low, -128), min(high, 127) + 1))
    return not column.tobytes().translate(None, allowed)


_SIGN = bytes(0 if byte < 0x80 else 0xFF for byte in range(256))
"""Each byte's sign byte: what the bytes above it hold in a two's-complement integer."""


def _converted(part: array[int], kind: str) -> array[int]:
    """`array(kind, part)` (OverflowError when a value is out of `kind`'s range), by the values'
    bytes: a few C calls over the slice (strided copies, a translation, comparisons), where
    `array` converts value by value through an `int` each (0.67 of a 1M-chunk trace's 1.25 s
    `dump`). On a little-endian machine, a value narrowed is its low bytes, which hold it when
    each byte above them is the sign of the top one kept (zero for an unsigned value); a value
    widened gains bytes of its sign."""
    if sys.byteorder != "little":
        return array(kind, part)
    size, width, count = part.itemsize, array(kind).itemsize, len(part)
    raw = part.tobytes()
    if part.typecode.isupper():  # unsigned: every byte above zero, the top one kept under 0x80
        above = bytes(count)
        if width <= size and raw[width - 1 :: size].translate(_SIGN) != above:
            raise OverflowError("unsigned value out of range")
    else:
        above = raw[min(width, size) - 1 :: size].translate(_SIGN)
    for byte in range(width, size):
        if raw[byte::size] != above:
            raise OverflowError("value out of range")
    converted = array(kind)
    if width == size:
        converted.frombytes(raw)
        return converted
    out = bytearray(count * width)
    for byte in range(width):
        out[byte::width] = raw[byte::size] if byte < size else above
    converted.frombytes(out)
    return converted


def _packed(column: array[int]) -> tuple[str, bytes]:
    """The column in the smallest integer type that holds it, little-endian: a slice at a
    time, each in the type of the slices before it or a larger one (a conversion refuses a
    value out of range: no passes to find the least and greatest first)."""
    rank = 0
    parts = []
    for part in _slices(column):
        while part.typecode != _INT_TYPES[rank]:
            try:
                part = _converted(part, _INT_TYPES[rank])
            except OverflowError:
                rank += 1
        parts.append(part)
    kind = _INT_TYPES[rank]
    packed = array(kind)
    for part in parts:  # the slices before the last rise in type: converted again
        packed.extend(part if part.typecode == kind else _converted(part, kind))
    if sys.byteorder == "big":
        packed = array(kind, packed)
        packed.byteswap()
    return kind, packed.tobytes()


def load(data: bytes | memoryview) -> Trace:
    """The trace `dump` wrote (or a view of it, not copied); raises `TraceFileError` on
    anything else."""
    sections = _sections(data)
    try:
        return _trace(sections)
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise TraceFileError(f"not a version-{VERSION} trace: {error!r}") from None


def _sections(data: bytes | memoryview) -> dict[str, Any]:
    view = memoryview(data)
    if len(view) < _HEAD.size:
        raise TraceFileError("too short to be a trace")
    magic, version, count = _HEAD.unpack_from(view)
    if magic != MAGIC:
        raise TraceFileError("not a streamviz trace")
    if version != VERSION:
        raise TraceFileError(f"trace format version {version}; this streamviz reads {VERSION}")
    offset = _HEAD.size
    sections: dict[str, Any] = {}
    try:
        for _ in range(count):
            size = view[offset]
            name = bytes(view[offset + 1 : offset + 1 + size]).decode("ascii")
            offset += 1 + size
            kind, length = _SECTION.unpack_from(view, offset)
            offset += _SECTION.size
            payload = view[offset : offset + length]
            if len(payload) != length:
                raise TraceFileError(f"section {name!r} is cut short")
            offset += length
            sections[name] = _payload(chr(kind), payload)
    except (IndexError, struct.error, UnicodeDecodeError) as error:
        raise TraceFileError(f"a section is damaged: {error}") from None
    if offset != len(view):
        raise TraceFileError("bytes after the last section")
    return sections


def _payload(kind: str, payload: memoryview) -> Any:
    if kind == "j":
        return json.loads(bytes(payload).decode("utf-8", "surrogatepass"))
    if kind == "z":
        try:
            text = zlib.decompress(payload)
        except zlib.error as error:
            raise TraceFileError(f"a compressed section is damaged: {error}") from None
        return json.loads(text.decode("utf-8", "surrogatepass"))
    if kind not in _INT_TYPES:
        raise TraceFileError(f"unknown section type {kind!r}")
    column = array(kind)
    column.frombytes(payload)
    if sys.byteorder == "big":
        column.byteswap()
    return column


def _blocks(metas: list[Any], sections: dict[str, Any], pieces: list[Any]) -> list[Block]:
    """Every block, each with its pieces and the steps that appended them."""
    piece_steps: array[int] = sections["piece_steps"]
    every: list[Block] = []
    start = 0
    for block_meta, count in zip(metas, sections["block_pieces"], strict=True):
        block = _block(block_meta)
        block.pieces = pieces[start : start + count]
        block.piece_steps = piece_steps[start : start + count]
        start += count
        every.append(block)
    return every


def _trace(sections: dict[str, Any]) -> Trace:
    meta = sections["meta"]
    strings: list[str] = sections["strings"]
    values: list[Any] = sections["values"]

    # A reference indexes this table as it is: k >= 0 a string, -1 None, -2 - k values[k].
    table = [*strings, *reversed(values), None]

    def resolve(column: array[int]) -> list[Any]:
        if not _within(column, -len(values) - 1, len(strings) - 1):
            raise ValueError("a reference past the strings or values")
        found: list[Any] = []
        for part in _slices(column):
            raw = part.tobytes()
            if raw == raw[: part.itemsize] * len(part):  # one value (None, say): repeated in C
                found.extend([table[part[0]]] * len(part))
            else:
                found.extend(map(table.__getitem__, part))
        return found

    rows: dict[str, Any] = {name: sections[name] for name in _ARRAYS}
    rows["fragment_rule"] = _rules_by_name(rows["fragment_rule"], meta.get("rules", _FIVE))
    rows.update((name, resolve(sections[name])) for name in _REFERENCES)
    columns = Columns.restored(bool(meta["server_path"]), rows, _by_step(meta))
    every = _blocks(meta["blocks"], sections, resolve(sections["piece_text"]))
    tool_blocks = int(meta["tool_blocks"])
    numbered = {block.number: block for block in every[:tool_blocks]}
    return Trace(
        policy=meta["policy"],
        path=meta["path"],
        server_tools=tuple(meta["server_tools"]),
        choice=int(meta["choice"]),
        columns=columns,
        blocks=tuple(every[:tool_blocks]),
        content=tuple(every[number] for number in meta["content"]),
        anomalies=tuple(
            _anomaly(code, step, block, message, numbered)
            for code, step, block, message in meta["anomalies"]
        ),
        rule_counts=Counter(dict(meta["rule_counts"])),
        stop_reason=meta["stop_reason"],
        contract=None if "contract" not in sections else contract_from_json(sections["contract"]),
    )


def _by_step(meta: dict[str, Any]) -> dict[str, Iterable[Any]]:
    """The columns' sparse rows, as `Columns.restored` takes them, from the file's meta."""
    return {
        "lines": ((int(step), line) for step, line in meta["lines"]),
        "notes": ((int(step), note) for step, note in meta["notes"]),
        "errors": ((int(step), error) for step, error in meta["errors"]),
        "finish_reasons": ((int(step), why) for step, why in meta["finish_reasons"]),
        "unassembled": meta["unassembled"],
        "late": meta["late"],
        "oddities": ((int(row), tuple(found)) for row, found in meta["oddities"]),
        "weighed": ((int(row), text) for row, text in meta["weighed"]),
        "event_stop": ((int(row), (why, text)) for row, why, text in meta["event_stop"]),
    }


_FIVE = ("exact-index", "exact-id", "continuation", "drop", "new")
"""The rules, in order, of a trace stored before `meta` named them."""


def _rules_by_name(stored: array[int], names: list[str] | tuple[str, ...]) -> array[int]:
    """The stored rule column with each code mapped, by the rule's name, to today's table."""
    if tuple(names) == RULE_NAMES:
        return stored
    unknown = [name for name in names if name not in RULE_NAMES]
    if unknown:
        raise ValueError(f"rules this streamviz does not know: {', '.join(map(str, unknown))}")
    now = [RULE_NAMES.index(name) for name in names]
    if len(stored) and not 0 <= min(stored) <= max(stored) < len(now):
        raise ValueError("a fragment's rule is past the stored table")
    return array("b", [now[code] for code in stored])


def _anomaly(
    code: str, step: int, block: int | None, message: str | None, numbered: dict[int | None, Block]
) -> Anomaly:
    if message is not None:
        return Anomaly(code, step, block, message)
    if code not in FINAL_CODES or block not in numbered:
        raise ValueError(f"anomaly {code} at step {step} has no message and no block to word it")
    return Anomaly(code, step, block, final_words, numbered[block])


def _block(meta: dict[str, Any]) -> Block:
    fold = meta["fold"]
    return Block(
        kind=meta["kind"],
        number=meta["number"],
        opened_step=meta["opened_step"],
        content_index=meta["content_index"],
        content_step=meta["content_step"],
        ids=tuple((step, value) for step, value in meta["ids"]),
        names=tuple((step, value) for step, value in meta["names"]),
        aliases=tuple((step, value) for step, value in meta["aliases"]),
        indexes=tuple((step, value) for step, value in meta["indexes"]),
        start_steps=tuple(meta["start_steps"]),
        fold=None if fold is None else Fold(fold[0], cast(Any, fold[1])),
        custom_input=meta["custom_input"],
    )
