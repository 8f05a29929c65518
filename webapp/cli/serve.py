"""`streamviz serve`: the web app under uvicorn, in one process or in several workers.

One worker gets the app object. Several workers are started by uvicorn from an import string
(`webapp.web.app:create_app_from_env`), so the settings travel as `STREAMVIZ_*` environment
variables; the workers share only the store. The store is opened (and migrated) once here
first, so that a wrong `--db` is an error message, not N crashing workers; with `--upstream`,
the captures a crashed server left live are ended then too, before any worker records.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from webapp.cli.inputs import InputError
from webapp.cli.serving import listen, shared
from webapp.core.words import count
from webapp.storage import Storage, UnsupportedDatabase, open_storage, parse_location

if TYPE_CHECKING:
    from webapp.settings import Settings

FACTORY = "webapp.web.app:create_app_from_env"


@click.command()
@listen(port=8000)
@click.option(
    "--db",
    default="data/streamviz.sqlite3",
    show_default=True,
    metavar="PATH|URL",
    help="The store: a SQLite file (its folder is created if missing), sqlite:///PATH, or "
    "postgresql://user:password@host/dbname for a team server.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes; they share only the store.",
)
@shared("--max-bytes", "Largest upload accepted, in bytes (64 MiB: a 100,000-chunk stream fits).")
@click.option(
    "--cache-mb",
    type=click.IntRange(min=1),
    default=512,
    show_default=True,
    help="Memory each worker may keep for readings, traces and comparisons, in MiB "
    "(estimated); traces being made get as much again.",
)
@click.option(
    "--max-uploads",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Uploads each worker checks and stores at once, each once its body is in; one more "
    "gets a 503 (retry).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0.1),
    default=120.0,
    show_default=True,
    metavar="S",
    help="Seconds a request's body may take to arrive whole; a slower one gets a 408, so a "
    "trickling upload holds nothing for long.",
)
@click.option(
    "--max-notes-per-stream",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    metavar="N",
    help="Notes one stream may hold; one more is refused in words (a 422).",
)
@click.option(
    "--max-notes-per-step",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    metavar="N",
    help="Notes one step of a stream may hold.",
)
@click.option(
    "--allow-origins",
    default="",
    metavar="ORIGINS",
    help="Other sites whose pages may post streams here, space- or comma-separated "
    "(e.g. 'https://a.example https://b.example'); posts from any other site get a 403.",
)
@click.option(
    "--embed-origins",
    default="",
    metavar="ORIGINS",
    help="Sites whose pages may frame the embedded view (/embed/...), space- or "
    "comma-separated (e.g. 'https://wiki.example.com https://slides.example.com'); by default "
    "no site may. Other pages are never framable.",
)
@click.option(
    "--public-url",
    default="",
    metavar="URL",
    help="The server's address as its users reach it (https://streamviz.example): reports "
    "link to steps with absolute URLs, its host is answered, and with https the owner cookie "
    "is Secure and every response carries HSTS.",
)
@shared(
    "--allowed-hosts",
    "Host names the server answers besides localhost, its loopback addresses, the --host it "
    "binds and the --public-url's host, space- or comma-separated ('streamviz.lan "
    "*.example.com'; '*' for any); other names get a 400, so a page of another site cannot "
    "reach it by DNS rebinding (`make run ALLOWED_HOSTS=...`).",
)
@click.option(
    "--list-streams",
    is_flag=True,
    help="The library (/streams) lists every stream; only for a server behind its own access "
    "control. Without it, it lists the streams each browser stored.",
)
@click.option(
    "--retention-days",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Remove streams N days after they were stored (at start, then hourly); 0 keeps them.",
)
@click.option(
    "--minimise-seconds",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    metavar="N",
    help="A minimise job started on a stream's page stops after N seconds with the smallest "
    "stream found so far.",
)
@click.option(
    "--export-steps",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    metavar="N",
    help="A stream downloaded as one HTML file (export.html, in the Share menu) holds its "
    "first N steps in full and says what it leaves out.",
)
@shared(
    "--upstream",
    "Forward /proxy/NAME/... to URL and record every stream that passes (repeatable; a bare "
    "URL is named default): point a client's base URL at http://HOST:PORT/proxy/NAME/v1. Also "
    "from $STREAMVIZ_UPSTREAM (space-separated).",
    envvar="STREAMVIZ_UPSTREAM",
)
@click.option(
    "--twin",
    is_flag=True,
    help="With --upstream: after each captured stream ends, send the same request once more "
    'with "stream": false and keep the answer beside it (its page then says whether the '
    "provider's own non-stream answer holds the same calls). Off by default: it doubles "
    "what the upstream costs.",
)
@shared(
    "--keep-requests",
    "Store each captured stream's request body (the prompt) with it; by default only its "
    "model, stream flag and tool names.",
)
@shared(
    "--proxy-timeout",
    "Seconds an upstream may stay silent (before its headers: 504; mid-stream: the stream is "
    "cut); connecting may take --proxy-connect-timeout.",
)
@click.option(
    "--proxy-connect-timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
    metavar="S", help="Seconds to connect to an upstream (then 504).",
)  # fmt: skip
@click.option(
    "--proxy-queue", "proxy_queue_chunks", type=click.IntRange(min=1), default=16,
    show_default=True, metavar="N",
    help="Pieces of a response (64 KiB at most each) read and not yet sent to a slow client "
    "before the upstream is no longer read.",
)  # fmt: skip
@click.option(
    "--unlisted-captures", is_flag=True,
    help="Leave the proxy's captures out of the library (each is then found by the "
    "streamviz-stream-id header of its response); by default a server that records lists "
    "them, live ones first.",
)  # fmt: skip
@click.option(
    "--stall-ms", type=click.IntRange(min=1), default=1000, show_default=True, metavar="MS",
    help="A gap of more than MS milliseconds before a step is marked as a stall.",
)  # fmt: skip
@click.option(
    "--live-poll-ms", type=click.IntRange(min=100), default=1000, show_default=True,
    metavar="MS", help="How often a live capture's page asks for what has arrived.",
)  # fmt: skip
@click.option(
    "--lens-processes", type=click.IntRange(min=1), default=2, show_default=True, metavar="N",
    help="Client-lens processes each worker runs at once (the clients pages); other streams "
    "wait in line, their place shown.",
)  # fmt: skip
@click.option(
    "--lens-waiting", type=click.IntRange(min=0), default=16, show_default=True, metavar="N",
    help="Streams that may wait in a worker's line for the client lenses; one more gets a 503 "
    "(retry).",
)  # fmt: skip
@click.option(
    "--lens-timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
    metavar="S", help="Seconds one client lens may take on a stream.",
)  # fmt: skip
@click.option(
    "--lens-memory-mb", type=click.IntRange(min=16), default=1024, show_default=True,
    metavar="MIB", help="The memory cap of each client-lens process, in MiB.",
)  # fmt: skip
@click.option(
    "--lens-install-log", default="", metavar="PATH",
    help="The log of a client-lens install running beside the server (`make run` starts "
    "one): the clients page shows its progress while a library is missing.",
)  # fmt: skip
@click.option(
    "--fd",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Serve on this already listening Unix socket (e.g. from systemd) instead of "
    "--host/--port.",
)
@click.option(
    "--worker-healthcheck", type=click.IntRange(min=1), default=5, show_default=True,
    metavar="S", help="With --workers > 1: seconds a worker may leave the supervisor's health "
    "check unanswered before it is restarted (uvicorn's timeout_worker_healthcheck).",
)  # fmt: skip
def serve(
    host: str,
    port: int,
    db: str,
    workers: int,
    fd: int | None,
    worker_healthcheck: int,
    **given: Any,
) -> None:
    """Run the web app with uvicorn (and the recording proxy with --upstream)."""
    import uvicorn  # imported here so that trace, check and compare never load the web stack

    from webapp.web.app import create_app

    settings = _settings(host, db, given)
    where: dict[str, Any] = {"fd": fd} if fd is not None else {"host": host, "port": port}
    if workers == 1:
        with store_errors(db):
            app = create_app(settings)
            if settings.upstreams:
                end_orphans(app.state.service.storage)
        uvicorn.run(app, **where)
        return
    with store_errors(db):
        storage = open_storage(db)  # migrated once, before any worker starts
        try:
            if settings.upstreams:
                end_orphans(storage)
        finally:
            storage.close()
    os.environ.update(settings.to_env())
    uvicorn.run(
        FACTORY,
        factory=True,
        workers=workers,
        timeout_worker_healthcheck=worker_healthcheck,
        **where,
    )


def _settings(host: str, db: str, given: dict[str, Any]) -> Settings:
    """The settings from serve's options: those that need reading are read (and checked, as
    errors of their option); every other option is the setting of its own name."""
    from webapp.proxy.forward import parse_upstreams
    from webapp.settings import MB, Settings
    from webapp.web.http.security import embed_csp

    given = dict(given)
    framers = tuple(o.rstrip("/") for o in given.pop("embed_origins").replace(",", " ").split())
    try:
        embed_csp(framers)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--embed-origins") from None
    upstreams = tuple(part for value in given.pop("upstreams") for part in value.split())
    try:
        parse_upstreams(upstreams)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--upstream") from None
    if given.get("twin") and not upstreams:
        message = "--twin sends a captured stream's request again: give --upstream NAME=URL too"
        raise click.BadParameter(message, param_hint="--twin")
    return Settings(
        db=db,
        cache_bytes=given.pop("cache_mb") * MB,
        allow_origins=tuple(given.pop("allow_origins").replace(",", " ").split()),
        embed_origins=framers,
        public_url=given.pop("public_url").strip().rstrip("/"),
        allowed_hosts=hosts_of(given.pop("allowed_hosts"), host),
        upstreams=upstreams,
        list_captures=not given.pop("unlisted_captures"),
        **given,
    )


WILDCARDS = ("", "0.0.0.0", "::")
"""--host values that bind every interface: no one name to answer by."""


def hosts_of(allowed: str, bound: str) -> tuple[str, ...]:
    """The --allowed-hosts names, and the --host address when it names one interface that is
    not answered anyway (a loopback one is)."""
    from webapp.proxy.guard import AllowedHosts

    names = tuple(allowed.replace(",", " ").split())
    bound = bound.strip()
    if bound in WILDCARDS or AllowedHosts.of(()).allows(f"[{bound}]" if ":" in bound else bound):
        return names
    return (*names, bound)


def end_orphans(storage: Storage) -> list[str]:
    """Before a recording server serves: end the captures a crashed or killed one left live
    ("cut: the server stopped", their bytes kept), saying so on stderr. Two servers that
    record into one store must not start while the other records."""
    from webapp.storage.capture import Captures

    ended = Captures(storage).end_orphans()
    if ended:
        click.echo(
            f"ended {count(len(ended), 'capture')} a previous server left live "
            "(cut: the server stopped)",
            err=True,
        )
    return ended


@contextmanager
def store_errors(db: str) -> Iterator[None]:
    """A store that does not open is an InputError (exit 2) that says why."""
    try:
        yield
    except UnsupportedDatabase as error:
        raise InputError(f"--db: {error}") from None
    except (ConnectionError, OSError, sqlite3.Error) as error:
        shown = parse_location(db).shown()
        raise InputError(f"cannot open the store --db {shown}: {error}") from None
