"""A throwaway PostgreSQL server for the tests: `initdb` and `pg_ctl` in a temporary folder.

The server refuses to run as root, so under root it runs as an unprivileged system user
(`postgres` where the server package made one, else `streamviz-pg`, created with `useradd`).
It listens only on a Unix socket in its own folder, with fsync off (a test server loses
nothing worth keeping). Every test gets a schema of its own, named in the URL's
`search_path`, so tests never see each other's tables and no database is created per test.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from urllib.parse import quote

import psycopg

PG_ROOT = Path("/usr/lib/postgresql")
SERVER_USER = "streamviz-pg"
ROLE = "streamviz"


class PostgresUnavailable(RuntimeError):
    """The binaries are missing or the server did not start; the message says what to do."""


def find_bindir() -> Path:
    """The newest PostgreSQL server binaries (`STREAMVIZ_PG_BIN` overrides)."""
    named = os.environ.get("STREAMVIZ_PG_BIN")
    candidates = [Path(named)] if named else []
    candidates += sorted(
        PG_ROOT.glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0
    )[::-1]
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise PostgresUnavailable(
        f"no PostgreSQL server binaries under {PG_ROOT}/*/bin: run `make postgres` "
        "(apt-get install postgresql-15), or set STREAMVIZ_PG_BIN"
    )


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None (this user) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", SERVER_USER):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(SERVER_USER)


@dataclass
class PgServer:
    """One running server; `new_schema_url()` hands out an empty schema per test."""

    bindir: Path
    folder: Path
    user: pwd.struct_passwd | None
    _numbers: count[int] = field(default_factory=lambda: count(1))

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def _as_server(self, *args: str) -> subprocess.CompletedProcess[str]:
        ids = {}
        if self.user is not None:
            ids = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.run(
            args, capture_output=True, text=True, cwd=self.folder, env=_server_env(), **ids
        )

    def start(self) -> None:
        """initdb, then start and wait until the server accepts connections."""
        made = self._as_server(
            str(self.bindir / "initdb"),
            "-D", str(self.data),
            "-U", ROLE,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        )  # fmt: skip
        if made.returncode != 0:
            raise PostgresUnavailable(f"initdb failed:\n{made.stdout}\n{made.stderr}")
        options = " ".join(
            (
                "-c listen_addresses=''",
                f"-c unix_socket_directories={self.folder}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=200",
            )
        )
        started = self._as_server(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        if started.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise PostgresUnavailable(f"pg_ctl start failed:\n{started.stderr}\n{log}")

    def url(self, **params: str) -> str:
        """A libpq URL for the `postgres` database over the server's socket."""
        query = "&".join(f"{k}={quote(v)}" for k, v in {"host": str(self.folder), **params}.items())
        return f"postgresql://{ROLE}@/postgres?{query}"

    def new_schema_url(self) -> str:
        """A URL whose connections see only a new, empty schema."""
        schema = f"t{next(self._numbers)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return self.url(options=f"-csearch_path={schema}")

    def stop(self) -> None:
        """Stop the server at once and remove its folder."""
        self._as_server(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"
        )
        shutil.rmtree(self.folder, ignore_errors=True)


def _server_env() -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ")
    return {name: os.environ[name] for name in keep if name in os.environ}


def start_server() -> PgServer:
    """A running server in a new temporary folder owned by the server's user."""
    bindir = find_bindir()
    user = _server_user()
    folder = Path(tempfile.mkdtemp(prefix="streamviz-pg-"))
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
    server = PgServer(bindir, folder, user)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server
