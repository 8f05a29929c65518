"""What the routes ask for, computed once and cached: stored streams, readings, traces.

Reading a 100,000-chunk stream and assembling it take about a second each, so a reading is
cached per stream and a trace per (stream, canonical options), in one LRU bounded in bytes
(`Settings.cache_bytes`; each value's size is estimated from its stream's size or its trace's
step and fragment counts, measured with tracemalloc). Concurrent misses for one key compute
once, and at most `HEAVY_AT_ONCE` readings or assemblies run at a time in one worker, so that
what is being computed stays bounded too. A `TraceView` adds the indexes that stepping needs
(steps per rule, anomaly steps, runs of alike steps, the overview's buckets, the anomalies
grouped by code), built once in linear time, so that every step afterwards costs a bisect and
the rendering of one window. A HAR file can hold several streams: a reading is keyed by
(stream, entry), `None` being the reader's default entry.

Nothing here is shared between worker processes except through the store: a cache is only
a shortcut to what the stored bytes give again.
"""

from __future__ import annotations

import copy
import logging
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from webapp.assembler import assemble
from webapp.compare import Comparison, compare
from webapp.options import Options
from webapp.readers import decode, read
from webapp.records import Payloads, ReaderError, ReadResult
from webapp.rules import RULE_NAMES, Policy
from webapp.settings import Settings
from webapp.storage import Storage, StreamInfo, open_storage
from webapp.trace import Anomaly, Block, Trace
from webapp.web.anomaly_groups import Group, groups
from webapp.web.cache import Memo
from webapp.web.example_source import example_info, example_of
from webapp.web.ingest import Prepared
from webapp.web.overview import Bucket, buckets
from webapp.web.runs import Runs, find_runs

log = logging.getLogger(__name__)
T = TypeVar("T")

HEAVY_AT_ONCE = 2
"""Readings, assemblies and comparisons one worker runs at the same time."""
READING_PER_BYTE = 11
"""A reading's heap per stored byte (tracemalloc: 6-10x on SSE, more with tiny fragments)."""
PAYLOADS_PER_BYTE = 2
"""The same for a plain SSE stream kept as its payload texts (`Payloads`: 1.3x, 2.5x while read)."""
COMPARISON_PER_BYTE = 14
"""A comparison's heap per stored byte (two traces and their alignment: 5-13x measured)."""
TRACE_PER_STEP = 700
TRACE_PER_FRAGMENT = 350
"""A trace's heap per step and per fragment (measured: 530-660 and about 310 bytes)."""


class NotFound(LookupError):
    """No stream has this id."""


class Unreadable(ValueError):
    """A stored stream no longer reads (or does not assemble); the message says why."""


@dataclass(frozen=True, slots=True)
class Reading:
    """A stored stream and what its reader found."""

    info: StreamInfo
    result: ReadResult


@dataclass(slots=True)
class TraceView:
    """A trace plus the indexes for stepping: steps per rule, anomalies per step."""

    reading: Reading
    options: Options
    trace: Trace
    rule_steps: dict[str, list[int]] = field(default_factory=dict)
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

    def __post_init__(self) -> None:
        self.rule_steps = {name: [] for name in RULE_NAMES}
        for step in self.trace.steps:
            self.fragments += len(step.fragments)
            for rule in {fragment.rule for fragment in step.fragments}:
                self.rule_steps.setdefault(rule, []).append(step.step)
        self.anomalies_by_step = self.trace.anomalies_by_step()
        self.anomaly_steps = sorted(self.anomalies_by_step)
        self.open_steps = [block.opened_step for block in self.trace.blocks]
        self.others = [block for block in self.trace.content if block.kind != "toolCall"]
        self.buckets = buckets(self.trace, self.anomalies_by_step)
        self.anomaly_groups = groups(self.trace)
        self.runs = find_runs(self.trace, self.anomaly_steps)

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
        return TRACE_PER_STEP * len(self.trace.steps) + TRACE_PER_FRAGMENT * self.fragments

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

    def blocks_open_at(self, step: int) -> int:
        """How many tool-call blocks had opened by the end of `step`."""
        return bisect_right(self.open_steps, step)


def _after(steps: list[int], step: int) -> int | None:
    at = bisect_right(steps, step)
    return steps[at] if at < len(steps) else None


def _before(steps: list[int], step: int) -> int | None:
    at = bisect_left(steps, step)
    return steps[at - 1] if at > 0 else None


def weigh(value: object) -> int:
    """The estimated size in bytes of a cached reading, trace or comparison."""
    if isinstance(value, TraceView):
        return value.weight
    if isinstance(value, Reading):
        plain = isinstance(value.result.records, Payloads)
        return (PAYLOADS_PER_BYTE if plain else READING_PER_BYTE) * value.info.size
    if isinstance(value, _Compared):
        return COMPARISON_PER_BYTE * value.size
    return 1


@dataclass(frozen=True, slots=True)
class _Compared:
    comparison: Comparison
    size: int


class Service:
    """The store and the cache in front of the core."""

    def __init__(self, settings: Settings) -> None:
        self.storage: Storage = open_storage(settings.db)
        self.cache: Memo[Hashable, object] = Memo(settings.cache_bytes, weigh)
        self._heavy = threading.BoundedSemaphore(HEAVY_AT_ONCE)

    def _cached(self, key: Hashable, kind: type[T], make: Callable[[], T]) -> T:
        value = self.cache.get(key, make)
        assert isinstance(value, kind)
        return value

    def info(self, stream_id: str) -> StreamInfo:
        """The stored stream's record (a built-in example's for `example:KEY`), or NotFound."""
        example = example_of(stream_id)
        if example is not None:
            return example_info(example.key)
        info = self.storage.info(stream_id) if _plausible(stream_id) else None
        if info is None:
            raise NotFound(stream_id)
        return info

    def raw(self, stream_id: str) -> bytes:
        """The stored bytes (a built-in example's for `example:KEY`), or NotFound."""
        example = example_of(stream_id)
        if example is not None:
            return example.data()
        raw = self.storage.raw(stream_id) if _plausible(stream_id) else None
        if raw is None:
            raise NotFound(stream_id)
        return raw

    def store(
        self,
        prepared: Prepared,
        *,
        title: str,
        input_format: str = "auto",
        delete_hash: str = "",
        parent: str = "",
    ) -> StreamInfo:
        """Store a prepared stream; its reading is cached so that opening it reads nothing."""
        info = self.storage.add(
            prepared.raw,
            title=title,
            format=prepared.result.format,
            input_format=input_format,
            redactions=prepared.redactions,
            delete_hash=delete_hash,
            parent=parent,
        )
        self._cached(("reading", info.id, None), Reading, lambda: Reading(info, prepared.result))
        return info

    def reading(self, stream_id: str, har_entry: int | None = None) -> Reading:
        """The stream read again from its stored bytes (cached); `har_entry` picks a HAR's entry."""
        info = self.info(stream_id)
        reading = self._cached(
            ("reading", stream_id, har_entry), Reading, lambda: self._read(info, har_entry)
        )
        return reading if reading.info == info else Reading(info, reading.result)

    def _read(self, info: StreamInfo, har_entry: int | None) -> Reading:
        raw = self.raw(info.id)
        with self._heavy:
            try:
                result = read(decode(raw), info.input_format, har_entry=har_entry)
            except ReaderError as error:
                raise Unreadable(str(error)) from error
        return Reading(info, result)

    def view(self, stream_id: str, options: Options, har_entry: int | None = None) -> TraceView:
        """The stream assembled under `options`, with its stepping indexes (cached)."""
        canon = options.canonical()
        info = self.info(stream_id)  # a deleted stream is gone even while its trace is cached

        def make() -> TraceView:
            return self._assemble(self.reading(stream_id, har_entry), canon)

        view = self._cached(("trace", stream_id, har_entry, canon), TraceView, make)
        if view.reading.info != info:  # renamed since: the store's record is the truth
            view = copy.copy(view)
            view.reading = Reading(info, view.reading.result)
        return view if options == canon else view.as_asked(options)

    def delete(self, stream_id: str) -> bool:
        """Remove a stream, its notes and artefacts, and forget what this worker cached of it."""
        gone = self.storage.delete(stream_id) if _plausible(stream_id) else False
        self.cache.discard(lambda key: isinstance(key, tuple) and key[1:2] == (stream_id,))
        return gone

    def _assemble(self, reading: Reading, options: Options) -> TraceView:
        with self._heavy:
            try:
                trace = assemble(reading.result.records, options)
            except Exception as error:  # a core bug must not become a 500 for the user
                log.exception("assembling stream %s failed", reading.info.id)
                raise Unreadable(f"the assembler failed on this stream: {error!r}") from error
            return TraceView(reading, options, trace)

    def comparison(
        self,
        stream_id: str,
        options: Options,
        left: Policy,
        right: Policy,
        har_entry: int | None = None,
    ) -> Comparison:
        """The stream under two policies, aligned by step (cached)."""
        canon = options.canonical()
        self.info(stream_id)

        def make() -> _Compared:
            reading = self.reading(stream_id, har_entry)
            with self._heavy:
                try:
                    made = compare(reading.result.records, canon, left=left, right=right)
                except Exception as error:  # a core bug must not become a 500 for the user
                    log.exception("comparing stream %s failed", stream_id)
                    raise Unreadable(f"the comparison failed on this stream: {error!r}") from error
            return _Compared(made, reading.info.size)

        key = ("comparison", stream_id, har_entry, canon, left, right)
        return self._cached(key, _Compared, make).comparison

    def close(self) -> None:
        """Close the store."""
        self.storage.close()


def _plausible(stream_id: str) -> bool:
    return 0 < len(stream_id) <= 64 and all(c.isalnum() or c in "-_" for c in stream_id)
