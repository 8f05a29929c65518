"""What the routes ask for, computed once and cached: stored streams, readings, traces.

Reading a long stream and assembling it each take a while (bench/README.md), so a trace is
cached per (stream, canonical options), in one LRU bounded in bytes (`Settings.cache_bytes`;
each value's size is estimated from its trace's step and fragment counts or its bytes'
length). A cached stream is its raw bytes (`RawLines`, fetched once; a long one's copied to a
temporary file, only its line index in memory, and read from the store by offset until the
keeper has written that file) and its trace; its
parsed records only as a reading (`reading`, kept under the budget with its honest weight):
an upload's, for its first views, or one that a page needing every record made (the clients'
views, the playground's copy, the fixture, the comparison). A step's record, for the detail
panel, comes from a cached reading, else is read again from its own lines of the raw bytes
(SSE), else from a reading made for it. Concurrent misses for one key compute once, and at most
`HEAVY_AT_ONCE` readings or assemblies run at a time in one worker, and the views being made
(or rendered, outside the cache) share a byte budget of their own
(`webapp.web.backend.memory.inflight`), so that what is being computed stays bounded too.

A trace view is kept in the store too, beside its stream (`webapp.web.backend.trace.stored`, an
artefact per stream, canonical options and HAR entry): on a miss a worker loads it instead of
reading and assembling, and a stream of `STORE_FROM` bytes or more gets one after its first
assembly. An artefact that does not load (damaged, or of another format) is assembled again and
replaced; deleting the stream deletes its artefacts.

A view is a `webapp.web.backend.trace.view.TraceView`: the trace and its stepping indexes. A
HAR file can hold several streams: a reading is keyed by (stream, entry), `None` being the
reader's default entry. The bounds on work in flight are `webapp.web.backend.memory.inflight.Gate`;
keeping a view in the store after its page is `webapp.web.backend.trace.keeper`.

Nothing here is shared between worker processes except through the store: a cache is only
a shortcut to what the stored bytes give again. Every key of a stream's cached values ends with
the stream's size as stored when they were made: a capture grows while it is live (its bytes
only ever appended), so a worker that made a view of its first bytes makes another once more
have come, whichever worker recorded them. A view is kept in the store only of a stream no
longer live and still the size it was made of (`Storage.put_artefact`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TypeVar

from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read, read_bytes
from webapp.core.records import Payloads, ReaderError, ReadResult, Record
from webapp.core.rules import Policy
from webapp.core.trace import Trace
from webapp.settings import Settings
from webapp.storage import Storage, StreamInfo, open_storage, parse_location
from webapp.storage.capture import Captures
from webapp.storage.store import Deleted
from webapp.triage.compare import Comparison, compare
from webapp.web.backend.example_source import example_info, example_of
from webapp.web.backend.intake.ingest import Prepared
from webapp.web.backend.memory.cache import Memo
from webapp.web.backend.memory.inflight import Gate, Ticket
from webapp.web.backend.rawlines import PIECE, RawLines, by_lines, is_line
from webapp.web.backend.trace import stored
from webapp.web.backend.trace.arguments import LongText
from webapp.web.backend.trace.keeper import Keeper
from webapp.web.backend.trace.view import Source, TraceView

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
VIEW_PER_BYTE = 6
"""The heap of a view being made per stored byte, at worst (exact-key on bare continuations, at
its peak); what a request reserves before making one."""
MAKING_WAIT = 60.0
"""Seconds a request waits for room to make a view before it is answered 503."""
RECALLED = 16
"""Steps' records a view keeps once read again (per view: the steps being looked at)."""
PREFIX_BYTES = 1024 * 1024
"""How much of a stream's start is fetched alone to show its first steps."""
SPILL_FROM = 8 * 1024 * 1024
"""A stream of this many bytes or more is kept, for its steps' records, in a temporary file
rather than in memory (`RawLines.spilled`); only its line index is in memory."""
SPILLED_SHARE = 8
"""A spilled stream's file counts this fraction of its bytes in the cache's budget (its index
is all it holds in memory, but its file holds disk, and the page cache what is read of it):
the files a worker keeps take at most this many times `--cache-mb` of disk. A file counts half
`SPILL_FROM` at least, so that they are a few open files (128 at most under the default
budget), not hundreds."""
STORE_FROM = 256 * 1024
"""A stream of this many bytes or more keeps its assembled trace view in the store (below it,
reading and assembling again are quick; above, loading is much faster than both)."""


class NotFound(LookupError):
    """No stream has this id."""


class Gone(NotFound):
    """The stream with this id was deleted (its id is kept, none of its content)."""

    def __init__(self, stream_id: str, deleted: Deleted) -> None:
        super().__init__(stream_id)
        self.deleted = deleted


class Unreadable(ValueError):
    """A stored stream no longer reads (or does not assemble); the message says why."""


@dataclass(frozen=True, slots=True)
class Reading:
    """A stored stream and what its reader found, records included (read on demand)."""

    info: StreamInfo
    result: ReadResult


def weigh(value: object) -> int:
    """The estimated size in bytes of a cached reading, trace, stream's bytes or comparison."""
    if isinstance(value, TraceView):
        return value.weight
    if isinstance(value, RawLines):  # a spilled stream's file: an eighth of it, for the disk
        filed = max(value.size // SPILLED_SHARE, SPILL_FROM // 2) if value.held_out else 0
        return value.weight + filed
    if isinstance(value, Reading):
        plain = isinstance(value.result.records, Payloads)
        return (PAYLOADS_PER_BYTE if plain else READING_PER_BYTE) * value.info.size
    if isinstance(value, _Compared):
        return COMPARISON_PER_BYTE * value.size
    weight = getattr(value, "weight", None)  # a view's timing, say (`backend.capture.timing`)
    return weight if isinstance(weight, int) else 1


@dataclass(frozen=True, slots=True)
class Assembled:
    """A stored stream assembled under the default options, with no stepping indexes: what
    the library indexes of a capture as it ends (`Service.assembled`)."""

    info: StreamInfo
    found: ReadResult
    """What the reader found, its records dropped."""
    trace: Trace


@dataclass(frozen=True, slots=True)
class _Compared:
    comparison: Comparison
    size: int


class Service:
    """The store and the cache in front of the core."""

    def __init__(self, settings: Settings) -> None:
        self.storage: Storage = open_storage(settings.db)
        self.cache: Memo[Hashable, object] = Memo(settings.cache_bytes, weigh)
        self.gate = Gate(HEAVY_AT_ONCE, settings.cache_bytes, MAKING_WAIT)
        """Views being made or held by their requests take at most the cache's bytes again."""
        self._keeper = Keeper(lambda view: self._keep(view), self.gate.heavy_work)
        location = parse_location(settings.db)
        self._spill_to = str(location.path().parent) if location.dialect == "sqlite" else None
        """Where long streams' bytes are spilled (`RawLines.spilled`): beside a SQLite store,
        else the system's temporary folder."""
        self.max_bytes = settings.max_bytes
        """What a stored input may hold once read (a cassette's bodies inflated, its aliases
        written out), as at its upload."""

    @property
    def heavy_done(self) -> int:
        """How many pieces of heavy work have ended (the app trims the heap after a request
        during which one did: `webapp.tuning.trim`)."""
        return self.gate.heavy_done

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
            deleted = self.storage.deleted(stream_id) if _plausible(stream_id) else None
            if deleted is not None:
                raise Gone(stream_id, deleted)
            raise NotFound(stream_id)
        return info

    def raw(self, stream_id: str) -> bytes:
        """The stored bytes (a built-in example's for `example:KEY`), or NotFound."""
        example = example_of(stream_id)
        if example is not None:
            return example.data()
        raw = self.storage.raw(stream_id) if _plausible(stream_id) else None
        if raw is None:
            self.info(stream_id)  # Gone, when it was deleted
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
        """Store a prepared stream; its reading is cached (under the budget, like any other), so
        that its first views read nothing: the page's assembly and step, the other policy's
        view when the minimise form opens, the compare page. (`webapp.web.backend.library.indexing`
        stores and indexes what it holds for the library.)"""
        info = self.storage.add(
            prepared.raw,
            title=title,
            format=prepared.result.format,
            input_format=input_format,
            redactions=prepared.redactions,
            delete_hash=delete_hash,
            parent=parent,
        )
        key = ("reading", info.id, None, info.size)
        self._cached(key, Reading, lambda: Reading(info, prepared.result))
        if info.size >= SPILL_FROM and by_lines(prepared.result):
            self._in_hand(info, prepared.raw)
        return info

    def _in_hand(self, info: StreamInfo, raw: bytes) -> None:
        """A long stream's bytes go to their file from the upload's own, before its page
        answers: read back from the store after it, its first steps waited for them and every
        page asked meanwhile behind them (PostgreSQL 1.6 s at 217 MB; SQLite 0.2 s for the
        index, then the keeper's copy beside the packing; bench/README.md, round ten)."""
        pieces = (raw[at : at + PIECE] for at in range(0, len(raw), PIECE))
        try:
            lines = RawLines.spilled(pieces, self._spill_to)
        except OSError:  # no room for the file: read back from the store when a step needs it
            log.warning("stream %s: its bytes stay in the store", info.id, exc_info=True)
            return
        self._cached(("raw", info.id, info.size), RawLines, lambda: lines)

    def reading(self, stream_id: str, har_entry: int | None = None) -> Reading:
        """The stream read again from its stored bytes, every record included (cached under
        the budget with its full weight); `har_entry` picks a HAR's entry."""
        return self.reading_of(self.info(stream_id), har_entry)

    def reading_of(self, info: StreamInfo, har_entry: int | None = None) -> Reading:
        """The reading of the stream's first `info.size` bytes (all of them, but for a live
        capture that has grown since `info` was read): `reading` for a caller that has read
        the stream's row already."""
        key = ("reading", info.id, har_entry, info.size)
        reading = self._cached(key, Reading, lambda: self._read(info, har_entry))
        return reading if reading.info == info else Reading(info, reading.result)

    def _making(self, info: StreamInfo, per_byte: int) -> AbstractContextManager[Ticket | None]:
        """A ticket from the budget for views being made, for a large stream: an estimate of
        `per_byte` heap bytes per stored byte, settled once made."""
        light = info.size < LIGHT_BELOW or example_of(info.id) is not None
        return self.gate.making(None if light else per_byte * info.size)

    def _heavy_for(self, info: StreamInfo) -> AbstractContextManager[object]:
        """The bound on heavy work at once, for a large stream (not for a small one)."""
        return self.gate.heavy_for(info.size < LIGHT_BELOW)

    def _read(self, info: StreamInfo, har_entry: int | None) -> Reading:
        return self._read_from(self.raw_lines(info), info, har_entry)

    def _read_from(self, lines: RawLines, info: StreamInfo, har_entry: int | None) -> Reading:
        raw = lines.data
        fmt = info.input_format
        with self._heavy_for(info):
            try:
                if isinstance(raw, str):  # a UTF-16 stream, decoded once (`RawLines`)
                    found = read(raw, fmt, har_entry=har_entry, limit=self.max_bytes)
                else:
                    found = read_bytes(raw, fmt, har_entry, self.max_bytes)
            except ReaderError as error:
                raise Unreadable(str(error)) from error
        return Reading(info, found)

    def raw_lines(self, info: StreamInfo) -> RawLines:
        """The stored bytes with their line index (cached: fetched from the store once; a
        long stream's into a file, `RawLines.spilled`, not memory)."""
        return self._cached(("raw", info.id, info.size), RawLines, lambda: self._lines_of(info))

    def _lines_soon(self, info: StreamInfo) -> None:
        """The stream's bytes by line, made now (in the keeper's thread) unless cached: its
        first steps' records come from them once its reading leaves the cache, and a step
        that waited for the copy would hold the view as assembled while it is replaced."""
        self.raw_lines(info)

    def _lines_of(self, info: StreamInfo) -> RawLines:
        """The stream's first `info.size` bytes: in memory when short (or an example), else
        indexed and read from the store until the keeper has copied them to a temporary file
        (`_indexed`, where the store reads by offset cheaply: SQLite), else copied to that
        file in pieces first (PostgreSQL: the file is written in the pass that indexes it)."""
        if info.size < SPILL_FROM or example_of(info.id) is not None:
            return RawLines(self._at(info))
        by_offset = _plausible(info.id) and self.storage.backend.reads_by_offset
        indexed = self._indexed(info) if by_offset else None
        if indexed is not None:
            return indexed
        pieces = self.storage.raw_pieces(info.id, info.size) if _plausible(info.id) else None
        try:
            lines = None if pieces is None else RawLines.spilled(pieces, self._spill_to)
        except OSError:  # no room for the file, say: the bytes are kept in memory
            log.warning("stream %s: its bytes stay in memory", info.id, exc_info=True)
            lines = None
        if lines is None or lines.size < info.size:  # deleted meanwhile? `raw` says so
            return RawLines(self._at(info))
        return lines

    def _indexed(self, info: StreamInfo) -> RawLines | None:
        """The stream's line index, its bytes read from the store by offset until the keeper
        has written them to a file (`RawLines.indexed`: a step's record waited seconds for
        that file at 217 MB); None for bytes that are not one row (a capture's parts), that
        hold a CR, or that are not all there (deleted meanwhile)."""
        stream_id, size = info.id, info.size
        reader = self.storage.range_reader(stream_id)
        if reader is None:
            return None
        pieces = self.storage.raw_pieces(stream_id, size)
        lines = None if pieces is None else RawLines.indexed(pieces, reader)
        if lines is None or lines.size < size:
            reader.close()
            return None

        def spill() -> None:
            try:
                again = self.storage.raw_pieces(stream_id, size)
                if again is None or not lines.spill(again, self._spill_to):
                    log.warning("stream %s: its bytes are read from the store", stream_id)
            finally:
                reader.close()  # SQLite's open blob handle holds back the WAL's checkpoints

        self._keeper.later(spill, f"stream {stream_id}: its bytes to a file")
        return lines

    def _at(self, info: StreamInfo) -> bytes:
        """The stream's first `info.size` bytes (a live capture may have more by now)."""
        raw = self.raw(info.id)
        return raw[: info.size] if len(raw) > info.size else raw

    def _lines_through(self, info: StreamInfo, line: int | None) -> RawLines:
        """Stored bytes that hold line `line`'s start (None: the last line's end): the whole
        stream's if cached, else its first `PREFIX_BYTES` when the line starts in them (a
        stream opened after a restart shows its first steps without fetching all its bytes),
        else the whole stream's."""
        stream_id = info.id
        whole = self.cache.peek(("raw", stream_id, info.size))
        if isinstance(whole, RawLines) or example_of(stream_id) is not None:
            return self.raw_lines(info)

        def head() -> RawLines:
            found = self.storage.raw_prefix(stream_id, min(PREFIX_BYTES, info.size))
            if found is None:
                raise NotFound(stream_id)
            return RawLines(found, complete=len(found) >= info.size)

        prefix = self._cached(("prefix", stream_id, info.size), RawLines, head)
        if prefix.complete:
            return prefix
        if isinstance(prefix.data, bytes) and line is not None and prefix.start(line) is not None:
            return prefix
        return self.raw_lines(info)

    def view(self, stream_id: str, options: Options, har_entry: int | None = None) -> TraceView:
        """The stream assembled under `options`, with its stepping indexes (cached; loaded
        from the store when a worker kept it there, else assembled and perhaps kept)."""
        canon = options.canonical()
        info = self.info(stream_id)  # a deleted stream is gone even while its trace is cached

        def make() -> TraceView:
            with self._making(info, VIEW_PER_BYTE) as ticket:
                loaded = self._load(info, canon, har_entry)
                if loaded is not None:
                    self._warm_soon(loaded)
                view = loaded or self._assemble(info, canon, har_entry)
                if ticket is not None:
                    ticket.settle(view.weight)
            view.recall = self._recall(har_entry, view.source, view.trace)
            return view

        key = ("trace", stream_id, har_entry, canon, info.size, info.end)
        view = self._cached(key, TraceView, make)
        return _as_asked(view, info, options)

    def cached_view(
        self, stream_id: str, options: Options, har_entry: int | None = None
    ) -> TraceView | None:
        """The view under `options` (of HAR entry `har_entry`) if this worker has it cached,
        else None (making nothing)."""
        info = self.info(stream_id)
        key = ("trace", stream_id, har_entry, options.canonical(), info.size, info.end)
        view = self.cache.peek(key)
        return _as_asked(view, info, options) if isinstance(view, TraceView) else None

    def _load(self, info: StreamInfo, options: Options, har_entry: int | None) -> TraceView | None:
        """The view kept in the store, or None (none kept, or one that no longer loads)."""
        if example_of(info.id) is not None or info.size < STORE_FROM:
            return None
        data = self.storage.artefact(info.id, options.key(), stored.kind(har_entry))
        if data is None:
            return None
        with self._heavy_for(info):
            view = _unpacked(info, options, har_entry, data)
        contract = None if view is None else view.trace.contract
        if info.end and contract is not None and contract.end is None:
            return None  # kept before its end was judged: made again
        return view

    def _assemble(self, info: StreamInfo, options: Options, har_entry: int | None) -> TraceView:
        """Read (or take the cached reading, an upload's say) and assemble; keep the view in the
        store. One reading for concurrent misses (cached under the byte bound), not one each."""
        result = self.reading_of(info, har_entry).result
        with self._heavy_for(info):
            trace = _assembled(info, result, options)
            source = Source(info, replace(result, records=()), len(result.records), har_entry)
            view = TraceView.build(source, options, trace)
        self._warm_soon(view)  # first: the steps right after need it, a restart the packing
        # The bytes' file made from an upload's own (`_in_hand`) outlives the reading: the view,
        # kept once this returns, drops the least recently used first.
        self.cache.touch(("raw", info.id, info.size))
        if by_lines(source.found) and info.size >= SPILL_FROM and example_of(info.id) is None:
            lines = f"stream {info.id}: its bytes by line"  # before the keeping: a step that
            self._keeper.later(lambda: self._lines_soon(info), lines)  # waits holds the view
        if example_of(info.id) is None and info.size >= STORE_FROM:
            self._keeper.soon(view)
        return view

    def assembled(self, stream_id: str) -> Assembled:
        """The stream read from its stored bytes and assembled under the default options,
        caching and keeping nothing (`view` caches its bytes, reading and view, and keeps a
        large one's view in the store): what the library indexes of a capture as it ends.
        Most captures are never opened; the first page of one makes its view then."""
        info = self.info(stream_id)
        if example_of(stream_id) is not None:
            view = self.view(stream_id, Options())
            return Assembled(view.source.info, view.source.found, view.trace)
        result = self._read_from(RawLines(self._at(info)), info, None).result
        with self._heavy_for(info):
            trace = _assembled(info, result, Options().canonical())
        return Assembled(info, replace(result, records=()), trace)

    def _warm_soon(self, view: TraceView) -> None:
        """The view's long blocks' parse marks found in the keeper's thread, beside the page,
        not in the first step that shows their state (`TraceView.warm`)."""
        if view.long_blocks():
            self._keeper.later(view.warm, f"stream {view.source.info.id}: its parse marks")

    def later(self, work: Callable[[], None], what: str, *, trim: bool = True) -> None:
        """Run `work` in the background thread that keeps views, one piece of work at a time
        (`Keeper.later`); `settle` waits for it."""
        self._keeper.later(work, what, trim=trim)

    def settle(self) -> None:
        """Wait until every view being kept, and all work handed to `later`, is done (tests,
        and `close`)."""
        self._keeper.settle()

    def _keep(self, held: list[TraceView]) -> None:
        """Keep the view `held` holds in the store beside its stream, taking it out (a failure
        only costs a reassembly): packed, made lighter (`_lighten`), then stored. Each step
        holds two of the three (the view as assembled, its packed bytes, the view loaded from
        them) at most. SQLite writes the bytes into their row a piece at a time (no copy of
        them: `SqliteBackend.insert_artefact`); PostgreSQL's copies of a bound blob come
        beside the lighter view."""
        view = held.pop()
        source, options = view.source, view.options
        info = source.info
        try:
            capture = Captures(self.storage).get(info.id)
            if capture is not None and capture.live:
                return  # of its first bytes: not kept (nor packed)
            data = view.packed()
            if data is None:
                return
            key = ("trace", info.id, source.har_entry, options, info.size, info.end)
            if self.cache.peek(key) is view:  # not evicted, nor made again meanwhile
                texts = view.found_texts()
                del view  # from here on only the cache and the requests using it hold it
                self._lighten(key, source, options, data, texts)
            kind = stored.kind(source.har_entry)  # stored last: PostgreSQL copies it
            self.storage.put_artefact(info.id, options.key(), kind, data, info.size)
        except Exception:  # the stream deleted meanwhile, the store busy: not the user's error
            log.warning("stream %s: its trace was not stored", info.id, exc_info=True)

    def _lighten(
        self,
        key: Hashable,
        source: Source,
        options: Options,
        data: bytes,
        texts: dict[int, LongText],
    ) -> None:
        """Cache in place of the view just assembled the same view loaded from what was just
        stored, as another worker or a restart would load it: it holds less (its rows come
        back as arrays, its pieces are made together, not between the temporaries of a
        million parses). The assembled one leaves the cache before the loaded one is made
        (`Memo.renew`: a step asked meanwhile waits for it), so that the two are not held at
        once, and its memory goes back when the requests using it end: at a million chunks
        the server then holds after an upload what it holds after a restart, and no more in
        between (bench/README.md). The parse marks found so far move over."""

        def load() -> TraceView:
            fresh = _unpacked(source.info, options, source.har_entry, data)
            if fresh is None:  # it did not load: the next step assembles it again
                raise Unreadable("the view just stored does not load")
            fresh.adopt_texts(texts)
            fresh.recall = self._recall(source.har_entry, fresh.source, fresh.trace)
            return fresh

        self.cache.renew(key, load)

    def _recall(
        self, har_entry: int | None, source: Source, trace: Trace
    ) -> Callable[[int], Record | None]:
        """How the view gets a step's record: from the reading when it is cached (an upload's,
        for its first views), else from the step's own lines of the raw bytes when the format
        allows, else from a whole reading (on demand)."""
        sliceable = by_lines(source.found)
        info = source.info
        key = ("reading", info.id, har_entry, info.size)

        def recall(step: int) -> Record | None:
            cached = self.cache.peek(key)
            if isinstance(cached, Reading):
                records = cached.result.records
                return records[step] if step < len(records) else None
            if sliceable:
                line = trace.line_of(step)
                last = step + 1 >= source.records
                after = None if last else trace.line_of(step + 1)
                if is_line(line) and (last or is_line(after)):
                    lines = self._lines_through(info, after)
                    found = lines.record(line, after, trace.kind_of(step))
                    if found is not None:
                        return found
            records = self.reading_of(info, har_entry).result.records
            return records[step] if step < len(records) else None

        return lru_cache(maxsize=RECALLED)(recall)  # a page asks for its step's record twice

    def delete(self, stream_id: str, why: str = "") -> bool:
        """Remove a stream, its notes and artefacts (keeping its id as deleted, `why`: by whom,
        in words), and forget what this worker cached of it."""
        gone = self.storage.delete(stream_id, why) if _plausible(stream_id) else False
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
                reading = self.reading_of(info, har_entry)
                with self._heavy_for(reading.info):
                    try:
                        made = compare(
                            reading.result.records, canon, left=left, right=right,
                            end=info.end, recorded=info.recorded,
                        )  # fmt: skip
                    except Exception as error:  # a core bug must not become a 500 for the user
                        log.exception("comparing stream %s failed", stream_id)
                        raise Unreadable(
                            f"the comparison failed on this stream: {error!r}"
                        ) from error
                return _Compared(made, reading.info.size)

        key = ("comparison", stream_id, har_entry, canon, left, right, info.size, info.end)
        return self._cached(key, _Compared, make).comparison

    def close(self) -> None:
        """Finish keeping what is being kept, then close the store."""
        self._keeper.close()
        self.storage.close()


def _unpacked(
    info: StreamInfo, options: Options, har_entry: int | None, data: bytes
) -> TraceView | None:
    """The view stored as `data` (None, with a warning, when it does not load)."""
    try:
        made = stored.unpack(data)
    except stored.StoredError as error:
        log.warning("stream %s: its stored trace does not load (%s)", info.id, error)
        return None
    source = Source(info, made.found, made.records, har_entry)
    return TraceView.build(source, options, made.trace, made)


def _assembled(info: StreamInfo, result: ReadResult, options: Options) -> Trace:
    """The stream's records assembled; one whose end is not in its bytes (a capture cut, a
    paste that shows no end: `unended`) loses what is judged at its end (`Trace.without_end`).
    A core bug raises Unreadable, never a 500 for the user."""
    try:
        trace = assemble(result.records, options)
    except Exception as error:
        log.exception("assembling stream %s failed", info.id)
        raise Unreadable(f"the assembler failed on this stream: {error!r}") from error
    return trace.as_recorded(info.end, recorded=info.recorded)


def _as_asked(view: TraceView, info: StreamInfo, options: Options) -> TraceView:
    """A cached view as asked for: with the stream's record as stored now (renamed since?) and
    the options as the user gave them."""
    if view.source.info != info:  # the store's record is the truth
        view = copy.copy(view)
        view.source = replace(view.source, info=info)
    return view if options == view.options else view.as_asked(options)


def _plausible(stream_id: str) -> bool:
    return 0 < len(stream_id) <= 64 and all(c.isalnum() or c in "-_" for c in stream_id)
