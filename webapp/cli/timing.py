"""The timing a command's input carries, for `trace --format json`'s `timing` key.

A cassette or a HAR entry carries its own (`webapp.core.readers.timing.read_timing`); a stream
`streamviz record` wrote has it in the `.timing.json` beside it (`FILE.sse` and
`FILE.timing.json`), used when its byte count matches the file's (an edited file's offsets
would point at other records).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from webapp.core.readers.timing import (
    Arrivals,
    read_timing,
    record_arrivals,
    record_lines,
    timing_document,
)
from webapp.core.records import ReadResult

SIDECAR = ".timing.json"


def sidecar(file: str) -> Path | None:
    """The `.timing.json` beside FILE, when there is one (none for stdin)."""
    if file == "-":
        return None
    found = Path(file).with_suffix(SIDECAR)
    return found if found.is_file() and found != Path(file) else None


def input_timing(file: str, source: ReadResult) -> dict[str, Any] | None:
    """The input's timing document, or None when it carries none."""
    carried = read_timing(source)
    if carried is not None:
        return carried
    beside = sidecar(file)
    if beside is None:
        return None
    try:
        value = json.loads(beside.read_text(encoding="utf-8"))
        data = Path(file).read_bytes()
    except (OSError, ValueError) as error:
        click.echo(f"{beside}: not used ({error})", err=True)
        return None
    arrivals = Arrivals.from_json(value)
    if arrivals is None or not arrivals.ends or arrivals.ends[-1] != len(data):
        click.echo(f"{beside}: not used (it is not the timing of {file}'s bytes)", err=True)
        return None
    lines = record_lines(source.records)
    per_record = record_arrivals(data, arrivals, lines, sse=source.format == "sse")
    live = isinstance(value, dict) and value.get("state") == "live"
    return timing_document(
        len(lines),
        per_record,
        first_byte=arrivals.headers_ms,
        end=None if live else arrivals.ms[-1],
        source="capture",
    )


def missing_end(file: str) -> str:
    """Why the stream `streamviz record` wrote to FILE stops before its end, as the
    `.timing.json` beside it says ("cut by the client"); "" when it does not say so."""
    from webapp.storage.store import missing_end as of_state

    beside = sidecar(file)
    if beside is None:
        return ""
    try:
        value = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""  # `input_timing` says why it is not used
    return of_state(value.get("state")) if isinstance(value, dict) else ""
