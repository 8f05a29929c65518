"""A library teammates can use: what a browser's library holds, titles from what a stream
holds, search by what it holds, notes only their author rewrites, and a deleted stream's 404."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse
from tests.web.webkit import CONTINUATION
from webapp.core.words import title_from
from webapp.proxy.forward import title_of
from webapp.settings import Settings
from webapp.storage import open_storage
from webapp.storage.capture import Facts
from webapp.storage.search import Search
from webapp.web.app import create_app
from webapp.web.backend.library.holdings import ARGUMENT_CHARS, CALLS_READ

TWO_TOOLS = sse(
    chunk(frag(0, "call_W1x", "get_weather", ""), model="gpt-4o"),
    chunk(frag(0, args='{"city":"Paris"}'), model="gpt-4o"),
    chunk(frag(1, "call_B2y", "book_flight", "{}"), model="gpt-4o"),
    chunk(finish="tool_calls", model="gpt-4o"),
)
"""Two calls of a model: titled "gpt-4o: get_weather, book_flight"."""
PHANTOM = sse(
    chunk(frag(0, "call_Q9", "search_docs"), model="mistral-large"),
    chunk(frag(args='{"q": 1}')),  # a bare continuation: exact-key's phantom, a quirk
    chunk(finish="tool_calls"),
)
VALUES = sse(
    chunk(frag(0, "call_E1", "get_forecast", '{"location": {"city": "Edinburgh, Scot'), model="m"),
    chunk(frag(0, args='land", "days": 3}')),
    chunk(frag(1, "call_T2", "get_quote", '{"ticker": "NVDA", "note": "say \\"hi\\" x')),
    chunk(finish="tool_calls"),  # the second call's arguments cut short: its values count
)
"""Values in the arguments, one call's split across pieces, one call's JSON never closed."""


def _api_store(client: TestClient, text: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/api/streams", json={"text": text, **extra})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _library(client: TestClient, query: str = "") -> list[dict[str, Any]]:
    response = client.get(f"/api/streams{query}")
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()["streams"]
    return rows


# What a browser's library holds.


def test_a_teammates_library_holds_what_they_opened_noted_or_renamed(app: FastAPI) -> None:
    with TestClient(app) as mine, TestClient(app, follow_redirects=False) as theirs:
        opened = _api_store(mine, CONTINUATION, title="opened")["id"]
        noted = _api_store(mine, CONTINUATION, title="noted")["id"]
        renamed = _api_store(mine, CONTINUATION, title="to rename")["id"]
        never = _api_store(mine, CONTINUATION, title="never seen")["id"]
        assert _library(theirs) == []
        assert theirs.get(f"/s/{opened}?step=1").status_code == 200
        note = theirs.post(f"/s/{noted}/notes", data={"step": "1", "text": "odd"})
        assert note.status_code == 303
        title = theirs.post(f"/s/{renamed}/title", data={"title": "renamed", "step": "0"})
        assert title.status_code == 303
        rows = {row["id"]: row for row in _library(theirs)}
        assert set(rows) == {opened, noted, renamed} and never not in rows
        assert rows[opened]["here"] == ["opened"]
        assert rows[noted]["here"] == ["noted"] and rows[renamed]["title"] == "renamed"
        assert rows[renamed]["here"] == ["renamed"]
        theirs.get(f"/s/{noted}")  # opened too, later
        assert {row["id"]: row["here"] for row in _library(theirs)}[noted] == ["opened", "noted"]
        page = theirs.get("/streams").text
        assert "opened, noted or renamed" in page and "never seen" not in page
        assert _library(mine) == []  # the API stored them: no cookie, so nothing of its own


def test_the_library_cookie_stays_bounded_and_skips_examples(app: FastAPI) -> None:
    with TestClient(app) as client:
        ids = [_api_store(client, CONTINUATION)["id"] for _ in range(3)]
        client.get("/examples/continuation")
        for stream_id in ids:
            client.get(f"/s/{stream_id}")
        cookie = client.cookies.get("streamviz_seen") or ""
        assert [pair.split(":")[0] for pair in cookie.split(".")] == ids
        sent = client.get(f"/s/{ids[-1]}")  # the newest already: no new cookie
        assert "streamviz_seen" not in sent.headers.get("set-cookie", "")
        many = ".".join(f"id{n:03d}:o" for n in range(150))
        client.cookies.clear()  # a browser whose cookie already holds 150
        sent = client.get(f"/s/{ids[0]}", headers={"cookie": f"streamviz_seen={many}"})
        kept = sent.cookies["streamviz_seen"].split(".")
        assert len(kept) == 100 and kept[-1] == f"{ids[0]}:o" and kept[0] == "id051:o"


# Titles from what a stream holds.


def test_streams_get_titles_from_what_they_hold_unless_given_one(client: TestClient) -> None:
    pasted = client.post("/streams", data={"text": TWO_TOOLS})
    assert pasted.status_code == 303
    titles = {row["title"] for row in _library(client)}
    assert titles == {"gpt-4o: get_weather, book_flight"}
    given = client.post("/streams", data={"text": TWO_TOOLS, "title": "  my bug "})
    assert given.status_code == 303
    uploaded = client.post("/streams", files={"file": ("bug-12.sse", TWO_TOOLS.encode())})
    assert uploaded.status_code == 303
    plain = client.post("/streams", data={"text": sse(chunk(content="hi", finish="stop"))})
    assert plain.status_code == 303
    assert sorted(row["title"] for row in _library(client)) == [
        "Pasted stream",  # nothing to take a title from
        "gpt-4o: get_weather, book_flight",
        "gpt-4o: get_weather, book_flight (bug-12.sse)",
        "my bug",
    ]
    api = _api_store(client, PHANTOM)
    assert client.get(f"/api/streams/{api['id']}").json()["title"] == "mistral-large: search_docs"


def test_a_capture_and_a_paste_are_titled_by_the_same_function() -> None:
    facts = Facts("u", "POST", "/v1/chat/completions", 200, model="gpt-4o",
                  tools=("get_weather", "book_flight"))  # fmt: skip
    assert title_of(facts) == title_from("gpt-4o", ["get_weather", "book_flight"])
    assert title_from("m", [f"tool_{n}" for n in range(9)]) == (
        "m: tool_0, tool_1, tool_2, tool_3 and 5 more"
    )
    assert title_from(None, [None, "", "x", "x"]) == "x"
    assert title_from(" ", [], "fallback") == "fallback"


# Search by what a stream holds.


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("get_weather", {"two"}),  # a tool name
        ("weather", {"two"}),  # part of one
        ("gpt-4o", {"two"}),  # a model
        ("MISTRAL", {"phantom"}),
        ("call_w1x", {"two"}),  # a call id
        ("call_q9", {"phantom"}),
        ("bare-continuation", {"phantom"}),  # a quirk code
        ("missing-index", {"phantom"}),
        ("truncated-arguments", set()),
        ("gpt-4o flight", {"two"}),  # every word
        ("gpt-4o search_docs", set()),
        ("phant", {"phantom"}),  # the title still counts
        ("Edinburgh", {"values"}),  # a value in the arguments, nested, split across pieces
        ("scotland", {"values"}),  # each word of a value
        ("nvda", {"values"}),  # a ticker, in arguments that never closed
        ('"hi"', {"values"}),  # its escapes read
        ("3", {"values"}),  # a number
        ("paris", {"two"}),
        ("city", set()),  # a key is no value
        ("location", set()),
    ],
)
def test_the_library_searches_what_streams_hold(
    db_url: str, query: str, expected: set[str]
) -> None:
    with TestClient(create_app(Settings(db=db_url, list_streams=True))) as client:
        _api_store(client, TWO_TOOLS, title="two")
        _api_store(client, PHANTOM, title="phantom")
        _api_store(client, VALUES, title="values")
        found = {row["title"] for row in _library(client, f"?q={quote(query)}")}
        assert found == expected


def test_anomaly_codes_are_searched(db_url: str) -> None:
    dropped = sse(chunk(frag(0, "c", "f", "{}")), chunk(frag(7, args="x")), chunk(finish="stop"))
    with TestClient(create_app(Settings(db=db_url, list_streams=True))) as client:
        stream_id = _api_store(client, dropped, title="dropped")["id"]
        codes = client.get(f"/api/streams/{stream_id}/trace").json()["anomalies"]
        assert codes
        for code in {anomaly["code"] for anomaly in codes}:
            assert [row["id"] for row in _library(client, f"?q={code}")] == [stream_id], code


def test_streams_stored_before_are_indexed_and_titled_at_start(db_url: str) -> None:
    storage = open_storage(db_url)
    old = storage.add(TWO_TOOLS.encode(), title="Pasted stream", format="sse")
    kept = storage.add(TWO_TOOLS.encode(), title="their own title", format="sse")
    storage.close()
    with TestClient(create_app(Settings(db=db_url, list_streams=True))) as client:
        app: Any = client.app
        assert app.state.backfill.finished.wait(30)
        rows = {row["id"]: row for row in _library(client, "?q=book_flight")}
    assert rows[old.id]["title"] == "gpt-4o: get_weather, book_flight"
    assert rows[kept.id]["title"] == "their own title"
    storage = open_storage(db_url)
    assert Search(storage).unindexed(10) == []
    storage.close()


def test_the_values_searched_are_bounded(db_url: str) -> None:
    padding = "x" * ARGUMENT_CHARS
    many = sse(
        chunk(frag(0, "c0", "f", f'{{"pad": "{padding}", "city": "Farway"}}')),
        *(chunk(frag(n, f"c{n}", "f", f'{{"city": "town{n}"}}')) for n in range(1, 70)),
        chunk(finish="tool_calls"),
    )
    with TestClient(create_app(Settings(db=db_url, list_streams=True))) as client:
        stream_id = _api_store(client, many, title="many")["id"]
        assert [row["id"] for row in _library(client, "?q=town63")] == [stream_id]
        assert CALLS_READ == 64
        assert _library(client, "?q=town64") == []  # past the first CALLS_READ calls
        assert _library(client, "?q=farway") == []  # past the first ARGUMENT_CHARS
        assert [row["id"] for row in _library(client, "?q=xxxx")] == [stream_id]


def test_streams_indexed_before_the_values_are_indexed_again(db_url: str) -> None:
    storage = open_storage(db_url)
    old = storage.add(VALUES.encode(), title="indexed by an older build", format="sse")
    assert Search(storage).index(old.id, {"tool": ["get_forecast", "get_quote"]})
    storage.backend.run("UPDATE streams SET terms_version = 1 WHERE id = ?", (old.id,))
    assert Search(storage).unindexed(10) == [old.id]
    storage.close()
    with TestClient(create_app(Settings(db=db_url, list_streams=True))) as client:
        app: Any = client.app
        assert app.state.backfill.finished.wait(30)
        assert [row["id"] for row in _library(client, "?q=edinburgh")] == [old.id]
        assert [row["id"] for row in _library(client, "?q=nvda get_quote")] == [old.id]
    storage = open_storage(db_url)
    assert Search(storage).unindexed(10) == []
    assert "edinburgh" in Search(storage).terms(old.id)["value"]
    storage.close()


# Notes: only their author rewrites them.


def test_someone_else_with_the_link_cannot_rewrite_a_note(app: FastAPI) -> None:
    with TestClient(app, follow_redirects=False) as author, TestClient(app) as other:
        stream_id = _api_store(author, CONTINUATION)["id"]
        added = author.post(f"/s/{stream_id}/notes", data={"step": "1", "text": "mine"})
        note_id = added.headers["location"].rsplit("-", 1)[1]
        assert author.cookies.get("streamviz_author")
        assert "Edit or delete" in author.get(f"/s/{stream_id}?step=1").text
        page = other.get(f"/s/{stream_id}?step=1").text
        assert "mine" in page and "Edit or delete" not in page and "Delete this note" not in page
        edit = other.post(f"/s/{stream_id}/notes/{note_id}", data={"text": "theirs"})
        assert edit.status_code == 403 and "cannot edit" in edit.text
        gone = other.post(f"/s/{stream_id}/notes/{note_id}/delete")
        assert gone.status_code == 403
        api = f"/api/streams/{stream_id}/notes/{note_id}"
        assert other.patch(api, json={"text": "theirs"}).status_code == 401
        wrong = {"Authorization": "Bearer " + "x" * 32}
        assert other.patch(api, json={"text": "theirs"}, headers=wrong).status_code == 403
        assert other.delete(api, headers=wrong).status_code == 403
        assert author.get(api).json()["text"] == "mine"
        edited = author.post(f"/s/{stream_id}/notes/{note_id}", data={"text": "still mine"})
        assert edited.status_code == 303
        assert author.get(api).json()["text"] == "still mine"


def test_the_api_answers_an_edit_token_and_the_owner_may_delete(client: TestClient) -> None:
    stored = _api_store(client, CONTINUATION)
    url = f"/api/streams/{stored['id']}/notes"
    made = client.post(url, json={"step": 0, "text": "a"}).json()
    token = made["edit_token"]
    assert len(token) >= 32 and token not in client.get(url).text
    one = f"{url}/{made['id']}"
    mine = {"Authorization": f"Bearer {token}"}
    assert client.patch(one, json={"text": "b"}, headers=mine).json()["text"] == "b"
    chosen = {"Authorization": "Bearer my-own-token-for-all-notes"}
    second = client.post(url, json={"step": 1, "text": "c"}, headers=chosen).json()
    assert second["edit_token"] == "my-own-token-for-all-notes"
    owner = {"Authorization": f"Bearer {stored['delete_token']}"}
    assert (
        client.patch(f"{url}/{second['id']}", json={"text": "x"}, headers=owner).status_code == 403
    )
    assert client.delete(f"{url}/{second['id']}", headers=owner).status_code == 204
    assert client.delete(one, headers=mine).status_code == 204


# A deleted stream's 404.


def test_a_deleted_streams_links_say_it_was_deleted(app: FastAPI) -> None:
    with TestClient(app, follow_redirects=False) as owner, TestClient(app) as teammate:
        stream_id = owner.post("/streams", data={"text": CONTINUATION}).headers["location"]
        stream_id = stream_id.split("/")[2].split("?")[0]
        assert teammate.get(f"/s/{stream_id}?step=2").status_code == 200
        assert owner.post(f"/s/{stream_id}/delete").status_code == 303
        for url in (
            f"/s/{stream_id}?step=2",
            f"/s/{stream_id}/compare",
            f"/s/{stream_id}/report.md",
        ):
            page = teammate.get(url)
            assert page.status_code == 404
            assert "This stream was deleted" in page.text, url
            assert "by the browser that stored it" in page.text
            assert "whole link was copied" not in page.text
        api = teammate.get(f"/api/streams/{stream_id}/trace")
        assert api.status_code == 404 and "was deleted" in api.json()["detail"]
        assert _library(teammate) == []  # and gone from the library
        never = teammate.get("/s/neverWasAStreamId123")
        assert never.status_code == 404 and "whole link was copied" in never.text


def test_the_library_page_searches_what_streams_hold(db_url: str) -> None:
    with TestClient(create_app(Settings(db=db_url, list_streams=True))) as client:
        _api_store(client, TWO_TOOLS, title="two")
        _api_store(client, PHANTOM, title="phantom")
        page = client.get("/streams?q=weather").text
        assert "Search by title, model, tool, call id, anomaly, quirk or a value in" in page
        table = page.split("<tbody>")[1].split("</tbody>")[0]
        assert ">two</a>" in table and "phantom" not in table
        assert "<code>gpt-4o</code>" in table and "<code>get_weather</code>" in table
        none = client.get("/streams?q=nothing-holds-this").text
        assert "No stream matches" in none and "a tool, a call id" in none
