"""Where the store is: a `--db` value read as a file path, `sqlite:///...` or `postgresql://...`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Dialect = Literal["sqlite", "postgresql"]
_POSTGRES = ("postgresql://", "postgres://")
_SQLITE = "sqlite:///"


class UnsupportedDatabase(ValueError):
    """The value names a database this app cannot use."""


@dataclass(frozen=True, slots=True)
class Location:
    """A parsed `--db` value: the dialect, and the file path or the libpq URL."""

    dialect: Dialect
    target: str

    def path(self) -> Path:
        """The SQLite file (only for the sqlite dialect)."""
        return Path(self.target)

    def shown(self) -> str:
        """The value for logs and messages, without a password."""
        if self.dialect == "sqlite":
            return self.target
        scheme, _, rest = self.target.partition("://")
        credentials, at, host = rest.rpartition("@")
        if not at:
            return self.target
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user}{':***' if ':' in credentials else ''}@{host}"


def parse_location(value: str) -> Location:
    """Read a `--db` value; SQLAlchemy's spelling: `sqlite:///rel.db`, `sqlite:////abs.db`."""
    text = value.strip()
    if not text:
        raise UnsupportedDatabase("--db is empty: give a file path or a database URL")
    if text.lower().startswith(_POSTGRES):
        return Location("postgresql", text)
    if text.lower().startswith(_SQLITE):
        path = text[len(_SQLITE) :]
        if not path or path == ":memory:":
            raise UnsupportedDatabase(
                "sqlite:/// needs a file path (the store must outlive a worker)"
            )
        return Location("sqlite", path)
    scheme, sep, _ = text.partition("://")
    if sep and scheme.isascii() and scheme.replace("+", "").isalnum():
        raise UnsupportedDatabase(
            f"{scheme}:// is not supported: use a file path, sqlite:///PATH or postgresql://..."
        )
    return Location("sqlite", text)
