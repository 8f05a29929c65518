"""Which process holds a row that is still running: a minimise job, a live capture.

A row names its process as "host pid start-time" (the start time since boot, Linux's
/proc/PID/stat field 22, so that a later process given the same pid is not taken for it). A
process on the same host can then tell whether the one that holds a row is gone (killed, or
crashed) and end the row for it; another host's rows are left alone.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path


def process_tag(pid: int) -> str:
    """A process as no later one is: its pid and its start time since boot, "" when it is
    gone; the pid alone where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError:
        return str(pid)
    fields = stat.rsplit(")", 1)[-1].split()  # after the command's name, which may hold spaces
    return f"{pid} {fields[19]}" if len(fields) > 19 else str(pid)


@cache
def _tag_of(pid: int) -> str:
    return f"{socket.gethostname()} {process_tag(pid)}"


def owner_tag() -> str:
    """This process, as a row names it: "host pid start-time"."""
    return _tag_of(os.getpid())  # a fork's pid differs: its own tag


def gone(owner: str, host: str) -> bool:
    """Whether `owner` is a process of `host` (this one's) that has stopped (False for
    another host's, which cannot be told from here)."""
    if not owner.startswith(host + " "):
        return False
    parts = owner.removeprefix(host + " ").split()
    pid = int(parts[0]) if parts and parts[0].isdigit() else 0
    return process_tag(pid) != " ".join(parts)
