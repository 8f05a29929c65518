"""`streamviz record`: the recording proxy without the web app, writing each stream to files.

A client's base URL is `http://HOST:PORT/proxy/NAME/v1`, as with `serve --upstream`. Each
event stream (or JSON chat completion) becomes `DIR/STAMP-MODEL-RECORDER-N.sse` (`.json`) and
`.timing.json` beside it (`webapp.proxy.files`); with `--keep-requests` the request body is
written as `.request.json` too, its keys masked. It serves the proxy wing's app alone
(`webapp.proxy.app`: no web module is loaded) and, like `serve`, answers only the Host names it
is known by (DNS rebinding).
"""

from __future__ import annotations

from pathlib import Path

import click

from webapp.cli.inputs import InputError
from webapp.cli.serving import listen, shared


@click.command(short_help="Record streams through a proxy into .sse files (no web app).")
@shared(
    "--upstream",
    "Forward /proxy/NAME/... to URL (repeatable; a bare URL is named default).",
    required=True,
)
@listen(port=8001)
@click.option(
    "--out",
    default="recordings",
    show_default=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder the streams are written to (created if missing).",
)
@shared("--keep-requests", "Also write each request body, its keys masked (as an upload's are).")
@shared(
    "--allowed-hosts",
    "Host names answered besides localhost, the loopback addresses and the --host it binds, "
    "space- or comma-separated ('*' for any); other names get a 400, so a page of another site "
    "cannot reach it by DNS rebinding.",
)
@shared("--proxy-timeout", "Seconds an upstream may stay silent.")
@shared("--max-bytes", "The most of one response written; the rest is forwarded, not kept.")
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
    from webapp.proxy.app import recording_app
    from webapp.proxy.files import FileRecorder
    from webapp.proxy.forward import Forwarder, Limits, hide_queries_in_logs, parse_upstreams
    from webapp.proxy.guard import AllowedHosts

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
