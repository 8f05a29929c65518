"""For the load and durability scripts: a throwaway store and `streamviz serve` on loopback."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
READY_SECONDS = 60.0


def free_port() -> int:
    """A port nobody listens on right now, on the loopback interface."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def throwaway_store(kind: str, url: str | None) -> Iterator[str]:
    """A `--db` value: `url` if given, else a new SQLite file or a new throwaway PostgreSQL."""
    if url:
        yield url
        return
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="streamviz-bench-") as folder:
            yield str(Path(folder) / "bench.sqlite3")
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.pgserver import start_server  # the tests' way: initdb/pg_ctl as a plain user

    server = start_server()
    try:
        yield server.new_schema_url()
    finally:
        server.stop()


class Server:
    """`streamviz serve` in its own process group, so that SIGKILL takes its workers too."""

    def __init__(
        self,
        db: str,
        workers: int = 1,
        port: int | None = None,
        extra: list[str] | None = None,
        package: Path = ROOT,
    ) -> None:
        self.db = db
        self.package = package
        self.extra = extra or []
        self.workers = workers
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (kept open across restarts)

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        """Start the server and wait until it answers."""
        command = [
            sys.executable, "-P", "-c", "from webapp.cli import main; main()", "serve",
            "--host", HOST, "--port", str(self.port), "--db", self.db,
            "--workers", str(self.workers), *self.extra,
        ]  # fmt: skip
        # The package from `package` (this checkout, its core as built, as `make run` serves it),
        # and not from the working directory (-P).
        env = {**os.environ, "PYTHONPATH": str(self.package)}
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.log, stderr=self.log, start_new_session=True
        )
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the server exited ({self.process.returncode}):\n{self.output()}"
                )
            try:
                if httpx.get(self.base + "/", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"the server did not answer within {READY_SECONDS:.0f} s")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the server's process group and wait for the server to end."""
        if self.process is None or self.process.poll() is not None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """Stop gracefully (SIGTERM), or kill after 10 s."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        """What the server printed so far (its last 4 KB)."""
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-4000:]


def small_stream(rng: random.Random, tag: str) -> str:
    """A small chat-completions SSE stream: one or two tool calls in a few fragments each."""
    lines: list[str] = []

    def send(delta: dict[str, object], finish: str | None = None) -> None:
        chunk = {
            "id": f"chatcmpl-{tag}",
            "object": "chat.completion.chunk",
            "model": "gpt-bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        lines.append("data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n")

    send({"role": "assistant", "content": None})
    for index in range(rng.randint(1, 2)):
        call = {"index": index, "id": f"call_{tag}_{index}", "type": "function"}
        send({"tool_calls": [{**call, "function": {"name": "lookup", "arguments": ""}}]})
        arguments = json.dumps({"city": f"Town {tag}", "days": rng.randint(1, 9)})
        pieces = rng.randint(2, 5)
        size = -(-len(arguments) // pieces)
        for start in range(0, len(arguments), size):
            part = arguments[start : start + size]
            send({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    send({}, "tool_calls")
    lines.append("data: [DONE]\n\n")
    return "".join(lines)


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list (0 for an empty one)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]
