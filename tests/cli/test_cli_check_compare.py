"""`streamviz check` (exit 1 on anomalies, for CI) and `streamviz compare` (policies differ)."""

from __future__ import annotations

import json
import re

from tests.cli.clikit import CLEAN, CONTINUATION, Invoke, Write
from tests.streamkit import chunk, frag, sse
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.triage.compare import compare


def test_check_exits_0_without_anomalies(invoke: Invoke, write: Write) -> None:
    result = invoke("check", write(sse(*CLEAN)))
    assert result.exit_code == 0
    assert "anomalies: none" in result.stdout
    assert result.stderr == ""


def test_check_exits_1_and_lists_the_anomalies(invoke: Invoke, write: Write) -> None:
    result = invoke("check", write(sse(*CONTINUATION)), "--policy", "exact-key")
    assert result.exit_code == 1
    lines = [line.split() for line in result.stdout.splitlines() if line.startswith("  ")]
    assert [(w[0], w[1], w[3], w[5]) for w in lines] == [
        ("error", "phantom-call", "3", "7"),
        ("error", "invalid-arguments", "3", "7"),  # where '"Paris"}' broke the phantom's JSON
        ("error", "incomplete-arguments", "6", "-"),  # '{"city":' never finished
    ]
    assert "block #1 ends with no name" in result.stdout


def test_check_under_the_decision_passes_the_same_stream(invoke: Invoke, write: Write) -> None:
    assert invoke("check", write(sse(*CONTINUATION))).exit_code == 0


def test_check_json_gives_each_anomaly_its_input_line(invoke: Invoke, write: Write) -> None:
    dropped = [chunk(frag(args='{"x":1}')), *CLEAN]
    result = invoke("check", write(sse(*dropped)), "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["schema"] == 1 and document["policy"] == "adr-0019"
    assert [(a["code"], a["step"], a["line"]) for a in document["anomalies"]] == [
        ("dropped-fragment", 0, 1)
    ]
    assert document["summary"]["rules"]["drop"] == 1


def test_compare_prints_the_summary_and_each_differing_step(invoke: Invoke, write: Write) -> None:
    text = sse(*CONTINUATION)
    result = invoke("compare", write(text))
    assert result.exit_code == 0
    expected = compare(read(text).records, Options())
    assert expected.summary in result.stdout
    assert "2 of 7 steps differ" in result.stdout
    lines = result.stdout.splitlines()
    at = lines.index("step 3  line 7  (chunk)")
    assert re.match(r"\s+exact-key\s+\[0\] new->b1\s+no index; .*phantom block", lines[at + 1])
    assert re.match(r"\s+adr-0019\s+\[0\] continuation->b0\s+.*most recently opened", lines[at + 2])
    end = lines.index("step 6  line -  (end)")
    assert 'toolcall_end#2 "\\"Paris\\"}"' in lines[end + 1]
    assert lines[end + 2].split() == ["adr-0019", "toolcall_end#1", '"{\\"city\\":\\"Paris\\"}"']
    assert "exact-key blocks: 2 tool-call blocks" in result.stdout
    assert "adr-0019 blocks: 1 tool-call block" in result.stdout


def test_compare_when_the_policies_agree(invoke: Invoke, write: Write) -> None:
    result = invoke("compare", write(sse(*CLEAN)))
    assert result.exit_code == 0
    assert "exact-key and adr-0019 agree on every step" in result.stdout
    assert "0 of 5 steps differ" in result.stdout
    assert "step " not in result.stdout


def test_compare_json(invoke: Invoke, write: Write) -> None:
    result = invoke("compare", write(sse(*CONTINUATION)), "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["left"], document["right"]) == ("exact-key", "adr-0019")
    assert [row["step"] for row in document["differing"]] == [3, 6]
    first = document["differing"][0]
    assert first["line"] == 7 and first["rule_differs"] is True
    assert [f["rule"] for f in first["left"]["fragments"]] == ["new"]
    assert [f["rule"] for f in first["right"]["fragments"]] == ["continuation"]
    assert document["outcomes"]["exact-key"]["phantoms"] == 1
    assert len(document["blocks"]["exact-key"]) == 2
    assert len(document["blocks"]["adr-0019"]) == 1
    assert document["input"]["format"] == "sse"


def test_compare_has_no_policy_option(invoke: Invoke, write: Write) -> None:
    result = invoke("compare", write(sse(*CLEAN)), "--policy", "exact-key")
    assert result.exit_code == 2
    assert "No such option" in result.stderr


def test_check_exits_0_on_warnings_and_1_with_strict(invoke: Invoke, write: Write) -> None:
    named_but_empty = [chunk(frag(0, "call_1", "now", "")), chunk(finish="tool_calls")]
    path = write(sse(*named_but_empty))
    result = invoke("check", path)
    assert result.exit_code == 0
    assert "warning empty-arguments" in result.stdout
    assert "now would be called with {}" in result.stdout
    assert invoke("check", path, "--strict").exit_code == 1


def test_check_finds_the_guess_in_the_two_headers_stream(invoke: Invoke, write: Write) -> None:
    """Two headers open, then two bare argument chunks: both land on the second call."""
    stream = [
        chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")),
        chunk(frag(args='{"city": ')),
        chunk(frag(args='"Paris"}')),
        chunk(finish="tool_calls"),
    ]
    result = invoke("check", write(sse(*stream)), "--format", "json")
    assert result.exit_code == 1
    anomalies = json.loads(result.stdout)["anomalies"]
    assert [(a["severity"], a["code"], a["step"], a["block"]) for a in anomalies] == [
        ("error", "ambiguous-continuation", 1, 1),
        ("error", "ambiguous-continuation", 2, 1),
        ("warning", "empty-arguments", 5, 0),
    ]
    assert "block #0 get_weather was also open, its arguments empty" in anomalies[0]["message"]
