"""Where to file, on the clients page, in its API and in report.md: each party's link (a
prefilled new issue on the library's tracker, a provider's support page) and its text, the
same text everywhere."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

import webapp.lenses
from tests.lenses.fakes import answering, missing
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import Store
from webapp.cli import main
from webapp.core.readers import read
from webapp.triage.fingerprint import fingerprint

CLEAN = sse(
    chunk(frag(0, "call_Zq81xXa", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)
"""A stream that keeps the contract: a library that damages it is at fault."""
QUIRKY = sse(
    chunk(frag(0, "call_Zq81xXa", "get_weather", ""), model="gpt-4o-2024-08-06"),
    chunk(frag(args='{"city": "Paris"}'), model="gpt-4o-2024-08-06"),
    chunk(finish="tool_calls", model="gpt-4o-2024-08-06"),
)
"""A bare continuation from an OpenAI model: the provider is at fault."""


@pytest.fixture
def lenses(monkeypatch: pytest.MonkeyPatch) -> None:
    """openai-python hands the call `{}` (damaged on a clean stream); the others missing."""
    damaging = answering(
        {"status": "ok", "error": None,
         "calls": [{"id": "call_Zq81xXa", "name": "get_weather", "arguments": "{}"}]},
        "openai-python",
    )  # fmt: skip
    chosen = (damaging, missing("pi-ai"), missing("vercel-ai"), missing("litellm"))
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: chosen)


def _api(client: TestClient, stream_id: str) -> Any:
    response = client.get(f"/api/streams/{stream_id}/clients?wait=true")
    assert response.status_code == 200, response.text
    return response.json()


def test_a_library_at_fault_gets_a_prefilled_issue_on_its_tracker(
    lenses: None, client: TestClient, store: Store
) -> None:
    stream_id = store(CLEAN)
    document = _api(client, stream_id)
    [party] = document["file"]
    assert (party["kind"], party["name"]) == ("library", "openai 3.57.0")
    url = urlsplit(party["url"])
    assert (url.scheme, url.netloc, url.path) == ("https", "github.com",
                                                  "/openai/openai-python/issues/new")  # fmt: skip
    query = parse_qs(url.query)
    assert query["template"] == ["bug_report.yml"]  # blank issues are off there: its form
    assert query["title"] == [party["title"]]
    assert query["what-happened"] == [party["text"]]
    text = party["text"]
    assert len(text) <= 2000
    assert "openai-python 3.57.0 damaged" in text and "openai 3.57.0" in text
    assert "**Quirks:** none: the stream keeps the contract." in text
    assert "get_weather" in text and "call_Zq81xXa" not in text  # pseudonymised
    repro = text.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert fingerprint(read(repro).records) == fingerprint(read(CLEAN).records)

    page = client.get(f"/s/{stream_id}/clients")
    section = page.text.split('aria-label="File with openai 3.57.0"', 1)[1].split("</section>")[0]
    link = section.split('<a class="file-link" href="', 1)[1].split('"', 1)[0]
    assert unescape(link) == party["url"]
    assert "Open a new issue on openai-python's tracker" in unescape(section)
    shown = section.split('aria-label="Text to file">', 1)[1].split("</pre>", 1)[0]
    assert unescape(shown) == text

    report = client.get(f"/s/{stream_id}/report.md").text
    where = report.split("## Where to file", 1)[1]
    assert f"**Where:** openai-python: [a new issue, prefilled]({party['url']})" in where
    assert text in where


def test_a_provider_at_fault_gets_its_support_page_hedged_by_the_model(
    lenses: None, client: TestClient, store: Store
) -> None:
    stream_id = store(QUIRKY)
    [party] = _api(client, stream_id)["file"]
    assert party["kind"] == "provider"
    assert party["url"] == "https://help.openai.com"
    assert "`bare-continuation`" in party["text"] and len(party["text"]) <= 2000
    page = client.get(f"/s/{stream_id}/clients").text
    section = page.split('class="file-with kind-provider"', 1)[1].split("</section>")[0]
    assert 'href="https://help.openai.com"' in section
    said = "OpenAI's support</a> <small>(the model's maker, going by its name: file there if it"
    assert said in unescape(section)


def test_a_provider_not_in_the_table_is_the_providers_support(
    lenses: None, client: TestClient, store: Store
) -> None:
    stream = QUIRKY.replace("gpt-4o-2024-08-06", "anthropic/claude-sonnet-4")  # an aggregator's
    stream_id = store(stream)
    [party] = _api(client, stream_id)["file"]
    assert party["url"] is None
    page = unescape(client.get(f"/s/{stream_id}/clients").text)
    assert "Where: the provider's support <small>(not in streamviz's table" in page


def test_the_cli_says_where_and_its_json_is_the_apis(
    lenses: None, client: TestClient, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "clean.sse"
    path.write_text(CLEAN, encoding="utf-8")
    runner = CliRunner(env={"NO_COLOR": "1"})
    text = runner.invoke(main, ["clients", str(path)]).stdout
    assert "where    openai-python: a prefilled new issue (--format json and report have" in text
    printed = json.loads(runner.invoke(main, ["clients", str(path), "--format", "json"]).stdout)
    served = _api(client, store(CLEAN))
    assert printed["file"] == served["file"]  # the same title, link and text
