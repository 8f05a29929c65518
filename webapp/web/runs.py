"""Runs of uneventful steps: consecutive steps that each put fragments by one rule onto one block.

A 100,000-chunk stream is mostly one long run of continuations; the timeline shows such a run
as one row. Runs are found once per trace, in one pass over the steps, and looked up by bisect.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from webapp.trace import Block, Step, Trace

MIN_RUN = 6
"""The fewest steps that collapse into one row (shorter runs read fine row by row)."""
QUIET_EVENTS = frozenset({"toolcall_delta"})
"""Events a step in a run may fire; any other event makes the step worth its own row."""


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
    """The runs of at least `minimum` uneventful steps; `flagged` steps (anomalies) break them."""
    breaks = set(flagged) | _renaming_steps(trace.blocks)
    found: list[Run] = []
    first = fragments = 0
    current: tuple[str, int | None] | None = None
    for step in (*trace.steps, None):
        key = None if step is None or step.step in breaks else _key(step)
        if key is None or key != current:
            end = len(trace.steps) if step is None else step.step
            if current is not None and end - first >= minimum:
                found.append(Run(first, end - 1, *current, fragments))
            first, current, fragments = end, key, 0
        if step is not None:
            fragments += len(step.fragments)
    return Runs(found)


def _key(step: Step) -> tuple[str, int | None] | None:
    """(rule, block) when every fragment of the step took it and nothing else happened."""
    if step.kind != "chunk" or not step.assembled or not step.fragments:
        return None
    if step.error or step.note or step.finish_reason:
        return None
    if any(event.type not in QUIET_EVENTS for event in step.events):
        return None
    rule, block = step.fragments[0].rule, step.fragments[0].block
    for fragment in step.fragments:
        if fragment.rule != rule or fragment.block != block:
            return None
        if fragment.late or fragment.oddities:
            return None
    return rule, block


def _renaming_steps(blocks: Iterable[Block]) -> set[int]:
    """The steps at which some block's name or own id was set (its badge reads differently)."""
    return {at for block in blocks for history in (block.names, block.ids) for at, _ in history}
