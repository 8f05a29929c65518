"""The trace as columns: one row per step, per fragment and per event, in flat arrays.

The assembler appends rows while it runs; nothing per step is an object. A step's fragments
and events are the rows from its first one to the next step's first one. A fragment keeps the
raw index, id, name and arguments it was read with (references to the parsed chunk's values),
its rule as a small integer, its block, which of the block's pieces it appended, and what its
index and id missed; its reason is put into words on demand by its rule's row in the table
(`webapp.core.rules.reason`). An event keeps its type as a small integer, its `contentIndex`
and its delta; the `*_end` content is the block's final text, read from the block when asked.
Rare things (notes, errors, oddities, late fragments, ambiguous continuations) live in dicts
keyed by row. The integer rows are appended to lists first (`Pending`) and packed into their
arrays before anything reads them.

`Step`, `Fragment` and `Event` values are built from these rows when a view asks for them.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, final, overload

from webapp.core.blocks import Block
from webapp.core.jsvalue import is_number, truthy
from webapp.core.rules import APPENDS, RULE_EFFECTS, RULE_NAMES, Verdict, reason
from webapp.core.steps import Event, Fired, Fragment, Glance, Landing, Step, StepKind

STEP_KINDS: tuple[StepKind, ...] = ("chunk", "done", "invalid", "end")
CHUNK, DONE, INVALID, END = range(4)
EVENT_TYPES = (
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
)
EVENT_CODES = {name: code for code, name in enumerate(EVENT_TYPES)}
START = EVENT_CODES["start"]
TOOLCALL_START = EVENT_CODES["toolcall_start"]
TOOLCALL_DELTA = EVENT_CODES["toolcall_delta"]
END_EVENTS = frozenset(code for code, name in enumerate(EVENT_TYPES) if name.endswith("_end"))
STOP_EVENTS = frozenset((EVENT_CODES["done"], EVENT_CODES["error"]))
PROSE_DELTAS = frozenset((EVENT_CODES["text_delta"], EVENT_CODES["thinking_delta"]))
"""The events of a chunk that carries a text's or a thought's piece, and no tool call."""
NOT_WAITING = "no other block was waiting for arguments"
"""What a continuation's reason ends with when no other block could have taken it."""
NONE = -1
"""In an integer column: no value (no line, no block, no piece, no contentIndex)."""


COLUMN_SLOTS = (
    "errors",
    "event_delta",
    "event_index",
    "event_stop",
    "event_type",
    "finish_reasons",
    "fragment_arguments",
    "fragment_block",
    "fragment_id",
    "fragment_id_miss",
    "fragment_index",
    "fragment_index_miss",
    "fragment_name",
    "fragment_piece",
    "fragment_rule",
    "late",
    "lines",
    "notes",
    "oddities",
    "pending",
    "server_path",
    "step_event",
    "step_fragment",
    "step_kind",
    "step_line",
    "unassembled",
    "weighed",
)


PACK = 4096
"""The most steps whose integer rows wait in `Pending` when records are fed one at a time."""


@final
class Pending:
    """The integer rows appended since the columns were last packed: a list per column.

    Compiled, appending to a list is one call into C, where an array's `append` is a method
    looked up by name that parses its argument (`PyArg_Parse`): several times the work, at
    every step, fragment and event. `Columns.pack` moves the lists' rows into the arrays at C
    speed; the assembler packs after each segment of a plain stream and every `PACK` steps
    otherwise, so the lists never hold many (a boxed integer takes four times an array's
    eight bytes), and before any row is read (`Assembler.feed`'s step, the finished trace)."""

    def __init__(self) -> None:
        self.line: list[int] = []
        self.fragment: list[int] = []
        self.event: list[int] = []
        self.block: list[int] = []
        self.piece: list[int] = []
        self.index_miss: list[int] = []
        self.id_miss: list[int] = []
        self.event_index: list[int] = []


def _pack(column: array[int], rows: list[int]) -> None:
    if rows:
        column.frombytes(struct.pack(f"{len(rows)}q", *rows))  # native, as array("q")
        rows.clear()


class Columns:
    """Every step, fragment and event of one assembly, as rows (see the module docstring).

    The integer columns are arrays of 64-bit integers, written through `pending`, except the
    byte-sized ones (step kinds, rules, event types): bytearrays, appended to directly (an
    argument checked for a byte, not parsed). A loaded trace's columns are its file's packed
    arrays, of any integer type."""

    __slots__ = COLUMN_SLOTS

    def __init__(self, server_path: bool) -> None:
        self.server_path = server_path
        self.step_kind = bytearray()
        self.step_line = array("q")
        """The record's line; -1 for none (odd values are in `lines`)."""
        self.step_fragment = array("q")
        """The step's first fragment row."""
        self.step_event = array("q")
        """The step's first event row."""
        self.lines: dict[int, Any] = {}
        self.notes: dict[int, str] = {}
        self.errors: dict[int, str] = {}
        self.finish_reasons: dict[int, str] = {}
        self.unassembled: set[int] = set()
        self.fragment_index: list[Any] = []
        self.fragment_id: list[Any] = []
        self.fragment_name: list[Any] = []
        self.fragment_arguments: list[Any] = []
        self.fragment_rule = bytearray()
        """The rule's position in `webapp.core.rules.RULE_NAMES`."""
        self.fragment_block = array("q")
        """The block it landed on; -1 when dropped."""
        self.fragment_piece = array("q")
        """Which of its block's pieces it appended; -1 when it appended nothing."""
        self.fragment_index_miss = array("q")
        self.fragment_id_miss = array("q")
        """What the index and id missed (`webapp.core.rules.NO_KEY`, `NO_HOLDER` or a block)."""
        self.late: set[int] = set()
        self.oddities: dict[int, tuple[str, ...]] = {}
        self.weighed: dict[int, str] = {}
        """Ambiguous continuations: the blocks that were also waiting, in words."""
        self.event_type = bytearray()
        self.event_index = array("q")
        """The event's `contentIndex`; -1 for none."""
        self.event_delta: list[str | None] = []
        self.event_stop: dict[int, tuple[str, str | None]] = {}
        """`done` and `error` events: their reason and message."""
        self.pending = Pending()
        """Integer rows not yet in the arrays above (`pack`)."""

    @classmethod
    def restored(
        cls, server_path: bool, rows: dict[str, Any], rare: dict[str, Iterable[Any]]
    ) -> Columns:
        """Columns written before and kept (`webapp.storage.tracefile`): `rows` holds every row
        column by name (the integer ones in any array type: a loaded trace is final), `rare`
        the entries of the rare things' dicts and sets by name. A missing or unknown name is a
        `KeyError`, an integer column that is not an array a `TypeError`."""
        columns = cls(server_path)
        if set(rows) != _ROW_COLUMNS or not set(rare) <= _RARE:
            raise KeyError(f"not the columns' names: {sorted(set(rows) ^ _ROW_COLUMNS)}")
        for name, column in rows.items():
            if name in _INTEGERS and not isinstance(column, array):
                raise TypeError(f"column {name!r} is not integers")
            if name in _BYTES:
                column = bytearray(column.tolist())
            elif name not in _INTEGERS:
                column = list(column)
            setattr(columns, name, column)
        for name, entries in rare.items():
            getattr(columns, name).update(entries)
        return columns

    # Recording.

    def begin(self, kind: int, line: Any) -> int:
        """Open a step's row; returns the step's number."""
        pending = self.pending
        if len(pending.line) >= PACK:
            self.pack()
        step = len(self.step_kind)
        self.step_kind.append(kind)
        if type(line) is int and 0 <= line < 1 << 62:
            pending.line.append(line)
        else:
            pending.line.append(NONE)
            if line is not None:
                self.lines[step] = line
        pending.fragment.append(len(self.fragment_rule))
        pending.event.append(len(self.event_type))
        return step

    def event(self, code: int, content_index: int | None, delta: str | None = None) -> None:
        """Append an event row."""
        self.event_type.append(code)
        self.pending.event_index.append(NONE if content_index is None else content_index)
        self.event_delta.append(delta)

    def pack(self) -> None:
        """Move the pending integer rows into their arrays: the columns are read only so."""
        pending = self.pending
        _pack(self.step_line, pending.line)
        _pack(self.step_fragment, pending.fragment)
        _pack(self.step_event, pending.event)
        _pack(self.fragment_block, pending.block)
        _pack(self.fragment_piece, pending.piece)
        _pack(self.fragment_index_miss, pending.index_miss)
        _pack(self.fragment_id_miss, pending.id_miss)
        _pack(self.event_index, pending.event_index)

    def stop_event(self, code: int, stop_reason: str, message: str | None) -> None:
        """Append a `done` or `error` event."""
        self.event_stop[len(self.event_type)] = (stop_reason, message)
        self.event(code, None)

    # Reading.

    def __len__(self) -> int:
        return len(self.step_kind)

    def line(self, step: int) -> Any:
        """The input line of a step (None for the end step)."""
        line = self.step_line[step]
        return self.lines.get(step) if line == NONE else line

    def steps_by_rule(self) -> dict[str, list[int]]:
        """For each rule, the steps with a fragment it resolved, in order."""
        by_code: list[list[int]] = [[] for _ in RULE_NAMES]
        rules, firsts = self.fragment_rule, self.step_fragment
        total, rows_end = len(self.step_kind), len(rules)
        for step in range(total):
            start: int = firsts[step]
            stop: int = firsts[step + 1] if step + 1 < total else rows_end
            if stop - start == 1:  # most steps of a long stream: one fragment
                by_code[rules[start]].append(step)
            elif stop > start:
                for code in set(rules[start:stop]):
                    by_code[code].append(step)
        return {name: by_code[code] for code, name in enumerate(RULE_NAMES)}

    def quiet_runs(self, minimum: int, breaks: Iterable[int]) -> list[tuple[int, int, int, int]]:
        """The runs of at least `minimum` consecutive quiet steps alike, as (first step, last
        step, what, block or `NONE`), in one pass over the rows. A quiet step is an assembled
        chunk with no note, error or finish reason, not in `breaks`, that either put fragments
        by one rule onto one block, none late or odd, firing only `toolcall_delta` (`what`: the
        rule's code), or carried no fragment and fired one `text_delta` or `thinking_delta`
        (`what`: `len(RULE_NAMES)` plus the event's code; a thought's hundreds of chunks)."""
        kinds, firsts, event_firsts = self.step_kind, self.step_fragment, self.step_event
        rules, blocks, types = self.fragment_rule, self.fragment_block, self.event_type
        odd = self.late | {row for row, found in self.oddities.items() if found}
        loud = set(self.unassembled) | set(breaks)
        for marked in (self.errors, self.notes, self.finish_reasons):
            loud.update(step for step, text in marked.items() if text)
        total, rows_end, events_end = len(kinds), len(rules), len(types)
        width: int = len(RULE_NAMES)
        chunk: int = CHUNK  # locals: a module's global is looked up by name at each use
        delta: int = TOOLCALL_DELTA
        prose = PROSE_DELTAS
        found: list[tuple[int, int, int, int]] = []
        first, current = 0, -1  # the run's first step, its code ((rule, block); prose < -1)
        stop: int = firsts[0] if total else rows_end  # each step's first row: the last's end
        last_event: int = event_firsts[0] if total else events_end
        for number in range(total + 1):
            code = -1
            if number < total:
                start, event = stop, last_event
                stop = firsts[number + 1] if number + 1 < total else rows_end
                last_event = event_firsts[number + 1] if number + 1 < total else events_end
                if kinds[number] == chunk and number not in loud:
                    if stop - start == 1 and last_event - event == 1:  # most steps of a long
                        quiet = types[event] == delta and start not in odd  # stream
                    elif stop == start:  # no fragment: a text's or a thought's delta?
                        quiet = False
                        if last_event - event == 1 and types[event] in prose:
                            code = -2 - types[event]  # below -1: a tool call's codes are not
                    else:
                        quiet = _only_deltas(types, event, last_event)
                        quiet = quiet and _one_verdict(rules, blocks, start, stop, odd)
                    if quiet:
                        code = rules[start] + width * (blocks[start] + 1)
            if code == -1 or code != current:
                if current != -1 and number - first >= minimum:
                    if current < -1:  # a text's or a thought's deltas: no block
                        found.append((first, number - 1, width - 2 - current, NONE))
                    else:
                        found.append((first, number - 1, current % width, current // width - 1))
                first, current = number, code
        return found

    def fragment_rows(self, step: int) -> range:
        """The rows of a step's fragments."""
        last = len(self.fragment_rule) if step + 1 >= len(self.step_kind) else None
        end = self.step_fragment[step + 1] if last is None else last
        return range(self.step_fragment[step], end)

    def event_rows(self, step: int) -> range:
        """The rows of a step's events."""
        last = len(self.event_type) if step + 1 >= len(self.step_kind) else None
        end = self.step_event[step + 1] if last is None else last
        return range(self.step_event[step], end)

    def step(
        self,
        number: int,
        blocks: Sequence[Block],
        content: Sequence[Block],
        reasons: dict[tuple[Any, ...], str] | None = None,
    ) -> Step:
        """The step `number`, built from its rows (`reasons`: see `reason`)."""
        rows = self.fragment_rows(number)
        first = rows.start
        return Step(
            number,
            self.line(number),
            STEP_KINDS[self.step_kind[number]],
            tuple(self.fragment(row, row - first, blocks, reasons) for row in rows),
            tuple(self.event_at(row, content) for row in self.event_rows(number)),
            self.errors.get(number),
            self.notes.get(number),
            number not in self.unassembled,
            self.finish_reasons.get(number),
        )

    def glance(self, number: int, blocks: Sequence[Block]) -> Glance:
        """The step `number` as a timeline row shows it, built from its rows (see `Glance`)."""
        landings: list[Landing] = []
        for row in self.fragment_rows(number):
            block = self.fragment_block[row]
            rule = RULE_NAMES[self.fragment_rule[row]]
            appended = self.appended(row, blocks)
            landings.append((rule, None if block == NONE else block, appended, row in self.late))
        fired: list[Fired] = []
        for row in self.event_rows(number):
            code = self.event_type[row]
            index = self.event_index[row]
            why = self.event_stop[row][0] if code in STOP_EVENTS else None
            fired.append((EVENT_TYPES[code], None if index == NONE else index, why))
        return Glance(
            number,
            self.line(number),
            STEP_KINDS[self.step_kind[number]],
            tuple(landings),
            tuple(fired),
            self.errors.get(number),
            number not in self.unassembled,
            self.finish_reasons.get(number),
        )

    def fragment(
        self,
        row: int,
        position: int,
        blocks: Sequence[Block],
        reasons: dict[tuple[Any, ...], str] | None = None,
    ) -> Fragment:
        """The fragment in `row`, at `position` in its step's `delta.tool_calls`."""
        number: int | None = self.fragment_block[row]
        appended = self.appended(row, blocks)
        if number == NONE:
            number = None
        return Fragment(
            position,
            self.fragment_index[row],
            self.fragment_id[row],
            self.fragment_name[row],
            self.fragment_arguments[row],
            RULE_NAMES[self.fragment_rule[row]],
            number,
            self.reason(row, reasons),
            appended,
            row in self.late,
            self.oddities.get(row, ()),
        )

    def appended(self, row: int, blocks: Sequence[Block]) -> str:
        """The text the fragment in `row` appended to its block ("" when none)."""
        piece = self.fragment_piece[row]
        return "" if piece < 0 else blocks[self.fragment_block[row]].pieces[piece]

    def reason(self, row: int, cache: dict[tuple[Any, ...], str] | None = None) -> str:
        """Why the fragment in `row` went where it did, in the rules table's words.

        `cache` keeps the words of verdicts that repeat (the same rule, keys, block and
        misses), for writing a whole trace.
        """
        code = self.fragment_rule[row]
        index = self.fragment_index[row]
        call_id = self.fragment_id[row]
        name = self.fragment_name[row]
        number: int | None = self.fragment_block[row]
        misses = (self.fragment_index_miss[row], self.fragment_id_miss[row])
        weighed = self.weighed.get(row)
        key: tuple[Any, ...] | None = None
        if (
            cache is not None
            and weighed is None
            and (index is None or type(index) is int)
            and (call_id is None or type(call_id) is str)
            and (name is None or type(name) is str)
        ):
            key = (code, index, call_id, name, number, *misses)
            found = cache.get(key)
            if found is not None:
                return found
        if number == NONE:
            number = None
        verdict = Verdict(
            index if is_number(index) else None,
            call_id if truthy(call_id) else None,
            name if truthy(name) else None,
            number,
            *misses,
            self.server_path,
        )
        why = reason(code, verdict)
        if RULE_EFFECTS[code] == APPENDS:  # which other blocks were waiting
            why = f"{why}; {NOT_WAITING if weighed is None else weighed}"
        if key is not None:
            assert cache is not None
            cache[key] = why
        return why

    def event_at(self, row: int, content: Sequence[Block]) -> Event:
        """The event in `row`."""
        code = self.event_type[row]
        index: int | None = self.event_index[row]
        if index == NONE:
            index = None
        if code in STOP_EVENTS:
            stop_reason, message = self.event_stop[row]
            return Event(EVENT_TYPES[code], index, reason=stop_reason, message=message)
        if code in END_EVENTS:
            assert index is not None
            return Event(EVENT_TYPES[code], index, content=content[index].text)
        return Event(EVENT_TYPES[code], index, self.event_delta[row])


_RARE = frozenset(
    ("lines", "notes", "errors", "finish_reasons", "unassembled", "late", "oddities", "weighed",
     "event_stop")
)  # fmt: skip
_ROW_COLUMNS = frozenset(COLUMN_SLOTS) - _RARE - {"server_path", "pending"}
_BYTES = ("step_kind", "fragment_rule", "event_type")
_INTEGERS = frozenset(
    (*_BYTES, "step_line", "step_fragment", "step_event", "fragment_block", "fragment_piece",
     "fragment_index_miss", "fragment_id_miss", "event_index")
)  # fmt: skip


class Steps(Sequence[Step]):
    """A trace's steps as a read-only sequence: each `Step` is built when it is asked for.

    The words of the verdicts its steps were built with are kept (at most `REASONS_KEPT`):
    along a stream they repeat, and a page builds a few hundred steps at random places."""

    __slots__ = ("_blocks", "_columns", "_content", "_reasons")

    def __init__(self, columns: Columns, blocks: Sequence[Block], content: Sequence[Block]) -> None:
        self._columns = columns
        self._blocks = blocks
        self._content = content
        self._reasons: dict[tuple[Any, ...], str] = {}

    def __len__(self) -> int:
        return len(self._columns)

    @overload
    def __getitem__(self, key: int) -> Step: ...

    @overload
    def __getitem__(self, key: slice) -> tuple[Step, ...]: ...

    def __getitem__(self, key: int | slice) -> Step | tuple[Step, ...]:
        if isinstance(key, slice):
            return tuple(self._build(n) for n in range(*key.indices(len(self))))
        length = len(self)
        number = key + length if key < 0 else key
        if not 0 <= number < length:
            raise IndexError("step out of range")
        return self._build(number)

    def __iter__(self) -> Iterator[Step]:
        reasons: dict[tuple[Any, ...], str] = {}  # verdicts repeat along a stream
        step, blocks, content = self._columns.step, self._blocks, self._content
        for number in range(len(self)):
            yield step(number, blocks, content, reasons)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} steps>"

    def _build(self, number: int) -> Step:
        reasons = self._reasons
        if len(reasons) > REASONS_KEPT:  # a stream whose verdicts do not repeat
            reasons.clear()
        return self._columns.step(number, self._blocks, self._content, reasons)


REASONS_KEPT = 64
"""The most verdicts' words a trace's `Steps` keeps for the steps it builds one at a time (a
stream's repeat on a few keys: a continuation onto block N; about 400 bytes each)."""


def _only_deltas(types: Sequence[int], start: int, stop: int) -> bool:
    """Whether the event rows from `start` to `stop` are all `toolcall_delta`."""
    return all(types[row] == TOOLCALL_DELTA for row in range(start, stop))


def _one_verdict(
    rules: Sequence[int], blocks: Sequence[int], start: int, stop: int, odd: set[int]
) -> bool:
    """Whether every fragment row from `start` to `stop` has the first one's rule and block,
    none of them odd."""
    rule, block = rules[start], blocks[start]
    for row in range(start, stop):
        if rules[row] != rule or blocks[row] != block or row in odd:
            return False
    return True
