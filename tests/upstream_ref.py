"""Run the published upstream assembler (pi-ai's openai-completions) on a stream's SSE text.

`UpstreamRef.run_upstream(sse_text)` serves the text from a loopback HTTP server as a
`POST /v1/chat/completions` response and has a long-lived Node worker
(`tests/upstream/harness.mjs`) call upstream's `stream()` against it, so upstream reads the
very bytes our readers read: SSE decoding by the OpenAI SDK, assembly by pi-ai. Both the
server and the worker start on first use and live for the test session.
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

UPSTREAM_DIR = Path(__file__).parent / "upstream"
HARNESS = UPSTREAM_DIR / "harness.mjs"
PACKAGE = UPSTREAM_DIR / "node_modules" / "@earendil-works" / "pi-ai" / "package.json"
VERSION = "1.6.0"
REPLY_TIMEOUT = 60.0
"""Seconds to wait for one reply from the worker (each takes a few milliseconds)."""


class UpstreamUnavailable(RuntimeError):
    """Node or the upstream package is missing or broken; the message says what to run."""


@dataclass(frozen=True, slots=True)
class UpstreamResult:
    """What upstream did with one stream: its events and the final message's content blocks."""

    events: tuple[dict[str, Any], ...]
    content: tuple[dict[str, Any], ...]
    request: dict[str, Any]
    """The request body upstream sent (for a sanity check that it streamed)."""

    @property
    def errored(self) -> bool:
        """Whether the stream ended with an `error` event."""
        return bool(self.events) and self.events[-1]["type"] == "error"

    def argument_texts(self) -> dict[int, str]:
        """Each tool-call block's arguments text, joined from its `toolcall_delta` deltas."""
        calls = {
            event["contentIndex"] for event in self.events if event["type"] == "toolcall_start"
        }
        texts = dict.fromkeys(sorted(calls), "")
        for event in self.events:
            if event["type"] == "toolcall_delta":
                texts[event["contentIndex"]] += event["delta"]
        return texts


class StreamServer:
    """A loopback HTTP server: each registered body is served under its own URL prefix."""

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}
        self._requests: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._tokens = itertools.count()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                parts = self.path.split("/")  # "", "s", token, "v1", "chat", "completions"
                token = parts[2] if len(parts) == 6 and parts[1] == "s" else ""
                with server._lock:
                    body = server._bodies.get(token)
                    if body is not None and parts[3:] == ["v1", "chat", "completions"]:
                        server._requests[token] = json.loads(raw or b"null")
                if body is None or parts[3:] != ["v1", "chat", "completions"]:
                    self.send_error(404, f"no stream registered for {self.path}")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def register(self, sse_text: str) -> tuple[str, str]:
        """Serve `sse_text`; returns (token, base URL) for one request."""
        token = str(next(self._tokens))
        with self._lock:
            self._bodies[token] = sse_text.encode("utf-8")
        return token, f"http://127.0.0.1:{self.port}/s/{token}/v1"

    def release(self, token: str) -> dict[str, Any] | None:
        """Forget a registered body; returns the request that fetched it, if any did."""
        with self._lock:
            self._bodies.pop(token, None)
            return self._requests.pop(token, None)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


class Worker:
    """The Node harness process: one JSON line in, one JSON line out."""

    def __init__(self) -> None:
        check_installed()
        node = shutil.which("node")
        assert node is not None
        # Lives as long as the worker; closed in close().
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(
            [node, str(HARNESS)],
            cwd=UPSTREAM_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self._process.stdout is not None
        self._selector.register(self._process.stdout, selectors.EVENT_READ)
        hello = self._read_line(what="the harness to start")
        if not hello.get("ready"):
            raise UpstreamUnavailable(f"the upstream harness did not start: {hello}")

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request line and wait for its reply line."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError as error:
            raise UpstreamUnavailable(f"the upstream harness died: {self.stderr()}") from error
        return self._read_line(what="upstream's reply")

    def _read_line(self, what: str) -> dict[str, Any]:
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + REPLY_TIMEOUT
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._selector.select(remaining):
                raise UpstreamUnavailable(
                    f"timed out after {REPLY_TIMEOUT}s waiting for {what}; "
                    f"harness stderr:\n{self.stderr()}"
                )
            data = os.read(fd, 1 << 16)
            if not data:
                code = self._process.wait()
                raise UpstreamUnavailable(
                    f"the upstream harness exited with status {code} while we waited for "
                    f"{what}. If the package is missing or stale, run `make upstream`. "
                    f"Harness stderr:\n{self.stderr()}"
                )
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4000:]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        assert self._process.stdout is not None
        self._process.stdout.close()
        self._selector.close()
        self._stderr.close()


def check_installed() -> None:
    """Raise `UpstreamUnavailable` unless Node and the pinned upstream package are present."""
    if shutil.which("node") is None:
        raise UpstreamUnavailable(
            "Node.js is not on PATH: the differential tests run the published upstream "
            "assembler under Node. Install Node.js, then run `make upstream`."
        )
    if not PACKAGE.is_file():
        raise UpstreamUnavailable(
            f"{PACKAGE.relative_to(UPSTREAM_DIR.parent.parent)} is missing: "
            "run `make upstream` (npm ci in tests/upstream)."
        )
    version = json.loads(PACKAGE.read_text()).get("version")
    if version != VERSION:
        raise UpstreamUnavailable(
            f"tests/upstream has @earendil-works/pi-ai {version}, the tests pin {VERSION}: "
            "run `make upstream`."
        )


class UpstreamRef:
    """The server and the worker, started on first use; a failure to start is kept and re-raised."""

    def __init__(self) -> None:
        self._server: StreamServer | None = None
        self._worker: Worker | None = None
        self._failure: UpstreamUnavailable | None = None

    def _start(self) -> tuple[StreamServer, Worker]:
        if self._failure is not None:
            raise self._failure
        try:
            if self._server is None:
                self._server = StreamServer()
            if self._worker is None:
                self._worker = Worker()
        except UpstreamUnavailable as failure:
            self._failure = failure
            raise
        return self._server, self._worker

    def run_upstream(self, sse_text: str) -> UpstreamResult:
        """Upstream's events and final content for a stream given as SSE text."""
        server, worker = self._start()
        token, url = server.register(sse_text)
        try:
            reply = worker.ask({"url": url})
        finally:
            request = server.release(token)
        if "crash" in reply:
            raise AssertionError(f"the upstream harness failed on this stream:\n{reply['crash']}")
        if request is None:
            raise AssertionError(f"upstream never fetched the stream; it said: {reply}")
        return UpstreamResult(tuple(reply["events"]), tuple(reply["content"]), request)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
        if self._server is not None:
            self._server.close()
