"""A stream's fixture.zip, built once under the bound on heavy work and kept in the store.

Building the bundle reads the stream again as SSE, masks it and assembles it under both
policies: for a 20 MB stream, hundreds of MB for a second or more, and six downloads used to
build it six times at once (RSS 233 -> 1,330 MB). Now the first download of a (stream, HAR
entry, options, title and address) builds it inside `Gate.heavy_for` (the bound every heavy
piece of work shares), one build per key at a time in a worker (the others wait for it and read
it back); the bytes are an artefact of the stream (`Storage.put_artefact`): every worker and
host serves them from there, and deleting the stream deletes them. A built-in example's bundle
is built each time (it is small and has no row to hang an artefact on).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from webapp.storage.store import Storage

log = logging.getLogger(__name__)
KIND = "fixture.zip"
"""The artefacts' kind prefix: `fixture.zip:ENTRY:STAMP`."""


def fixture_kind(har_entry: int | None, title: str, where: str) -> str:
    """The artefact's kind for this HAR entry (0: the reader's default) and what the README
    says (the stream's title, the page's address): a rename is a new bundle."""
    stamp = hashlib.sha256(f"{title}\n{where}".encode("utf-8", "backslashreplace")).hexdigest()
    return f"{KIND}:{har_entry or 0}:{stamp[:16]}"


class Fixtures:
    """One worker's fixture bundles: looked up in the store, built once per key at a time."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self.built = 0
        """How many bundles this worker built (tests and benchmarks read it)."""

    def get(
        self,
        storage: Storage | None,
        key: tuple[str, str, str],
        bound: Callable[[], AbstractContextManager[object]],
        build: Callable[[], bytes],
    ) -> bytes:
        """The bundle for `key` (stream id, `Options.key()`, `fixture_kind`): kept in
        `storage`, or built inside `bound()` and kept (not kept when `storage` is None)."""
        if storage is None:
            with bound():
                self.built += 1
                return build()
        stream_id, options, kind = key
        found = storage.artefact(stream_id, options, kind)
        if found is not None:
            return found
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        try:
            with lock:
                found = storage.artefact(stream_id, options, kind)  # built while we waited?
                if found is not None:
                    return found
                with bound():
                    data = build()
                    self.built += 1
                try:
                    storage.put_artefact(stream_id, options, kind, data)
                except Exception as error:  # the stream was deleted meanwhile: serve it once
                    log.warning("stream %s: its fixture.zip was not kept (%s)", stream_id, error)
                return data
        finally:
            with self._guard:
                if not lock.locked():
                    self._locks.pop(key, None)
