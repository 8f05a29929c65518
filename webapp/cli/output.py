"""What a command writes on stdout: one JSON document or text lines, and a reader that went away.

Exit code 141 when the reader of stdout went away (`| head`), as for SIGPIPE.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from webapp.cli.render import Painter, painter_for
from webapp.core.jsoncheck import dumps


def write_json(document: Any) -> None:
    """One JSON document and a newline on stdout."""
    emit([dumps(document), b"\n"])


def write_text(lines: Callable[[Painter], Iterable[str]], batch: int = 2048) -> None:
    """Lines on stdout, coloured when it is a terminal; what cannot be encoded is escaped."""
    emit(_encoded(lines(painter_for(sys.stdout)), batch))


def write(
    output: str,
    document: Callable[[], dict[str, Any]],
    lines: Callable[[Painter], Iterable[str]],
) -> None:
    """Write the JSON document or the text view, as `--format` asks."""
    if output == "json":
        write_json(document())
    else:
        write_text(lines)


def _encoded(lines: Iterable[str], batch: int) -> Iterator[bytes]:
    pending: list[str] = []
    for line in lines:
        pending.append(line)
        if len(pending) >= batch:
            yield ("\n".join(pending) + "\n").encode("utf-8", "backslashreplace")
            pending.clear()
    if pending:
        yield ("\n".join(pending) + "\n").encode("utf-8", "backslashreplace")


def emit(chunks: Iterable[bytes]) -> None:
    """Write to stdout; when the reader has gone (`| head`), stop quietly with status 141,
    the shell's for SIGPIPE, so that a cut-short `check` is not taken for "anomalies"."""
    stream: BinaryIO = sys.stdout.buffer
    try:
        for chunk in chunks:
            stream.write(chunk)
        stream.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
