"""Streams into the library: stored, then indexed from what they hold, titled when untitled.

A stream is indexed when it is stored (`store`), from its view under the default options,
which its first page then takes from the cache: its search terms (`webapp.storage.search`),
its library row's numbers, and, when it was given no title, a title from what it holds
("gpt-4o: get_weather, book_flight", `webapp.core.words.title_from`). A captured stream is
indexed when it ends, in the background, from its trace alone (`index_ended`). Streams
stored before there were terms, or while the server was too busy to make their view, are
indexed in the background (`Backfill`), newest first. What the
library lists of a stream (`stats`) is made from its view, and kept (`filled_stats`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool

from webapp.core.options import Options
from webapp.storage import StreamInfo
from webapp.storage.search import Search
from webapp.storage.team import Library
from webapp.web.backend.intake.ingest import MAX_TITLE, Prepared
from webapp.web.backend.library import holdings
from webapp.web.backend.memory.inflight import Busy
from webapp.web.backend.service import NotFound, Service, Unreadable

log = logging.getLogger(__name__)

UNTITLED = frozenset({"", "Pasted stream", "API stream", "Playground stream"})
"""The titles streams got when given none, before titles came from what they hold."""
BACKFILL_BATCH = 20
"""Streams the background indexes per turn (each in a worker thread, one turn at a time)."""


@dataclass(frozen=True, slots=True)
class Titled:
    """A stream to title from what it holds: else its file's name, else `fallback`."""

    fallback: str
    file_name: str = ""


def store(
    service: Service,
    prepared: Prepared,
    *,
    title: str | None,
    fallback: str = "Untitled stream",
    file_name: str = "",
    input_format: str = "auto",
    delete_hash: str = "",
    parent: str = "",
) -> StreamInfo:
    """Store a prepared stream and index it; `title` None: titled from what it holds (with the
    file's name when it came as one), else the file's name, else `fallback`."""
    info = service.store(
        prepared,
        title=title if title is not None else file_name or fallback,
        input_format=input_format,
        delete_hash=delete_hash,
        parent=parent,
    )
    return index(service, info.id, Titled(fallback, file_name) if title is None else None)


def index(service: Service, stream_id: str, titled: Titled | None = None) -> StreamInfo:
    """Keep what the stream holds for the library (its search terms and numbers), and with
    `titled` its title from the same; its record. A stream that does not assemble is indexed
    with nothing (its title still finds it); one whose view the server is too busy to make
    stays unindexed, for `Backfill`."""
    _index(service, stream_id, titled)
    return service.info(stream_id)


def index_ended(service: Service, stream_id: str) -> None:
    """Index a capture that has just ended from its trace alone (`Service.assembled`): nothing
    cached, no view made nor kept. Most captures are never opened, and at team scale making
    and keeping each one's view was two thirds of the proxy's CPU (bench/README.md)."""
    try:
        _index(service, stream_id, None, light=True)
    except NotFound:  # deleted since it ended: nothing to index
        return


def _index(service: Service, stream_id: str, titled: Titled | None, *, light: bool = False) -> bool:
    """`index`'s work (from the stream's view, or with `light` from its trace alone); False
    when the stream stays unindexed (the server was busy)."""
    search = Search(service.storage)
    try:
        if light:
            held = service.assembled(stream_id)
            info, trace, found = held.info, held.trace, held.found
        else:
            view = service.view(stream_id, Options())
            info, trace, found = view.source.info, view.trace, view.source.found
    except Unreadable:
        return search.index(stream_id, {})
    except Busy:
        log.warning("stream %s: not indexed now (the server is busy)", stream_id)
        return False
    search.index(stream_id, holdings.terms(trace, found))
    Library(service.storage).keep_stats(stream_id, holdings.stats(trace, found), info.size)
    if titled is not None:
        named = holdings.title(trace, found, "")
        if named and titled.file_name:
            named = f"{named} ({titled.file_name})"
        new = (named or titled.file_name or titled.fallback)[:MAX_TITLE]
        if new != info.title:
            service.storage.rename(stream_id, new)
    return True


def index_pending(service: Service, limit: int) -> int:
    """Index up to `limit` streams that have no terms yet, newest first; how many were. One
    stored before under a fallback title (`UNTITLED`) is titled from what it holds too."""
    done = 0
    for stream_id in Search(service.storage).unindexed(limit):
        try:
            info = service.info(stream_id)
            titled = Titled(info.title) if info.title in UNTITLED else None
            done += _index(service, stream_id, titled)
        except NotFound:  # deleted meanwhile
            continue
    return done


class Backfill:
    """Indexes, at start and in the background, the streams stored without terms."""

    def __init__(self, service: Service, batch: int = BACKFILL_BATCH) -> None:
        self.service = service
        self.batch = batch
        self._task: asyncio.Task[int] | None = None
        self._stopping = False
        self.finished = threading.Event()
        """Set when the task has ended (tests wait on it)."""

    def start(self) -> asyncio.Task[int]:
        """The task that indexes them, a batch at a time in a worker thread, until none is
        left; it answers how many it indexed."""
        self._task = asyncio.create_task(self._run())
        return self._task

    async def stop(self) -> None:
        """Stop after the batch being indexed (the store is closed after this)."""
        self._stopping = True
        if self._task is not None:
            await self._task

    async def _run(self) -> int:
        try:
            return await self._batches()
        finally:
            self.finished.set()

    async def _batches(self) -> int:
        total = 0
        while not self._stopping:
            try:
                done = await run_in_threadpool(index_pending, self.service, self.batch)
            except Exception:  # a store that is down: the next start tries again
                log.exception("indexing the streams stored before failed")
                return total
            total += done
            if done < self.batch:
                break
        if total:
            log.info("library: indexed %d streams stored before", total)
        return total


def stats(service: Service, stream_id: str) -> dict[str, Any]:
    """What the library shows of a stream (`webapp.web.backend.library.holdings.stats`)."""
    return _stats(service, stream_id)[0]


def _stats(service: Service, stream_id: str) -> tuple[dict[str, Any], int]:
    """The stream's numbers and the size of the bytes they were made of."""
    try:
        view = service.view(stream_id, Options())
    except Unreadable as error:
        return {"unreadable": str(error)[:200], "end": None}, service.info(stream_id).size
    return holdings.stats(view.trace, view.source.found), view.source.info.size


def filled_stats(service: Service, stream_id: str) -> dict[str, Any]:
    """The stream's numbers, computed and kept for the next listing (not while a capture of
    it is live: they would be of its first bytes)."""
    found, size = _stats(service, stream_id)
    Library(service.storage).keep_stats(stream_id, found, size)
    return found
