"""`streamviz replay FILE`: a recorded file served to openai-python by a real process, no store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from tests.capture.conftest import Client
from tests.capture.test_processes import MAIN, ROOT, free_port
from tests.capture.test_proxy import MESSAGES, TOOLS
from tests.capture.test_replay import _har
from webapp.cli.replay import FileReplays
from webapp.examples import EXAMPLES
from webapp.triage.replay import schedule

CORPUS = ROOT / "tests" / "corpus"


@contextmanager
def replaying(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`streamviz replay ARGS --port P` running; yields the base URL it prints, and itself."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", MAIN, "replay", *args, "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert "base URL " in line, line
        yield line.split("base URL ", 1)[1].split()[0], process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


def test_replay_once_serves_the_file_to_openai_python_then_exits(
    tmp_path: Path, make_client: Client
) -> None:
    file = tmp_path / "broken.sse"
    file.write_bytes((CORPUS / "interleaved-parallel-calls.sse").read_bytes())
    with replaying(str(file), "--once", "--speed", "0") as (base, process):
        assert base.endswith("/replay/broken/v1")
        client = make_client(base)
        with client.chat.completions.stream(
            model="m",
            messages=MESSAGES,
            tools=TOOLS,  # type: ignore[arg-type]
        ) as stream:
            final = stream.get_final_completion()
        calls = final.choices[0].message.tool_calls or []
        assert [c.function.name for c in calls] == ["get_weather", "get_time"]
        assert process.wait(timeout=30) == 0  # --once: it stops by itself


def test_replay_serves_a_hars_entries_and_their_twins(tmp_path: Path, make_client: Client) -> None:
    file = tmp_path / "session.har"
    clean, ambiguous = EXAMPLES["clean"].data(), EXAMPLES["ambiguous"].data()
    file.write_text(_har(clean, ambiguous))
    with replaying(str(file), "--har-entry", "1") as (base, _):
        client = make_client(base)
        twin = client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        assert [c.function.name for c in twin.choices[0].message.tool_calls or []] == [
            "get_weather"
        ]
        second = base.removesuffix("/v1") + "/2/v1"
        other = make_client(second)
        with pytest.raises(openai.ConflictError):
            other.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        assert httpx.get(f"{second}/chat/completions").content == ambiguous
        wrong = httpx.get(base.replace("/session/", "/other/") + "/chat/completions")
        assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "stream_not_found"


def test_a_recordings_timing_beside_it_sets_the_pace(tmp_path: Path) -> None:
    data = EXAMPLES["clean"].data()
    file = tmp_path / "rec.sse"
    file.write_bytes(data)
    ends = [at + 2 for at in range(len(data) - 1) if data[at : at + 2] == b"\n\n"]
    ms = [100.0 + 40 * n for n in range(len(ends))]
    timing = {"ends": ends, "ms": ms, "headers_ms": 80.0, "state": "complete"}
    (tmp_path / "rec.timing.json").write_text(json.dumps(timing))
    paced = FileReplays(str(file), "rec", None, "auto").paced("rec", None)
    assert b"".join(paced.pieces) == data
    assert schedule(paced, 1.0) == pytest.approx([(t - 80.0) / 1000 for t in ms])
    assert schedule(paced, 4.0) == pytest.approx([(t - 80.0) / 4000 for t in ms])


def test_replay_of_a_file_that_does_not_read_exits_2(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("hello, this is not a stream\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "replay", str(file), "--port", "0"],
        cwd=ROOT, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert b"notes.txt" in done.stderr
