"""Runs of uneventful steps: consecutive steps that each put fragments by one rule onto one block.

A 100,000-chunk stream is mostly one long run of continuations; the timeline shows such a run
as one row. Runs are found once per trace, in one pass over the steps, and looked up by bisect.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from webapp.core.columns import CHUNK, EVENT_CODES, NONE
from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Block, Trace

MIN_RUN = 6
"""The fewest steps that collapse into one row (shorter runs read fine row by row)."""
QUIET_EVENTS = frozenset({"toolcall_delta"})
"""Events a step in a run may fire; any other event makes the step worth its own row."""
TOOLCALL_DELTA = EVENT_CODES["toolcall_delta"]


@dataclass(frozen=True, slots=True)
class Run:
    """Steps `first` to `last` (inclusive), each with fragments resolved by `rule` onto `block`."""

    first: int
    last: int
    rule: str
    block: int | None
    fragments: int

    @property
    def steps(self) -> int:
        """How many steps the run holds."""
        return self.last - self.first + 1

    def holds(self, step: int) -> bool:
        """Whether `step` is one of the run's steps."""
        return self.first <= step <= self.last


class Runs:
    """A trace's runs, in step order, with a lookup by step."""

    def __init__(self, runs: Iterable[Run]) -> None:
        self.runs = tuple(runs)
        self._firsts = [run.first for run in self.runs]

    def __len__(self) -> int:
        return len(self.runs)

    def at(self, step: int) -> Run | None:
        """The run that holds `step`, or None."""
        found = bisect_right(self._firsts, step) - 1
        if found >= 0 and self.runs[found].holds(step):
            return self.runs[found]
        return None


def find_runs(trace: Trace, flagged: Iterable[int], minimum: int = MIN_RUN) -> Runs:
    """The runs of at least `minimum` uneventful steps; `flagged` steps (anomalies) break them.

    Read from the columns (no `Step` is built), so that a long trace's runs are found quickly.
    """
    breaks = set(flagged) | _renaming_steps(trace.blocks)
    columns = trace.columns
    total = len(columns)
    kinds, step_fragment, step_event = columns.step_kind, columns.step_fragment, columns.step_event
    rules, blocks, types = columns.fragment_rule, columns.fragment_block, columns.event_type
    rows_end, events_end = len(rules), len(types)
    odd = columns.late | {row for row, found in columns.oddities.items() if found}
    breaks |= columns.unassembled
    for marked in (columns.errors, columns.notes, columns.finish_reasons):
        breaks.update(step for step, text in marked.items() if text)
    found: list[Run] = []
    first = 0
    current: tuple[int, int] | None = None
    for number in range(total + 1):
        key: tuple[int, int] | None = None
        if number < total and kinds[number] == CHUNK and number not in breaks:
            start = step_fragment[number]
            stop = step_fragment[number + 1] if number + 1 < total else rows_end
            event = step_event[number]
            last_event = step_event[number + 1] if number + 1 < total else events_end
            if stop > start and _quiet(types, event, last_event):
                key = _uniform(rules, blocks, start, stop, odd)
        if key is None or key != current:
            if current is not None and number - first >= minimum:
                found.append(_run(first, number - 1, current, step_fragment, rows_end, total))
            first, current = number, key
    return Runs(found)


def _quiet(types: array[int], start: int, stop: int) -> bool:
    """Whether the event rows from `start` to `stop` are all `toolcall_delta`."""
    if stop - start == 1:
        return types[start] == TOOLCALL_DELTA
    return all(types[row] == TOOLCALL_DELTA for row in range(start, stop))


def _uniform(
    rules: array[int], blocks: array[int], start: int, stop: int, odd: AbstractSet[int]
) -> tuple[int, int] | None:
    """(rule, block) when every fragment row from `start` to `stop` has them, none odd."""
    rule, block = rules[start], blocks[start]
    for row in range(start, stop):
        if rules[row] != rule or blocks[row] != block or row in odd:
            return None
    return rule, block


def _run(
    first: int,
    last: int,
    key: tuple[int, int],
    step_fragment: array[int],
    rows_end: int,
    total: int,
) -> Run:
    rule, block = key
    stop = step_fragment[last + 1] if last + 1 < total else rows_end
    return Run(
        first,
        last,
        RULE_NAMES[rule],
        None if block == NONE else block,
        stop - step_fragment[first],
    )


def _renaming_steps(blocks: Iterable[Block]) -> set[int]:
    """The steps at which some block's name or own id was set (its badge reads differently)."""
    return {at for block in blocks for history in (block.names, block.ids) for at, _ in history}
