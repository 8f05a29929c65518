"""Unusable input and bad arguments exit 2 with a message on stderr, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.clikit import CLEAN, Invoke, Write
from tests.core.readers.not_streams import (
    LOG_LINE,
    NGINX_502,
    TRACEBACK,
)
from tests.streamkit import sse
from webapp.cli import main


def assert_usage_error(result: Result, *needles: str) -> None:
    """Exit 2, nothing on stdout, the needles on stderr, no traceback."""
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_missing_file(invoke: Invoke, tmp_path: Path) -> None:
    missing = tmp_path / "nope.sse"
    result = invoke("trace", str(missing))
    assert_usage_error(result, f"Error: cannot read {missing}: No such file or directory")


def test_a_folder_is_not_a_stream(invoke: Invoke, tmp_path: Path) -> None:
    assert_usage_error(invoke("check", str(tmp_path)), "cannot read")


def test_unrecognised_input_names_the_formats_tried(invoke: Invoke, write: Write) -> None:
    result = invoke("trace", write("hello there\nthis is not a stream\n"))
    assert_usage_error(result, "not a stream streamviz can read", "HAR", "SSE", "JSON", "repr")
    assert "stream.txt" in result.stderr


def test_empty_stdin(invoke: Invoke) -> None:
    assert_usage_error(invoke("trace", "-", input=b""), "stdin: the input is empty")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--policy", "newest"], "'newest' is not one of 'adr-0019', 'exact-key'"),
        (["--path", "server"], "'server' is not one of 'client', 'server-tools'"),
        (["--choice", "-1"], "-1 is not in the range x>=0"),
        (["--choice", "one"], "'one' is not a valid integer"),
        (["--input-format", "xml"], "'xml' is not one of 'auto', 'sse'"),
        (["--format", "yaml"], "'yaml' is not one of 'text', 'json'"),
        (["--server-tools", ""], "give comma-separated names"),
        (["--server-tools", "a,,b"], "give comma-separated names"),
        (["--server-tools", "web*search"], "'*' may only end a pattern"),
        (["--path", "client", "--server-tools", "web_*"], "--server-tools needs --path"),
    ],
)
def test_bad_option_values(invoke: Invoke, write: Write, args: list[str], needle: str) -> None:
    assert_usage_error(invoke("trace", write(sse(*CLEAN)), *args), needle)


def test_no_file_argument(invoke: Invoke) -> None:
    assert_usage_error(invoke("check"), "Missing argument 'FILE|-'")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
    output=st.sampled_from(["text", "json"]),
)
def test_any_bytes_give_exit_0_or_a_clean_exit_2(data: bytes, output: str) -> None:
    result = CliRunner().invoke(main, ["trace", "-", "--format", output], input=data)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 2)
    if result.exit_code == 2:
        assert result.stderr.startswith("Error: stdin: ")


def test_option_conflicts_are_reported_before_reading_the_input(invoke: Invoke) -> None:
    result = invoke("trace", "-", "--path", "client", "--server-tools", "web_*", input=b"")
    assert_usage_error(result, "--server-tools needs --path server-tools")
    assert "empty" not in result.stderr


def test_the_garbage_collector_is_back_on_after_a_command(invoke: Invoke, write: Write) -> None:
    import gc

    assert invoke("check", write(sse(*CLEAN))).exit_code == 0
    assert gc.isenabled()
    assert invoke("check", "-", input=b"nonsense").exit_code == 2
    assert gc.isenabled()


NOT_STREAMS = [
    pytest.param(TRACEBACK + LOG_LINE + NGINX_502, "this holds a Python traceback", id="pasted"),
    pytest.param(LOG_LINE, "this is a log line", id="a-log-line"),
    pytest.param(NGINX_502, "this is an HTML page (nginx 502 Bad Gateway)", id="nginx-502"),
]


@pytest.mark.parametrize("command", ["check", "trace"])
@pytest.mark.parametrize(("text", "needle"), NOT_STREAMS)
def test_an_input_that_is_no_stream_exits_2_saying_what_it_is(
    invoke: Invoke, write: Write, command: str, text: str, needle: str
) -> None:
    """No trace, no anomaly, no provider quirk: exit 2, and why, on stderr."""
    path = write(text)
    for file, where in ((path, path), ("-", "stdin")):
        result = invoke(command, file, input=text if file == "-" else None)
        assert_usage_error(result, f"Error: {where}: ", needle)
        assert "quirk" not in result.stderr and "no-finish" not in result.stderr


def test_diff_with_a_side_that_is_no_stream_exits_2(invoke: Invoke, write: Write) -> None:
    stream = write(sse(*CLEAN), "stream.sse")
    result = invoke("diff", stream, write(NGINX_502, "page.html"))
    assert_usage_error(result, "page.html: no chat-completions chunk", "nginx 502 Bad Gateway")
