"""The store every storage, API and page test runs against: SQLite and a real PostgreSQL.

`--stores sqlite,postgresql` (the default) runs each test that asks for `db_url` once per
store. The PostgreSQL server is started once per session (tests/pgserver.py); when it cannot
start, those tests fail with the reason: `make test` and CI never skip them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import psycopg_pool.base
import pytest

import webapp
from tests.pgserver import PgServer, PostgresUnavailable, start_server
from webapp.compiled import stale
from webapp.proxy import guard

STORES = ("sqlite", "postgresql")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stores",
        default=",".join(STORES),
        help="comma-separated stores the storage, API and page tests run against "
        "(default: sqlite,postgresql)",
    )


def _stores(config: pytest.Config) -> list[str]:
    chosen = [name.strip() for name in str(config.getoption("--stores")).split(",") if name]
    unknown = sorted(set(chosen) - set(STORES))
    if unknown or not chosen:
        raise pytest.UsageError(f"--stores takes {', '.join(STORES)} (got {unknown or 'none'})")
    return chosen


def pytest_configure(config: pytest.Config) -> None:
    """Starlette's TestClient sends `Host: testserver`: the suite's apps answer that name too
    (from collection on: tests/web/test_schema_fuzz.py reads the schema at import), as
    Django's test runner adds 'testserver' to ALLOWED_HOSTS. The host check itself is tested
    with the real defaults (tests/web/test_web_hosts.py)."""
    guard.ALWAYS_ALLOWED = (*guard.LOOPBACK_NAMES, "testserver")
    # psycopg_pool jitters each new connection's lifetime with the global `random()`, from its
    # own thread: when the pool grows while Hypothesis draws an example, Hypothesis sees the
    # global random state move and fails the test as a strategy using `random` (CI did, once,
    # on tests/web/test_web_never_500.py). The pool's jitter gets a generator of its own.
    psycopg_pool.base.random = random.Random().random  # type: ignore[attr-defined]
    # A compiled core that is not its sources compiled (a source edited since the build) would
    # test old code under new names: refused, never used (`make compile` builds it again).
    checkout = str(Path(webapp.__file__).resolve().parents[1])
    why = stale(checkout)
    if why is not None:
        raise pytest.UsageError(
            f"the compiled core in {checkout} is stale: {why}; run `make compile`"
        )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" in metafunc.fixturenames:
        metafunc.parametrize("store_kind", _stores(metafunc.config))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PgServer]:
    """A PostgreSQL server of this session's own; a failure (never a skip) when it won't start."""
    try:
        server = start_server()
    except PostgresUnavailable as error:
        pytest.fail(f"PostgreSQL did not start: {error}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def db_url(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An empty store of the kind under test: a SQLite file, or a fresh PostgreSQL schema."""
    if store_kind == "sqlite":
        return str(tmp_path / "streams.sqlite3")
    server: PgServer = request.getfixturevalue("postgres_server")
    return server.new_schema_url()
