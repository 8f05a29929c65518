"""`/diff?a=ID&b=ID`, `/api/diff`, the picker and the paste box (issue 22), with the TestClient.

The page shows both sides (what each stream means, quirks, anomalies, finish reason, chunks,
grades), each call side by side with links to both timelines, only-in-A / only-in-B calls,
where two argument texts part; an unknown id is a clear 404; the API answers what
`streamviz diff --format json` prints; a HAR entry can be chosen on either side; the stream
page's "compare with..." control picks B from the library or stores a pasted one.
"""

from __future__ import annotations

import json
import threading
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.lenses.fakes import CALL, answering
from tests.streamkit import chunk, frag, har_of, sse
from tests.web.test_web_slow_bodies import Upload
from tests.web.webkit import Store
from webapp.cli import main
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.team.owners import OWNER_COOKIE
from webapp.web.http.links import DIFF_PASTE, Links
from webapp.web.http.query import DEFAULTS
from webapp.web.routes.clients import ClientJobs

PARIS = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)
LYON_AND_TIME = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": ')),
    chunk(frag(args='"Lyon"}')),
    chunk(frag(1, "call_2", "get_time", "{}")),
    chunk(finish="tool_calls"),
)
PIECES = sse(
    chunk(frag(0, "call_1", "get_weather", '{"ci')),
    chunk(frag(0, args='ty": "Paris"}')),
    chunk(finish="tool_calls"),
)


def page_of(response: Any) -> Any:
    assert response.status_code == 200, response.text
    assert response.template.name == "diff.html"
    return response.context["page"]


def pasted(client: TestClient, text: str, title: str) -> str:
    """Store through the home form (which sets the owner cookie); the new id."""
    response = client.post("/streams", data={"text": text, "title": title})
    assert response.status_code == 303, response.text
    return response.headers["location"].split("/s/")[1].split("?")[0]


def test_the_page_shows_both_sides_and_every_call(client: TestClient, store: Store) -> None:
    a, b = store(PARIS, "paris"), store(LYON_AND_TIME, "lyon")
    response = client.get("/diff", params={"a": a, "b": b})
    page = page_of(response)
    assert not page.diff.same
    assert [row.status for row in page.rows] == ["differs", "only-b"]
    first, second = page.rows
    assert first.differences == ('arguments.city: "Paris" vs "Lyon"',)
    assert first.parting is not None and first.parting.offset == 10
    timeline_a, timeline_b = Links(a, DEFAULTS), Links(b, DEFAULTS)
    assert (first.parting.a.url, first.parting.b.url) == (timeline_a.step(0), timeline_b.step(1))
    assert (first.parting.a.label, first.parting.b.label) == (
        "A step 0 (line 1)",
        "B step 1 (line 3)",
    )
    assert second.a is None and second.b is not None and second.b.label == "get_time"
    html = response.text
    assert "arguments.city: &#34;Paris&#34; vs &#34;Lyon&#34;" in html
    for url in (timeline_a.step(0), timeline_b.step(2)):  # each row reaches both timelines
        assert f'href="{escape(url)}"' in html
    for fact in ("finish_reason", "chunks", "bare-continuation", "adr-0019 (this build)"):
        assert fact in html
    assert "only in B" in html and "Different calls." in html
    b_side = dict(page.b.facts)
    assert b_side["chunks"] == "4" and b_side["finish_reason"] == "tool_calls"
    assert [code for code, _, _ in page.b.quirks] == ["missing-index", "bare-continuation"]


def test_the_same_calls_in_other_pieces_are_the_same_on_the_page(
    client: TestClient, store: Store
) -> None:
    page = page_of(client.get("/diff", params={"a": store(PARIS), "b": store(PIECES)}))
    assert page.diff.same and [row.status for row in page.rows] == ["same"]
    assert page.streams == ("chunks: 2 vs 3",)


def test_an_unknown_id_is_a_clear_404(client: TestClient, store: Store) -> None:
    known = store(PARIS)
    for query, letter in (({"a": "nope", "b": known}, "A"), ({"a": known, "b": "nope"}, "B")):
        response = client.get("/diff", params=query)
        assert response.status_code == 404
        assert f"Stream {letter} does not exist: no stream has the id &#39;nope&#39;" in (
            response.text
        )
        api = client.get("/api/diff", params=query)
        assert api.status_code == 404
        assert api.json()["detail"].startswith(f"Stream {letter} does not exist")
    assert client.get("/diff", params={"a": "nope"}).status_code == 404
    assert client.get("/diff", params={"a": "../../etc", "b": known}).status_code == 404


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({}, "give a=ID"),
        ({"b": "x"}, "give a=ID"),
        ({"a": "example:clean", "b": "example:clean", "ids": "maybe"}, "ids must be one of"),
        ({"a": "example:clean", "b": "example:clean", "har_entry_b": "0"}, "har_entry_b must"),
        ({"a": "example:clean", "b": "example:clean", "har_entry_a": "x"}, "har_entry_a must"),
    ],
)
def test_bad_queries_are_400(client: TestClient, query: dict[str, str], said: str) -> None:
    for url in ("/diff", "/api/diff"):
        response = client.get(url, params=query)
        assert response.status_code == 400 and said in response.text


def test_the_api_answers_what_the_cli_prints(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    a, b = store(PARIS), store(LYON_AND_TIME)
    api = client.get("/api/diff", params={"a": a, "b": b})
    assert api.status_code == 200 and api.headers["content-type"] == "application/json"
    files = []
    for name, text in (("a.sse", PARIS), ("b.sse", LYON_AND_TIME)):
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    printed = CliRunner().invoke(main, ["diff", *files, "--format", "json"])
    assert printed.exit_code == 1
    cli, web = json.loads(printed.stdout), api.json()
    for document in (cli, web):
        for side in ("a", "b"):
            del document[side]["label"]
    assert web == cli


def test_har_entries_on_either_side(client: TestClient, store: Store) -> None:
    file = store(har_of(PARIS, LYON_AND_TIME, PIECES), "capture.har")
    same = client.get("/diff", params={"a": file, "har_entry_a": 1, "b": file, "har_entry_b": 3})
    page = page_of(same)
    assert page.diff.same
    assert [(entry.on, entry.url) for entry in page.b.entries][2][0] is True
    second = page.b.entries[1].url
    assert parse_qs(urlsplit(second).query)["har_entry_b"] == ["2"]
    assert not page_of(client.get(second)).diff.same
    api = client.get("/api/diff", params={"a": file, "b": file, "har_entry_b": 2}).json()
    assert (api["a"]["har_entry"], api["b"]["har_entry"], api["same"]) == (None, 2, False)


def test_a_shared_link_shows_the_same_diff_to_anyone(client: TestClient, store: Store) -> None:
    a, b = store(PARIS), store(LYON_AND_TIME)
    page = page_of(client.get("/diff", params={"a": a, "b": b, "ids": "compare"}))
    link = page.self_url
    client.cookies.clear()
    again = page_of(client.get(link))
    assert again.rows == page.rows and again.ids == "compare"
    assert page_of(client.get(page.swap_url)).diff.a.label == page.diff.b.label
    assert [mode for mode, _, on in page.ids_urls if on] == ["compare"]


def test_examples_can_be_either_side(client: TestClient) -> None:
    page = page_of(client.get("/diff", params={"a": "example:continuation", "b": "example:clean"}))
    assert page.a.url.startswith("/examples/continuation")
    assert page.b.url.startswith("/examples/clean")


def test_every_stream_page_has_a_compare_with_control(client: TestClient) -> None:
    mine = pasted(client, PARIS, "mine")
    other = pasted(client, PIECES, "other one")
    response = client.get(f"/s/{mine}")
    assert response.status_code == 200
    control = response.context["compare"]
    assert [choice.stream_id for choice in control["picker"].library] == [other]
    assert control["picker_url"] == f"/diff?a={mine}"
    html = response.text
    assert 'id="compare-with"' in html and 'action="/diff"' in html
    assert f'<option value="{other}">other one</option>' in html
    assert '<option value="example:clean">' in html
    assert 'action="/diff/paste"' in html
    example = client.get("/examples/clean")
    assert example.context["compare"]["picker"].a_id == "example:clean"


def test_the_picker_lists_the_library_and_searches_it(client: TestClient) -> None:
    mine = pasted(client, PARIS, "mine")
    pasted(client, PIECES, "weather in pieces")
    pasted(client, LYON_AND_TIME, "lyon")
    response = client.get("/diff", params={"a": mine})
    assert response.status_code == 200 and response.template.name == "diff_pick.html"
    picker = response.context["picker"]
    assert sorted(c.title for c in picker.library) == ["lyon", "weather in pieces"]
    assert picker.library[0].url.startswith(f"/diff?a={mine}&b=")
    searched = client.get("/diff", params={"a": mine, "q": "pieces"}).context["picker"]
    assert [c.title for c in searched.library] == ["weather in pieces"]
    client.cookies.clear()  # another browser: this server lists only a browser's own streams
    assert client.get("/diff", params={"a": mine}).context["picker"].library == ()


def test_a_pasted_stream_is_stored_and_the_diff_opens(client: TestClient) -> None:
    a = pasted(client, PARIS, "mine")
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    text = PIECES.replace('"Paris"', f'"Paris {secret}"')
    response = client.post("/diff/paste", data={"a": a, "text": text})
    assert response.status_code == 303
    location = response.headers["location"]
    query = parse_qs(urlsplit(location).query)
    assert query["a"] == [a]
    b = query["b"][0]
    assert b in client.cookies[OWNER_COOKIE]  # this browser stored it: its library lists it
    stored = client.get(f"/api/streams/{b}/raw").text
    assert secret not in stored  # masked, as the API masks a paste
    page = page_of(client.get(location))
    assert page.b.title == "Pasted to compare with mine"


def test_a_paste_that_does_not_read_comes_back_with_the_reason(client: TestClient) -> None:
    a = pasted(client, PARIS, "mine")
    response = client.post("/diff/paste", data={"a": a, "text": "hello, not a stream"})
    assert response.status_code == 422
    assert response.template.name == "diff_pick.html"
    assert "hello, not a stream" in response.text and "That did not work." in response.text
    empty = client.post("/diff/paste", data={"a": a, "text": "  "})
    assert empty.status_code == 422 and "Paste a stream first." in empty.text
    gone = client.post("/diff/paste", data={"a": "nope", "text": PARIS})
    assert gone.status_code == 404 and "Stream A does not exist" in gone.text
    bad = client.post("/diff/paste", data={"a": a, "text": PARIS, "har_entry_a": "x"})
    assert bad.status_code == 400


def test_the_api_is_documented(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    described = spec["paths"]["/api/diff"]["get"]
    assert described["summary"] == "Two streams side by side"
    assert "404" in described["responses"]


def test_lens_grades_show_once_a_streams_clients_page_ran_them(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    app.state.clients = ClientJobs((answering({"status": "ok", "calls": [CALL]}, "pi-ai"),))
    a, b = store(PARIS), store(PIECES)
    before = client.get("/api/diff", params={"a": a, "b": b}).json()
    assert [g["client"] for g in before["a"]["grades"]] == ["adr-0019", "exact-key"]
    assert client.get(f"/api/streams/{a}/clients", params={"wait": "true"}).status_code == 200
    after = client.get("/api/diff", params={"a": a, "b": b}).json()
    assert [g["client"] for g in after["a"]["grades"]] == ["pi-ai", "adr-0019", "exact-key"]
    assert after["a"]["grades"][0]["grade"] == "intact"
    assert [g["client"] for g in after["b"]["grades"]] == ["adr-0019", "exact-key"]  # not run
    assert after["calls"][0]["a"]["grades"]["pi-ai"] == "intact"


def test_slow_pastes_hold_no_upload_slot(db_url: str) -> None:
    """A paste takes its upload slot once its form is in (it took one before reading it, so
    four trickling pastes made every other upload a 503)."""
    app = create_app(Settings(db=db_url, max_uploads=4, body_timeout=600))
    body = urlencode({"a": "example:clean", "text": PIECES}).encode()
    form = "application/x-www-form-urlencoded"
    slow = [Upload(DIFF_PASTE, form, body, trickle=True) for _ in range(4)]
    whole = Upload(DIFF_PASTE, form, body)

    async def race() -> None:
        async with anyio.create_task_group() as group:
            for upload in slow:
                group.start_soon(upload.run, app)
            for upload in slow:
                await upload.waiting.wait()  # all four are mid-body
            await whole.run(app)
            assert whole.status == 303, whole.answer[:300]  # was a 503
            for upload in slow:
                upload.go.set()

    failure: list[BaseException] = []

    def target() -> None:  # a thread of its own: Playwright may hold this one's event loop
        try:
            anyio.run(race)
        except BaseException as error:
            failure.append(error)

    runner = threading.Thread(target=target)
    runner.start()
    runner.join()
    assert not failure, failure
    assert [upload.status for upload in slow] == [303] * 4


@pytest.mark.parametrize("page", ["/diff?a={a}&b={b}", "/diff?a={b}", "/s/{b}"])
def test_titles_print_their_invisible_characters_escaped(client: TestClient, page: str) -> None:
    """A right-to-left override in a title turns the rest of its line around: the diff, the
    picker's library and the stream page's "compare with..." list show it as an escape."""
    a = pasted(client, PARIS, "invoice\u202efdp.exe\u200b")
    b = pasted(client, PIECES, "plain")
    html = client.get(page.format(a=a, b=b)).text
    assert "invoice\\u202efdp.exe\\u200b" in html
    assert "\u202e" not in html and "\u200b" not in html
