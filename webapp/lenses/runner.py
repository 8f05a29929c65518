"""Running a lens: a subprocess with a timeout and a memory cap, one JSON request and reply.

A library that hangs is killed at the timeout, one that crashes or runs out of memory gives its
exit status and the end of its stderr, one that prints prints to a file nobody shows: the
server only ever sees a `LensResult`. A lens whose package is missing (or at another version
than the pin) is `unavailable`, with the command that installs it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from webapp.lenses.pins import INSTALL, PINS, Pin
from webapp.lenses.results import LensResult, result_from_json

NODE_DIR = Path(__file__).parent / "node"
"""The lenses' own npm folder: package.json, package-lock.json, lens.mjs, node_modules."""
TIMEOUT = 60.0
"""Seconds a lens may take for one batch of streams (LiteLLM alone imports for seconds)."""
MEMORY = 1 << 30
"""The data-size cap of a lens process, in bytes (RLIMIT_DATA: the heap and private writable
mappings; not RLIMIT_AS, which Node's WebAssembly reservations exceed while using little)."""
STDERR_SHOWN = 2000
"""How many characters of a crashed lens's stderr are kept in its error."""

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
        command: tuple[str, ...] = (sys.executable, "-m", "webapp.lenses.pylens", pin.client)
        return Lens(pin, command, None, _missing(pin))
    node = shutil.which("node") or "node"
    return Lens(pin, (node, str(NODE_DIR / "lens.mjs"), pin.client), NODE_DIR, _missing(pin))


def default_lenses() -> tuple[Lens, ...]:
    """Every pinned client's lens, in table order."""
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
        failed = LensResult(pin.client, pin.version, "error", (), str(failure))
        return [failed] * len(streams)
    seconds = (time.monotonic() - started) / max(1, len(streams))
    results = []
    for reply in replies:
        try:
            result = result_from_json(pin.client, pin.version, reply)
        except ValueError as error:
            result = LensResult(pin.client, pin.version, "error", (), f"bad lens reply: {error}")
        results.append(_timed(result, seconds))
    return results


def _timed(result: LensResult, seconds: float) -> LensResult:
    return LensResult(
        result.client,
        result.version,
        result.status,
        result.calls,
        result.error,
        result.install,
        seconds,
    )


class _Failed(Exception):
    """The lens process itself failed (timeout, crash, unreadable reply); says how."""


def _run(lens: Lens, streams: Sequence[str], timeout: float, memory: int) -> list[object]:
    request = json.dumps({"streams": list(streams)}).encode("utf-8")
    argv = [sys.executable, "-c", _CAP, str(memory), *lens.command]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            argv,
            cwd=lens.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
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
        tail = stderr.read().decode("utf-8", "replace")[-STDERR_SHOWN:].strip()
    if process.returncode != 0:
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
