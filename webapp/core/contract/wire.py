"""One pass over a stream's records: the wire as the contract reads it, never an assembly.

Each chunk is read as a JavaScript client reads it: the choice followed (`select_choice`), its
`finish_reason`, its text, and every `delta.tool_calls` entry's keys (`read_keys`). Each entry
is placed where decision 0019's client path places it, so that a call is numbered as the
adr-0019 client-path trace numbers its blocks: exact index, then exact id, then (no id, no name)
the most recently opened call, else a new call. Within a block, a header that brings another id
and a name on an index already taken opens another *part*: the block is what adr-0019 merges,
the parts are the calls the stream means (one part per block unless two calls share an index).

What the pass keeps, all of it linear in the stream:
- per part, its argument pieces and their steps, and what each piece did once the part's
  text was one complete JSON value: whitespace (ignored), a resend of the text so far (dropped),
  or more text (kept, and noted). Whether a part's text is complete is asked of its
  `Completion` only when a guess needs to know (a continuation while other parts are open),
  or when a piece arrives for a part known to be complete; at the end a part whose text parses
  as it is (most of them) is settled by one parse, the others piece by piece;
- per quirk code whose test looks at single entries (`EntryTest`, the table's), the steps and
  blocks where it showed (the first `steps_kept` steps, and a count);
- per stream: the steps of each `finish_reason`, of chunks without a `choices` array, of text
  after the finish, the first chunk's `model`, and which continuations met another open call.

A plain argument piece (an integer index naming a call, no id, no name, string arguments) can
show no entry quirk, so its tests are skipped: that is most entries of a long stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from webapp.core.chunks import content_text, provider_error, select_choice
from webapp.core.jsoncheck import Completion, loads, parses
from webapp.core.jsvalue import Keys, index_key, map_key, read_keys, truthy
from webapp.core.records import Payloads, Record

STEPS_KEPT = 1000
"""At most this many steps are kept per quirk and call (the count goes on)."""
_WHITESPACE = " \t\n\r"
UNSET: Any = object()
"""A value not worked out yet."""


@dataclass(slots=True, eq=False)
class Part:
    """One call the stream means: a block's header and the argument pieces that follow it."""

    number: int
    """Its place among every part of the stream, in opening order (the intended order)."""
    block: int
    opened: int
    id: Any
    name: Any
    freeform: bool = False
    """A `custom` tool call: its pieces are free text, not JSON."""
    pieces: list[str] = field(default_factory=list)
    """The non-empty pieces kept, in order (resends and late whitespace are not kept)."""
    steps: list[int] = field(default_factory=list)
    length: int = 0
    completion: Completion = field(default_factory=Completion)
    fed: int = 0
    """How many kept pieces `completion` has been told: the rest are weighed when a guess
    needs to know, or at the end."""
    closed: bool = False
    """Whether the kept text (its first `fed` pieces) is one complete JSON value."""
    value: Any = UNSET
    """The kept text parsed, once it is one complete value and a late piece needs comparing."""
    runs: Any = UNSET
    """`webapp.core.contract.quirks.restating_runs` of the part, once asked."""
    resent: list[int] = field(default_factory=list)
    """Steps of pieces that repeated the whole text so far (dropped)."""
    trailing: list[int] = field(default_factory=list)
    """Steps of whitespace pieces after the text was one complete value (ignored)."""
    after: list[tuple[int, str]] = field(default_factory=list)
    """Steps and pieces of other text after the text was one complete value (kept)."""
    retyped: list[int] = field(default_factory=list)
    """Steps whose arguments were an object or array, not a string: read as its JSON text."""

    @property
    def complete(self) -> bool:
        """Whether the kept text is one complete JSON value (once the pass has ended)."""
        return self.closed

    def text(self) -> str:
        """The kept text."""
        return "".join(self.pieces)

    def parsed(self) -> Any:
        """The kept text's value (only asked once it is complete)."""
        if self.value is UNSET:
            self.value = loads(self.text())
        return self.value


@dataclass(slots=True, eq=False)
class Block:
    """One call as the adr-0019 client path numbers it, and the parts two headers made of it."""

    number: int
    opened: int
    parts: list[Part]
    ids: list[tuple[int, Any]] = field(default_factory=list)
    """Every different non-empty id its entries carried, with the step it first came."""
    by_id: dict[object, Part] = field(default_factory=dict)
    has_index: bool = False
    unsettled: dict[Part, None] = field(default_factory=dict)
    """Its parts not known to hold one complete value (when two calls share its index)."""

    @property
    def id(self) -> Any:
        """Its first non-empty id, or None."""
        return self.ids[0][1] if self.ids else None

    @property
    def name(self) -> Any:
        """Its first part's name."""
        return self.parts[0].name


@dataclass(frozen=True, slots=True)
class Entry:
    """One `delta.tool_calls` entry as a quirk test sees it: as read, and where it landed."""

    step: int
    position: int
    raw: Any
    keys: Keys
    rule: str
    """The adr-0019 client-path rule: exact-index, exact-id, continuation, drop, new."""
    block: Block | None
    part: Part | None
    fresh: bool
    """It opened its block or part."""
    prior_id: Any
    """The id of the part it landed on, before it (None for a fresh one)."""
    prior_name: Any
    new_id: bool
    """It carries a non-empty id its block, which already had one, had not seen."""
    finished: bool
    """A `finish_reason` came on an earlier step."""


EntryTest = Callable[[Entry], "str | None"]
"""A quirk's test on one entry: None, or a few words on what showed ("" for none)."""


@dataclass(frozen=True, slots=True)
class Guess:
    """A piece placed by guess: a continuation (or a piece on an index two calls share) that
    went to `part` while `others` were open, their text not one complete JSON value."""

    step: int
    kind: str
    """"continuation" or "shared-index"."""
    part: Part
    others: tuple[Part, ...]
    states: tuple[str, ...] = ()
    """For the first guess only: each other part's text at that step, clipped."""


"""A quirk's test on one entry: a few words on what showed, or None."""


@dataclass(slots=True)
class Marks:
    """Where one entry quirk showed on one block: the first steps, each once, and how often."""

    steps: list[int] = field(default_factory=list)
    count: int = 0
    details: list[str] = field(default_factory=list)
    """The first few distinct details its test gave."""


@dataclass(slots=True)
class Wire:
    """Everything the pass found (see the module docstring)."""

    blocks: list[Block] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    marks: dict[str, dict[int | None, Marks]] = field(default_factory=dict)
    finishes: list[tuple[int, str]] = field(default_factory=list)
    late_text: list[int] = field(default_factory=list)
    no_choices: list[int] = field(default_factory=list)
    not_a_list: list[int] = field(default_factory=list)
    """Steps whose `delta.tool_calls` is present but not an array."""
    guesses: list[Guess] = field(default_factory=list)
    """Pieces that could have meant another open part (the first `steps_kept`)."""
    model: str | None = None
    steps: int = 0
    """How many records the stream has (the trace's `end` step has this number)."""
    ended: str | None = None
    """What stopped the reading before the last record: "[DONE]" or "a provider error"."""
    error: str | None = None
    """The provider's error message, when one ended the stream."""
    steps_kept: int = STEPS_KEPT
    stopped: Any = UNSET
    """`webapp.core.contract.quirks.stopped_in` of the wire, once asked."""

    def mark(self, code: str, block: int | None, step: int, detail: str) -> None:
        """Note that quirk `code` showed at `step` on `block`."""
        by_block = self.marks.get(code)
        if by_block is None:
            by_block = self.marks[code] = {}
        found = by_block.get(block)
        if found is None:  # not `setdefault`: that would make a `Marks` at every mark
            found = by_block[block] = Marks()
        found.count += 1
        if (not found.steps or found.steps[-1] != step) and len(found.steps) < self.steps_kept:
            found.steps.append(step)
        if detail and len(found.details) < 3 and detail not in found.details:
            found.details.append(detail)


_NO_KEYS = read_keys({})


class WireReader:
    """The reading itself, record by record: `run` over the records, or fed by a loop that
    reads them already (the assembler's): `record` for each record in step order, or `chunk`
    for a parsed chunk object without an "error" key, while `wire.ended` is None; then `end`."""

    def __init__(
        self,
        choice: int,
        tests: Sequence[tuple[str, EntryTest]],
        kept: int,
        bare: tuple[str, str] | None = None,
    ) -> None:
        self.choice = choice
        self.tests = tests
        self.bare = bare
        """With `tests` the whole entry table: the two codes it marks on a plain bare
        continuation (no index or a null one, no id, no name, string arguments), which are
        then marked without running the tests (`webapp.core.contract.quirks.BARE_MARKS`)."""
        self.wire = Wire(steps_kept=kept)
        self.by_index: dict[object, Block] = {}
        self.by_id: dict[object, Block] = {}
        self.unsettled: dict[Part, None] = {}
        """Parts not known to hold one complete value, in the order they became so."""
        self.finished_at: int | None = None

    def run(self, records: Iterable[Record]) -> Wire:
        wire = self.wire
        if isinstance(records, Payloads):
            self.payloads(records)
        else:
            for step, record in enumerate(records):
                if wire.ended is None:
                    self.record(step, record)
                wire.steps = step + 1
        return self.end(wire.steps)

    def end(self, steps: int) -> Wire:
        """The pass over `steps` records ends: every part is settled."""
        wire = self.wire
        wire.steps = steps
        for part in wire.parts:
            self.close(part)
        return wire

    def payloads(self, records: Payloads) -> None:
        """`run` for a plain stream: each payload parsed here, once, as the reader would."""
        self.wire.steps = len(records)
        loads_fast = orjson.loads
        step = 0
        for segment in range(len(records.segments)):
            for payload in records.cut(segment):
                if payload == "[DONE]" or payload == b"[DONE]":
                    self.wire.ended = "[DONE]"
                else:
                    try:
                        value = loads_fast(payload)
                    except orjson.JSONDecodeError:
                        self.record(step, records[step])
                    else:
                        if type(value) is dict and "error" not in value:
                            self.chunk(step, value)
                        else:
                            self.record(step, records.parsed(step, value))
                if self.wire.ended is not None:
                    return
                step += 1

    def record(self, step: int, record: Record) -> None:
        if record.kind == "done":
            self.wire.ended = "[DONE]"
            return
        if record.kind != "chunk":
            return
        value = record.value
        if record.event is not None or not isinstance(value, dict) or "error" in value:
            message = provider_error(record)
            if message is not None:
                self.wire.ended, self.wire.error = "a provider error", message
                return
            if not isinstance(value, dict) or (record.event or "").startswith("thread."):
                return  # skipped, as the assembler skips them
        self.chunk(step, value)

    def chunk(self, step: int, value: dict[str, Any]) -> None:
        wire = self.wire
        if wire.model is None:
            model = value.get("model")
            if isinstance(model, str) and model:
                wire.model = model
        choices = value.get("choices")
        if type(choices) is not list:
            wire.no_choices.append(step)
            return
        choice: Any = choices[0] if len(choices) == 1 else None
        index = choice.get("index", 0) if type(choice) is dict else None
        if type(index) is not int or index != self.choice:  # not the usual one choice
            choice = select_choice(choices, self.choice).choice
            if choice is None:
                return
        followed: dict[str, Any] = choice
        delta = followed.get("delta")
        finished = self.finished_at is not None
        if type(delta) is dict:
            if finished and content_text(delta) is not None:
                wire.late_text.append(step)
            calls = delta.get("tool_calls")
            if type(calls) is list:
                for position, raw in enumerate(calls):
                    self.entry(step, position, raw, finished)
            elif calls is not None and truthy(calls):
                wire.not_a_list.append(step)
        finish = followed.get("finish_reason")
        if finish is not None and truthy(finish):
            wire.finishes.append((step, finish if isinstance(finish, str) else str(finish)))
            if self.finished_at is None:
                self.finished_at = step

    def quiet(self) -> bool:
        """Whether `chunk` does nothing with a chunk whose usual choice has no finish and no
        `tool_calls` (reasoning or text): the model is known and nothing has finished."""
        return self.finished_at is None and self.wire.model is not None

    def entry(self, step: int, position: int, raw: Any, finished: bool) -> None:
        if type(raw) is dict and not finished:
            function = raw.get("function")
            if (
                raw.get("id") is None
                and type(function) is dict
                and function.get("name") is None
                and "custom" not in raw
            ):
                arguments = function.get("arguments")
                if arguments is None or type(arguments) is str:
                    index = raw.get("index")
                    if type(index) is int:
                        block = self.by_index.get(index)
                        if (
                            block is not None
                            and len(block.parts) == 1
                            and not block.parts[0].freeform
                        ):
                            self.piece(step, block.parts[0], arguments or "")  # a plain piece
                            return
                    elif index is None and (marks := self.bare) is not None and self.wire.blocks:
                        block = self.wire.blocks[-1]
                        part = block.parts[-1]
                        if not part.freeform:  # a plain bare continuation
                            detail = "index null" if "index" in raw else ""
                            self.bare_piece(step, block, part, marks, detail, arguments or "")
                            return
        self.resolve(step, position, raw, finished)

    def bare_piece(
        self, step: int, block: Block, part: Part, marks: tuple[str, str], detail: str, piece: str
    ) -> None:
        """What `resolve` does with a plain bare continuation: the rule is continuation onto
        the last block's last part, the entry tests mark `marks`, nothing is registered."""
        missing, bare = marks
        self.wire.mark(missing, block.number, step, detail)
        self.wire.mark(bare, block.number, step, "")
        if piece:
            self.weigh(step, "continuation", part)
        self.piece(step, part, piece)

    def resolve(self, step: int, position: int, raw: Any, finished: bool) -> None:
        keys = read_keys(raw) if isinstance(raw, dict) else _NO_KEYS
        rule, block = "new", None
        if keys.index is not None:
            block = self.by_index.get(index_key(keys.index))
            rule = "exact-index" if block is not None else rule
        if block is None and keys.id is not None:
            block = self.by_id.get(map_key(keys.id))
            rule = "exact-id" if block is not None else rule
        if block is None and keys.bare:
            rule = "continuation" if self.wire.blocks else "drop"
            block = self.wire.blocks[-1] if self.wire.blocks else None
        part: Part | None = None
        fresh = False
        prior_id = prior_name = None
        new_id = False
        if rule == "new":
            block = self.open_block(step, keys)
            part, fresh = block.parts[0], True
        elif block is not None:
            new_id = keys.id is not None and bool(block.ids) and map_key(keys.id) not in block.by_id
            part, fresh = self.part_of(step, block, keys, rule)
            if not fresh:
                prior_id, prior_name = part.id, part.name
            self.register(step, block, part, keys, rule)
        entry = Entry(step, position, raw, keys, rule, block, part, fresh, prior_id, prior_name,
                      new_id, finished)  # fmt: skip
        number = None if block is None else block.number
        for code, test in self.tests:
            detail = test(entry)
            if detail is not None:
                self.wire.mark(code, number, step, detail)
        if part is not None:
            piece = keys.custom_input if part.freeform else keys.arguments
            if type(keys.raw_arguments) is dict or type(keys.raw_arguments) is list:
                piece = _json_text(keys.raw_arguments)  # what it means, not String() of it
                part.retyped.append(step)
            if rule == "continuation" and piece:
                self.weigh(step, "continuation", part)
            self.piece(step, part, piece)

    def open_block(self, step: int, keys: Keys) -> Block:
        wire = self.wire
        part = Part(len(wire.parts), len(wire.blocks), step, keys.id, keys.name,
                    freeform=keys.custom_only)  # fmt: skip
        block = Block(len(wire.blocks), step, [part])
        wire.blocks.append(block)
        wire.parts.append(part)
        if not part.freeform:
            self.unsettled[part] = None
        if keys.index is not None:
            self.by_index[index_key(keys.index)] = block
            block.has_index = True
        if keys.id is not None:
            self.by_id[map_key(keys.id)] = block
            block.by_id[map_key(keys.id)] = part
            block.ids.append((step, keys.id))
        return block

    def part_of(self, step: int, block: Block, keys: Keys, rule: str) -> tuple[Part, bool]:
        """The part an entry landing on `block` belongs to; a new one for another header."""
        if keys.id is not None:
            known = block.by_id.get(map_key(keys.id))
            if known is not None:
                return known, False
            current = block.parts[-1]
            if rule == "exact-index" and keys.name is not None and current.id is not None:
                part = Part(len(self.wire.parts), block.number, step, keys.id, keys.name,
                            freeform=keys.custom_only)  # fmt: skip
                if len(block.parts) == 1 and not block.parts[0].freeform:  # the first split
                    block.unsettled[block.parts[0]] = None
                block.parts.append(part)
                self.wire.parts.append(part)
                if not part.freeform:
                    self.unsettled[part] = None
                    block.unsettled[part] = None
                return part, True
        part = block.parts[-1]
        if keys.id is None and rule == "exact-index" and len(block.parts) > 1 and keys.arguments:
            self.weigh(step, "shared-index", part, among=block.unsettled)
        return part, False

    def register(self, step: int, block: Block, part: Part, keys: Keys, rule: str) -> None:
        if rule != "continuation" and keys.index is not None and not block.has_index:
            self.by_index[index_key(keys.index)] = block
            block.has_index = True
        if keys.id is not None:
            key = map_key(keys.id)
            self.by_id[key] = block
            if key not in block.by_id:
                block.by_id[key] = part
                block.ids.append((step, keys.id))
            if part.id is None:
                part.id = keys.id
        if keys.name is not None and part.name is None:
            part.name = keys.name
        if keys.custom_only and not part.freeform and not part.pieces:
            part.freeform = True
            self.unsettled.pop(part, None)

    def weigh(
        self, step: int, kind: str, part: Part, among: dict[Part, None] | None = None
    ) -> None:
        """Note a piece that went to `part` by guess while other parts were still open:
        those of the stream (a continuation), or of its block (`among`, a shared index)."""
        if len(self.wire.guesses) >= self.wire.steps_kept:
            return
        unsettled = self.unsettled if among is None else among
        others: list[Part] = []
        settled: list[Part] = []
        for other in unsettled:
            if other is part or other.freeform:
                continue
            self.feed(other)
            if other.closed:
                settled.append(other)
            elif _restated(other):
                continue  # its last restatement is whole: it means that, and is not open
            else:
                others.append(other)
                if len(others) == 3:
                    break
        for other in settled:
            unsettled.pop(other, None)
        if others:
            states = () if self.wire.guesses else tuple(other.text()[:40] for other in others)
            self.wire.guesses.append(Guess(step, kind, part, tuple(others), states))

    def piece(self, step: int, part: Part, piece: str) -> None:
        if not piece:
            return
        if part.closed and part.fed == len(part.pieces) and not part.freeform:
            self.late(step, part, piece)
            return
        part.pieces.append(piece)
        part.steps.append(step)
        part.length += len(piece)

    def late(self, step: int, part: Part, piece: str) -> None:
        """A piece for a part whose text is already one complete value."""
        if not piece.strip(_WHITESPACE):
            part.trailing.append(step)
        elif _repeats(part, piece):
            part.resent.append(step)
        else:
            part.after.append((step, piece))
            self.keep(step, part, piece)
            self.unsettled[part] = None

    def keep(self, step: int, part: Part, piece: str) -> None:
        """Keep a piece and tell the part's completion of it."""
        part.pieces.append(piece)
        part.steps.append(step)
        part.length += len(piece)
        part.value = UNSET
        part.fed += 1
        part.closed = part.completion.feed(piece)

    def feed(self, part: Part) -> None:
        """Tell the part's completion of the pieces kept since it was last asked; those that
        came after its text closed are weighed as late pieces would have been."""
        if part.fed == len(part.pieces):
            return
        pending = list(zip(part.steps[part.fed :], part.pieces[part.fed :], strict=True))
        del part.steps[part.fed :], part.pieces[part.fed :]
        part.length = sum(map(len, part.pieces))
        for step, piece in pending:
            if part.closed:
                self.late(step, part, piece)
            else:
                self.keep(step, part, piece)

    def close(self, part: Part) -> None:
        """At the end: settle the part, at C speed when its kept text parses as it is."""
        if part.freeform or part.fed == len(part.pieces):
            return
        if not part.closed and parses(part.text()):
            trailing = len(part.pieces)
            while trailing > part.fed and not part.pieces[trailing - 1].strip(_WHITESPACE):
                trailing -= 1
            if trailing < len(part.pieces) and parses("".join(part.pieces[:trailing])):
                part.trailing.extend(part.steps[trailing:])
                del part.pieces[trailing:], part.steps[trailing:]
                part.length = sum(map(len, part.pieces))
            part.fed, part.closed = len(part.pieces), True
            return
        self.feed(part)


def _restated(part: Part) -> bool:
    """Whether the part's last piece restates the one before and is one complete value: a
    part whose pieces restate its arguments (cumulative-arguments) means its last one."""
    pieces = part.pieces
    if len(pieces) < 2:
        return False
    last, before = pieces[-1], pieces[-2]
    return len(last) > len(before) and last.startswith(before) and parses(last)


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # an integer beyond 64 bits, a lone surrogate
        return json.dumps(value)


def _repeats(part: Part, piece: str) -> bool:
    """Whether `piece` repeats the part's whole text so far: the same text, or the same value."""
    if len(piece) == part.length and piece == part.text():
        return True
    try:
        return bool(loads(piece) == part.parsed())
    except (ValueError, RecursionError):
        return False


def read_wire(
    records: Iterable[Record],
    choice: int = 0,
    tests: Sequence[tuple[str, EntryTest]] = (),
    steps_kept: int = STEPS_KEPT,
) -> Wire:
    """Read a stream's records once (see the module docstring); `tests` are the entry quirks'."""
    return WireReader(choice, tests, steps_kept).run(records)
