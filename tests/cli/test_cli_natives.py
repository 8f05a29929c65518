"""`check` and `trace` of Gemini's, Bedrock's, Ollama's and the Vercel AI SDK's UI streams: read
in their own terms, they exit as any stream does (0 fine, 1 under --strict only for a quirk
their own bytes prove), where they exited 2 as streams streamviz did not read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.clikit import Invoke, Write

NATIVE = Path(__file__).resolve().parents[1] / "corpus" / "native"
RECORDED = sorted(path.name for path in NATIVE.iterdir() if path.suffix != ".md")
INTENDED = {
    "bedrock-claude-get-weather.jsonl": 'intended: get-weather {"location":"San Francisco"}',
    "bedrock-kimi-k2-thinking-read-file.jsonl": 'intended: read_file {"target_file": "src/',
    "bedrock-nova-micro-get-temperature.eventstream": 'intended: get_temperature {"city":"Paris"}',
    "gemini31pro-vertex-streamed-args.sse": 'intended: getWeather {"location": "Boston"}; '
    'getWeather {"location": "San Francisco"}',
    "gemini3pro-wholecall.sse": 'intended: weather {"location": "San Francisco"}',
    "ollama-llama32-docs-tool.jsonl": 'intended: get_weather {"city": "Tokyo"}',
    "vercel-ui-openrouter-claude-parallel.sse": 'intended: add {"a": 2, "b": 3}; multiply',
}


def test_every_recorded_native_stream_is_checked() -> None:
    assert sorted(INTENDED) == RECORDED


@pytest.mark.parametrize("name", RECORDED)
def test_check_reads_a_native_stream_and_exits_0_even_when_strict(
    invoke: Invoke, name: str
) -> None:
    path = str(NATIVE / name)
    for options in ([], ["--strict"]):
        result = invoke("check", path, *options)
        assert result.exit_code == 0, result.output
        assert "read in its own terms" in result.stdout
        assert INTENDED[name] in result.stdout
        assert "quirks: none (the stream keeps the contract)" in result.stdout


@pytest.mark.parametrize("name", RECORDED)
def test_trace_json_holds_the_calls_its_own_fields_say(invoke: Invoke, name: str) -> None:
    result = invoke("trace", str(NATIVE / name), "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["quirks"] == []
    assert document["intended"]["calls"], document["why"]
    assert any("read in its own terms" in note for note in document["input"]["notes"])


def test_a_quirk_a_bedrock_stream_proves_fails_check_only_when_strict(
    invoke: Invoke, write: Write
) -> None:
    lines = (NATIVE / "bedrock-claude-get-weather.jsonl").read_text()
    ended = write(lines.replace('"stopReason":"tool_use"', '"stopReason":"end_turn"'), "b.jsonl")
    assert invoke("check", ended).exit_code == 0
    strict = invoke("check", ended, "--strict")
    assert strict.exit_code == 1
    assert "stop-with-calls" in strict.stdout
