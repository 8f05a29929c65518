"""`streamviz serve --upstream` and `streamviz record` as real processes: their stderr (the
access log included) never shows a key; record writes the stream and its timing to files."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
import openai

from tests.capture.conftest import KEY
from tests.capture.fake import Fake, corpus_pieces, serving

ROOT = Path(__file__).resolve().parents[2]
MAIN = "from webapp.cli import main; main()"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(*args: str, stop: int = signal.SIGINT) -> Iterator[tuple[str, list[str]]]:
    """The command on a free port; yields its base URL and, once it has stopped (by `stop`),
    what it wrote on stdout (uvicorn's access log) and stderr."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", MAIN, *args, "--port", str(port)]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stderr: list[str] = []
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert process.poll() is None, "the command stopped"
                assert time.monotonic() < deadline, "the command did not listen within 30 s"
                time.sleep(0.05)
        yield base, stderr
    finally:
        process.send_signal(stop)
        out, err = process.communicate(timeout=30)
        stderr.append(out.decode("utf-8", "replace") + err.decode("utf-8", "replace"))


def test_serve_never_logs_a_key(tmp_path: Path) -> None:
    fake = Fake(script=corpus_pieces("clean-single-call.sse"))
    with serving(fake) as upstream:
        db = str(tmp_path / "p.sqlite3")
        with running("serve", "--db", db, "--upstream", upstream) as (base, stderr):
            client = openai.OpenAI(
                base_url=f"{base}/proxy/default/v1", api_key=KEY, max_retries=0,
                default_query={"key": KEY},
            )  # fmt: skip
            chunks = list(client.chat.completions.create(model="m", messages=[], stream=True))
            assert chunks
            httpx.get(f"{base}/proxy/default/v1/models?api-key={KEY}")
    logged = "".join(stderr)
    assert fake.seen[0].query == f"key={KEY}".encode()
    assert "/proxy/default/v1/chat/completions?(query not logged)" in logged  # the access log
    assert KEY not in logged
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("p.sqlite3*"))


def test_record_writes_each_stream_and_its_timing(tmp_path: Path) -> None:
    pieces = corpus_pieces("two-calls-open-continuations.sse")
    fake = Fake(script=pieces)
    out = tmp_path / "out"
    with (
        serving(fake) as upstream,
        running("record", "--upstream", f"openai={upstream}", "--out", str(out)) as (base, _),
    ):
        client = openai.OpenAI(base_url=f"{base}/proxy/openai/v1", api_key=KEY, max_retries=0)
        tools = [{"type": "function", "function": {"name": "get_weather"}}]
        list(client.chat.completions.create(model="gpt-4o", messages=[], stream=True,
                                                tools=tools))  # type: ignore[arg-type]  # fmt: skip
        assert httpx.get(f"{base}/").status_code == 404
        deadline = time.monotonic() + 15
        while not list(out.glob("*.timing.json")):
            assert time.monotonic() < deadline, "no timing file within 15 s"
            time.sleep(0.02)
    [stream] = list(out.glob("*.sse"))
    assert stream.read_bytes() == b"".join(pieces)
    assert re.fullmatch(r"\d{8}T\d{6}-gpt-4o-[0-9a-f]{6}-1\.sse", stream.name), stream.name
    timing = json.loads(stream.with_suffix(".timing.json").read_text())
    assert timing["state"] == "complete" and timing["tools"] == ["get_weather"]
    assert timing["ends"][-1] == len(b"".join(pieces)) and len(timing["ms"]) == len(timing["ends"])
    assert timing["unit"] == "ms" and timing["upstream"] == "openai"
    assert not list(out.glob("*.request.json"))  # no --keep-requests
    for path in out.iterdir():
        assert KEY.encode() not in path.read_bytes()


def test_record_answers_only_the_hosts_it_is_known_by(tmp_path: Path) -> None:
    """As `serve` does: a page renamed to the recorder's address (DNS rebinding) gets a 400
    in words and reaches no upstream."""
    fake = Fake(script=[b"data: [DONE]\n\n"])
    out = tmp_path / "out"
    with (
        serving(fake) as upstream,
        running("record", "--upstream", upstream, "--out", str(out)) as (base, _),
    ):
        url = f"{base}/proxy/default/v1/chat/completions"
        for method in ("GET", "POST"):
            refused = httpx.request(method, url, headers={"Host": "evil.example"})
            assert refused.status_code == 400
            assert "DNS rebinding" in refused.text and "'evil.example'" in refused.text
        assert fake.seen == []
        for host in ("localhost", "127.0.0.1", "a.localhost"):
            assert httpx.post(url, json={}, headers={"Host": host}).status_code == 200
    assert len(fake.seen) == 3


def test_record_allowed_hosts_adds_a_name(tmp_path: Path) -> None:
    fake = Fake(script=[b"data: [DONE]\n\n"])
    out = tmp_path / "out"
    args = ("record", "--upstream", "", "--out", str(out), "--allowed-hosts", "rec.lan, *.lab")
    with serving(fake) as upstream, running(*args[:2], upstream, *args[3:]) as (base, _):
        url = f"{base}/proxy/default/v1/chat/completions"
        for host, status in (("rec.lan", 200), ("a.lab", 200), ("evil.example", 400)):
            assert httpx.post(url, json={}, headers={"Host": host}).status_code == status
    assert len(fake.seen) == 2


def test_two_recorders_on_one_folder_keep_every_stream_whole(tmp_path: Path) -> None:
    pieces = corpus_pieces("two-calls-open-continuations.sse")
    fake = Fake(script=pieces)
    out = tmp_path / "out"
    record = ("record", "--upstream", "", "--out", str(out))
    with serving(fake) as upstream:
        args = (*record[:2], upstream, *record[3:])
        with running(*args) as (first, _), running(*args) as (second, _):

            def stream(base: str) -> str:
                url = f"{base}/proxy/default/v1/chat/completions"
                response = httpx.post(url, json={"model": "gpt-4o", "stream": True}, timeout=30)
                assert response.content == b"".join(pieces)
                return response.headers["streamviz-stream-id"]

            with ThreadPoolExecutor(6) as pool:
                ids = list(pool.map(stream, [first, second] * 3))
            deadline = time.monotonic() + 15
            while len(list(out.glob("*.timing.json"))) < 6:
                assert time.monotonic() < deadline, "not six timing files within 15 s"
                time.sleep(0.02)
    assert len(set(ids)) == 6
    streams = sorted(out.glob("*.sse"))
    assert sorted(path.stem for path in streams) == sorted(ids)
    for path in streams:
        assert path.read_bytes() == b"".join(pieces), path.name
        timing = json.loads(path.with_suffix(".timing.json").read_text())
        assert timing["file"] == path.name and timing["ends"][-1] == len(b"".join(pieces))
    assert len(list(out.iterdir())) == 12


def test_a_worker_killed_mid_capture_has_its_captures_ended_by_another(tmp_path: Path) -> None:
    """Issue 31: with --workers 2, a worker killed while it records leaves its capture live;
    the surviving worker (or the one started in its place) ends it within seconds, its bytes
    kept, and says why."""
    pieces = corpus_pieces("no-index.sse")
    fake = Fake(script=pieces, gates={2: threading.Event()})  # holds the stream open
    db = tmp_path / "w.sqlite3"
    with (
        serving(fake) as upstream,
        running("serve", "--db", str(db), "--upstream", upstream, "--workers", "2") as (base, _),
    ):
        with httpx.stream(
            "POST", f"{base}/proxy/default/v1/chat/completions",
            json={"model": "m", "stream": True}, timeout=30,
        ) as response:  # fmt: skip
            stream_id = response.headers["streamviz-stream-id"]
            next(response.iter_raw())
            owner = _owner_of(db, stream_id)
            os.kill(int(owner.split()[1]), signal.SIGKILL)  # the worker recording it
        deadline = time.monotonic() + 30  # a bound, not a timing: a sweep runs every 2 s
        while True:
            capture = httpx.get(f"{base}/api/streams/{stream_id}/timing", timeout=30).json()
            if not capture["capture"]["live"]:
                break
            assert time.monotonic() < deadline, "the killed worker's capture is still live"
            time.sleep(0.1)
        fake.gates[2].set()
    assert capture["capture"]["state"] == "cut: the worker stopped"
    assert owner in capture["capture"]["detail"]


def _owner_of(db: Path, stream_id: str) -> str:
    """The process recording a capture, as the store names it ("host pid start-time")."""
    deadline = time.monotonic() + 30
    while True:
        with closing(sqlite3.connect(db)) as connection:
            row = connection.execute(
                "SELECT owner FROM captures WHERE stream_id = ?", (stream_id,)
            ).fetchone()
        if row and row[0]:
            return str(row[0])
        assert time.monotonic() < deadline, "the capture has no owner"
        time.sleep(0.05)
