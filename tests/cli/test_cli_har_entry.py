"""`--har-entry N` on trace, check and compare: the entry read, and a wrong one refused."""

from __future__ import annotations

import json

import pytest

from tests.cli.clikit import Invoke, Write

ONE = 'data: {"choices":[{"index":0,"delta":{"content":"one"},"finish_reason":"stop"}]}\n\n'
TWO = 'data: {"choices":[{"index":0,"delta":{"content":"two"},"finish_reason":"stop"}]}\n\n'
HAR = json.dumps(
    {
        "log": {
            "entries": [
                {
                    "request": {"method": "POST", "url": f"https://{host}/v1/chat/completions"},
                    "response": {
                        "status": 200,
                        "content": {"mimeType": "text/event-stream", "text": body},
                    },
                }
                for host, body in (("a.example", ONE), ("b.example", TWO))
            ]
        }
    }
)


@pytest.mark.parametrize("command", ["trace", "check", "compare"])
def test_har_entry_picks_the_entry(command: str, invoke: Invoke, write: Write) -> None:
    path = write(HAR, "capture.har")
    result = invoke(command, path, "--har-entry", "2", "--format", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["input"]["meta"]["entry"] == 2
    default = json.loads(invoke(command, path, "--format", "json").stdout)
    assert default["input"]["meta"]["entry"] == 1


def test_trace_text_shows_the_chosen_entry(invoke: Invoke, write: Write) -> None:
    result = invoke("trace", write(HAR, "capture.har"), "--har-entry", "2")
    assert result.exit_code == 0
    assert "read entry 2: POST https://b.example/v1/chat/completions (200)" in result.stdout
    assert '"two"' in result.stdout


def test_an_entry_out_of_range_exits_2_with_the_list(invoke: Invoke, write: Write) -> None:
    result = invoke("check", write(HAR, "capture.har"), "--har-entry", "5")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "there is no entry 5 (the HAR has entries 1-2)" in result.stderr
    assert "entry 1: POST https://a.example/v1/chat/completions (200)" in result.stderr


def test_har_entry_zero_is_a_usage_error(invoke: Invoke, write: Write) -> None:
    result = invoke("trace", write(HAR, "capture.har"), "--har-entry", "0")
    assert result.exit_code == 2
    assert "--har-entry" in result.stderr
