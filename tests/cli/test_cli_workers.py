"""`streamviz serve --workers N`: settings through the environment, one store for all workers.

The live test binds a Unix socket itself and hands it to `serve --fd`, so requests wait in
the socket's backlog until a worker accepts them (no polling for readiness). To show that
each worker serves what another stored, it stops one worker (SIGSTOP) while the other
answers, then the other way round: whichever process answers, it can only have the stream
from the store.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tests.cli.clikit import Invoke
from tests.web.webkit import CONTINUATION
from webapp.cli.serve import FACTORY
from webapp.settings import MB, Settings

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0


def test_settings_travel_through_the_environment() -> None:
    settings = Settings(
        db="postgresql://team@db/streamviz",
        max_bytes=123,
        cache_bytes=7 * MB,
        max_uploads=2,
        timeline_window=50,
        allow_origins=("https://a.example", "https://b.example"),
    )
    assert Settings.from_env(settings.to_env()) == settings
    assert Settings.from_env({"STREAMVIZ_DB": "x.sqlite3"}) == Settings(db="x.sqlite3")
    with pytest.raises(KeyError, match="STREAMVIZ_DB is not set"):
        Settings.from_env({})


def test_serve_with_workers_starts_the_factory_with_the_settings_in_the_environment(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in Settings(db="x").to_env():
        monkeypatch.setenv(name, "restored after the test")
    calls: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append((app, kwargs)))
    db = tmp_path / "w" / "streams.sqlite3"
    result = invoke("serve", "--workers", "3", "--db", str(db), "--cache-mb", "64")
    assert result.exit_code == 0, result.output
    [(app, kwargs)] = calls
    assert app == FACTORY
    assert kwargs == {
        "factory": True,
        "workers": 3,
        "timeout_worker_healthcheck": 5,
        "host": "127.0.0.1",
        "port": 8000,
    }
    expected = Settings(db=str(db), cache_bytes=64 * MB)
    assert Settings.from_env() == expected
    assert db.is_file()  # opened (and migrated) once before the workers start


@pytest.mark.parametrize(
    ("db", "needle"),
    [
        ("mysql://u@h/db", "--db: mysql:// is not supported"),
        ("postgresql://u:secret@/db?host=/nonexistent", "cannot open the store"),
    ],
)
def test_serve_with_an_unusable_store_exits_2(invoke: Invoke, db: str, needle: str) -> None:
    result = invoke("serve", "--db", db, "--workers", "2")
    assert result.exit_code == 2
    assert needle in result.stderr
    assert "secret" not in result.stderr


@pytest.fixture
def two_workers(db_url: str, tmp_path: Path) -> Iterator[tuple[str, list[int]]]:
    """`streamviz serve --workers 2` on a Unix socket; its path and the two workers' pids."""
    path = tmp_path / "serve.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(128)
    fd = listener.fileno()
    code = "from webapp.cli import main; main()"
    # a worker this test SIGSTOPs must not be restarted by the supervisor on a slow machine
    args = [
        "serve",
        "--workers",
        "2",
        "--fd",
        str(fd),
        "--db",
        db_url,
        "--worker-healthcheck",
        "300",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        pass_fds=(fd,),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    listener.close()  # the server holds its own copy
    workers: list[int] = []
    try:
        # The first answer comes from a worker that is up; the supervisor starts the second.
        assert _get(path, "/").status_code == 200
        workers = _wait_for_workers(server.pid, 2)
        yield str(path), workers
    finally:
        for pid in workers:
            _signal(pid, signal.SIGCONT)
        server.send_signal(signal.SIGINT)
        try:
            _, errors = server.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            server.kill()
            _, errors = server.communicate()
        assert b"Traceback" not in errors, errors.decode(errors="replace")


def _get(path: Path | str, url: str) -> httpx.Response:
    """One request on a new connection (so that any worker may take it)."""
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(path)), timeout=WAIT) as client:
        return client.get(f"http://localhost{url}")  # a name the server answers


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _wait_for_workers(pid: int, count: int) -> list[int]:
    """The supervisor's worker processes, once it has started `count` of them."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        workers = [
            child
            for child in _children(pid)
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()
        ]
        if len(workers) == count:
            return workers
        time.sleep(0.05)  # waiting for a process to appear, not timing anything
    raise AssertionError(f"serve did not start {count} workers")


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _stop(pid: int) -> None:
    """SIGSTOP a worker and wait until the kernel shows it stopped."""
    os.kill(pid, signal.SIGSTOP)
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        pass


def test_two_workers_serve_one_store(two_workers: tuple[str, list[int]]) -> None:
    path, (first, second) = two_workers
    _stop(second)
    with httpx.Client(transport=httpx.HTTPTransport(uds=path), timeout=WAIT) as client:
        posted = client.post("http://localhost/api/streams", json={"text": CONTINUATION})
    assert posted.status_code == 201, posted.text
    stream_id = posted.json()["id"]
    os.kill(second, signal.SIGCONT)
    _stop(first)  # from here on, only the worker that did not store it can answer
    for _ in range(10):
        assert _get(path, f"/api/streams/{stream_id}/raw").content == CONTINUATION.encode()
        trace = _get(path, f"/api/streams/{stream_id}/trace?policy=exact-key").json()
        assert len(trace["blocks"]) == 3
        assert _get(path, f"/s/{stream_id}").status_code == 200
    os.kill(first, signal.SIGCONT)
    for _ in range(10):
        assert _get(path, f"/api/streams/{stream_id}/raw").content == CONTINUATION.encode()
