"""Pausing the cyclic garbage collector around batch work on a big stream.

Records, steps and block histories hold no reference cycles, and on a 100,000-step stream the
collector's passes over the growing trace cost about as much as the work itself. Pauses nest
(an inner pause leaves the collector as the outer one found it), and a pause only ever
re-enables a collector it found enabled.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic GC for the duration of the block, then restore it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
