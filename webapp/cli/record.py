"""`streamviz record`: the recording proxy without the web app, writing each stream to files.

A client's base URL is `http://HOST:PORT/proxy/NAME/v1`, as with `serve --upstream`. Each
event stream (or JSON chat completion) becomes `DIR/STAMP-MODEL-RECORDER-N.sse` (`.json`),
written as its batches arrive, and `.timing.json` beside it when it ends: the request's facts,
how it ended, and when each piece of its bytes arrived (ms since the request was sent). With
`--keep-requests` the request body is written as `.request.json` too, its keys masked.
RECORDER is random per process and each stream file is created only if no file has its name
(O_EXCL), so recorders sharing one DIR never write over each other's files. Like `serve`, it
answers only the Host names it is known by (DNS rebinding).
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from webapp.cli.inputs import InputError
from webapp.storage.capture import Facts, Part

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


class FileSink:
    """One recorded stream's files."""

    def __init__(self, path: Path, facts: Facts, announce: Callable[[str], None]) -> None:
        self.path = path
        self.stream_id = path.stem
        self.facts = facts
        self.announce = announce
        self.ends: list[int] = []
        self.ms: list[float] = []

    def write(self, seq: int, part: Part) -> None:
        """Append the batch to the stream's file."""
        with self.path.open("ab") as out:
            out.write(part.data)
        self.ends += part.ends
        self.ms += part.ms

    def end(self, state: str, detail: str) -> None:
        """Write `.timing.json` beside the stream."""
        facts = self.facts
        document = {
            "unit": "ms",
            "file": self.path.name,
            **facts.exchange_json(),
            "state": state,
            "detail": detail,
            "headers_ms": facts.headers_ms,
            "ends": self.ends,
            "ms": [round(t, 3) for t in self.ms],
        }
        if facts.request is not None and facts.request_masked is not None:
            document["request_masked"] = list(facts.request_masked)
        timing = self.path.with_suffix(".timing.json")
        timing.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        self.announce(f"recorded {self.path} ({self.ends[-1] if self.ends else 0} bytes, {state})")


class FileRecorder:
    """Opens a new file for each recorded stream, in `folder`."""

    def __init__(self, folder: Path, announce: Callable[[str], None]) -> None:
        self.folder = folder
        self.announce = announce
        self.recorder = secrets.token_hex(3)
        """This recorder's part of each name: another recorder on the folder has its own."""
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def open(self, facts: Facts, title: str, format: str) -> FileSink:
        """The files of a new stream (`format`: "sse" or "json"; a kept request's keys masked)."""
        facts = facts.masked()
        slug = _SLUG.sub("-", facts.model or "stream").strip("-")[:60] or "stream"
        path = self._create(slug, ".json" if format == "json" else ".sse")
        if facts.request is not None:
            with path.with_suffix(".request.json").open("xb") as out:
                out.write(facts.request)
        return FileSink(path, facts, self.announce)

    def _create(self, slug: str, suffix: str) -> Path:
        """A new empty stream file whose name no file had (the next number when one had)."""
        while True:
            with self._lock:
                number = next(self._count)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            path = self.folder / f"{stamp}-{slug}-{self.recorder}-{number}{suffix}"
            try:
                path.open("xb").close()
            except FileExistsError:
                continue
            # X.sse and X.json would share X.timing.json: the stem is taken by one of them.
            if not path.with_suffix(".json" if suffix == ".sse" else ".sse").exists():
                return path
            path.unlink()


@click.command(short_help="Record streams through a proxy into .sse files (no web app).")
@click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    required=True,
    metavar="NAME=URL",
    help="Forward /proxy/NAME/... to URL (repeatable; a bare URL is named default).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8001, show_default=True, help="Port."
)
@click.option(
    "--out",
    default="recordings",
    show_default=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder the streams are written to (created if missing).",
)
@click.option(
    "--keep-requests",
    is_flag=True,
    help="Also write each request body, its keys masked (as an upload's are).",
)
@click.option(
    "--allowed-hosts",
    default="",
    metavar="NAMES",
    help="Host names answered besides localhost, the loopback addresses and the --host it "
    "binds, space- or comma-separated ('*' for any); other names get a 400, so a page of "
    "another site cannot reach it by DNS rebinding.",
)
@click.option(
    "--proxy-timeout",
    type=click.FloatRange(min=0.1),
    default=600.0,
    show_default=True,
    metavar="S",
    help="Seconds an upstream may stay silent.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=64 * 1024 * 1024,
    show_default=True,
    help="The most of one response written; the rest is forwarded, not kept.",
)
def record(
    upstreams: tuple[str, ...],
    host: str,
    port: int,
    out: Path,
    keep_requests: bool,
    allowed_hosts: str,
    proxy_timeout: float,
    max_bytes: int,
) -> None:
    """Forward a client's requests to its provider and write every stream to DIR: STREAM.sse
    and STREAM.timing.json (when each piece arrived). Point the client's base URL at
    http://HOST:PORT/proxy/NAME/v1 (OPENAI_BASE_URL, baseURL)."""
    import uvicorn

    from webapp.cli.serve import hosts_of
    from webapp.web.backend.forward import Forwarder, Limits, hide_queries_in_logs, parse_upstreams
    from webapp.web.backend.security import AllowedHosts

    try:
        parsed = parse_upstreams(upstreams)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--upstream") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create {out}: {error.strerror or error}") from None
    hide_queries_in_logs()
    limits = Limits(read_timeout=proxy_timeout, stored_bytes=max_bytes, keep_requests=keep_requests)
    recorder = FileRecorder(out, lambda line: click.echo(line, err=True))
    hosts = AllowedHosts.of(hosts_of(allowed_hosts, host))
    app = recording_app(Forwarder(parsed, recorder, limits), hosts)
    shown = ", ".join(
        f"http://{host}:{port}/proxy/{name}/ -> {url}" for name, url in parsed.items()
    )
    click.echo(f"recording into {out}/: {shown}", err=True)
    uvicorn.run(app, host=host, port=port)


def recording_app(forwarder: Any, hosts: Any) -> Any:
    """An ASGI app of the proxy alone: `/proxy/NAME/...` forwarded, anything else a 404, and
    a Host not among `hosts` (`AllowedHosts`) a 400, as `serve` answers it."""
    from starlette.types import Receive, Scope, Send

    from webapp.web.backend.forward import answer
    from webapp.web.backend.security import RefuseUnknownHosts
    from webapp.web.routes.proxy import ProxyRoutes

    async def elsewhere(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await forwarder.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        elif scope["type"] == "http":
            await answer(send, 404, "streamviz record serves only /proxy/NAME/...", "not_found")

    return RefuseUnknownHosts(ProxyRoutes(elsewhere, forwarder), hosts)
