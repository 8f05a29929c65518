"""What the routes ask for, computed once and cached: stored streams, readings, traces.

Reading a long stream and assembling it each take a while (bench/README.md), so a trace is
cached per (stream, canonical options), in one LRU bounded in bytes (`Settings.cache_bytes`;
each value's size is estimated from its trace's step and fragment counts or its bytes'
length). A cached stream is its raw bytes (`RawLines`, fetched once) and its trace's columns:
never its parsed records. A step's record, for the detail panel, is read again from its own
lines of the raw bytes (SSE); other formats, and pages that need every record (the clients'
views, the playground's copy, the fixture), read them on demand (`reading`, kept under the
budget with its honest weight). Concurrent misses for one key compute once, and at most
`HEAVY_AT_ONCE` readings or assemblies run at a time in one worker, and the views being made
(or rendered, outside the cache) share a byte budget of their own
(`webapp.web.backend.inflight`), so that what is being computed stays bounded too.

A trace view is kept in the store too, beside its stream (`webapp.web.backend.stored`, an artefact
per stream, canonical options and HAR entry): on a miss a worker loads it instead of reading
and assembling, and a stream of `STORE_FROM` bytes or more gets one after its first assembly.
An artefact that does not load (damaged, or of another format) is assembled again and
replaced; deleting the stream deletes its artefacts.

A `TraceView` adds the indexes that stepping needs (steps per rule, anomaly steps, runs of
alike steps, the overview's buckets, the anomalies grouped by code), built once from the
columns in linear time, so that every step afterwards costs a bisect and the rendering of one
window. A HAR file can hold several streams: a reading is keyed by (stream, entry), `None`
being the reader's default entry.

Nothing here is shared between worker processes except through the store: a cache is only
a shortcut to what the stored bytes give again.
"""

from __future__ import annotations

import copy
import logging
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TypeVar

from webapp.core.assembler import assemble
from webapp.core.columns import NONE, STEP_KINDS
from webapp.core.options import Options
from webapp.core.readers import decode, read
from webapp.core.readers.sse import read_sse
from webapp.core.records import Payloads, ReaderError, ReadResult, Record
from webapp.core.rules import RULE_NAMES, Policy
from webapp.core.trace import Anomaly, Block, Trace
from webapp.settings import Settings
from webapp.storage import Storage, StreamInfo, open_storage
from webapp.triage.compare import Comparison, compare
from webapp.web.backend import stored
from webapp.web.backend.anomaly_groups import Group, groups
from webapp.web.backend.arguments import LongText
from webapp.web.backend.cache import Memo
from webapp.web.backend.example_source import example_info, example_of
from webapp.web.backend.inflight import InFlight, Ticket, holding
from webapp.web.backend.ingest import Prepared
from webapp.web.backend.overview import Bucket, buckets
from webapp.web.backend.rawlines import RawLines
from webapp.web.backend.runs import Runs, find_runs

log = logging.getLogger(__name__)
T = TypeVar("T")

HEAVY_AT_ONCE = 2
"""Readings, assemblies and comparisons of large streams one worker runs at the same time."""
LIGHT_BELOW = 256 * 1024
"""A stream smaller than this is read and assembled without waiting for that bound."""
READING_PER_BYTE = 11
"""A reading's heap per stored byte (tracemalloc; more with tiny fragments: bench/README.md)."""
PAYLOADS_PER_BYTE = 2
"""The same for a plain SSE stream kept as its payload texts (`Payloads`; more while read)."""
COMPARISON_PER_BYTE = 14
"""A comparison's heap per stored byte (two traces and their alignment; tracemalloc)."""
VIEW_BASE = 16_000
TRACE_PER_STEP = 120
TRACE_PER_FRAGMENT = 100
"""A trace view's heap: a base, then per step and per fragment (tracemalloc, columns and
indexes, on a short stream and on a long one of small fragments)."""
TRACE_PER_BLOCK = 800
"""And per tool-call block: its pieces, steps and histories, its verdicts (tracemalloc: exact-key
on bare continuations opens a phantom block for each, against one block under adr-0019)."""
VIEW_PER_BYTE = 6
"""The heap of a view being made per stored byte, at worst (exact-key on bare continuations, at
its peak); what a request reserves before making one."""
MAKING_WAIT = 60.0
"""Seconds a request waits for room to make a view before it is answered 503."""
RECALLED = 16
"""Steps' records a view keeps once read again (per view: the steps being looked at)."""
PREFIX_BYTES = 1024 * 1024
"""How much of a stream's start is fetched alone to show its first steps."""
STORE_FROM = 256 * 1024
"""A stream of this many bytes or more keeps its assembled trace view in the store (below it,
reading and assembling again are quick; above, loading is much faster than both)."""


class NotFound(LookupError):
    """No stream has this id."""


class Unreadable(ValueError):
    """A stored stream no longer reads (or does not assemble); the message says why."""


@dataclass(frozen=True, slots=True)
class Reading:
    """A stored stream and what its reader found, records included (read on demand)."""

    info: StreamInfo
    result: ReadResult


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
    recall: Callable[[int], Record | None] = _no_record
    """A step's record, read again from the stream's bytes (None past the records)."""
    texts: dict[int, LongText] = field(default_factory=dict)
    """Blocks' texts with their offsets and parse marks, by `id(block)`, made on first use."""

    @classmethod
    def build(
        cls,
        source: Source,
        options: Options,
        trace: Trace,
        made: stored.Stored | None = None,
    ) -> TraceView:
        """The view with its indexes: computed from the columns, or taken from `made`."""
        view = cls(source, options, trace)
        view.fragments = len(trace.columns.fragment_rule)
        view.anomalies_by_step = trace.anomalies_by_step()
        view.anomaly_steps = sorted(view.anomalies_by_step)
        view.open_steps = [block.opened_step for block in trace.blocks]
        view.others = [block for block in trace.content if block.kind != "toolCall"]
        view.anomaly_groups = groups(trace)
        if made is None:
            view.rule_steps = steps_by_rule(trace)
            view.buckets = buckets(trace, view.anomalies_by_step)
            view.runs = find_runs(trace, view.anomaly_steps)
        else:
            view.rule_steps, view.buckets, view.runs = made.rule_steps, made.buckets, made.runs
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
        steps, blocks = len(self.trace.columns), len(self.trace.blocks)
        return (
            VIEW_BASE
            + TRACE_PER_STEP * steps
            + TRACE_PER_FRAGMENT * self.fragments
            + TRACE_PER_BLOCK * blocks
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

    def blocks_open_at(self, step: int) -> int:
        """How many tool-call blocks had opened by the end of `step`."""
        return bisect_right(self.open_steps, step)


def _after(steps: list[int] | array[int], step: int) -> int | None:
    at = bisect_right(steps, step)
    return steps[at] if at < len(steps) else None


def _before(steps: list[int] | array[int], step: int) -> int | None:
    at = bisect_left(steps, step)
    return steps[at - 1] if at > 0 else None


def steps_by_rule(trace: Trace) -> dict[str, array[int]]:
    """For each rule, the steps with a fragment it resolved, in order (from the columns)."""
    columns = trace.columns
    found = [array("q") for _ in RULE_NAMES]
    rules, step_fragment = columns.fragment_rule, columns.step_fragment
    total, rows = len(columns), len(columns.fragment_rule)
    for step in range(total):
        start = step_fragment[step]
        stop = step_fragment[step + 1] if step + 1 < total else rows
        if stop - start == 1:
            found[rules[start]].append(step)
        elif stop > start:
            for code in set(rules[start:stop]):
                found[code].append(step)
    return dict(zip(RULE_NAMES, found, strict=True))


def _sliceable(found: ReadResult) -> bool:
    """Whether each record can be read again from its own lines: plain SSE, nothing mapped."""
    return found.format == "sse" and not {"container", "mapped_from"} & found.meta.keys()


def _from_lines(lines: RawLines, line: int, stop: int | None, kind: str) -> Record | None:
    """The SSE record starting on `line`, read from its lines alone (None if it is not that)."""
    records = read_sse(lines.text(line, stop), line).records
    first = records[0] if records else None  # a plain stream's records are made on access
    if first is not None and first.line == line and first.kind == kind:
        return first
    return None


def weigh(value: object) -> int:
    """The estimated size in bytes of a cached reading, trace, stream's bytes or comparison."""
    if isinstance(value, TraceView):
        return value.weight
    if isinstance(value, RawLines):
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
        self._inflight = InFlight(settings.cache_bytes, MAKING_WAIT)
        """Views being made or held by their requests: at most the cache's bytes again."""
        self._keeper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamviz-keep")
        self._keeping: set[Future[None]] = set()
        self._keeping_lock = threading.Lock()
        self.heavy_done = 0
        """How many pieces of heavy work have ended (the app trims the heap after a request
        during which one did: `webapp.tuning.trim`)."""

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
        """Store a prepared stream; its reading is cached so that opening it reads nothing (the
        first view assembles from it, then lets its records go)."""
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
        """The stream read again from its stored bytes, every record included (cached under
        the budget with its full weight); `har_entry` picks a HAR's entry."""
        info = self.info(stream_id)
        reading = self._cached(
            ("reading", stream_id, har_entry), Reading, lambda: self._read(info, har_entry)
        )
        return reading if reading.info == info else Reading(info, reading.result)

    def _making(self, info: StreamInfo, per_byte: int) -> AbstractContextManager[Ticket | None]:
        """A ticket from the budget for views being made (`webapp.web.backend.inflight`), for a
        large stream: an estimate of `per_byte` heap bytes per stored byte, settled once made."""
        if info.size < LIGHT_BELOW or example_of(info.id) is not None:
            return nullcontext()
        return holding(self._inflight, per_byte * info.size)

    def _heavy_for(self, info: StreamInfo) -> AbstractContextManager[object]:
        """The bound on heavy work at once, for a large stream; none for a small one, whose
        work takes milliseconds and must not queue behind seconds of someone else's."""
        return self._heavy_work() if info.size >= LIGHT_BELOW else nullcontext()

    @contextmanager
    def _heavy_work(self) -> Iterator[None]:
        with self._heavy:
            try:
                yield
            finally:
                self.heavy_done += 1  # a lost update under a race only skips one trim

    def _read(self, info: StreamInfo, har_entry: int | None) -> Reading:
        raw = self.raw_lines(info.id).data
        text = raw if isinstance(raw, str) else decode(raw)
        with self._heavy_for(info):
            try:
                result = read(text, info.input_format, har_entry=har_entry)
            except ReaderError as error:
                raise Unreadable(str(error)) from error
        return Reading(info, result)

    def raw_lines(self, stream_id: str) -> RawLines:
        """The stored bytes with their line index (cached: fetched from the store once)."""
        return self._cached(("raw", stream_id), RawLines, lambda: RawLines(self.raw(stream_id)))

    def _lines_through(self, stream_id: str, line: int | None) -> RawLines:
        """Stored bytes that hold line `line`'s start (None: the last line's end): the whole
        stream's if cached, else its first `PREFIX_BYTES` when the line starts in them (a
        stream opened after a restart shows its first steps without fetching all its bytes),
        else the whole stream's."""
        whole = self.cache.peek(("raw", stream_id))
        if isinstance(whole, RawLines) or example_of(stream_id) is not None:
            return self.raw_lines(stream_id)

        def head() -> RawLines:
            found = self.storage.raw_prefix(stream_id, PREFIX_BYTES)
            if found is None:
                raise NotFound(stream_id)
            return RawLines(found, complete=len(found) < PREFIX_BYTES)

        prefix = self._cached(("prefix", stream_id), RawLines, head)
        if prefix.complete:
            return prefix
        if isinstance(prefix.data, bytes) and line is not None and prefix.start(line) is not None:
            return prefix
        return self.raw_lines(stream_id)

    def view(self, stream_id: str, options: Options, har_entry: int | None = None) -> TraceView:
        """The stream assembled under `options`, with its stepping indexes (cached; loaded
        from the store when a worker kept it there, else assembled and perhaps kept)."""
        canon = options.canonical()
        info = self.info(stream_id)  # a deleted stream is gone even while its trace is cached

        def make() -> TraceView:
            with self._making(info, VIEW_PER_BYTE) as ticket:
                view = self._load(info, canon, har_entry) or self._assemble(info, canon, har_entry)
                if ticket is not None:
                    ticket.settle(view.weight)
            view.recall = self._recall(stream_id, har_entry, view.source, view.trace)
            return view

        view = self._cached(("trace", stream_id, har_entry, canon), TraceView, make)
        return _as_asked(view, info, options)

    def cached_view(self, stream_id: str, options: Options) -> TraceView | None:
        """The view under `options` if this worker has it cached, else None (making nothing)."""
        info = self.info(stream_id)
        view = self.cache.peek(("trace", stream_id, None, options.canonical()))
        return _as_asked(view, info, options) if isinstance(view, TraceView) else None

    def _load(self, info: StreamInfo, options: Options, har_entry: int | None) -> TraceView | None:
        """The view kept in the store, or None (none kept, or one that no longer loads)."""
        if example_of(info.id) is not None or info.size < STORE_FROM:
            return None
        data = self.storage.artefact(info.id, options.key(), stored.kind(har_entry))
        if data is None:
            return None
        with self._heavy_for(info):
            try:
                made = stored.unpack(data)
            except stored.StoredError as error:
                log.warning("stream %s: its stored trace does not load (%s)", info.id, error)
                return None
        source = Source(info, made.found, made.records, har_entry)
        return TraceView.build(source, options, made.trace, made)

    def _assemble(self, info: StreamInfo, options: Options, har_entry: int | None) -> TraceView:
        """Read (or take the reading an upload left) and assemble; keep the view in the store."""
        key = ("reading", info.id, har_entry)
        kept = self.cache.peek(key)
        # One reading for concurrent misses (cached under the byte bound), not one per request.
        reading = kept if isinstance(kept, Reading) else self.reading(info.id, har_entry)
        result = reading.result
        with self._heavy_for(info):
            try:
                trace = assemble(result.records, options)
            except Exception as error:  # a core bug must not become a 500 for the user
                log.exception("assembling stream %s failed", info.id)
                raise Unreadable(f"the assembler failed on this stream: {error!r}") from error
            source = Source(info, replace(result, records=()), len(result.records), har_entry)
            view = TraceView.build(source, options, trace)
        if example_of(info.id) is None and info.size >= STORE_FROM:
            self._keep_soon(view)
        if kept is not None:  # an upload's records: its trace is made, they go
            self.cache.discard(lambda cached: cached == key)
        return view

    def _keep_soon(self, view: TraceView) -> None:
        """Keep the view in the store from a thread of its own, so that the page that made it
        is answered without waiting for the packing (slow on a long stream); under the
        bound on heavy work, since packing a large trace takes memory too."""

        def keep() -> None:
            with self._heavy_work():
                self._keep(view)

        with self._keeping_lock:
            self._keeping = {done for done in self._keeping if not done.done()}
            try:
                self._keeping.add(self._keeper.submit(keep))
            except RuntimeError:  # closing: the next worker assembles it again
                log.info("stream %s: not stored, the server is stopping", view.source.info.id)

    def settle(self) -> None:
        """Wait until every view being kept is in the store (tests, and `close`)."""
        with self._keeping_lock:
            pending = list(self._keeping)
        wait(pending)

    def _keep(self, view: TraceView) -> None:
        """Keep the view in the store beside its stream (a failure only costs a reassembly)."""
        info = view.source.info
        try:
            data = view.packed()
            if data is not None:
                kind = stored.kind(view.source.har_entry)
                self.storage.put_artefact(info.id, view.options.key(), kind, data)
        except Exception:  # the stream deleted meanwhile, the store busy: not the user's error
            log.warning("stream %s: its trace was not stored", info.id, exc_info=True)

    def _recall(
        self, stream_id: str, har_entry: int | None, source: Source, trace: Trace
    ) -> Callable[[int], Record | None]:
        """How the view gets a step's record: from the step's own lines of the raw bytes when
        the format allows, else from a whole reading (on demand)."""
        columns = trace.columns
        sliceable = _sliceable(source.found)

        def recall(step: int) -> Record | None:
            if sliceable:
                line = columns.step_line[step]
                after = columns.step_line[step + 1] if step + 1 < source.records else None
                if line != NONE and after != NONE:
                    kind = STEP_KINDS[columns.step_kind[step]]
                    lines = self._lines_through(stream_id, after)
                    found = _from_lines(lines, line, after, kind)
                    if found is not None:
                        return found
            records = self.reading(stream_id, har_entry).result.records
            return records[step] if step < len(records) else None

        return lru_cache(maxsize=RECALLED)(recall)  # a page asks for its step's record twice

    def delete(self, stream_id: str) -> bool:
        """Remove a stream, its notes and artefacts, and forget what this worker cached of it."""
        gone = self.storage.delete(stream_id) if _plausible(stream_id) else False
        self.cache.discard(lambda key: isinstance(key, tuple) and key[1:2] == (stream_id,))
        return gone

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
        info = self.info(stream_id)

        def make() -> _Compared:
            with self._making(info, COMPARISON_PER_BYTE):
                reading = self.reading(stream_id, har_entry)
                with self._heavy_for(reading.info):
                    try:
                        made = compare(reading.result.records, canon, left=left, right=right)
                    except Exception as error:  # a core bug must not become a 500 for the user
                        log.exception("comparing stream %s failed", stream_id)
                        raise Unreadable(
                            f"the comparison failed on this stream: {error!r}"
                        ) from error
                return _Compared(made, reading.info.size)

        key = ("comparison", stream_id, har_entry, canon, left, right)
        return self._cached(key, _Compared, make).comparison

    def close(self) -> None:
        """Finish keeping what is being kept, then close the store."""
        self._keeper.shutdown(wait=True)
        self.storage.close()


def _as_asked(view: TraceView, info: StreamInfo, options: Options) -> TraceView:
    """A cached view as asked for: with the stream's record as stored now (renamed since?) and
    the options as the user gave them."""
    if view.source.info != info:  # the store's record is the truth
        view = copy.copy(view)
        view.source = replace(view.source, info=info)
    return view if options == view.options else view.as_asked(options)


def _plausible(stream_id: str) -> bool:
    return 0 < len(stream_id) <= 64 and all(c.isalnum() or c in "-_" for c in stream_id)
