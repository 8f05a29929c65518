"""Pausing the cyclic garbage collector around batch work on a big stream.

Records, steps and block histories hold no reference cycles, and on a 100,000-step stream the
collector's passes over the growing trace cost about as much as the work itself.

The collector is process-wide: a pause in one thread pauses it for every thread. So pauses are
counted (the collector comes back when the last one ends, whichever thread ends it, and only if
it was enabled when the first began), and a long-running process that serves many requests at
once turns them off with `allow_pauses(False)`: the web app does, so one large assembly in a
worker thread never stops collection for every other request. The CLI, which does one thing
per process, keeps them.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_restore = False
_allowed = True


def allow_pauses(allowed: bool) -> None:
    """Let `paused_gc` pause the collector (the default), or make it do nothing."""
    global _allowed
    _allowed = allowed


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic GC for the duration of the block (when pauses are allowed)."""
    global _depth, _restore
    if not _allowed:
        yield
        return
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                gc.enable()
