"""Notes are bounded per step and per stream, and a refusal says which bound and its flag.

There was no bound: 3,000 notes on one step made a 26.8 MB step page. Now a stream holds at
most `--max-notes-per-stream` notes and a step `--max-notes-per-step`; one more is a 422 in
words (the API and the page's form), the step's form says so before anyone types, and the
stream page lists the first notes by step with a link to the report, which lists them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse
from webapp.cli import main
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.views.stream.team import NOTES_LISTED

LONG = sse(*(chunk(frag(0, "call_1", "f", "{}")) for _ in range(30)), chunk(finish="tool_calls"))
"""A stream with 31 steps to leave notes on."""
AUTHOR = "the-author-of-these-notes"
"""The author token of every note here: sent as Bearer, and the client's author cookie."""


@pytest.fixture
def bounded(db_url: str) -> Iterator[TestClient]:
    settings = Settings(db=db_url, max_notes_per_stream=6, max_notes_per_step=3)
    with TestClient(create_app(settings), follow_redirects=False) as client:
        client.headers["Authorization"] = f"Bearer {AUTHOR}"  # the API's notes are its own
        client.cookies.set("streamviz_author", AUTHOR)  # and so are the page's
        yield client


def _stream(client: TestClient) -> str:
    response = client.post("/api/streams", json={"text": LONG, "title": "notes"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _note(client: TestClient, stream_id: str, step: int, text: str = "x") -> Any:
    return client.post(f"/api/streams/{stream_id}/notes", json={"step": step, "text": text})


def test_a_step_holds_at_most_its_bound_and_says_so(bounded: TestClient) -> None:
    stream_id = _stream(bounded)
    assert [_note(bounded, stream_id, 1).status_code for _ in range(3)] == [201] * 3
    refused = _note(bounded, stream_id, 1)
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert "this step holds 3 notes" in detail and "--max-notes-per-step" in detail
    assert _note(bounded, stream_id, 2).status_code == 201  # the step next to it has room
    assert len(bounded.get(f"/api/streams/{stream_id}/notes").json()["notes"]) == 4


def test_a_stream_holds_at_most_its_bound_and_says_so(bounded: TestClient) -> None:
    stream_id = _stream(bounded)
    for step in range(6):
        assert _note(bounded, stream_id, step).status_code == 201
    refused = _note(bounded, stream_id, 10)
    assert refused.status_code == 422
    assert "--max-notes-per-stream" in refused.json()["detail"]
    first = bounded.get(f"/api/streams/{stream_id}/notes").json()["notes"][0]
    assert bounded.delete(f"/api/streams/{stream_id}/notes/{first['id']}").status_code == 204
    assert _note(bounded, stream_id, 10).status_code == 201  # room again


def test_moving_a_note_to_a_full_step_is_refused(bounded: TestClient) -> None:
    stream_id = _stream(bounded)
    for _ in range(3):
        assert _note(bounded, stream_id, 1).status_code == 201
    other = _note(bounded, stream_id, 2).json()["id"]
    moved = bounded.patch(f"/api/streams/{stream_id}/notes/{other}", json={"step": 1})
    assert moved.status_code == 422 and "step 1: this step holds 3" in moved.json()["detail"]
    text = bounded.patch(f"/api/streams/{stream_id}/notes/{other}", json={"text": "y"})
    assert text.status_code == 200  # an edit that stays on its step needs no room
    form = bounded.post(f"/s/{stream_id}/notes/{other}", data={"step": "1", "text": "y"})
    assert form.status_code == 422 and "--max-notes-per-step" in form.text


def test_the_page_form_refuses_in_words_and_the_full_step_says_so(bounded: TestClient) -> None:
    stream_id = _stream(bounded)
    for _ in range(3):
        posted = bounded.post(f"/s/{stream_id}/notes", data={"step": "1", "text": "x"})
        assert posted.status_code == 303
    refused = bounded.post(f"/s/{stream_id}/notes", data={"step": "1", "text": "x"})
    assert refused.status_code == 422
    assert "That note cannot be stored" in refused.text and "--max-notes-per-step" in refused.text
    full = bounded.get(f"/s/{stream_id}?step=1").text
    assert 'id="note-full"' in full and 'class="add-note"' not in full
    assert "this step holds 3 notes" in full
    roomy = bounded.get(f"/s/{stream_id}?step=2").text
    assert 'id="note-full"' not in roomy and 'class="add-note"' in roomy


def test_the_stream_page_lists_the_first_notes_and_links_the_report(db_url: str) -> None:
    settings = Settings(db=db_url, max_notes_per_stream=NOTES_LISTED + 5, max_notes_per_step=5)
    with TestClient(create_app(settings)) as client:
        stream_id = _stream(client)
        for n in range(NOTES_LISTED + 5):
            assert _note(client, stream_id, n % 31, f"note {n}").status_code == 201
        page = client.get(f"/s/{stream_id}?step=0").text
        listed = page.split('id="notes"')[1].split("</section>")[0]
        assert listed.count("<li>") == NOTES_LISTED
        assert f"{NOTES_LISTED + 5} notes" in listed and "the report</a> lists all" in listed
        report = client.get(f"/s/{stream_id}/report.md").text
        assert all(f"note {n}" in report for n in range(NOTES_LISTED + 5))


def test_the_defaults_and_the_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = Settings(db="x")
    assert (defaults.max_notes_per_stream, defaults.max_notes_per_step) == (200, 20)
    seen: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: seen.update(app=app))
    db = str(tmp_path / "s.sqlite3")
    args = ["serve", "--db", db, "--max-notes-per-stream", "9", "--max-notes-per-step", "2"]
    assert CliRunner().invoke(main, args).exit_code == 0
    settings = seen["app"].state.settings
    assert (settings.max_notes_per_stream, settings.max_notes_per_step) == (9, 2)
    seen["app"].state.service.close()
