"""The store's schema as numbered migrations, applied in order at open and recorded.

Each migration is one SQL text for both dialects; a column type such as `{blob}` is the
only difference, filled in per dialect. A migration is never edited once released: a change is a
new number. Migration 1 is the table the first release created (`IF NOT EXISTS`, so that its
files open unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from webapp.storage.location import Dialect

Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs one statement with `?` placeholders and returns its rows."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step of the schema."""

    version: int
    name: str
    statements: tuple[str, ...]


_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"blob": "BLOB"},
    "postgresql": {"blob": "BYTEA"},
}

MIGRATIONS = (
    Migration(
        1,
        "streams",
        (
            """CREATE TABLE IF NOT EXISTS streams (
                id TEXT PRIMARY KEY,
                raw {blob} NOT NULL,
                title TEXT NOT NULL DEFAULT '',
                created TEXT NOT NULL,
                size BIGINT NOT NULL,
                format TEXT NOT NULL,
                input_format TEXT NOT NULL DEFAULT 'auto',
                redactions TEXT NOT NULL DEFAULT '[]'
            )""",
        ),
    ),
    Migration(
        2,
        "artefacts",
        (
            # What is derived from a stream and worth keeping (a large stream's columnar
            # trace): keyed by the stream, the canonical options (`Options.key()`) and a kind.
            """CREATE TABLE artefacts (
                stream_id TEXT NOT NULL REFERENCES streams (id) ON DELETE CASCADE,
                options TEXT NOT NULL,
                kind TEXT NOT NULL,
                data {blob} NOT NULL,
                size BIGINT NOT NULL,
                created TEXT NOT NULL,
                PRIMARY KEY (stream_id, options, kind)
            )""",
        ),
    ),
)
"""Every migration, in order; the last one's number is the schema version."""

LATEST = MIGRATIONS[-1].version

_LEDGER = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied TEXT NOT NULL
)"""


def migrate(run: Run, dialect: Dialect, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Apply the migrations not yet recorded; the caller holds the store's migration lock."""
    run(_LEDGER, ())
    done = {int(row[0]) for row in run("SELECT version FROM schema_migrations", ())}
    if done and max(done) > migrations[-1].version:
        raise RuntimeError(
            f"the store's schema is version {max(done)}, newer than this streamviz "
            f"({migrations[-1].version}): upgrade streamviz"
        )
    for migration in migrations:
        if migration.version in done:
            continue
        for statement in migration.statements:
            run(statement.format(**_TYPES[dialect]), ())
        run(
            "INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)",
            (migration.version, migration.name, datetime.now(UTC).isoformat(timespec="seconds")),
        )
    return migrations[-1].version
