"""`streamviz replay FILE`: serve one recorded stream to an application's own client, no store.

The client's base URL is `http://HOST:PORT/replay/NAME/v1`, NAME being the file's name without
its suffix (a HAR's or a cassette's entry N: `/replay/NAME/N/v1`); it gets the file's stream at
its recorded pace (a `.timing.json` beside it, a cassette's arrivals) or its non-stream twin, as
`/replay/ID/...` on `streamviz serve` answers (`webapp.proxy.replay`). It serves the proxy wing's
replay alone: no module of the web is loaded. `--once` exits after one response (test suites).
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import click

from webapp.cli.inputs import InputError

_HELP_SPEED = "The pace: 1 as recorded, 2 twice as fast, 0 as fast as possible."


class FileReplays:
    """The replay's `Library` of one file: its stream (any of its entries) by the file's name."""

    def __init__(self, file: str, name: str, har_entry: int | None, input_format: str) -> None:
        self.file = file
        self.name = name
        self.har_entry = har_entry
        self.input_format = input_format
        self._read: dict[int | None, Any] = {}
        self._lock = threading.Lock()

    def load(self, entry: int | None) -> Any:
        """(the reading, the file's bytes when they are the stream, its timing) of `entry`
        (None: --har-entry's); InputError when it does not read."""
        from webapp.cli.inputs import load
        from webapp.cli.timing import input_timing
        from webapp.triage.replay import body

        wanted = self.har_entry if entry is None else entry
        with self._lock:
            if wanted not in self._read:
                found = load(self.file, self.input_format, wanted)
                data = body(found, Path(self.file).read_bytes())
                self._read[wanted] = (found, data, input_timing(self.file, found))
            return self._read[wanted]

    def _reading(self, stream_id: str, entry: int | None) -> Any:
        from webapp.proxy.replay import Missing

        if stream_id != self.name:
            raise Missing(f"no stream has the id {stream_id[:100]!r}; this one is {self.name!r}")
        try:
            return self.load(entry)
        except (InputError, OSError) as error:
            raise Missing(str(getattr(error, "message", error))) from None

    def paced(self, stream_id: str, entry: int | None) -> Any:
        """The file's stream one piece per record, with their arrivals when it has them."""
        from webapp.triage.replay import Paced, piece_arrivals, pieces

        found, data, timing = self._reading(stream_id, entry)
        cut = tuple(pieces(found, data))
        if timing is None:
            return Paced(cut, None)
        timed = piece_arrivals(found, data, timing["arrivals"][:-1])
        return Paced(cut, tuple(timed), timing["first_byte"])

    def twin(self, stream_id: str, entry: int | None) -> Any:
        """The file's non-stream twin, or why it has none."""
        from webapp.cli.trace import recorded_end
        from webapp.core.contract import read_contract
        from webapp.triage.replay import twin

        found, _, _ = self._reading(stream_id, entry)
        recorded, end = recorded_end(self.file)  # a recording's end is the connection's
        contract = read_contract(found.records).as_recorded(end, recorded=recorded)
        return twin(contract, found.records, name=self.name)


@click.command(short_help="Serve a recorded stream to an application's client (no store).")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--har-entry", type=click.IntRange(min=1), default=None, metavar="N",
              help="The HAR entry (or cassette interaction) served by default.")  # fmt: skip
@click.option("--input-format", default="auto", show_default=True, help="The file's format.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8002, show_default=True, help="Port."
)
@click.option("--speed", type=str, default="1", show_default=True, help=_HELP_SPEED)
@click.option("--once", is_flag=True, help="Exit after one response (for test suites).")
@click.option(
    "--allowed-hosts",
    default="",
    metavar="NAMES",
    help="Host names answered besides localhost, the loopback addresses and the --host it "
    "binds (as for serve).",
)
def replay(
    file: str,
    har_entry: int | None,
    input_format: str,
    host: str,
    port: int,
    speed: str,
    once: bool,
    allowed_hosts: str,
) -> None:
    """Serve FILE's stream as an OpenAI-compatible endpoint: point the application's base URL
    at http://HOST:PORT/replay/NAME/v1 (NAME: FILE's name without its suffix) and its client
    receives the recorded bytes, one HTTP chunk per record, at the recorded pace; a request
    with "stream": false gets the non-stream twin (the calls the stream means), or a 409
    when the stream admits two readings."""
    import uvicorn

    from webapp.cli.serve import hosts_of
    from webapp.proxy.guard import AllowedHosts
    from webapp.proxy.replay import replay_app
    from webapp.triage.replay import parse_speed

    try:
        pace = parse_speed(speed)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--speed") from None
    name = Path(file).name.split(".", 1)[0] or "stream"
    library = FileReplays(file, name, har_entry, input_format)
    found = library.load(None)[0]  # exit 2 now when the file does not read
    server: uvicorn.Server | None = None

    def answered() -> None:
        if once and server is not None:
            server.should_exit = True

    hosts = AllowedHosts.of(hosts_of(allowed_hosts, host))
    app = replay_app(library, hosts, speed=1.0 if pace is None else pace, answered=answered)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    sock = _bound(host, port)
    port = sock.getsockname()[1]
    records = len(found.records)
    where = f"[{host}]" if ":" in host else host
    click.echo(
        f"replaying {file} ({records} records): base URL http://{where}:{port}/replay/{name}/v1"
        + (" (one response, then exit)" if once else ""),
        err=True,
    )
    server.run(sockets=[sock])


def _bound(host: str, port: int) -> socket.socket:
    """A listening socket on HOST:PORT (port 0: a free one, which the base URL then names)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(128)
    return sock
