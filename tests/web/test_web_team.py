"""A team's work on a stream: delete, rename, notes, report, fixture, library, retention."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.web.webkit import CONTINUATION, HX
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.settings import Settings
from webapp.storage import open_storage
from webapp.triage.expect import first_difference
from webapp.web.app import create_app
from webapp.web.backend.team.owners import OWNED_AT_MOST, OWNER_COOKIE
from webapp.web.backend.team.retention import Retention

LAST = 5
"""CONTINUATION's last step (its `end` step)."""


def created(client: TestClient, text: str = CONTINUATION, title: str = "t") -> dict[str, Any]:
    response = client.post("/api/streams", json={"text": text, "title": title})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def pasted(client: TestClient, title: str = "pasted") -> str:
    """Store through the page's form (which sets the owner cookie); the new id."""
    response = client.post("/streams", data={"text": CONTINUATION, "title": title})
    assert response.status_code == 303, response.text
    return response.headers["location"].split("/s/")[1].split("?")[0]


def every_url(stream_id: str) -> list[str]:
    return [
        f"/s/{stream_id}",
        f"/s/{stream_id}?step=2",
        f"/s/{stream_id}/compare",
        f"/s/{stream_id}/report.md",
        f"/s/{stream_id}/fixture.zip",
        f"/s/{stream_id}/delete",
        f"/api/streams/{stream_id}",
        f"/api/streams/{stream_id}/trace",
        f"/api/streams/{stream_id}/raw",
        f"/api/streams/{stream_id}/notes",
    ]


# Delete.


def test_the_api_answers_a_delete_token_and_keeps_only_its_hash(
    client: TestClient, settings: Settings
) -> None:
    made = created(client)
    token = made["delete_token"]
    assert len(token) >= 32
    storage = open_storage(settings.db)
    try:
        stored = storage.delete_hash(made["id"])
        [(raw_row,)] = storage.backend.run(
            "SELECT COUNT(*) FROM streams WHERE delete_hash = ?", (token,)
        )
    finally:
        storage.close()
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert raw_row == 0


def test_delete_needs_the_streams_own_token(client: TestClient) -> None:
    made, other = created(client), created(client)
    url = f"/api/streams/{made['id']}"
    missing = client.delete(url)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    for header in (f"Bearer {other['delete_token']}", "Bearer nope", "Basic abc", "Bearer "):
        response = client.delete(url, headers={"Authorization": header})
        assert response.status_code in (401, 403), header
    assert (
        client.delete(
            "/api/streams/unknown-id", headers={"Authorization": f"Bearer {made['delete_token']}"}
        ).status_code
        == 404
    )
    assert client.get(url).status_code == 200


def test_delete_removes_the_stream_its_notes_and_artefacts_everywhere(
    client: TestClient, settings: Settings
) -> None:
    made = created(client)
    stream_id = made["id"]
    assert (
        client.post(f"/api/streams/{stream_id}/notes", json={"step": 1, "text": "here"}).status_code
        == 201
    )
    # a second worker on the same store, its cache warm with this stream
    with TestClient(create_app(settings), follow_redirects=False) as other:
        for url in every_url(stream_id):
            assert other.get(url).status_code == 200, url
        storage = open_storage(settings.db)
        try:
            storage.put_artefact(stream_id, "k", "columns", b"x")
            response = client.delete(
                f"/api/streams/{stream_id}",
                headers={"Authorization": f"Bearer {made['delete_token']}"},
            )
            assert response.status_code == 204 and response.content == b""
            for table in ("streams", "notes", "artefacts"):
                column = "id" if table == "streams" else "stream_id"
                [(n,)] = storage.backend.run(
                    f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (stream_id,)
                )
                assert n == 0, table
        finally:
            storage.close()
        for url in every_url(stream_id):
            assert client.get(url).status_code == 404, url
            assert other.get(url).status_code == 404, url
            assert other.get(url, headers=HX).status_code == 404, url
    assert (
        client.delete(
            f"/api/streams/{stream_id}", headers={"Authorization": f"Bearer {made['delete_token']}"}
        ).status_code
        == 404
    )


def test_the_form_sets_an_owner_cookie_and_that_browser_may_delete(client: TestClient) -> None:
    response = client.post("/streams", data={"text": CONTINUATION, "title": "mine"})
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{OWNER_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    stream_id = response.headers["location"].split("/s/")[1].split("?")[0]
    page = client.get(f"/s/{stream_id}")
    assert 'id="delete-stream"' in page.text
    confirm = client.get(f"/s/{stream_id}/delete")
    assert confirm.status_code == 200 and "Delete it for everyone" in confirm.text
    gone = client.post(f"/s/{stream_id}/delete")
    assert gone.status_code == 303 and gone.headers["location"] == "/streams?deleted=1"
    assert client.get(f"/s/{stream_id}").status_code == 404
    assert client.get("/streams?deleted=1").status_code == 200


def test_another_browser_cannot_delete_from_the_page(app: FastAPI) -> None:
    with TestClient(app, follow_redirects=False) as mine, TestClient(app) as theirs:
        stream_id = pasted(mine)
        assert 'id="delete-stream"' not in theirs.get(f"/s/{stream_id}").text
        assert "Delete it for everyone" not in theirs.get(f"/s/{stream_id}/delete").text
        assert theirs.post(f"/s/{stream_id}/delete").status_code == 403
        theirs.cookies.set(OWNER_COOKIE, f"{stream_id}:{'x' * 32}")
        assert theirs.post(f"/s/{stream_id}/delete").status_code == 403
        assert mine.get(f"/s/{stream_id}").status_code == 200
        assert theirs.post("/s/no-such-stream/delete").status_code == 404


def test_the_owner_cookie_stays_bounded(client: TestClient) -> None:
    pairs = [f"id{n:04d}:{'t' * 32}" for n in range(OWNED_AT_MOST + 10)]
    client.cookies.set(OWNER_COOKIE, ".".join(pairs))
    response = client.post("/streams", data={"text": CONTINUATION})
    value = response.headers["set-cookie"].split(";")[0].split("=", 1)[1].strip('"')
    kept = value.split(".")
    assert len(kept) == OWNED_AT_MOST and len(value) < 4000
    assert kept[-1].startswith(response.headers["location"].split("/s/")[1].split("?")[0])


def test_the_operator_deletes_any_stream(client: TestClient, settings: Settings) -> None:
    from click.testing import CliRunner

    from webapp.cli import main

    stream_id = created(client)["id"]
    result = CliRunner().invoke(main, ["delete", "--db", settings.db, "--", stream_id])
    assert result.exit_code == 0, result.output
    assert client.get(f"/s/{stream_id}").status_code == 404
    again = CliRunner().invoke(main, ["delete", "--db", settings.db, "--", stream_id])
    assert again.exit_code == 1 and "no stream" in again.output


# Rename.


def test_rename_through_the_api(client: TestClient) -> None:
    stream_id = created(client, title="before")["id"]
    response = client.patch(f"/api/streams/{stream_id}", json={"title": "  after\nall  "})
    assert response.status_code == 200 and response.json()["title"] == "after all"
    assert client.get(f"/api/streams/{stream_id}").json()["title"] == "after all"
    assert "<h1>after all</h1>" in client.get(f"/s/{stream_id}").text
    assert "after all" in client.get(f"/s/{stream_id}/compare").text


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"title": ""}, 422),
        ({"title": "   "}, 422),
        ({"title": 3}, 422),
        ({"title": None}, 422),
        ({"title": "x" * 201}, 422),
        ({}, 422),
        ([], 400),
    ],
)
def test_bad_titles_are_refused(client: TestClient, body: Any, status: int) -> None:
    stream_id = created(client, title="kept")["id"]
    response = client.patch(f"/api/streams/{stream_id}", json=body)
    assert response.status_code == status, response.text
    assert client.get(f"/api/streams/{stream_id}").json()["title"] == "kept"


def test_rename_of_nothing_and_of_a_body_that_is_not_json(client: TestClient) -> None:
    assert client.patch("/api/streams/nope", json={"title": "x"}).status_code == 404
    stream_id = created(client)["id"]
    response = client.patch(f"/api/streams/{stream_id}", content=b"{", headers={})
    assert response.status_code == 400


def test_a_title_is_text_everywhere(client: TestClient) -> None:
    stream_id = created(client)["id"]
    hostile = '<script>alert(1)</script>"><b>'
    assert client.patch(f"/api/streams/{stream_id}", json={"title": hostile}).status_code == 200
    page = client.get(f"/s/{stream_id}").text
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    report = client.get(f"/s/{stream_id}/report.md").text
    assert report.startswith("# \\<script\\>")


def test_rename_in_place_through_the_form(client: TestClient) -> None:
    stream_id = created(client, title="old")["id"]
    plain = client.post(f"/s/{stream_id}/title", data={"title": "new", "step": "2"})
    assert plain.status_code == 303 and plain.headers["location"] == f"/s/{stream_id}?step=2"
    swapped = client.post(f"/s/{stream_id}/title", data={"title": "newer"}, headers=HX)
    assert swapped.status_code == 200 and swapped.template.name == "_title.html"  # type: ignore[attr-defined]
    assert 'id="stream-title"' in swapped.text and "<h1>newer</h1>" in swapped.text
    bad = client.post(f"/s/{stream_id}/title", data={"title": " "})
    assert bad.status_code == 422
    assert client.post("/s/nope/title", data={"title": "x"}).status_code == 404


def test_the_page_says_when_the_stream_was_created(client: TestClient) -> None:
    stream_id = created(client)["id"]
    info = client.get(f"/api/streams/{stream_id}").json()
    page = client.get(f"/s/{stream_id}").text
    assert info["created"][:10] in page and "created" in page


# Notes.


def test_notes_through_the_api(client: TestClient) -> None:
    stream_id = created(client)["id"]
    url = f"/api/streams/{stream_id}/notes"
    made = client.post(url, json={"step": 2, "text": "the city\nis here", "author": "Ann"})
    assert made.status_code == 201
    note = made.json()
    assert note["url"] == f"/s/{stream_id}?step=2#note-{note['id']}"
    assert client.post(url, json={"step": 0, "text": "first"}).status_code == 201
    listed = client.get(url).json()["notes"]
    assert [(n["step"], n["text"], n["author"]) for n in listed] == [
        (0, "first", ""),
        (2, "the city\nis here", "Ann"),
    ]
    one = f"{url}/{note['id']}"
    author = {"Authorization": f"Bearer {note['edit_token']}"}
    edited = client.patch(one, json={"text": "changed"}, headers=author)
    assert edited.status_code == 200
    assert edited.json()["text"] == "changed" and edited.json()["author"] == "Ann"
    assert edited.json()["edited"] is not None
    assert client.patch(one, json={"step": LAST}, headers=author).json()["step"] == LAST
    assert client.delete(one, headers=author).status_code == 204
    assert client.delete(one, headers=author).status_code == 404
    assert client.get(one).status_code == 404
    assert len(client.get(url).json()["notes"]) == 1


def test_a_stream_page_reads_its_notes_once(client: TestClient, app: FastAPI) -> None:
    """Each read of the store hands the GIL over: beside a thread that computes (the keeper
    packing a long stream's view), each costs a switch interval, so a page reads what it
    needs once. An uploaded stream's page: its capture row (none), its row, its notes, its
    minimiser jobs; the stage alone: the first three. Not its hops nor its twin (only a
    capture has them), nor its row or notes twice."""
    stream_id = created(client)["id"]
    url = f"/api/streams/{stream_id}/notes"
    for step, text in ((1, "first here"), (1, "second here"), (2, "one step on")):
        assert client.post(url, json={"step": step, "text": text}).status_code == 201
    client.get(f"/s/{stream_id}")  # what is made once per view (its timing) is made
    backend = app.state.service.storage.backend
    read: list[str] = []
    real = backend.run

    def counted(sql: str, params: Any = ()) -> Any:
        read.append(" ".join(sql.split())[:60])
        return real(sql, params)

    backend.run = counted
    try:
        page = client.get(f"/s/{stream_id}?step=1")
        assert len(read) <= 4, "\n".join(read)
        read.clear()
        stage = client.get(f"/s/{stream_id}?step=1", headers=HX)
        assert len(read) <= 3, read
    finally:
        del backend.run
    # what the notes were read for is all there: the list, and the step's own on its stage
    assert all(text in page.text for text in ("first here", "second here", "one step on"))
    assert stage.text.count('class="step-note"') == 2 and "one step on" not in stage.text


@pytest.mark.parametrize(
    "body",
    [
        {"step": 1, "text": ""},
        {"step": 1, "text": "   \n "},
        {"step": 1, "text": "x" * 4001},
        {"step": 1},
        {"step": 1, "text": 5},
        {"step": -1, "text": "x"},
        {"step": LAST + 1, "text": "x"},
        {"step": "two", "text": "x"},
        {"step": True, "text": "x"},
        {"step": 1.5, "text": "x"},
        {"text": "x"},
        {"step": 1, "text": "x", "author": "a" * 81},
        {"step": 1, "text": "x", "author": 3},
    ],
)
def test_bad_notes_are_refused(client: TestClient, body: dict[str, Any]) -> None:
    stream_id = created(client)["id"]
    url = f"/api/streams/{stream_id}/notes"
    response = client.post(url, json=body)
    assert response.status_code == 422, response.text
    assert "detail" in response.json()
    assert client.get(url).json()["notes"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"text": ""},
        {"text": "x" * 4001},
        {"text": None},
        {"step": -1},
        {"step": LAST + 1},
        {"step": "x"},
        {"author": "a" * 81},
    ],
)
def test_bad_edits_are_refused(client: TestClient, body: dict[str, Any]) -> None:
    stream_id = created(client)["id"]
    url = f"/api/streams/{stream_id}/notes"
    note = client.post(url, json={"step": 1, "text": "ok", "author": "me"}).json()
    author = {"Authorization": f"Bearer {note['edit_token']}"}
    response = client.patch(f"{url}/{note['id']}", json=body, headers=author)
    assert response.status_code == 422, response.text
    [kept] = client.get(url).json()["notes"]
    assert (kept["step"], kept["text"], kept["author"], kept["edited"]) == (1, "ok", "me", None)


def test_notes_of_nothing(client: TestClient) -> None:
    stream_id = created(client)["id"]
    assert client.post("/api/streams/nope/notes", json={"step": 0, "text": "x"}).status_code == 404
    assert client.get("/api/streams/nope/notes").status_code == 404
    for note in ("999", "x", "-1", "1" * 30):
        assert client.get(f"/api/streams/{stream_id}/notes/{note}").status_code == 404
        assert (
            client.patch(f"/api/streams/{stream_id}/notes/{note}", json={"text": "x"}).status_code
            == 404
        )
        assert client.delete(f"/api/streams/{stream_id}/notes/{note}").status_code == 404
    other = created(client)["id"]
    theirs = client.post(f"/api/streams/{other}/notes", json={"step": 0, "text": "x"}).json()
    assert client.get(f"/api/streams/{stream_id}/notes/{theirs['id']}").status_code == 404
    assert client.post(f"/api/streams/{stream_id}/notes", content=b"[1").status_code == 400


def test_a_huge_body_is_refused_before_it_is_read(client: TestClient) -> None:
    stream_id = created(client)["id"]
    body = json.dumps({"step": 0, "text": "x" * 100_000})
    response = client.post(f"/api/streams/{stream_id}/notes", content=body)
    assert response.status_code == 400


def test_notes_show_on_the_page_escaped(client: TestClient) -> None:
    stream_id = created(client)["id"]
    note = client.post(
        f"/api/streams/{stream_id}/notes",
        json={"step": 2, "text": "<img src=x onerror=alert(1)>", "author": "<b>Bo</b>"},
    ).json()
    at_step = client.get(f"/s/{stream_id}?step=2").text
    assert "<img src=x" not in at_step and "&lt;img src=x onerror=alert(1)&gt;" in at_step
    assert "<b>Bo</b>" not in at_step
    assert f'id="note-{note["id"]}"' in at_step  # in the detail panel of its step
    assert 'id="notes"' in at_step  # the list at the top
    assert 'class="note-flag"' in at_step  # the mark on the row
    elsewhere = client.get(f"/s/{stream_id}?step=1").text
    assert f'id="note-{note["id"]}"' not in elsewhere
    assert f'href="/s/{stream_id}?step=2#note-{note["id"]}"' in elsewhere
    partial = client.get(f"/s/{stream_id}?step=2", headers=HX).text
    assert f'id="note-{note["id"]}"' in partial
    rows = client.get(f"/s/{stream_id}/rows?start=0&end=5&direction=after", headers=HX).text
    assert rows.count('class="note-flag"') == 1


def test_notes_through_the_page_forms(client: TestClient) -> None:
    stream_id = created(client)["id"]
    added = client.post(f"/s/{stream_id}/notes", data={"step": "3", "text": "look", "author": ""})
    assert added.status_code == 303
    location = added.headers["location"]
    assert location.startswith(f"/s/{stream_id}?step=3#note-")
    note_id = location.rsplit("-", 1)[1]
    assert client.get(location).status_code == 200
    edited = client.post(f"/s/{stream_id}/notes/{note_id}", data={"text": "looked"})
    assert edited.status_code == 303
    notes = client.get(f"/api/streams/{stream_id}/notes").json()["notes"]
    assert [n["text"] for n in notes] == ["looked"]
    for data in ({"step": "3", "text": ""}, {"step": "99", "text": "x"}, {"text": "x"}):
        assert client.post(f"/s/{stream_id}/notes", data=data).status_code == 422
    gone = client.post(f"/s/{stream_id}/notes/{note_id}/delete")
    assert gone.status_code == 303 and gone.headers["location"] == f"/s/{stream_id}?step=3"
    assert client.get(f"/api/streams/{stream_id}/notes").json()["notes"] == []
    assert client.post(f"/s/{stream_id}/notes/{note_id}/delete").status_code == 404


# Report, fixture, unfurl.


def test_report_md_has_the_verdict_and_the_notes(client: TestClient) -> None:
    stream_id = created(client, title="weather")["id"]
    client.post(f"/api/streams/{stream_id}/notes", json={"step": 1, "text": "bad|cell"})
    response = client.get(f"/s/{stream_id}/report.md?policy=exact-key")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    text = response.text
    assert text.startswith("# weather\n") and "**Verdict:**" in text
    # each note links to its step, absolute (pasted into a tracker): without --public-url,
    # from the address the request came to
    assert f"- Step [1](http://testserver/s/{stream_id}?step=1): bad\\|cell" in text
    assert "### exact-key" in text and "### adr-0019" in text
    assert "](/s/" not in text  # no relative link left
    assert client.get("/s/nope/report.md").status_code == 404
    assert client.get(f"/s/{stream_id}/report.md?policy=nope").status_code == 400


def test_report_links_are_absolute_with_a_public_url(db_url: str) -> None:
    settings = Settings(db=db_url, public_url="https://viz.example/team")
    with TestClient(create_app(settings)) as client:
        stream_id = created(client)["id"]
        text = client.get(f"/s/{stream_id}/report.md?policy=exact-key").text
        other_host = client.get(
            f"/s/{stream_id}/report.md?policy=exact-key", headers={"Host": "localhost:8000"}
        ).text
    assert f"](https://viz.example/team/s/{stream_id}?step=1)" in text
    assert other_host == text  # the public URL wins over the name the request used
    assert "](/s/" not in text and "testserver" not in text


def test_report_links_without_a_public_url_take_the_requests_own_address(db_url: str) -> None:
    app = create_app(Settings(db=db_url))
    with TestClient(app, base_url="http://localhost:8000", root_path="/viz") as client:
        stream_id = created(client)["id"]
        note = {"step": 1, "text": "here"}
        assert client.post(f"/api/streams/{stream_id}/notes", json=note).status_code == 201
        text = client.get(f"/s/{stream_id}/report.md?policy=exact-key").text
    # scheme, host with its port, and the root path the app is mounted under
    assert f"- Step [1](http://localhost:8000/viz/s/{stream_id}?step=1): here" in text
    assert "](/s/" not in text and "](/viz/" not in text


def test_the_fixture_bundle_replays_to_its_expected_traces(client: TestClient) -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
    text = CONTINUATION.replace("Paris", secret)
    assert secret in text
    stream_id = created(client, text=text)["id"]
    response = client.get(f"/s/{stream_id}/fixture.zip")
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    assert "attachment" in response.headers["content-disposition"]
    bundle = zipfile.ZipFile(io.BytesIO(response.content))
    names = set(bundle.namelist())
    assert names == {
        "stream.sse", "expected.adr-0019.json", "expected.exact-key.json", "README.md",
        "cassette.yaml",
    }  # fmt: skip
    sse_text = bundle.read("stream.sse").decode()
    assert secret not in sse_text and "sk-proj-" in sse_text
    replay = read(sse_text, "sse")
    cassette = read(bundle.read("cassette.yaml").decode())
    assert cassette.format == "cassette" and tuple(cassette.records) == tuple(replay.records)
    assert secret not in bundle.read("cassette.yaml").decode()
    for policy in ("adr-0019", "exact-key"):
        expected = json.loads(bundle.read(f"expected.{policy}.json"))
        actual = assemble(replay.records, Options(policy=policy)).to_json()  # type: ignore[arg-type]
        assert first_difference(expected, actual) is None
    assert "streamviz check stream.sse --expect" in bundle.read("README.md").decode()
    assert client.get("/s/nope/fixture.zip").status_code == 404


def test_the_page_unfurls_with_its_verdict_and_step(client: TestClient) -> None:
    stream_id = created(client, title="weather")["id"]
    page = client.get(f"/s/{stream_id}?step=2&policy=exact-key").text
    assert "<title>weather · step 2 · streamviz</title>" in page
    assert '<meta property="og:title" content="weather · step 2 · streamviz">' in page
    assert '<meta property="og:description" content="' in page
    unfurl = page.split('property="og:description"')[1].split(">")[0]
    assert "errors" in unfurl and "(step 1)" in unfurl
    assert "data-copy-link" in page and f'href="/s/{stream_id}?step=2&amp;policy=exact-key' in page


# The library.


def test_the_library_lists_only_this_browsers_streams_by_default(app: FastAPI) -> None:
    with TestClient(app, follow_redirects=False) as mine, TestClient(app) as theirs:
        first = pasted(mine, "alpha report")
        second = pasted(mine, "beta")
        hidden = created(theirs)["id"]
        page = mine.get("/streams")
        assert page.status_code == 200
        assert "alpha report" in page.text and "beta" in page.text and hidden not in page.text
        assert "does not list streams" in page.text
        listed = mine.get("/api/streams").json()
        assert {s["id"] for s in listed["streams"]} == {second, first}
        assert listed["scope"] == "this-browser" and listed["total"] == 2
        row = listed["streams"][0]
        assert (row["chunks"], row["calls"], row["notes"], row["format"]) == (4, 1, 0, "sse")
        assert row["errors"] + row["warnings"] == 0
        assert theirs.get("/api/streams").json()["streams"] == []
        found = mine.get("/api/streams?q=ALPHA").json()["streams"]
        assert [s["id"] for s in found] == [first]
        assert mine.get("/api/streams?q=%25").json()["streams"] == []


def test_the_library_lists_everything_with_list_streams(db_url: str) -> None:
    settings = Settings(db=db_url, list_streams=True)
    with TestClient(create_app(settings)) as client:
        ids = [created(client, title=f"s{n:02d}")["id"] for n in range(23)]
        storage = open_storage(db_url)
        try:  # distinct creation times, so that "newest first" is checkable
            start = datetime(2024, 1, 1, tzinfo=UTC)
            for n, stream_id in enumerate(ids):
                when = (start + timedelta(minutes=n)).isoformat(timespec="seconds")
                storage.backend.run(
                    "UPDATE streams SET created = ? WHERE id = ?", (when, stream_id)
                )
        finally:
            storage.close()
        client.post(f"/api/streams/{ids[-1]}/notes", json={"step": 0, "text": "x"})
        first = client.get("/api/streams").json()
        assert first["scope"] == "all" and first["total"] == 23 and first["pages"] == 2
        assert [s["title"] for s in first["streams"][:2]] == ["s22", "s21"]
        assert first["streams"][0]["notes"] == 1
        second = client.get("/api/streams?page=2").json()
        assert [s["title"] for s in second["streams"]] == ["s02", "s01", "s00"]
        page = client.get("/streams?page=2")
        assert "page 2 of 2" in page.text and "lists every stream" in page.text
        assert client.get("/api/streams?q=s1").json()["total"] == 10
        assert client.get("/streams?page=x").status_code == 400
        assert client.get("/api/streams?q=" + "x" * 300).status_code == 422


# Retention.


def test_retention_removes_old_streams_by_the_clock(client: TestClient, app: FastAPI) -> None:
    old, new = created(client)["id"], created(client)["id"]
    now = datetime.now(UTC)
    retention = Retention(app.state.service, days=7, clock=lambda: now)
    assert retention.sweep() == []
    storage = app.state.service.storage
    past = (now - timedelta(days=8)).isoformat(timespec="seconds")
    storage.backend.run("UPDATE streams SET created = ? WHERE id = ?", (past, old))
    assert retention.sweep() == [old]
    assert client.get(f"/s/{old}").status_code == 404
    assert client.get(f"/s/{new}").status_code == 200
    later = Retention(app.state.service, days=7, clock=lambda: now + timedelta(days=8))
    assert later.sweep() == [new]
    assert Retention(app.state.service, days=0).sweep() == []


def test_retention_sweeps_at_start_and_the_home_page_says_so(db_url: str) -> None:
    storage = open_storage(db_url)
    try:
        info = storage.add(b"data: [DONE]\n\n", title="old", format="sse")
        past = (datetime.now(UTC) - timedelta(days=40)).isoformat(timespec="seconds")
        storage.backend.run("UPDATE streams SET created = ? WHERE id = ?", (past, info.id))
    finally:
        storage.close()
    settings = Settings(db=db_url, retention_days=30)
    with TestClient(create_app(settings)) as client:
        assert client.get(f"/api/streams/{info.id}").status_code == 404
        assert "removes streams 30 days after" in client.get("/").text
    with TestClient(create_app(Settings(db=db_url))) as client:
        assert "removes streams" not in client.get("/").text


# Redaction before storing.

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2
"""An API key as a user might paste it inside a tool call's arguments."""
WITH_SECRET = CONTINUATION.replace("Paris", SECRET)
MAIL = "ann.lee@example.com"
WITH_TWO = WITH_SECRET.replace("get_weather", "get_weather").replace(
    '{\\"city\\":', f'{{\\"who\\":\\"{MAIL}\\",\\"key\\":\\"{SECRET}\\",\\"city\\":'
)


def test_the_api_masks_content_secrets_unless_told_not_to(client: TestClient) -> None:
    assert SECRET in WITH_SECRET
    masked = client.post("/api/streams", json={"text": WITH_SECRET})
    assert masked.status_code == 201
    assert any(item.startswith("API key (line") for item in masked.json()["redacted"])
    raw = client.get(f"/api/streams/{masked.json()['id']}/raw").text
    assert SECRET not in raw and "sk-proj-" in raw and len(raw) == len(WITH_SECRET)
    kept = client.post("/api/streams", json={"text": WITH_SECRET, "redact": "none"})
    assert kept.status_code == 201 and kept.json()["redacted"] == []
    assert SECRET in client.get(f"/api/streams/{kept.json()['id']}/raw").text
    bad = client.post("/api/streams", json={"text": WITH_SECRET, "redact": "some"})
    assert bad.status_code == 422
    files = {"file": ("s.sse", WITH_SECRET.encode())}
    multipart = client.post("/api/streams", files=files, data={"redact": "none"})
    assert multipart.status_code == 201 and multipart.json()["redacted"] == []


def _stored_raw(client: TestClient, response: Any) -> str:
    assert response.status_code == 303, response.text
    stream_id = response.headers["location"].split("/s/")[1].split("?")[0]
    return str(client.get(f"/api/streams/{stream_id}/raw").text)


def test_the_form_previews_secrets_grouped_by_mask(client: TestClient) -> None:
    assert WITH_TWO.count(SECRET) == 2 and MAIL in WITH_TWO
    first = client.post(
        "/streams", data={"text": WITH_TWO, "title": "keyed", "policy": "exact-key"}
    )
    assert first.status_code == 200
    assert first.template.name == "redact_preview.html"  # type: ignore[attr-defined]
    preview = first.context["preview"]  # type: ignore[attr-defined]
    kinds = {group.kind: group for group in preview.groups}
    assert set(kinds) == {"API key", "e-mail address"}
    assert len(kinds["API key"].lines) == 2  # both copies of the key: one checkbox
    assert SECRET not in first.text.split("<textarea")[0]  # the table shows masks only
    form = {"text": WITH_TWO, "title": "keyed", "policy": "exact-key", "key": preview.key}
    both = client.post(
        "/streams", data=form | {"redact": "chosen", "mask": [g.mask for g in preview.groups]}
    )
    assert "policy=exact-key" in both.headers["location"]
    raw = _stored_raw(client, both)
    assert SECRET not in raw and MAIL not in raw
    assert raw.count(kinds["API key"].mask) == 2  # the same mask everywhere: ids still match
    only_key = client.post(
        "/streams", data=form | {"redact": "chosen", "mask": [kinds["API key"].mask]}
    )
    raw = _stored_raw(client, only_key)
    assert SECRET not in raw and MAIL in raw
    as_is = client.post("/streams", data=form | {"redact": "none"})
    assert SECRET in _stored_raw(client, as_is)
    none_ticked = client.post("/streams", data=form | {"redact": "chosen"})
    assert SECRET in _stored_raw(client, none_ticked)
    for bad in ({"redact": "chosen", "key": "zz"}, {"redact": "maybe"}):
        assert client.post("/streams", data=form | bad).status_code == 400


def test_a_paste_without_secrets_is_stored_at_once(client: TestClient) -> None:
    response = client.post("/streams", data={"text": CONTINUATION})
    assert response.status_code == 303
