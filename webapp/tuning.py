"""Process-wide tuning: every setting that changes the whole interpreter or its allocator.

Nothing else in the package sets process-wide state. What is set, by whom, and why:

- `paused_gc` (the core's reading and assembly, triage's comparison, the CLI's commands): the
  cyclic garbage collector is paused around batch work on a big stream. Records, steps and
  block histories hold no reference cycles, yet the collector's passes over a growing trace
  cost about as much as the work itself on a long stream.
- `serving` (once, by the app factory's lifespan): what a long-running server with many
  threads needs, undone when it stops:
  - no GC pauses (`allow_pauses(False)`): a pause is process-wide, and one large assembly in
    a worker thread must not stop collection for every other request;
  - at most `ARENAS` glibc arenas (`few_arenas`): glibc gives each thread that contends for
    the heap an arena of its own (up to eight per core), and a freed trace leaves every arena
    it touched half empty, so the server's resident memory stays far above its live objects;
  - a GIL switch interval of `SWITCH_INTERVAL` instead of Python's 5 ms: a thread waiting for
    the GIL asks for it after this long, and the event loop, which takes it for a moment many
    times per request, then waits less behind an assembly that holds it;
  - a young collection every `YOUNG_EVERY` allocations instead of Python's 700: with pauses
    off, an upload's reading and assembly make tens of millions of short-lived objects beside
    the millions of a trace that stays, and the collector's passes over them cost about a
    third of an assembly at a million chunks. It still collects, less often: a cycle of
    garbage waits for at most that many allocations.
- `trim` (after a request during which heavy work ended): a large trace is millions of small
  objects; freed, most go back to Python's own allocator, but what glibc's `malloc` handed out
  stays in the process until `malloc_trim` returns it.
- `mapped_blocks` (a CLI command, before it reads a long stream from a file): glibc maps
  every block of `MAPPED_FROM` bytes or more on its own, so that the segments of a long stream
  go back to the system as they are assembled.
- `loading` (the CLI, around importing click and a command's modules): the code's objects
  are made with the collector paused and then join the permanent generation (`gc.freeze`):
  tens of thousands of them, none garbage, which young collections would otherwise walk
  about thirty times while they are made, and once more as soon as a pause ends.
- `ending` (a CLI command, its work done): every object joins the permanent generation, so
  that the interpreter's last collection, at exit, does not walk the whole trace.

The CLI does one thing per process: `loading`, the GC pauses, `mapped_blocks` and `ending` are
all it needs here.
The allocator calls reach glibc through ctypes, loaded on first use (a command that never
trims never loads it); where the C library is not glibc (macOS, musl) they do nothing.
The measured effect of each setting: bench/README.md, "Measured figures moved from docstrings".
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

SWITCH_INTERVAL = 0.002
"""Seconds between the GIL's hand-overs in a server (Python's default is 0.005)."""
YOUNG_EVERY = 100_000
"""A server's threshold of the youngest generation (Python's default is 700)."""
ARENAS = 2
"""The most glibc malloc arenas a server's threads share."""
_M_ARENA_MAX = -8
"""`mallopt`'s parameter for the most arenas (glibc's malloc.h)."""
MAPPED_FROM = 256 * 1024
"""The size from which `mapped_blocks` has glibc map a block of its own: a long stream's
segments (`webapp.core.readers.SEGMENT`), not the blocks it is read in."""
_M_MMAP_THRESHOLD = -3
"""`mallopt`'s parameter for the mmap threshold."""

_lock = threading.Lock()
_depth = 0
_restore = False
_allowed = True
_serving = 0
_switch = 0.005
_thresholds = gc.get_threshold()


def allow_pauses(allowed: bool) -> None:
    """Let `paused_gc` pause the collector (the default), or make it do nothing."""
    global _allowed
    _allowed = allowed


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic GC for the duration of the block (when pauses are allowed).

    Pauses are counted across threads: the collector comes back when the last one ends,
    whichever thread ends it, and only if it was enabled when the first began."""
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


@contextmanager
def loading() -> Iterator[None]:
    """Code is being imported: no collection meanwhile, then `gc.freeze()`, so that no later
    collection walks the objects just made (functions, classes, tables: none is garbage)."""
    with paused_gc():
        yield
        gc.freeze()


def ending() -> None:
    """The process is about to end: `gc.freeze()`, since the collection Python runs at exit
    walks every object it tracks (the trace's, after a long stream) and can free nothing the
    exit would not."""
    gc.freeze()


@cache
def _glibc() -> ctypes.CDLL | None:
    """glibc's handle with `malloc_trim` and `mallopt`, or None where the C library differs."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # loaded only by the first allocator call: a small command never pays for it

    try:
        libc = ctypes.CDLL(None)  # the process's own symbols: no search as `ctypes.util` makes
        libc.gnu_get_libc_version  # noqa: B018 (glibc's own: any other C library is left alone)
        libc.malloc_trim  # noqa: B018
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def mapped_blocks(threshold: int = MAPPED_FROM) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes (before a long stream is read); False
    where not glibc.

    glibc serves an allocation of the threshold or more with a mapping of its own, given back
    to the system when it is freed; but each such block freed raises the threshold to its size
    (up to 32 MB), and the blocks after it come from the heap, where freed they stay resident.
    The CLI reads a long stream in segments (`webapp.core.readers.SEGMENT`) that the assembly
    frees one by one while the trace grows: from the heap they would keep the input's size
    resident to the end; mapped, each goes back once it is assembled."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold))


def few_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's arenas (call before the worker threads start); False where not glibc."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))


def trim() -> bool:
    """Return freed heap memory to the system; False where not glibc or nothing was returned."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))


@contextmanager
def serving() -> Iterator[None]:
    """A server's tuning for the block: no GC pauses, rarer young collections, few arenas, a
    shorter switch interval.

    Enter it before the worker threads start. Blocks may overlap (two apps in one process, as
    in tests): when the last one ends, pauses are allowed again and the switch interval is
    the one before the first began; the arena cap stays for the life of the process."""
    global _serving, _switch, _thresholds
    with _lock:
        if _serving == 0:
            _switch = sys.getswitchinterval()
            _thresholds = gc.get_threshold()
            gc.set_threshold(YOUNG_EVERY, *_thresholds[1:])
            allow_pauses(False)
            few_arenas()
            sys.setswitchinterval(SWITCH_INTERVAL)
        _serving += 1
    try:
        yield
    finally:
        with _lock:
            _serving -= 1
            if _serving == 0:
                sys.setswitchinterval(_switch)
                gc.set_threshold(*_thresholds)
                allow_pauses(True)
