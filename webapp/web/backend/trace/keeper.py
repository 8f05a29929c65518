"""The background writer: trace views kept in the store from a thread of its own.

The page that assembled a large stream is answered without waiting for its view to be packed
and stored (a second or more at a million chunks): the keeping is handed to one thread, which
works under the bound on heavy work (packing a large trace takes memory too). A view not kept
(the server stopping, the store busy) only costs a worker an assembly later.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager

from webapp import tuning
from webapp.web.backend.trace.view import TraceView

log = logging.getLogger(__name__)


class Keeper:
    """Keeps views with `keep` (one at a time, each inside `heavy()`), after their pages.

    `keep` is handed a list holding the view, and takes it out: the keeper then holds it no
    longer than `keep` does (a large view's memory goes back as soon as it is replaced)."""

    def __init__(
        self,
        keep: Callable[[list[TraceView]], None],
        heavy: Callable[[], AbstractContextManager[object]],
    ) -> None:
        self._keep = keep
        self._heavy = heavy
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamviz-keep")
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()

    def soon(self, view: TraceView) -> None:
        """Keep `view` from the keeper's thread (nothing when the server is stopping)."""

        held = [view]

        def work() -> None:
            with self._heavy():
                self._keep(held)
            self._trim()  # after no request: `RequestScope` trims only what ends in one

        with self._lock:
            self._pending = {done for done in self._pending if not done.done()}
            try:
                self._pending.add(self._pool.submit(work))
            except RuntimeError:  # closing: the next worker assembles it again
                log.info("stream %s: not stored, the server is stopping", view.source.info.id)

    def later(self, work: Callable[[], None], what: str, *, trim: bool = True) -> None:
        """Run `work` from the keeper's thread, inside the bound on heavy work (nothing when the
        server is stopping; a failure is logged, `what` saying what it was); the heap trimmed
        after it (`_trim`) unless `trim` is False."""

        def guarded() -> None:
            try:
                with self._heavy():
                    work()
            except Exception:
                log.warning("%s failed in the background", what, exc_info=True)
            if trim:
                self._trim()

        with self._lock:
            self._pending = {done for done in self._pending if not done.done()}
            with contextlib.suppress(RuntimeError):  # closing: the first step needing it does it
                self._pending.add(self._pool.submit(guarded))

    def _trim(self) -> None:
        """Give the heap's free memory back to the system once no other work waits: a trim
        walks the whole heap (2-3 ms), and under load the next work takes the memory again
        (captures ending by the dozen each second, each trimmed, cost the proxy 1 us a chunk)."""
        with self._lock:
            waiting = sum(1 for done in self._pending if not done.done())
        if waiting <= 1:  # this work's own, still running
            tuning.trim()

    def settle(self) -> None:
        """Wait until every view handed over so far is kept."""
        with self._lock:
            pending = list(self._pending)
        wait(pending)

    def close(self) -> None:
        """Keep what was handed over, then take no more."""
        self._pool.shutdown(wait=True)
