"""`streamviz delete`: the operator removes a stored stream, whoever stored it."""

from __future__ import annotations

import click

from webapp.cli.serve import store_errors
from webapp.storage import open_storage


@click.command()
@click.option(
    "--db",
    default="data/streamviz.sqlite3",
    show_default=True,
    metavar="PATH|URL",
    help="The store `streamviz serve --db` uses.",
)
@click.argument("stream_ids", nargs=-1, required=True, metavar="ID...")
def delete(db: str, stream_ids: tuple[str, ...]) -> None:
    """Remove the streams, their notes and cached artefacts; exit 1 when an id is unknown."""
    with store_errors(db):
        storage = open_storage(db)
    missing = 0
    try:
        for stream_id in stream_ids:
            if storage.delete(stream_id, "by the operator"):
                click.echo(f"deleted {stream_id}")
            else:
                click.echo(f"no stream has the id {stream_id!r}", err=True)
                missing += 1
    finally:
        storage.close()
    if missing:
        raise SystemExit(1)
