"""A trace view: a trace with what stepping through it needs, built once per trace.

A `TraceView` adds to its trace the indexes a page asks for at every step: the steps per rule,
the anomaly steps, the runs of alike steps (`webapp.web.backend.trace.runs`), the overview's buckets
(`webapp.web.backend.trace.overview`), the anomalies grouped by code and where the provider's quirks
show (`webapp.web.backend.trace.overview.QuirkMarks`), each built once in linear
time (or taken from a stored view, `webapp.web.backend.trace.stored`), so that a step afterwards
costs a bisect and the rendering of one window. It keeps what the reader found but not the
records: a step's record is recalled on demand (`recall`, set by the service).
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from webapp.core.options import Options
from webapp.core.records import ReadResult, Record
from webapp.core.trace import Anomaly, Block, Step, Trace
from webapp.storage import StreamInfo
from webapp.web.backend.trace import stored
from webapp.web.backend.trace.anomaly_groups import Group, groups
from webapp.web.backend.trace.arguments import LONG, LongText
from webapp.web.backend.trace.overview import Bucket, Cell, QuirkMarks, buckets, quirk_marks
from webapp.web.backend.trace.runs import Runs, find_runs
from webapp.web.http.links import Links

VIEW_BASE = 16_000
TRACE_PER_STEP = 120
TRACE_PER_FRAGMENT = 100
"""A trace view's heap: a base, then per step and per fragment (tracemalloc, columns and
indexes, on a short stream and on a long one of small fragments)."""
TRACE_PER_BLOCK = 800
"""And per tool-call block: its pieces, steps and histories, its verdicts (tracemalloc: exact-key
on bare continuations opens a phantom block for each, against one block under adr-0019)."""


@dataclass(frozen=True, slots=True)
class Source:
    """What a trace view keeps of its stream: what the reader found, but not the records."""

    info: StreamInfo
    found: ReadResult
    """The reader's result with no records (`records` says how many there were)."""
    records: int
    har_entry: int | None = None


def _no_record(step: int) -> Record | None:
    return None


@dataclass(slots=True)
class TraceView:
    """A trace plus the indexes for stepping: steps per rule, anomalies per step."""

    source: Source
    options: Options
    trace: Trace
    rule_steps: dict[str, array[int]] = field(default_factory=dict)
    fragments: int = 0
    """How many fragments the steps carry (for the size estimate)."""
    anomaly_steps: list[int] = field(default_factory=list)
    anomalies_by_step: dict[int, tuple[Anomaly, ...]] = field(default_factory=dict)
    open_steps: list[int] = field(default_factory=list)
    """The step each tool-call block opened at, in opening order (nondecreasing)."""
    others: list[Block] = field(default_factory=list)
    """The text and thinking blocks (at most a few), in content order."""
    buckets: tuple[Bucket, ...] = ()
    """The overview strip's columns (at most `overview.MAX_COLUMNS`)."""
    anomaly_groups: tuple[Group, ...] = ()
    """The anomalies by code, errors first."""
    runs: Runs = field(default_factory=lambda: Runs(()))
    """Runs of alike, uneventful steps, which the timeline collapses into one row each."""
    quirks: QuirkMarks = field(default_factory=QuirkMarks)
    """Where the provider's quirks show: per step and per overview column."""
    recall: Callable[[int], Record | None] = _no_record
    """A step's record, read again from the stream's bytes (None past the records)."""
    texts: dict[int, LongText] = field(default_factory=dict)
    """Blocks' texts with their offsets and parse marks, by `id(block)`, made on first use."""
    strips: dict[Links, tuple[Cell, ...]] = field(default_factory=dict)
    """The overview's columns as drawn under some links, none current (`overview.strip`)."""
    steps: Sequence[Step] = ()
    """The trace's steps, one sequence for the view's life: it keeps the words of the verdicts
    its steps were built with (a page builds 120 at random places; they repeat)."""
    chunks: int = 0
    """How many records were chunks (`Trace.chunk_count`, counted once: every page says it)."""

    @classmethod
    def build(
        cls,
        source: Source,
        options: Options,
        trace: Trace,
        made: stored.Stored | None = None,
    ) -> TraceView:
        """The view with its indexes: computed from the trace, or taken from `made`."""
        view = cls(source, options, trace, steps=trace.steps, chunks=trace.chunk_count)
        view.fragments = trace.fragments_in(0, len(trace.steps))
        view.anomalies_by_step = trace.anomalies_by_step()
        view.anomaly_steps = sorted(view.anomalies_by_step)
        view.open_steps = [block.opened_step for block in trace.blocks]
        view.others = [block for block in trace.content if block.kind != "toolCall"]
        view.anomaly_groups = groups(trace)
        if made is None:
            view.rule_steps = {
                rule: array("q", steps) for rule, steps in trace.steps_by_rule().items()
            }
            view.buckets = buckets(trace, view.anomalies_by_step)
            view.runs = find_runs(trace, view.anomaly_steps)
        else:
            view.rule_steps, view.buckets, view.runs = made.rule_steps, made.buckets, made.runs
        view.quirks = quirk_marks(trace.contract, view.buckets)
        return view

    def packed(self) -> bytes | None:
        """The view as a stored artefact (None when it cannot be stored faithfully)."""
        source = self.source
        return stored.pack(
            source.found, source.records, self.trace, self.rule_steps, self.buckets, self.runs
        )

    def record(self, step: int) -> Record | None:
        """The record that step `step` assembled (None for the end step)."""
        return self.recall(step) if 0 <= step < self.source.records else None

    def as_asked(self, options: Options) -> TraceView:
        """This view under options equal to its own but for the order of `server_tools`.

        The cached trace was made with the canonical options; the user sees theirs echoed.
        """
        view = copy.copy(self)
        view.options = options
        view.trace = replace(self.trace, server_tools=options.server_tools)
        return view

    @property
    def weight(self) -> int:
        """An estimate of the trace's size in memory, in bytes."""
        steps, blocks = len(self.trace.steps), len(self.trace.blocks)
        return (
            VIEW_BASE
            + TRACE_PER_STEP * steps
            + TRACE_PER_FRAGMENT * self.fragments
            + TRACE_PER_BLOCK * blocks
            + self.quirks.weight
        )

    @property
    def last(self) -> int:
        """The number of the last step (the `end` step)."""
        return len(self.trace.steps) - 1

    def clamp(self, step: int) -> int:
        """A step number within the trace."""
        return max(0, min(step, self.last))

    def next_rule(self, step: int, rule: str) -> int | None:
        """The first step after `step` with a fragment resolved by `rule`."""
        return _after(self.rule_steps.get(rule, []), step)

    def prev_rule(self, step: int, rule: str) -> int | None:
        """The last step before `step` with a fragment resolved by `rule`."""
        return _before(self.rule_steps.get(rule, []), step)

    def next_anomaly(self, step: int) -> int | None:
        """The first step after `step` that reported an anomaly."""
        return _after(self.anomaly_steps, step)

    def prev_anomaly(self, step: int) -> int | None:
        """The last step before `step` that reported an anomaly."""
        return _before(self.anomaly_steps, step)

    def long_text(self, block: Block) -> LongText:
        """The block's pieces with their offsets and parse marks (made once, then shared)."""
        found = self.texts.get(id(block))
        if found is None:
            found = self.texts.setdefault(id(block), LongText(block.pieces))
        return found

    def found_texts(self) -> dict[int, LongText]:
        """What was found of the tool-call blocks' long texts (offsets, parse marks), by the
        block's place in `trace.blocks`, holding none of their pieces (`adopt_texts`)."""
        texts = self.texts
        return {
            number: found.over([])
            for number, block in enumerate(self.trace.blocks)
            if (found := texts.get(id(block))) is not None
        }

    def adopt_texts(self, found: dict[int, LongText]) -> None:
        """Take over what `found_texts` gave of another view of the same trace (this view as
        loaded, that one as assembled): a text whose pieces differ in count or length is
        left to be found again."""
        blocks = self.trace.blocks
        for number, text in found.items():
            pieces = blocks[number].pieces if number < len(blocks) else []
            count = len(pieces)
            if count and len(text.ends) == count and text.length(count) == sum(map(len, pieces)):
                self.texts[id(blocks[number])] = text.over(pieces)

    def long_blocks(self) -> tuple[Block, ...]:
        """The blocks whose whole text is long (`arguments.LONG` characters or more)."""
        return tuple(
            block
            for block in self.trace.blocks
            if block.pieces and self.long_text(block).length(len(block.pieces)) >= LONG
        )

    def warm(self) -> None:
        """Find each long block's parse marks now (a bisection of about 40 parses of its text:
        0.9 s for a 1 MB argument, seconds at a million chunks) rather than in the first step
        request that shows its state."""
        for block in self.long_blocks():
            self.long_text(block).marks()

    def blocks_open_at(self, step: int) -> int:
        """How many tool-call blocks had opened by the end of `step`."""
        return bisect_right(self.open_steps, step)


def _after(steps: list[int] | array[int], step: int) -> int | None:
    at = bisect_right(steps, step)
    return steps[at] if at < len(steps) else None


def _before(steps: list[int] | array[int], step: int) -> int | None:
    at = bisect_left(steps, step)
    return steps[at - 1] if at > 0 else None
