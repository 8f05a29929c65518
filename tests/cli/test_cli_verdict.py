"""Issue 19 on the command line: quirks in `check` and `trace`, the grades in `clients` and
`report`, the fingerprint in `minimise`, and the HAR entry on screen driving all of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import webapp.lenses
from tests.cli.clikit import CLEAN, Invoke, Write
from tests.cli.test_cli_errors import assert_usage_error
from tests.lenses.fakes import answering
from tests.streamkit import chunk, frag, sse
from tests.triage.streams import TWO_HEADERS
from webapp.core.contract import UNFINISHED
from webapp.core.readers import read
from webapp.triage.fingerprint import fingerprint
from webapp.triage.report import cell

ENVOY = "tests/corpus/no-index.sse"
"""A header, then argument pieces with no index, no id and no name (decision 0019's case)."""


def _json(result: Any) -> Any:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


# check and trace


def test_check_names_the_quirks_and_exits_0_but_1_with_strict(invoke: Invoke) -> None:
    result = invoke("check", ENVOY, env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.startswith("quirk  missing-index") for line in lines)
    assert any(line.startswith("quirk  bare-continuation") for line in lines)
    assert any(line.startswith('intended: search_docs {"query"') for line in lines)
    assert invoke("check", ENVOY, "--strict").exit_code == 1
    document = _json(invoke("check", ENVOY, "--format", "json"))
    assert [q["code"] for q in document["quirks"]] == ["missing-index", "bare-continuation"]
    assert [call["name"] for call in document["intended"]["calls"]] == ["search_docs"]
    assert document["why"] is None


def test_a_stream_without_quirks_passes_strict(invoke: Invoke, write: Write) -> None:
    path = write(sse(*CLEAN))
    result = invoke("check", path, "--strict", env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "quirks: none (the stream keeps the contract)" in result.stdout


def test_quirks_alone_never_change_the_exit_code_without_strict(invoke: Invoke) -> None:
    """The quirk-stream of repeated-finish has no anomaly at all: exit 0, 1 with --strict."""
    text = sse(chunk(frag(0, "call_1", "f", "{}")), chunk(finish="tool_calls"),
               chunk(finish="tool_calls"))  # fmt: skip
    assert invoke("check", "-", input=text).exit_code == 0
    assert invoke("check", "-", "--strict", input=text).exit_code == 1


@pytest.mark.parametrize(
    "options",
    [[], ["--policy", "exact-key"], ["--path", "server-tools"], ["--server-tools", "search*"]],
)
def test_the_trace_json_has_the_same_quirks_and_reading_whatever_the_options(
    invoke: Invoke, options: list[str]
) -> None:
    base = _json(invoke("trace", ENVOY, "--format", "json"))
    other = _json(invoke("trace", ENVOY, "--format", "json", *options))
    for key in ("quirks", "intended", "why"):
        assert other[key] == base[key], key
    assert base["intended"]["calls"][0]["arguments"] == (
        '{"query": "streaming tool calls", "limit": 5}'
    )


def test_the_trace_text_has_a_quirks_section(invoke: Invoke) -> None:
    text = invoke("trace", ENVOY, env={"NO_COLOR": "1"}).stdout
    assert "quirks: 2" in text
    assert text.index("quirks: 2") > text.index("anomalies:")


def test_two_open_calls_have_no_intended_reading(invoke: Invoke) -> None:
    path = "tests/corpus/two-calls-open-continuations.sse"
    document = _json(invoke("check", path, "--format", "json"))
    assert document["intended"] is None
    assert "could belong to either" in document["why"]


# clients, report: the same grades and sentence; the HAR entry on screen


def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """pi-ai hands get_weather {} (damaged where the stream means Paris); the others absent."""
    pi_ai = answering(
        {"status": "ok", "error": None,
         "calls": [{"id": "call_1", "name": "get_weather", "arguments": "{}"}]},
        "pi-ai",
    )  # fmt: skip
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: (pi_ai,))


def _har(*streams: str) -> str:
    entries = [
        {
            "request": {"method": "POST", "url": f"https://{k}.example/v1/chat/completions"},
            "response": {
                "status": 200,
                "content": {"mimeType": "text/event-stream", "text": body},
            },
        }
        for k, body in enumerate(streams)
    ]
    return json.dumps({"log": {"entries": entries}})


FIRST = sse(chunk(frag(0, "call_1", "get_time", '{"tz": "CET"}')), chunk(finish="tool_calls"))
SECOND = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(args='{"city": "Paris"}')),
    chunk(finish="tool_calls"),
)


def test_clients_reads_the_har_entry_asked_for(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fakes(monkeypatch)
    path = write(_har(FIRST, SECOND), "two.har")
    first = _json(invoke("clients", path, "--format", "json"))
    second = _json(invoke("clients", path, "--har-entry", "2", "--format", "json"))
    assert first["input"]["meta"]["entry"] == 1 and second["input"]["meta"]["entry"] == 2
    assert [c["name"] for c in first["intended"]["calls"]] == ["get_time"]
    assert [c["name"] for c in second["intended"]["calls"]] == ["get_weather"]
    assert [q["code"] for q in second["quirks"]] == ["missing-index", "bare-continuation"]
    policies = {column["client"]: column["calls"] for column in second["policies"]}
    assert [call["name"] for call in policies["adr-0019"]] == ["get_weather"]
    grades = {g["client"]: g["grade"] for g in second["grades"]}
    assert grades == {"pi-ai": "damaged", "adr-0019": "intact", "exact-key": "damaged"}
    assert second["verdict"] == (
        "The provider broke the contract: missing-index and bare-continuation. "
        "Damaged silently: pi-ai, exact-key. Intact: adr-0019."
    )
    assert_usage_error(invoke("clients", path, "--har-entry", "3"), "there is no entry 3")


def test_clients_text_shows_the_grades_and_the_verdict(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fakes(monkeypatch)
    result = invoke("clients", write(SECOND), env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert '  pi-ai      damaged  get_weather gets {} instead of {"city": "Paris"}' in lines
    verdict = next(at for at, line in enumerate(lines) if line.startswith("verdict  "))
    assert lines[verdict] == (
        "verdict  The provider broke the contract: missing-index and bare-continuation. "
        "Damaged silently: pi-ai, exact-key. Intact: adr-0019."
    )
    assert verdict < lines.index("clients")  # the headline first, then the columns, the grades
    assert any(line.startswith("quirk    missing-index: block #0 get_weather") for line in lines)
    assert any(
        line.startswith("file     File with the provider: a provider bug:") for line in lines
    )


def test_report_and_clients_agree_and_report_says_where_to_file(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fakes(monkeypatch)
    path = write(_har(FIRST, SECOND), "two.har")
    clients = _json(invoke("clients", path, "--har-entry", "2", "--format", "json"))
    report = invoke("report", path, "--har-entry", "2", "--clients")
    assert report.exit_code == 0, report.output
    text = report.stdout
    assert f"**Whose fault:** {cell(clients['verdict'])}" in text  # the same sentence
    assert "## Quirks" in text and "## Where to file" in text and "## Grades" in text
    section = text.split("## Where to file\n\n", 1)[1].split("\n## ", 1)[0]
    assert section.startswith("### The provider\n\nFile with the provider: a provider bug:")
    assert "pi-ai 1.6.0: damaged: get_weather gets {}" in section  # the lens, with its version
    assert "missing-index (breaks" in section and "step 1)" in section
    assert "| pi-ai | 1.6.0 | damaged |" in text


def test_report_without_clients_grades_this_builds_policies(invoke: Invoke, write: Write) -> None:
    text = invoke("report", write(sse(*TWO_HEADERS), "two.sse")).stdout
    assert "| adr-0019 | this build | flagged |" in text  # it flags the glued arguments
    assert "| exact-key | this build | guessed |" in text
    assert "## Where to file" in text and "### The provider" in text


# minimise and fixture: the fingerprint, the HAR entry


def test_minimise_keeps_the_fingerprint_without_until(invoke: Invoke, write: Write) -> None:
    path = "tests/corpus/two-calls-open-continuations.sse"
    result = invoke("minimise", path)
    assert result.exit_code == 0, result.output
    original = fingerprint(read(Path(path).read_text(encoding="utf-8")).records)
    shrunk = fingerprint(read(result.stdout).records)
    assert shrunk == original
    assert dict(shrunk.grades)["adr-0019"] == "guessed"
    assert len(read(result.stdout).records) <= len(read(Path(path).read_text()).records)
    alias = invoke("minimize", path)
    assert alias.exit_code == 0 and alias.stdout == result.stdout


def test_minimise_of_a_har_entry_minimises_that_entry(invoke: Invoke, write: Write) -> None:
    path = write(_har(FIRST, SECOND), "two.har")
    result = invoke("minimise", path, "--har-entry", "2")
    assert result.exit_code == 0, result.output
    assert "get_weather" in result.stdout and "get_time" not in result.stdout
    old = invoke("minimise", path, "--har-entry", "2", "--until", "rule:continuation")
    assert old.exit_code == 0 and "get_time" not in old.stdout


def test_minimise_with_lenses_puts_their_grades_in_the_fingerprint(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fakes(monkeypatch)
    result = invoke("minimise", write(SECOND), "--with-lenses")
    assert result.exit_code == 0, result.output
    assert "get_weather" in result.stdout
    assert "--with-lenses" in invoke("minimise", "--help").stdout
    assert "minutes" in " ".join(invoke("minimise", "--help").stdout.split())
    assert_usage_error(
        invoke("minimise", write(SECOND), "--with-lenses", "--until", "differs"),
        "--with-lenses goes with the fingerprint only",
    )


def test_fixture_of_a_har_entry_writes_that_entry(
    invoke: Invoke, write: Write, tmp_path: Path
) -> None:
    path = write(_har(FIRST, SECOND), "two.har")
    out = tmp_path / "bundle"
    result = invoke("fixture", path, "--har-entry", "2", "--until", "fingerprint", "-o", str(out))
    assert result.exit_code == 0, result.output
    stream = (out / "stream.sse").read_text(encoding="utf-8")
    assert "get_weather" in stream and "get_time" not in stream
    expected = json.loads((out / "expected.adr-0019.json").read_text(encoding="utf-8"))
    assert [q["code"] for q in expected["quirks"]] == ["missing-index", "bare-continuation"]


def test_clients_files_nothing_for_a_file_that_shows_no_end(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that stops before any finish_reason or [DONE] (no recording's sidecar beside
    it): the clients still run, and the verdict says its end is not in it, filing nothing."""
    _fakes(monkeypatch)
    cut = sse(chunk(frag(0, "call_1", "get_weather", "")), chunk(frag(args='{"ci')), done=False)
    found = _json(invoke("clients", write(cut), "--format", "json"))
    assert found["verdict"].startswith(f"The stream's end was not recorded ({UNFINISHED})")
    assert not {q["code"] for q in found["quirks"]} & {"no-finish", "arguments-not-json"}
