"""Running a lens: a subprocess with a timeout and a memory cap, one JSON request and reply.

A library that hangs is killed at the timeout, one that crashes gives its exit status and the
end of its stderr, one that prints prints to a file nobody shows: the server only ever sees a
`LensResult`. A lens that dies at its memory cap (a crash with an out-of-memory message, or
with its peak resident memory at the cap) is said to have run out of the cap, with `limit`
set: the cap is ours, not the library's error. A lens whose package is missing (or at another
version than the pin) is `unavailable`, with the command that installs it.

A lens runs isolated from where it was started: in a temporary folder of its own, a Python
lens as a script under `python -I` (no current folder, script folder, PYTHONPATH or user site
on its import path: a local `h2.py` cannot stand in for a library's dependency), with the
variables that change how Python or Node load modules removed from its environment.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from webapp.lenses.pins import INSTALL, PINS, Pin
from webapp.lenses.results import LensResult, Limit, result_from_json

NODE_DIR = Path(__file__).parent / "node"
"""The lenses' own npm folder: package.json, package-lock.json, lens.mjs, node_modules."""
PYLENS = Path(__file__).parent / "pylens.py"
"""The Python lenses' child, run as a script (it imports no streamviz module)."""
TIMEOUT = 60.0
"""Seconds a lens may take for one batch of streams (LiteLLM alone imports for seconds)."""
MEMORY = 1 << 30
"""The data-size cap of a lens process, in bytes (RLIMIT_DATA: the heap and private writable
mappings; not RLIMIT_AS, which Node's WebAssembly reservations exceed while using little)."""
STDERR_SHOWN = 2000
"""How many characters of a crashed lens's stderr are kept in its error."""
STDERR_READ = 256 * 1024
"""How much of a crashed lens's stderr is searched for an out-of-memory message."""
NEAR_CAP = 0.9
"""A lens that crashes with its peak resident memory at this share of the cap ran out of it."""
SPAWN_SLACK = 32 << 20
"""Bytes a child's peak may pass ours by before it is its own (the spawn touches a few pages
of the memory it was spawned from before it execs)."""
OUT_OF_MEMORY = (
    "memoryerror",
    "out of memory",
    "bad_alloc",
    "cannot allocate memory",
    "allocation failed",
    "reportoomfailure",
    "ret != nullptr",
)
"""What Python, V8 and Node print (lower-cased) when an allocation is refused."""
UNSAFE_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH",
              "NODE_PATH", "NODE_OPTIONS")  # fmt: skip
"""Variables that would change which modules a lens loads; never passed on."""

_CAP = (
    "import os, resource, sys\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
"""Set the memory cap in the child and become the lens (no preexec_fn: the server has threads)."""


@dataclass(frozen=True, slots=True)
class Lens:
    """How to run one client: its pin, its command line, and where it runs."""

    pin: Pin
    command: tuple[str, ...]
    cwd: Path | None = None
    """Where the lens runs; None: a temporary folder of its own."""
    missing: str | None = None
    """Why the lens cannot run here (package absent or at another version), or None."""

    @property
    def client(self) -> str:
        return self.pin.client


def installed_version(pin: Pin) -> str | None:
    """The version of the pinned package installed for this lens, or None."""
    if pin.runtime == "python":
        try:
            return importlib.metadata.version(pin.package)
        except importlib.metadata.PackageNotFoundError:
            return None
    manifest = NODE_DIR / "node_modules" / pin.package / "package.json"
    try:
        version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def _missing(pin: Pin) -> str | None:
    if pin.runtime == "node" and shutil.which("node") is None:
        return "Node.js is not on PATH"
    version = installed_version(pin)
    if version is None:
        return f"{pin.package} is not installed"
    if version != pin.version:
        return f"{pin.package} {version} is installed, the pin is {pin.version}"
    return None


def lens_for(pin: Pin) -> Lens:
    """The real lens for a pinned client, with whatever this machine lacks to run it."""
    if pin.runtime == "python":
        command: tuple[str, ...] = (sys.executable, "-I", str(PYLENS), pin.client)
        return Lens(pin, command, None, _missing(pin))
    node = shutil.which("node") or "node"
    return Lens(pin, (node, str(NODE_DIR / "lens.mjs"), pin.client), None, _missing(pin))


def default_lenses() -> tuple[Lens, ...]:
    """Every pinned client's lens, in table order, as this machine has them now (a library
    installed since the last call is seen: the import system's caches are dropped first)."""
    importlib.invalidate_caches()
    return tuple(lens_for(pin) for pin in PINS)


def run_lens(
    lens: Lens, streams: Sequence[str], *, timeout: float = TIMEOUT, memory: int = MEMORY
) -> list[LensResult]:
    """Each stream's result under one lens, run in one capped subprocess."""
    pin = lens.pin
    if lens.missing is not None:
        message = f"{lens.missing}: run `{INSTALL}`"
        unavailable = LensResult(pin.client, pin.version, "unavailable", (), message, INSTALL)
        return [unavailable] * len(streams)
    started = time.monotonic()
    try:
        replies = _run(lens, streams, timeout, memory)
    except _Failed as failure:
        failed = LensResult(pin.client, pin.version, "error", (), str(failure), limit=failure.limit)
        return [failed] * len(streams)
    seconds = (time.monotonic() - started) / max(1, len(streams))
    results = []
    for reply in replies:
        try:
            result = result_from_json(pin.client, pin.version, reply)
        except ValueError as error:
            result = LensResult(pin.client, pin.version, "error", (), f"bad lens reply: {error}")
        if result.status == "error" and _says_out_of_memory(result.error or ""):
            result = replace(result, error=ran_out(lens.client, memory), limit="memory")
        results.append(replace(result, seconds=seconds))
    return results


def ran_out(client: str, memory: int) -> str:
    """What a lens that hit its memory cap reports: the cap is ours, not the library's error."""
    return (
        f"{client} ran out of its {_size(memory)} memory cap (a limit streamviz sets on every "
        "lens, not an error of the library)"
    )


def _size(memory: int) -> str:
    if memory >= 1 << 30 and memory % (1 << 30) == 0:
        return f"{memory >> 30} GiB"
    return f"{memory / (1 << 20):g} MiB"


def _says_out_of_memory(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in OUT_OF_MEMORY)


class _Failed(Exception):
    """The lens process itself failed (timeout, crash, unreadable reply); says how."""

    def __init__(self, message: str, limit: Limit | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class _Measured(subprocess.Popen[bytes]):
    """A child process whose peak resident memory is known once it is reaped (`wait4`)."""

    peak = 0
    """Bytes; 0 until the child has been waited for."""

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): no status to read
            return self.pid, 0
        if pid:
            self.peak = usage.ru_maxrss * 1024  # kilobytes on Linux
        return pid, status


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in UNSAFE_ENV}
    return {**env, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}


def _run(lens: Lens, streams: Sequence[str], timeout: float, memory: int) -> list[object]:
    request = json.dumps({"streams": list(streams)}).encode("utf-8")
    argv = [sys.executable, "-I", "-c", _CAP, str(memory), *lens.command]
    # A child's ru_maxrss starts at this process's own peak (the memory it was spawned from
    # counts until it execs), so only a peak above ours says anything of the lens's memory.
    ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with (
        tempfile.TemporaryFile() as stderr,
        tempfile.TemporaryDirectory(prefix="streamviz-lens-") as folder,
    ):
        process = _Measured(
            argv,
            cwd=lens.cwd or folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=_environment(),
            start_new_session=True,
        )
        try:
            out, _ = process.communicate(request, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise _Failed(f"{lens.client} timed out after {timeout:g} s") from None
        finally:
            _kill_group(process)
        stderr.seek(0)
        said = stderr.read(STDERR_READ).decode("utf-8", "replace")
        stderr.seek(0, os.SEEK_END)
        size = stderr.tell()
        if size > STDERR_READ:
            stderr.seek(max(STDERR_READ, size - STDERR_SHOWN))
            said += stderr.read().decode("utf-8", "replace")
        tail = said[-STDERR_SHOWN:].strip()
    if process.returncode != 0:
        peak = process.peak if process.peak > ours + SPAWN_SLACK else 0
        if peak >= NEAR_CAP * memory or _says_out_of_memory(said):
            raise _Failed(ran_out(lens.client, memory), "memory")
        raise _Failed(f"{lens.client} crashed ({_exit(process.returncode)}): {tail or 'no output'}")
    try:
        reply = json.loads(out.decode("utf-8").strip().splitlines()[-1])
        results = reply["results"]
    except (ValueError, IndexError, KeyError, TypeError):
        raise _Failed(f"{lens.client} gave no readable reply: {tail or 'no output'}") from None
    if not isinstance(results, list) or len(results) != len(streams):
        raise _Failed(f"{lens.client} answered {len(results)} streams of {len(streams)}")
    return results


def _exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _kill(process: subprocess.Popen[bytes]) -> None:
    _kill_group(process)
    process.kill()
    process.communicate()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """End anything the lens left running in its session."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
