"""The clients page and API on another API's own stream (Gemini's): no chat-completions client
is run or blamed, each column says why; a chat-completions stream is graded as before."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.lenses.fakes import CRASHES, answering, missing, program
from tests.web.webkit import Store
from webapp.lenses import lenses_key
from webapp.storage.lensresults import LensResults
from webapp.web.routes.clients import ClientJobs

GEMINI = Path("tests/corpus/native/gemini3pro-wholecall.sse").read_text()
WHY = (
    "it reads chat-completions streams, and this is another API's own stream: "
    "Gemini streamGenerateContent"
)


def other_api_jobs(app: FastAPI) -> ClientJobs:
    """Lenses that would be blamed were they run: one hands no call, one crashes, one is
    missing (its install hint would show)."""
    lenses = (
        answering({"status": "ok", "calls": [], "error": None}, "litellm"),
        program(CRASHES, "openai-python"),
        missing("vercel-ai"),
    )
    jobs = ClientJobs(lenses, timeout=5.0)
    app.state.clients = jobs
    return jobs


def test_the_api_names_no_library_on_gemini_s_own_stream(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    jobs = other_api_jobs(app)
    stream_id = store(GEMINI)
    response = client.get(f"/api/streams/{stream_id}/clients", params={"wait": "true"})
    assert response.status_code == 200
    kept = LensResults(jobs.service.storage).get(stream_id, None, lenses_key(jobs.chosen()))
    assert kept is None  # no lens was queued, so none answered
    document = response.json()
    assert document["file"] == []
    assert {c["client"]: (c["status"], c["error"], c["install"]) for c in document["clients"]} == {
        "litellm": ("skipped", WHY, None),
        "openai-python": ("skipped", WHY, None),
        "vercel-ai": ("skipped", WHY, None),
    }
    grades = {graded["client"]: (graded["grade"], graded["detail"]) for graded in
              document["grades"]}  # fmt: skip
    assert grades == {"litellm": (None, WHY), "openai-python": (None, WHY),
                      "vercel-ai": (None, WHY), "adr-0019": ("intact", grades["adr-0019"][1]),
                      "exact-key": ("intact", grades["exact-key"][1])}  # fmt: skip
    assert "Damaged" not in document["verdict"] and "client bug" not in document["verdict"]
    verdict = document["verdict"]
    assert verdict.endswith("Not run on another API's stream: litellm, openai-python, vercel-ai.")


def test_the_page_and_report_say_why_no_client_ran(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    jobs = other_api_jobs(app)
    stream_id = store(GEMINI)
    client.get(f"/s/{stream_id}/clients")
    assert jobs.wait(stream_id, 30) is not None
    page = client.get(f"/s/{stream_id}/clients")
    assert page.status_code == 200
    text = page.text
    assert "make clients" not in text and "not installed" not in text
    assert "another API&#39;s own stream: Gemini streamGenerateContent" in text
    assert '<td class="na">not run</td>' in text
    view = page.context["page"]
    assert view.parties == () and view.unfiled.startswith("Nothing to file")
    assert {row.client: row.grade for row in view.grades}["litellm"] == "not run"
    assert page.context["installing"] is None
    report = client.get(f"/s/{stream_id}/report.md").text
    assert "## Every client's view" in report and "not run" in report
    assert "File with" not in report and "Nothing to file" in report
