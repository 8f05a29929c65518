"""Runs of uneventful steps: consecutive steps that each put fragments by one rule onto one block,
or that each carried one piece of a text or a thought (a reasoning model's preamble).

A 100,000-chunk stream is mostly one long run of continuations; the timeline shows such a run
as one row. Runs are found once per trace, in one pass over the steps, and looked up by bisect.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from webapp.core.trace import Block, Trace

MIN_RUN = 6
"""The fewest steps that collapse into one row (shorter runs read fine row by row)."""


@dataclass(frozen=True, slots=True)
class Run:
    """Steps `first` to `last` (inclusive), each with fragments resolved by `rule` onto `block`,
    or (`rule` "text" or "thinking", no block, no fragments) each with a text's or a thought's
    piece."""

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
    """The runs of at least `minimum` alike quiet steps (`Trace.quiet_runs`); `flagged`
    steps (anomalies) break them, and so does a step that names or renames a block.

    No `Step` is built: one compiled pass over the steps' rows.
    """
    breaks = set(flagged) | _renaming_steps(trace.blocks)
    return Runs(
        Run(first, last, rule, block, trace.fragments_in(first, last + 1))
        for first, last, rule, block in trace.quiet_runs(minimum, breaks)
    )


def _renaming_steps(blocks: Iterable[Block]) -> set[int]:
    """The steps at which some block's name or own id was set (its badge reads differently)."""
    return {at for block in blocks for history in (block.names, block.ids) for at, _ in history}
