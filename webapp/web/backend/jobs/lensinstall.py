"""A client-lens install running beside the server, as its log tells (`make run` starts one).

`scripts/install-lenses.sh LOG make clients` writes the log: a first line naming its process,
the install's own output, and a last line saying how it ended. The clients page shows the
state and the log's last lines while a lens is missing; the lenses themselves are found
installed by looking again (`webapp.lenses.runner.default_lenses`), not from the log.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SHOWN = 8
"""Lines of the log the page shows."""
READ = 64 * 1024
"""How much of the log's end is read."""
_STARTED = re.compile(r"^streamviz: installing the client lenses \(pid (\d+)\)")
DONE = "streamviz: the client lenses are installed"
FAILED = "streamviz: installing the client lenses failed"

State = Literal["running", "done", "failed", "stopped"]


@dataclass(frozen=True, slots=True)
class Install:
    """What the log says: running, done, failed, or stopped (its process is gone, unfinished)."""

    state: State
    lines: tuple[str, ...]
    """The log's last lines (at most `SHOWN`)."""
    path: str


def install_state(path: str) -> Install | None:
    """The install the log at `path` describes, or None (no log given, or none there)."""
    if not path:
        return None
    try:
        with Path(path).open("rb") as log:
            head = log.readline(4096).decode("utf-8", "replace")
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - READ))
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    state: State
    if last.startswith(DONE):
        state = "done"
    elif last.startswith(FAILED):
        state = "failed"
    else:
        started = _STARTED.match(head)
        state = "running" if started is None or _alive(int(started.group(1))) else "stopped"
    return Install(state, tuple(lines[-SHOWN:]), path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process holds the number: not ours, gone
        return False
    return True
