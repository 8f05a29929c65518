"""Giving memory back to the system after heavy work (glibc's allocator; elsewhere nothing).

A large trace is millions of small objects; freed, most of them go back to Python's own
allocator, but what glibc's `malloc` handed out stays in the process until `malloc_trim`
returns it. glibc also gives each thread that contends for the heap an arena of its own (up
to eight per core), and a freed trace leaves every arena it touched half empty. Measured by
`bench/memory.py` (16 concurrent trace requests, 16 option sets), the server's resident
memory after the burst was 1,302 MB with 59 MB of live Python objects; with two arenas and a
trim after heavy work, see the README.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_ARENA_MAX = -8
"""`mallopt`'s parameter for the most arenas (glibc's malloc.h)."""
ARENAS = 2


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 (musl has no malloc_trim: then nothing is done)
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_libc = _glibc()


def few_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's arenas (call before the worker threads start); False where not glibc."""
    if _libc is None:
        return False
    return bool(_libc.mallopt(_M_ARENA_MAX, arenas))


def trim() -> bool:
    """Return freed heap memory to the system; False where not glibc or nothing was returned."""
    if _libc is None:
        return False
    return bool(_libc.malloc_trim(0))
