"""`streamviz trace`: the text table, the JSON trace, the options and every input format."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest

from tests.cli.clikit import CLEAN, CONTINUATION, SERVER, Invoke, Write, two_choices
from tests.streamkit import WRITERS, chunk, frag, har, sse
from webapp.cli import inputs
from webapp.cli.palette import RULE_COLOURS
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers import sse as sse_reader
from webapp.core.records import Payloads
from webapp.core.rules import RULE_NAMES

ANSI = "\x1b["


def step_rows(output: str) -> dict[int, str]:
    """The step table's rows by step number."""
    rows = {}
    for line in output.splitlines():
        match = re.match(r"\s+(\d+)\s+(\d+|-)\s+(chunk|done|invalid|end)\b", line)
        if match:
            rows[int(match.group(1))] = line
    return rows


def test_text_is_plain_when_piped_and_shows_rules_blocks_and_summary(
    invoke: Invoke, write: Write
) -> None:
    result = invoke("trace", write(sse(*CONTINUATION)))
    assert result.exit_code == 0, result.output
    assert ANSI not in result.stdout
    rows = step_rows(result.stdout)
    assert "new->b0" in rows[1] and 'toolcall_start#1 toolcall_delta#1 ""' in rows[1]
    assert "exact-index->b0" in rows[2] and 'toolcall_delta#1 "{\\"city\\":"' in rows[2]
    assert "continuation->b0" in rows[3]
    assert "done(toolUse)" in rows[6]
    block = next(line for line in result.stdout.splitlines() if "call_1" in line)
    assert block.split()[:6] == ["0", "1", "call_1", "get_weather", "1", "-"]
    assert block.endswith('{"city":"Paris"}')
    assert "anomalies: none" in result.stdout
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith("summary")
    assert "3 fragments (exact-index 1, continuation 1, new 1)" in summary
    assert "stop toolUse" in summary


def test_text_is_coloured_on_a_terminal_with_one_colour_per_rule(
    invoke: Invoke, write: Write
) -> None:
    result = invoke("trace", write(sse(*CONTINUATION)), env={"FORCE_COLOR": "1"})
    assert result.exit_code == 0
    assert ANSI in result.stdout
    magenta, green, yellow = "\x1b[35m", "\x1b[32m", "\x1b[33m"
    assert [RULE_COLOURS[r].terminal for r in ("new", "exact-index", "continuation")] == [
        "magenta",
        "green",
        "yellow",
    ]
    rows = step_rows(re.sub(r"\x1b\[[0-9;]*m", "", result.stdout))
    assert rows  # the escape codes do not break the layout
    assert f"{magenta}new->b0" in result.stdout
    assert f"{green}exact-index->b0" in result.stdout
    assert f"{yellow}continuation->b0" in result.stdout


def test_no_color_keeps_the_terminal_plain_of_colours(invoke: Invoke, write: Write) -> None:
    result = invoke("trace", write(sse(*CONTINUATION)), env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[35m" not in result.stdout


def test_every_rule_has_its_own_colour() -> None:
    assert tuple(RULE_COLOURS) == RULE_NAMES
    assert len({colour.terminal for colour in RULE_COLOURS.values()}) == len(RULE_NAMES)
    assert len({colour.hex for colour in RULE_COLOURS.values()}) == len(RULE_NAMES)


@pytest.mark.parametrize("policy", ["adr-0019", "exact-key"])
def test_json_is_the_schema_1_trace_plus_input(invoke: Invoke, write: Write, policy: str) -> None:
    text = sse(*CONTINUATION)
    result = invoke("trace", write(text), "--format", "json", "--policy", policy)
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    source = read(text)
    expected = assemble(source.records, Options(policy=policy)).to_json()  # type: ignore[arg-type]
    assert document["schema"] == 1
    given_input = document.pop("input")
    assert document == json.loads(json.dumps(expected))
    assert given_input["format"] == "sse"
    assert given_input["records"] == len(source.records)


def test_exact_key_shows_the_phantom(invoke: Invoke, write: Write) -> None:
    result = invoke("trace", write(sse(*CONTINUATION)), "--policy", "exact-key")
    assert result.exit_code == 0
    rows = step_rows(result.stdout)
    assert "new->b1" in rows[3] and "toolcall_start#2" in rows[3] and "!phantom-call" in rows[3]
    assert re.search(r"phantom-call\s+step 3\s+line 7\s+block b1", result.stdout)
    assert "2 blocks" in result.stdout.splitlines()[-1]


def test_server_tools_fold_a_server_call_and_a_client_call(invoke: Invoke, write: Write) -> None:
    path = write(sse(*SERVER))
    result = invoke("trace", path, "--server-tools", "web_*", "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["path"] == "server-tools"
    assert document["server_tools"] == ["web_*"]
    folds = [(b["name"], b["folded"]["as"], b["starts"]) for b in document["blocks"]]
    assert folds == [("web_search", "server", 0), ("get_weather", "client", 1)]
    text = invoke("trace", path, "--path", "server-tools", "--server-tools", "web_*").stdout
    assert "path server-tools | server tools web_*" in text
    assert "2 candidates" in text
    assert re.search(r"web_search\s+0 server@0", text)


def test_path_server_tools_without_names_folds_everything_as_client(
    invoke: Invoke, write: Write
) -> None:
    result = invoke("trace", write(sse(*SERVER)), "--path", "server-tools", "--format", "json")
    assert [b["folded"]["as"] for b in json.loads(result.stdout)["blocks"]] == ["client"] * 2


def test_choice_selects_the_choice_to_follow(invoke: Invoke, write: Write) -> None:
    path = write(sse(*two_choices()))
    names = {}
    for choice in ("0", "1"):
        result = invoke("trace", path, "--choice", choice, "--format", "json")
        assert result.exit_code == 0
        document = json.loads(result.stdout)
        assert document["choice"] == int(choice)
        names[choice] = [block["name"] for block in document["blocks"]]
        assert "other-choices" in document["summary"]["anomalies"]
    assert names == {"0": ["get_weather"], "1": ["get_time"]}
    assert "get_time" in invoke("trace", path, "--choice", "1").stdout


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_input_format_named_or_detected(invoke: Invoke, write: Write, fmt: str) -> None:
    path = write(WRITERS[fmt](*CONTINUATION))
    outcomes = []
    for given in (fmt, "auto"):
        result = invoke("trace", path, "--input-format", given, "--format", "json")
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["input"]["format"] == fmt
        outcomes.append([(b["name"], b["arguments"]) for b in document["blocks"]])
    assert outcomes == [[("get_weather", '{"city":"Paris"}')]] * 2


def test_har_input_reports_model_and_tools(invoke: Invoke, write: Write) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather"}}]
    path = write(har(*CLEAN, tools=tools))
    document = json.loads(invoke("trace", path, "--format", "json").stdout)
    assert document["input"]["model"] == "demo-model"
    assert document["input"]["tools"] == tools
    assert "secret" not in json.dumps(document["input"])
    text = invoke("trace", path).stdout
    assert text.splitlines()[0].startswith("input  har |")
    assert "model demo-model | 1 declared tools" in text.splitlines()[0]


def test_a_named_format_that_does_not_fit_exits_2(invoke: Invoke, write: Write) -> None:
    result = invoke("trace", write(sse(*CLEAN)), "--input-format", "har")
    assert result.exit_code == 2
    assert "HAR" in result.stderr and result.stdout == ""


def test_stdin_dash(invoke: Invoke) -> None:
    result = invoke("trace", "-", "--format", "json", input=sse(*CLEAN).encode())
    assert result.exit_code == 0
    assert json.loads(result.stdout)["blocks"][0]["arguments"] == '{"city":"Oslo"}'


def test_control_characters_from_the_stream_are_escaped(invoke: Invoke, write: Write) -> None:
    hostile = [chunk(frag(0, "call_\x1b[2J", "evil\x9b31m", '{"a":"\x1b]0;x\x07"}'))]
    result = invoke("trace", write(sse(*hostile)))
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    assert "call_\\x1b[2J" in result.stdout


def test_json_survives_what_orjson_refuses(invoke: Invoke, write: Write) -> None:
    huge = 2**70
    text = sse(chunk({"index": huge, "id": "c", "function": {"name": "f", "arguments": "x"}}))
    text = text.replace('"arguments": "x"', '"arguments": "\\ud800"')
    result = invoke("trace", write(text), "--format", "json")
    assert result.exit_code == 0, result.output
    fragment = json.loads(result.stdout)["steps"][0]["fragments"][0]
    assert fragment["index"] == huge
    assert fragment["arguments"] == "\ud800"
    plain = invoke("trace", write(text))
    assert plain.exit_code == 0 and "\\ud800" in plain.stdout


def test_a_long_file_read_a_block_at_a_time_traces_as_from_stdin(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regular file is read a block at a time (`webapp.cli.inputs`), stdin whole: the same
    trace and the same check, for a stream of many segments, its blocks ending anywhere, and
    for inputs that are not plain streams (read whole after the first blocks)."""
    monkeypatch.setattr(sse_reader, "SEGMENT", 50)
    monkeypatch.setattr(inputs, "BLOCK", 9)
    pieces = [chunk(frag(0, args=part)) for part in ['{"city"', ':"Os', "lo", '"}']]
    long = sse(chunk(frag(0, "call_1", "get_weather", "")), *pieces * 20, chunk(finish="x"))
    for text in (long, long.replace("\n", "\r\n"), ": a comment\n\n" + long, har(long)):
        path = write(text)
        for command in (["trace", "--format", "json"], ["check"], ["trace"]):
            from_file, from_stdin = invoke(*command, path), invoke(*command, "-", input=text)
            assert from_file.exit_code == from_stdin.exit_code, from_file.output
            assert from_file.stdout == from_stdin.stdout
    read_in_blocks = inputs.load(write(long), "auto")
    assert isinstance(read_in_blocks.records, Payloads)
    assert len(read_in_blocks.records.segments) > 2


def test_a_path_that_is_a_pipe_is_read_whole(invoke: Invoke, tmp_path: Path) -> None:
    fifo = tmp_path / "stream.fifo"
    os.mkfifo(fifo)
    text = sse(*CLEAN)
    writer = threading.Thread(target=fifo.write_text, args=(text,))
    writer.start()
    result = invoke("trace", str(fifo), "--format", "json")
    writer.join()
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["blocks"][0]["arguments"] == '{"city":"Oslo"}'
