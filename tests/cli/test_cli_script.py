"""The installed console script, run for real: stdin piped in, output piped out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.clikit import CONTINUATION
from tests.streamkit import chunk, frag, sse

SCRIPT = Path(sys.executable).with_name("streamviz")


def run(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(SCRIPT), *args], input=stdin, capture_output=True, timeout=60, check=False
    )


def test_console_script_reads_stdin_and_prints_plain_text() -> None:
    done = run("trace", "-", "--policy", "exact-key", stdin=sse(*CONTINUATION).encode())
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "\x1b[" not in out
    assert "new->b1" in out and "phantom-call" in out


def test_console_script_check_exit_codes_and_json() -> None:
    failing = run(
        "check", "-", "--policy", "exact-key", "--format", "json", stdin=sse(*CONTINUATION).encode()
    )
    assert failing.returncode == 1
    assert json.loads(failing.stdout)["anomalies"][0]["code"] == "phantom-call"
    assert run("check", "-", stdin=sse(*CONTINUATION).encode()).returncode == 0


def test_console_script_bad_input_exits_2_without_traceback() -> None:
    done = run("trace", "-", stdin=b"\x00\x01 not a stream")
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.startswith(b"Error: stdin: not a stream")
    assert b"Traceback" not in done.stderr


def test_trace_does_not_import_the_web_stack() -> None:
    code = (
        "import sys; from webapp.cli import main\n"
        "try:\n    main(['trace', '-', '--format', 'json'])\nexcept SystemExit:\n    pass\n"
        "web = ('fastapi', 'starlette', 'jinja2', 'uvicorn')\n"
        "print(sorted(m for m in web if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=sse(*CONTINUATION).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.decode().splitlines()[-1] == "[]", done.stderr


def test_output_cut_short_exits_141_quietly() -> None:
    long = [chunk(frag(0, "call_1", "f", "")), *[chunk(frag(0, args="x")) for _ in range(5000)]]
    with subprocess.Popen(
        [str(SCRIPT), "trace", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(sse(*long).encode())
        process.stdin.close()
        assert process.stdout.readline().startswith(b"input  sse")
        process.stdout.close()
        assert process.wait(timeout=60) == 141
        assert process.stderr is not None and process.stderr.read() == b""
