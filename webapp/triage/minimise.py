"""Shrink a stream to a small one that still shows a property: delta debugging (ddmin).

Three passes, each Zeller's ddmin (try each part alone, then the stream without each part,
halving the parts when neither works), each keeping only what the predicate still accepts:
1. over records (chunks, `[DONE]`, records that did not parse);
2. over the fragments of each chunk's `delta.tool_calls` (an empty list is tried first);
3. over the members of each call whose argument text is JSON, outermost first: the members of
   its object, then those of each object and the items of each array kept: one left out is
   cut out whole (key, value and a comma) from the fragments that carry it, one at least of
   each is kept; then the records the cuts left with no argument text are tried without.
Every candidate is a list of records the readers could have produced: a chunk keeps its
envelope (id, object, model, choices), only fragments and argument text go, and only whole:
a candidate is kept only if its calls are the input's, by name and in order, with argument
text a reader recognises (`webapp.triage.pieces`): `{"city": "Paris"}` never becomes
`{"":""}`. `shrink_text` (the CLI's `--shrink-text`) is the old, smaller and unreadable way:
pass 3 is ddmin over the characters of each fragment's `function.arguments` ("" is tried
first), and the text is not checked.
At the end the stream is made to end like one where the property allows it: the input's last
chunk with a `finish_reason` and its `[DONE]` are put back if they were removed and the
property still holds with them. The result is a subsequence of the input's records, some of
them with fewer fragments or less argument text, so it is never larger than the input.

A deadline (a `clock()` value) stops the search between two tests; the smallest stream found
so far is returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from webapp.core.assembler import assemble
from webapp.core.blocks import Block
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.trace import Trace
from webapp.triage.fragments import call_lists, pieces_of, with_calls, with_texts
from webapp.triage.pieces import Node, cut, same_calls, tree
from webapp.triage.predicates import Predicate

T = TypeVar("T")
REPORT_EVERY = 1.0
"""Within a pass, progress is reported at most this often (seconds, by the clock given)."""
_Item = tuple[int, Record]
"""A record and its place in the input."""


@dataclass(frozen=True, slots=True)
class Progress:
    """Where the search is: the pass, the records kept so far, the predicate runs so far."""

    phase: str
    records: int
    tests: int


@dataclass(frozen=True, slots=True)
class Minimised:
    """The smallest stream found, how many tests it took, and whether the deadline hit."""

    records: tuple[Record, ...]
    tests: int
    timed_out: bool


class PropertyDoesNotHold(ValueError):
    """The predicate is false on the input itself: there is nothing to minimise."""


class _OutOfTime(Exception):
    pass


class _Search:
    """The predicate, counted, with the deadline checked before each run; and, unless text
    may shrink, the calls checked against the input's (`webapp.triage.pieces.same_calls`)."""

    def __init__(
        self,
        predicate: Predicate,
        deadline: float | None,
        clock: Callable[[], float],
        progress: Callable[[Progress], None] | None,
        options: Options,
    ) -> None:
        self.predicate = predicate
        self.deadline = deadline
        self.clock = clock
        self.progress = progress
        self.options = options
        self.calls: tuple[Block, ...] | None = None
        """The input's calls, when candidates must keep them recognisable."""
        self.tests = 0
        self.phase = "records"
        self.best: list[_Item] = []
        self.reported = clock()

    def holds(self, items: list[_Item]) -> bool:
        if self.deadline is not None and self.clock() >= self.deadline:
            raise _OutOfTime
        self.tests += 1
        records = [record for _, record in items]
        if not self.predicate(records):
            return False
        if self.calls is not None and not same_calls(self.calls, self.trace(records).blocks):
            return False
        if (len(items), _weight(items)) < (len(self.best), _weight(self.best)):
            self.best = list(items)
            if self.clock() - self.reported >= REPORT_EVERY:
                self.report(items)
        return True

    def report(self, items: list[_Item]) -> None:
        self.reported = self.clock()
        if self.progress is not None:
            self.progress(Progress(self.phase, len(items), self.tests))

    def trace(self, records: Sequence[Record]) -> Trace:
        """The records' trace under the options calls are told apart by (no contract)."""
        return assemble(records, self.options, contract=False)


def minimise(
    records: Sequence[Record],
    predicate: Predicate,
    deadline: float | None = None,
    progress: Callable[[Progress], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    *,
    options: Options | None = None,
    shrink_text: bool = False,
) -> Minimised:
    """The smallest stream found that still satisfies `predicate` (see the module docstring);
    calls are told apart as `options` (the predicate's) assemble them."""
    items = list(enumerate(records))
    search = _Search(predicate, deadline, clock, progress, options or Options())
    if not predicate(list(records)):
        raise PropertyDoesNotHold("the property does not hold on the input")
    if not shrink_text:
        search.calls = search.trace(records).blocks
    search.best = items
    try:
        items = ddmin(items, search.holds)
        search.report(items)
        search.phase = "fragments"
        items = _fragments(items, search)
        search.report(items)
        search.phase = "arguments" if shrink_text else "members"
        items = _arguments(items, search) if shrink_text else _members(items, search)
        search.report(items)
        search.phase = "ending"
        items = _ending(items, list(records), search)
        timed_out = False
    except _OutOfTime:
        items, timed_out = search.best, True
    search.phase = "done"
    search.report(items)
    return Minimised(tuple(record for _, record in items), search.tests, timed_out)


def ddmin(items: list[T], fits: Callable[[list[T]], bool], allow_empty: bool = False) -> list[T]:
    """A 1-minimal sublist of `items` that `fits` accepts (`fits(items)` is assumed true)."""
    if allow_empty and items and fits([]):
        return []
    parts = 2
    while len(items) >= 2:
        chunks = _split(items, parts)
        reduced = next((chunk for chunk in chunks if fits(chunk)), None)
        if reduced is not None:
            items, parts = reduced, 2
            continue
        if parts > 2:
            for skip in range(len(chunks)):
                rest = [item for i, chunk in enumerate(chunks) if i != skip for item in chunk]
                if fits(rest):
                    reduced = rest
                    break
        if reduced is not None:
            items, parts = reduced, max(parts - 1, 2)
        elif parts >= len(items):
            break
        else:
            parts = min(2 * parts, len(items))
    return items


def _split(items: list[T], parts: int) -> list[list[T]]:
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for part in range(parts):
        end = start + size + (1 if part < extra else 0)
        out.append(items[start:end])
        start = end
    return out


# Fragments and argument text: each candidate replaces one record's chunk by a changed copy.


def _fragments(items: list[_Item], search: _Search) -> list[_Item]:
    for at in range(len(items)):
        for choice, _ in call_lists(items[at][1].value):
            items = _shrink_fragments(items, at, choice, search)
    return items


def _shrink_fragments(items: list[_Item], at: int, choice: int, search: _Search) -> list[_Item]:
    place, record = items[at]
    calls = dict(call_lists(record.value))[choice]

    def changed(kept: list[Any]) -> list[_Item]:
        return [*items[:at], (place, with_calls(record, choice, kept)), *items[at + 1 :]]

    kept = ddmin(list(calls), lambda kept: search.holds(changed(kept)), allow_empty=True)
    return changed(kept) if len(kept) < len(calls) else items


def _arguments(items: list[_Item], search: _Search) -> list[_Item]:
    for at in range(len(items)):
        for choice, calls in call_lists(items[at][1].value):
            for position in range(len(calls)):
                items = _shrink_argument(items, at, choice, position, search)
    return items


def _shrink_argument(
    items: list[_Item], at: int, choice: int, position: int, search: _Search
) -> list[_Item]:
    place, record = items[at]
    calls = call_lists(record.value)
    calls_now = dict(calls)[choice]
    fragment = calls_now[position]
    function = fragment.get("function") if isinstance(fragment, dict) else None
    text = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(text, str) or not text:
        return items
    assert isinstance(function, dict)

    def changed(kept: list[str]) -> list[_Item]:
        new_fragment = {**fragment, "function": {**function, "arguments": "".join(kept)}}
        new_calls = [*calls_now[:position], new_fragment, *calls_now[position + 1 :]]
        return [*items[:at], (place, with_calls(record, choice, new_calls)), *items[at + 1 :]]

    kept = ddmin(list(text), lambda kept: search.holds(changed(kept)), allow_empty=True)
    return changed(kept) if len(kept) < len(text) else items


# Members: each call whose argument text is one JSON object loses the members it can do without.


def _members(items: list[_Item], search: _Search) -> list[_Item]:
    """Each call, in order, without the members the predicate does not need; then without the
    records the cuts left with no argument text, where the predicate allows."""
    emptied: set[int] = set()
    number = 0
    trace = search.trace([record for _, record in items])
    while number < len(trace.blocks):
        done = _cut_members(items, trace, number, search)
        if done is not None:
            items, bare = done
            emptied |= bare
            trace = search.trace([record for _, record in items])
        number += 1
    return _without(items, emptied, search) if emptied else items


def _cut_members(
    items: list[_Item], trace: Trace, number: int, search: _Search
) -> tuple[list[_Item], set[int]] | None:
    """The items with block `number`'s unneeded members and array items cut out, outermost
    first, and the records (by place in the input) whose pieces of its text are all gone; None
    when nothing could go."""
    block = trace.blocks[number]
    root = tree(block.text)
    records = [record for _, record in items]
    places = pieces_of(records, trace, number, search.options) if root and root.items else None
    if root is None or places is None:
        return None
    lengths = [len(piece) for piece in block.pieces]
    kept: dict[int, list[int]] = {}

    def changed(chosen: dict[int, list[int]]) -> list[_Item]:
        texts = cut(block.text, root, chosen, lengths)
        return [(place, record) for (place, _), record in
                zip(items, with_texts(records, places, texts), strict=True)]  # fmt: skip

    def shrunk(node: Node) -> list[int]:
        every = list(range(len(node.items)))
        if len(every) < 2:
            return every
        return ddmin(every, lambda chosen: search.holds(changed({**kept, node.start: chosen})))

    waiting, cuts = [root], False
    while waiting:  # outermost first; what is inside a member left out is not looked at
        node = waiting.pop(0)
        chosen = kept[node.start] = shrunk(node)
        cuts = cuts or len(chosen) < len(node.items)
        waiting += [node.items[at].value for at in chosen]
    if not cuts:
        return None
    texts = cut(block.text, root, kept, lengths)
    left = {at for (at, _, _), text in zip(places, texts, strict=True) if text}
    return changed(kept), {items[at][0] for at, _, _ in places if at not in left}


def _without(items: list[_Item], bare: set[int], search: _Search) -> list[_Item]:
    """The items without those of the records `bare` (by place) the predicate can do without."""

    def changed(kept: list[int]) -> list[_Item]:
        return [(place, record) for place, record in items if place not in bare or place in kept]

    kept = ddmin([place for place, _ in items if place in bare],
                 lambda kept: search.holds(changed(kept)), allow_empty=True)  # fmt: skip
    return changed(kept)


def _ending(items: list[_Item], records: list[Record], search: _Search) -> list[_Item]:
    """Put back the input's last finish chunk and `[DONE]` when the property allows it."""
    finish = _last_finish(records)
    done = next((place for place, record in enumerate(records) if record.kind == "done"), None)
    places = {place for place, _ in items}
    wanted = [(place, records[place]) for place in (finish, done) if place is not None]
    wanted = [(place, record) for place, record in wanted if place not in places]
    if not wanted:
        return items
    candidate = sorted([*items, *wanted], key=lambda item: item[0])
    return candidate if search.holds(candidate) else items


def _last_finish(records: list[Record]) -> int | None:
    for place in range(len(records) - 1, -1, -1):
        value = records[place].value
        choices = value.get("choices") if isinstance(value, dict) else None
        if isinstance(choices, list) and any(
            isinstance(choice, dict) and choice.get("finish_reason") for choice in choices
        ):
            return place
    return None


def _weight(items: list[_Item]) -> int:
    """A rough size: the length of every record's text, to prefer the shorter of two streams
    with as many records."""
    return sum(len(record.text) for _, record in items)
