"""`streamviz clients`: every client's view, as text or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import webapp.lenses
from tests.cli.clikit import Invoke
from tests.lenses.fakes import CALL, CRASHES, answering, missing, program
from tests.lenses.streams import STREAMS, load_golden, normal
from webapp.lenses.pins import BY_CLIENT, CLIENTS
from webapp.lenses.results import result_from_json
from webapp.lenses.runner import lens_for
from webapp.triage.headline import HEADLINE


def test_the_records_example_with_the_real_libraries(invoke: Invoke) -> None:
    result = invoke("clients", "tests/corpus/no-index.sse", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [column["client"] for column in document["clients"]] == list(CLIENTS)
    assert [column["client"] for column in document["policies"]] == ["adr-0019", "exact-key"]
    golden = load_golden("record-example")
    for column in document["clients"]:
        got = result_from_json(column["client"], column["version"], column)
        assert column["install"] is None
        assert normal(got, STREAMS["record-example"]) == golden["results"][column["client"]]
    assert document["comparison"].startswith(
        "Against what the stream means: 2 of 5 clients get search_docs's arguments wrong "
        "(pi-ai, langchain)"
    )
    grades = {graded["client"]: graded["grade"] for graded in document["grades"]}
    assert grades == {
        "pi-ai": "damaged", "openai-python": "flagged", "langchain": "damaged",
        "vercel-ai": "intact", "litellm": "intact", "adr-0019": "intact", "exact-key": "damaged",
    }  # fmt: skip
    assert [q["code"] for q in document["quirks"]] == ["missing-index", "bare-continuation"]
    assert document["verdict"] == (
        "The provider (example-model) broke the contract: missing-index and bare-continuation. "
        "Damaged silently: pi-ai, langchain, exact-key. Flagged: openai-python. "
        "Intact: vercel-ai, litellm, adr-0019."
    )
    assert len(document["verdict"]) <= HEADLINE
    assert [party["kind"] for party in document["file"]] == ["provider"]


def test_text_shows_every_column_each_call_and_the_verdict(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = (
        answering({"status": "ok", "calls": [CALL], "error": None}, "pi-ai"),
        program(CRASHES, "openai-python"),
        missing("litellm"),
    )
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: fakes)
    result = invoke("clients", "tests/corpus/clean-single-call.sse", env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("  pi-ai ") and "ok" in line for line in lines)
    assert any("unavailable" in line and "make clients" in line for line in lines)
    compared = next(line for line in lines if line.startswith("compared "))
    assert compared == (
        "compared Against what the stream means: 1 of 2 clients gets get_weather's id wrong "
        "(pi-ai); openai-python fails; not installed: litellm"
    )
    assert "crashed (exit status 139)" in next(line for line in lines if "  openai-python" in line)
    verdict = next(line for line in lines if line.startswith("verdict"))
    assert verdict == (
        "verdict  The provider (gpt-4o-mini) keeps the contract: a client bug in pi-ai and "
        "openai-python. Damaged silently: pi-ai. Flagged: openai-python. Intact: adr-0019, "
        "exact-key. Not run: litellm."
    )
    said = "file     File with openai 3.57.0: the stream keeps the contract, so the fault is"
    assert any(line.startswith(said) for line in lines)
    assert "get_weather (call_Q2x8)" in lines


def test_json_shape(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: (missing("vercel-ai"),))
    result = invoke("clients", "tests/corpus/clean-single-call.sse", "--format", "json")
    (column,) = json.loads(result.output)["clients"]
    assert set(column) == {"client", "version", "status", "calls", "error", "install"}
    assert column["status"] == "unavailable" and column["install"] == "make clients"


def test_a_local_module_named_like_a_dependency_does_not_break_a_lens(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Run from a folder holding `h2.py` (httpx's optional HTTP/2 package), with PYTHONPATH
    pointing there too, LangChain and LiteLLM still read the stream as it means: the lenses run
    with an isolated import path, in a folder of their own."""
    stream = str(Path("tests/corpus/clean-single-call.sse").resolve())
    (tmp_path / "h2.py").write_text("raise RuntimeError('a local h2.py, not the h2 package')\n")
    chosen = tuple(lens_for(BY_CLIENT[client]) for client in ("langchain", "litellm"))
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: chosen)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = invoke("clients", stream, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert {c["client"]: (c["status"], c["error"]) for c in document["clients"]} == {
        "langchain": ("ok", None),
        "litellm": ("ok", None),
    }
    grades = {graded["client"]: graded["grade"] for graded in document["grades"]}
    assert grades["langchain"] == grades["litellm"] == "intact"


def test_another_apis_stream_names_no_library_and_says_why_none_ran(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini's own stream has no call ids: LiteLLM drops id-less chat-completions calls, but
    no LiteLLM read this stream, only streamviz's mapping of it; no client may be blamed."""
    fakes = (answering({"status": "ok", "calls": [], "error": None}, "litellm"),
             missing("vercel-ai"))  # fmt: skip
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: fakes)
    gemini = "tests/corpus/native/gemini3pro-wholecall.sse"
    document = json.loads(invoke("clients", gemini, "--format", "json").output)
    assert document["file"] == []
    assert [(c["client"], c["status"], c["install"]) for c in document["clients"]] == [
        ("litellm", "skipped", None),
        ("vercel-ai", "skipped", None),
    ]
    grades = {graded["client"]: graded for graded in document["grades"]}
    why = ("it reads chat-completions streams, and this is another API's own stream: "
           "Gemini streamGenerateContent")  # fmt: skip
    assert grades["litellm"]["grade"] is None and grades["litellm"]["detail"] == why
    assert grades["vercel-ai"]["grade"] is None and grades["vercel-ai"]["detail"] == why
    assert grades["adr-0019"]["grade"] == grades["exact-key"]["grade"] == "intact"
    assert document["verdict"] == (
        "Nobody broke the contract: the provider (gemini-3-pro-preview) keeps it, and every "
        "client that ran reads the stream as it means. Intact: adr-0019, exact-key. "
        "Not run on another API's stream: litellm, vercel-ai."
    )
    text = invoke("clients", gemini).output
    assert "Nothing to file" in text and "make clients" not in text
    assert "Damaged" not in text and "File with" not in text


def test_a_chat_completions_stream_still_runs_and_grades_the_clients(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    fakes = (answering({"status": "ok", "calls": [], "error": None}, "litellm"),)
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: fakes)
    output = invoke("clients", "tests/corpus/clean-single-call.sse", "--format", "json").output
    document = json.loads(output)
    assert [c["status"] for c in document["clients"]] == ["ok"]
    assert document["grades"][0]["grade"] == "damaged"
    assert [party["name"] for party in document["file"]] == ["litellm 1.110.2"]
