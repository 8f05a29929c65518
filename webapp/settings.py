"""What the web app is told when it starts: where the database is, and its limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Settings:
    """The web app's configuration; `streamviz serve` builds one from its options."""

    db_path: Path
    """The SQLite file that holds the stored streams (created, with its folder, on open)."""
    max_bytes: int = 20_000_000
    """The largest stream accepted, in bytes; larger input gets a 413."""
    trace_cache_size: int = 8
    """How many assembled traces (stream, options) are kept in memory."""
    timeline_window: int = 120
    """How many timeline rows one window shows, and how many each scroll loads."""
    allow_origins: tuple[str, ...] = ()
    """Other sites' origins (`https://a.example`) whose pages may post to this server."""
