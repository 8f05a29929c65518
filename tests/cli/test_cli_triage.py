"""`minimize`, `report`, `fixture`, `check --expect` and `--redact` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.clikit import CLEAN, CONTINUATION, Invoke, Write
from tests.cli.test_cli_errors import assert_usage_error
from tests.streamkit import chunk, frag, records, sse
from tests.triage.streams import TWO_HEADERS, buried
from webapp.core.assembler import assemble
from webapp.core.readers import read
from webapp.core.readers.writer import to_sse

KEY = "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx"


def _two_headers(write: Write) -> str:
    return write(sse(*TWO_HEADERS), "two.sse")


# minimize


def test_minimize_prints_a_small_sse_stream_that_still_shows_the_property(
    invoke: Invoke, write: Write
) -> None:
    path = write(to_sse(buried(600)), "buried.sse")
    result = invoke("minimize", path, "--until", "anomaly:ambiguous-continuation")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith("data: [DONE]\n\n")
    assert all(part.startswith("data: ") for part in result.stdout.strip().split("\n\n"))
    found = read(result.stdout)
    assert len(found.records) <= 6
    assert "ambiguous-continuation" in {a.code for a in assemble(found.records).anomalies}
    assert "minimize: done" in result.stderr


def test_minimize_differs_and_rule(invoke: Invoke, write: Write) -> None:
    path = write(sse(*CONTINUATION))
    for until in ("differs", "rule:continuation"):
        result = invoke("minimize", path, "--until", until)
        assert result.exit_code == 0, result.stderr
        assert len(read(result.stdout).records) <= len(CONTINUATION) + 1


def test_minimize_exits_1_when_the_input_lacks_the_property(invoke: Invoke, write: Write) -> None:
    result = invoke("minimize", write(sse(*CLEAN)), "--until", "anomaly:phantom-call")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "does not show a phantom-call anomaly under adr-0019" in result.stderr


def test_minimize_of_a_clean_stream_says_there_is_nothing_to_keep(
    invoke: Invoke, write: Write, tmp_path: Path
) -> None:
    # The default --until fingerprint of a stream with no quirk, no anomaly and both policies
    # intact holds nothing: exit 1 and a sentence, not a copy of a finish chunk and exit 0.
    path = write(sse(*CLEAN))
    for command in ("minimise", "minimize"):
        result = invoke(command, path)
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr.startswith("Error: nothing to minimise: the input shows no quirk and "
                                        "no anomaly under adr-0019, and both policies read it as "
                                        "it means (adr-0019 intact, exact-key intact)")  # fmt: skip
        assert "--until differs or rule:RULE keeps something else" in result.stderr
    out = tmp_path / "fx"
    fixture = invoke("fixture", path, "-o", str(out), "--until", "fingerprint")
    assert fixture.exit_code == 1 and "nothing to minimise" in fixture.stderr
    assert not out.exists()
    # a property the clean stream does have is still minimised
    assert invoke("minimise", path, "--until", "rule:new").exit_code == 0


def test_minimize_keeps_argument_text_whole_unless_asked_to_shrink_it(
    invoke: Invoke, write: Write
) -> None:
    path = write(sse(*CONTINUATION))
    whole = invoke("minimise", path)
    assert whole.exit_code == 0, whole.stderr
    texts = [block.text for block in assemble(read(whole.stdout).records).blocks]
    assert texts == ['{"city":"Paris"}']
    assert "minimise: members" in whole.stderr
    shrunk = invoke("minimise", path, "--shrink-text")
    assert shrunk.exit_code == 0, shrunk.stderr
    assert [b.text for b in assemble(read(shrunk.stdout).records).blocks] == ['{"":""}']
    assert "minimise: arguments" in shrunk.stderr


@pytest.mark.parametrize(
    ("until", "needle"),
    [
        ("anomaly:nope", "unknown anomaly code 'nope'"),
        ("rule:sideways", "unknown rule 'sideways'"),
        ("smaller", "give anomaly:CODE, differs or rule:RULE"),
    ],
)
def test_minimize_refuses_an_unknown_property(
    invoke: Invoke, write: Write, until: str, needle: str
) -> None:
    assert_usage_error(invoke("minimize", write(sse(*CLEAN)), "--until", until), needle)


def test_minimize_bad_input(invoke: Invoke, write: Write, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.sse")
    assert_usage_error(invoke("minimize", missing, "--until", "differs"), "cannot read")
    assert_usage_error(invoke("minimize", write("not a stream"), "--until", "differs"), "not a")
    result = invoke("minimize", write(sse(*CLEAN)), "--until", "differs", "--max-seconds", "0")
    assert_usage_error(result, "--max-seconds")


# report


def test_report_prints_markdown(invoke: Invoke, write: Write) -> None:
    result = invoke("report", _two_headers(write))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# streamviz report: two.sse\n")
    assert "**Verdict:** 2 errors, 1 warning" in result.stdout
    assert "| error | ambiguous-continuation | 2 | 5 | b1 |" in result.stdout
    assert "## Notes\n\nNo notes.\n" in result.stdout


def test_report_links_steps_to_the_public_page(invoke: Invoke, write: Write) -> None:
    url = "https://sv.example/base/s/abc123"
    result = invoke("report", _two_headers(write), "--public-url", url, "--policy", "exact-key")
    assert result.exit_code == 0, result.stderr
    assert "(https://sv.example/base/s/abc123?step=" in result.stdout
    assert "policy exact-key" in result.stdout


@pytest.mark.parametrize("url", ["sv.example", "https://sv.example/", "ftp://h/s/x"])
def test_report_refuses_a_url_that_is_not_a_stream_page(
    invoke: Invoke, write: Write, url: str
) -> None:
    result = invoke("report", _two_headers(write), "--public-url", url)
    assert_usage_error(result, "--public-url", "give the stream's page")


def test_report_redacts_on_request(invoke: Invoke, write: Write) -> None:
    path = write(sse(chunk(frag(0, "a", "f", json.dumps({"key": KEY}))), chunk(finish="stop")))
    assert KEY in invoke("report", path).stdout
    result = invoke("report", path, "--redact")
    assert KEY not in result.stdout and "sk-proj-Xx0x" in result.stdout
    assert "redacted 1 secret: API key (line 1)" in result.stderr


# fixture and check --expect


def test_fixture_writes_a_replayable_bundle(invoke: Invoke, write: Write, tmp_path: Path) -> None:
    values = [chunk(frag(0, "a", "f", json.dumps({"mail": "ana@example.com"}))), *TWO_HEADERS]
    out = tmp_path / "fx"
    result = invoke("fixture", write(sse(*values)), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "expected.adr-0019.json",
        "expected.exact-key.json",
        "stream.sse",
    ]
    stream = (out / "stream.sse").read_text()
    assert "ana@example.com" not in stream  # a fixture is always redacted
    assert (
        "streamviz check stream.sse --expect expected.adr-0019.json"
        in (out / "README.md").read_text()
    )
    for policy in ("adr-0019", "exact-key"):
        expected = str(out / f"expected.{policy}.json")
        result = invoke("check", str(out / "stream.sse"), "--policy", policy, "--expect", expected)
        assert result.exit_code == 0, result.stdout
        assert result.stdout.startswith(f"same as {expected}")


def test_fixture_minimises_with_until(invoke: Invoke, write: Write, tmp_path: Path) -> None:
    out = tmp_path / "fx"
    path = write(to_sse(buried(400)))
    result = invoke("fixture", path, "-o", str(out), "--until", "anomaly:ambiguous-continuation")
    assert result.exit_code == 0, result.stderr
    assert len(read((out / "stream.sse").read_text()).records) <= 6
    assert "minimised until anomaly:ambiguous-continuation" in (out / "README.md").read_text()


def test_fixture_bad_arguments(invoke: Invoke, write: Write, tmp_path: Path) -> None:
    path = _two_headers(write)
    assert_usage_error(invoke("fixture", path), "Missing option '-o'")
    result = invoke("fixture", path, "-o", str(tmp_path / "fx"), "--until", "anomaly:x")
    assert_usage_error(result, "unknown anomaly code 'x'")
    blocker = write("a file", "blocker")
    assert_usage_error(invoke("fixture", path, "-o", blocker + "/fx"), "cannot write")


def test_check_expect_names_the_first_difference(
    invoke: Invoke, write: Write, tmp_path: Path
) -> None:
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps(assemble(records(TWO_HEADERS)).to_json()))
    changed = [*TWO_HEADERS[:2], chunk(frag(0, args='{"city": "Paris"}')), *TWO_HEADERS[3:]]
    result = invoke("check", write(sse(*changed)), "--expect", str(expected))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"differs from {expected}: step 2: steps[2].fragments[0].")
    result = invoke(
        "check", _two_headers(write), "--expect", str(expected), "--policy", "exact-key"
    )
    assert result.exit_code == 1
    assert "pass --policy adr-0019" in result.stdout


def test_check_expect_accepts_trace_format_json(
    invoke: Invoke, write: Write, tmp_path: Path
) -> None:
    path = _two_headers(write)
    expected = tmp_path / "trace.json"
    expected.write_text(invoke("trace", path, "--format", "json").stdout)
    result = invoke("check", path, "--expect", str(expected))
    assert result.exit_code == 0, result.stdout


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "it is a JSON list, not a trace object"),
        ('{"schema": 2}', 'its "schema" is 2, not 1'),
        ('{"schema": 1, "steps": []}', "it has no 'policy'"),
    ],
)
def test_check_expect_refuses_a_file_that_is_not_a_trace(
    invoke: Invoke, write: Write, tmp_path: Path, content: str, needle: str
) -> None:
    expected = tmp_path / "expected.json"
    expected.write_text(content)
    assert_usage_error(invoke("check", _two_headers(write), "--expect", str(expected)), needle)


def test_check_expect_missing_file(invoke: Invoke, write: Write, tmp_path: Path) -> None:
    result = invoke("check", _two_headers(write), "--expect", str(tmp_path / "nope.json"))
    assert_usage_error(result, "cannot read", "nope.json")


def test_trace_and_check_redact(invoke: Invoke, write: Write) -> None:
    path = write(sse(chunk(frag(0, "a", "f", json.dumps({"key": KEY}))), chunk(finish="stop")))
    plain = invoke("trace", path, "--format", "json")
    masked = invoke("trace", path, "--format", "json", "--redact")
    assert KEY in plain.stdout and KEY not in masked.stdout
    assert len(plain.stdout) == len(masked.stdout)
    assert invoke("check", path, "--redact").exit_code == invoke("check", path).exit_code
