"""Stored streams: the original bytes under an unguessable id, what was found, derived artefacts.

`open_storage(url)` opens the store a `--db` value names: a file path or `sqlite:///...` (the
embedded default) or `postgresql://...`. Both run the same numbered migrations at open
(`webapp.storage.schema`) and the same queries (`webapp.storage.store`); only connecting,
locking and a few column types differ (`sqlite.py`, `postgres.py`).
"""

from __future__ import annotations

from webapp.storage.location import Location, UnsupportedDatabase, parse_location
from webapp.storage.store import Storage, StreamInfo, new_id


def open_storage(url: str) -> Storage:
    """The store at `url` (a file path, `sqlite:///...` or `postgresql://...`), migrated."""
    location = parse_location(url)
    if location.dialect == "postgresql":
        from webapp.storage.postgres import PostgresBackend

        return Storage(PostgresBackend(location.target))
    from webapp.storage.sqlite import SqliteBackend

    return Storage(SqliteBackend(location.path()))


__all__ = [
    "Location",
    "Storage",
    "StreamInfo",
    "UnsupportedDatabase",
    "new_id",
    "open_storage",
    "parse_location",
]
