"""The proxy's recorder into the store: each recorded response a live stream in the library.

`StoreRecorder` opens a live stream for each recorded response and writes its batches
(`webapp.storage.capture`); when the stream ends, `ended` is told its id (`streamviz serve`
then forgets what this worker cached of the stream while it was live and indexes it for the
library: `webapp.web.backend.capture.recording`). Its sweep ends the live captures of a
recording process of this host that has stopped.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

from webapp.storage import Storage
from webapp.storage.capture import Captures, Facts, Part
from webapp.storage.owners import owner_tag

log = logging.getLogger(__name__)


def _nothing(stream_id: str) -> None:
    """No more to do once a stream has ended."""


class StoreSink:
    """One recorded stream going into the store."""

    def __init__(self, recorder: StoreRecorder, stream_id: str) -> None:
        self.recorder = recorder
        self.stream_id = stream_id

    def write(self, seq: int, part: Part) -> None:
        """Store the next batch."""
        self.recorder.captures.append(self.stream_id, seq, part)

    def end(self, state: str, detail: str) -> None:
        """The parts become the stream's bytes; then the recorder's `ended` is told."""
        self.recorder.captures.finish(self.stream_id, state, detail)
        self.recorder.ended(self.stream_id)


class StoreRecorder:
    """The proxy's recorder for `streamviz serve`: each stream a live stream in the library."""

    def __init__(self, storage: Storage, ended: Callable[[str], None] = _nothing) -> None:
        self.captures = Captures(storage)
        self.ended = ended
        """Called with a stream's id once it has ended, from the writer's thread."""

    def open(self, facts: Facts, title: str, format: str) -> StoreSink:
        """A new live stream (a kept request's keys masked), owned by this process."""
        info = self.captures.start(facts.masked(), title=title, format=format, owner=owner_tag())
        return StoreSink(self, info.id)

    def sweep(self) -> list[str]:
        """End the live captures of a recording process of this host that has stopped (a
        worker killed, or crashed); their ids."""
        return self.captures.end_gone(socket.gethostname())

    async def sweeping(self, every: float) -> None:
        """`sweep` now and every `every` seconds, until cancelled (a worker's life)."""
        while True:
            try:
                ended = await asyncio.to_thread(self.sweep)
            except Exception:  # a store down now may be up at the next sweep
                log.warning("the sweep of stopped workers' captures failed", exc_info=True)
            else:
                if ended:
                    log.warning("ended %d capture(s) of a worker that stopped", len(ended))
            await asyncio.sleep(every)
