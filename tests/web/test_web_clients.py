"""The clients page: computing, then the grades and the matrix; failing lenses still render;
the links."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.lenses.fakes import CALL, CRASHES, HANGS, answering, missing, program
from tests.web.webkit import Store
from webapp.web.routes.clients import ClientJobs

STREAM = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    "data: [DONE]\n\n"
)
HTMX = {"HX-Request": "true"}


def fake_jobs(app: FastAPI, timeout: float = 30.0) -> ClientJobs:
    lenses = (
        answering({"status": "ok", "calls": [CALL], "error": None}, "pi-ai"),
        answering({"status": "ok", "calls": [], "error": None}, "vercel-ai"),
        program(CRASHES, "openai-python"),
        program(HANGS, "langchain"),
        missing("litellm"),
    )
    jobs = ClientJobs(lenses, timeout=timeout)
    app.state.clients = jobs
    return jobs


def test_computing_then_the_matrix(app: FastAPI, client: TestClient, store: Store) -> None:
    jobs = fake_jobs(app, timeout=1.0)
    stream_id = store(STREAM)
    first = client.get(f"/s/{stream_id}/clients")
    assert first.status_code == 200
    assert 'hx-trigger="load delay:1s"' in first.text
    assert f'href="/s/{stream_id}/clients"' in first.text  # the reload link works without JS
    assert jobs.wait(stream_id, 30) is not None
    page = client.get(f"/s/{stream_id}/clients")
    assert page.status_code == 200
    text = page.text
    for name in ("pi-ai", "openai-python", "langchain", "vercel-ai", "litellm", "adr-0019"):
        assert name in text
    assert "timed out after 1 s" in text  # langchain hangs
    assert "crashed (exit status 139)" in text
    assert "not installed" in text and "make clients" in text
    comparison = (
        "Against what the stream means: 1 of 4 clients misses get_weather (vercel-ai); "
        "openai-python and langchain fail; not installed: litellm"
    )
    assert f'<p class="comparison" id="comparison">{comparison}</p>' in text  # the matrix's line
    # the headline: graded against what the stream means, who first (the provider keeps the
    # contract here, so a client that is not intact is at fault), then each grade's clients
    assert page.context["page"].headline == (
        "The provider keeps the contract: a client bug in vercel-ai, openai-python and "
        "langchain. Damaged silently: vercel-ai. Flagged: openai-python, langchain. "
        "Intact: pi-ai, adr-0019, exact-key. Not run: litellm."
    )
    assert "≠" in text


def test_the_polled_panel_and_the_json(app: FastAPI, client: TestClient, store: Store) -> None:
    jobs = fake_jobs(app, timeout=1.0)
    stream_id = store(STREAM)
    assert client.get(f"/api/streams/{stream_id}/clients").status_code in (200, 202)
    jobs.wait(stream_id, 30)
    panel = client.get(f"/s/{stream_id}/clients/matrix", headers=HTMX)
    assert panel.status_code == 200 and "<html" not in panel.text and "verdict" in panel.text
    browser = client.get(f"/s/{stream_id}/clients/matrix")
    assert browser.status_code == 303 and browser.headers["location"] == f"/s/{stream_id}/clients"
    document = client.get(f"/api/streams/{stream_id}/clients").json()
    statuses = {column["client"]: column["status"] for column in document["clients"]}
    assert statuses == {
        "pi-ai": "ok",
        "vercel-ai": "ok",
        "openai-python": "error",
        "langchain": "error",
        "litellm": "unavailable",
    }
    assert [column["client"] for column in document["policies"]] == ["adr-0019", "exact-key"]
    grades = {graded["client"]: graded["grade"] for graded in document["grades"]}
    assert grades == {"pi-ai": "intact", "vercel-ai": "damaged", "openai-python": "flagged",
                      "langchain": "flagged", "litellm": None, "adr-0019": "intact",
                      "exact-key": "intact"}  # fmt: skip


def test_an_unknown_stream_is_a_404(client: TestClient) -> None:
    assert client.get("/s/nosuchstream/clients").status_code == 404


def test_timeline_and_compare_link_to_the_clients_page(client: TestClient, store: Store) -> None:
    stream_id = store(STREAM)
    for url in (f"/s/{stream_id}", f"/s/{stream_id}/compare"):
        assert f'href="/s/{stream_id}/clients"' in client.get(url).text


def test_the_report_includes_the_matrix_once_computed(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    jobs = fake_jobs(app, timeout=1.0)
    stream_id = store(STREAM)
    assert "## Every client's view" not in client.get(f"/s/{stream_id}/report.md").text
    client.get(f"/s/{stream_id}/clients")
    assert jobs.wait(stream_id, 30) is not None
    report = client.get(f"/s/{stream_id}/report.md").text
    assert "## Every client's view" in report
    assert "| call | pi-ai" in report
