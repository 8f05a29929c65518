"""The HTML pages through TestClient: full pages versus htmx partials, forms, errors, headers."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from markupsafe import escape

from tests.streamkit import chunk, frag, sse
from tests.web.webkit import CONTINUATION, HX, Store
from webapp.core.rules import RULES
from webapp.examples import EXAMPLES
from webapp.settings import Settings
from webapp.web.app import create_app


def template(response: object) -> str:
    return str(response.template.name)  # type: ignore[attr-defined]


def test_home_has_the_form_the_options_and_every_example(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert template(response) == "home.html"
    html = response.text
    assert 'action="/streams"' in html and 'enctype="multipart/form-data"' in html
    assert 'type="file"' in html and 'name="text"' in html
    for name in ("policy", "path", "server_tools", "choice", "format"):
        assert f'name="{name}"' in html
    for example in EXAMPLES.values():
        assert f'action="/examples/{example.key}"' in html
        assert str(escape(example.shows)) in html


def submit(client: TestClient, text: str = CONTINUATION, **fields: str) -> object:
    data = {"text": text, "policy": "adr-0019", "path": "client", "format": "auto", **fields}
    return client.post("/streams", data=data, files={"file": ("", b"", "application/octet-stream")})


def test_submit_redirects_303_to_the_findings_first_with_the_options(client: TestClient) -> None:
    """A paste lands on what broke, where and whose fault: a URL that names no step, so that
    the overview, the anomalies and the quirks come before the timeline and the stage (a
    URL naming step 0 put the stage first, the findings below a laptop's first screen)."""
    response = submit(
        client, policy="exact-key", server_tools="web_search, x*", path="server-tools"
    )
    assert response.status_code == 303  # type: ignore[attr-defined]
    location = response.headers["location"]  # type: ignore[attr-defined]
    parts = urlsplit(location)
    assert re.fullmatch(r"/s/[A-Za-z0-9_-]{22,}", parts.path)
    assert parse_qs(parts.query) == {
        "policy": ["exact-key"],
        "path": ["server-tools"],
        "server_tools": ["web_search,x*"],
    }
    page = client.get(location)
    assert page.status_code == 200
    assert template(page) == "stream.html"
    html = page.text
    assert html.index('id="overview"') < html.index('id="anomalies"') < html.index('id="stage"')


def test_submit_stores_the_text_verbatim(client: TestClient) -> None:
    text = CONTINUATION.replace("\n", "\r\n")
    location = submit(client, text).headers["location"]  # type: ignore[attr-defined]
    stream_id = urlsplit(location).path.rsplit("/", 1)[1]
    assert client.get(f"/api/streams/{stream_id}/raw").content == text.encode()


def test_submit_a_file(client: TestClient) -> None:
    raw = b"\xef\xbb\xbf" + CONTINUATION.encode()
    response = client.post(
        "/streams", data={"text": ""}, files={"file": ("weather.sse", raw, "text/plain")}
    )
    assert response.status_code == 303
    stream_id = urlsplit(response.headers["location"]).path.rsplit("/", 1)[1]
    assert client.get(f"/api/streams/{stream_id}/raw").content == raw
    assert "weather.sse" in client.get(response.headers["location"]).text


def test_a_paste_and_a_file_together_are_refused_naming_both(client: TestClient) -> None:
    """Neither wins silently: the form comes back (422) with the text, and nothing is stored."""
    text = CONTINUATION.replace("\n", "\r\n")  # as a browser sends a textarea
    upload = {"file": ("weather <1>.sse", CONTINUATION.encode(), "text/plain")}
    response = client.post("/streams", data={"text": text, "title": "mine"}, files=upload)
    assert response.status_code == 422
    assert template(response) == "home.html"
    html = response.text
    said = (
        f"You pasted {len(CONTINUATION):,} characters and chose the file "
        "'weather <1>.sse': streamviz reads one stream at a time."
    )
    assert str(escape(said)) in html
    assert 'role="alert"' in html and 'value="mine"' in html
    assert str(escape(text)) + "</textarea>" in html
    assert client.get("/api/streams").json()["total"] == 0
    # a box holding only blank lines is no paste: the file is read
    blank = client.post("/streams", data={"text": " \r\n "}, files=upload)
    assert blank.status_code == 303


def test_unreadable_input_gets_the_form_back_with_the_text(client: TestClient) -> None:
    text = "hello <b>world</b>, not a stream"
    response = submit(client, text, title="mine")
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert template(response) == "home.html"
    html = response.text  # type: ignore[attr-defined]
    assert "hello &lt;b&gt;world&lt;/b&gt;, not a stream</textarea>" in html
    assert 'role="alert"' in html
    assert 'value="mine"' in html


def test_chosen_format_that_does_not_fit_gets_the_form_back(client: TestClient) -> None:
    response = submit(client, CONTINUATION, format="har")
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert "data: " in response.text  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("field", "value"), [("policy", "x"), ("path", "y"), ("choice", "-3"), ("format", "xml")]
)
def test_bad_option_gets_the_form_back_400(client: TestClient, field: str, value: str) -> None:
    response = submit(client, CONTINUATION, **{field: value})
    assert response.status_code == 400  # type: ignore[attr-defined]
    assert template(response) == "home.html"
    assert "data: " in response.text  # type: ignore[attr-defined]


def test_empty_submission_asks_for_a_stream(client: TestClient) -> None:
    response = submit(client, "   ")
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert "Paste a stream or choose a file" in response.text  # type: ignore[attr-defined]


def test_too_large_is_a_413_page(client: TestClient) -> None:
    big = sse(chunk(content="x" * 60_000))
    response = submit(client, big)
    assert response.status_code == 413  # type: ignore[attr-defined]
    assert template(response) == "error.html"
    assert "50,000 bytes" in response.text  # type: ignore[attr-defined]
    files = {"file": ("big.sse", big.encode(), "text/plain")}
    assert client.post("/streams", data={"text": ""}, files=files).status_code == 413
    declared = client.post(
        "/streams",
        content=b"x",
        headers={"content-type": "multipart/form-data; boundary=x", "content-length": "999999"},
    )
    assert declared.status_code == 413


def test_secrets_are_removed_from_a_har_and_the_page_says_so(client: TestClient) -> None:
    har = Path(__file__).parent / "samples" / "secret.har"
    raw = har.read_bytes()
    assert b"sk-live-SECRET" in raw
    response = client.post("/streams", data={"text": ""}, files={"file": ("x.har", raw, "")})
    assert response.status_code == 303
    location = response.headers["location"]
    stream_id = urlsplit(location).path.rsplit("/", 1)[1]
    stored = client.get(f"/api/streams/{stream_id}/raw").content
    assert b"sk-live-SECRET" not in stored
    assert b"session=SECRET" not in stored
    page = client.get(location).text
    assert "Secrets were removed before this stream was stored" in page
    assert "SECRET" not in page
    assert "gpt-demo" in page  # the request's model
    assert "get_weather" in page  # a declared tool


def test_examples_open_their_timeline_with_their_options(client: TestClient) -> None:
    for example in EXAMPLES.values():
        response = client.post(f"/examples/{example.key}")
        assert response.status_code == 303
        query = parse_qs(urlsplit(response.headers["location"]).query)
        assert query["path"] == [example.options.path]
        assert query["policy"] == [example.options.policy]
        page = client.get(response.headers["location"])
        assert page.status_code == 200
        assert str(escape(example.title)) in page.text
    assert client.post("/examples/../../etc/passwd").status_code == 404
    assert client.post("/examples/nope").status_code == 404


def test_full_page_versus_htmx_partial(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    url = f"/s/{stream_id}?step=2&policy=adr-0019&path=client"
    full = client.get(url)
    assert template(full) == "stream.html"
    assert full.text.startswith("<!doctype html>")
    assert 'id="timeline"' in full.text and 'id="stage"' in full.text
    partial = client.get(url, headers=HX)
    assert template(partial) == "_stage.html"
    assert partial.text.lstrip().startswith('<section id="stage"')
    assert 'id="timeline"' not in partial.text
    assert 'data-step="2"' in partial.text
    for response in (full, partial):
        assert "HX-Request" in response.headers["vary"]
    restore = client.get(url, headers={**HX, "HX-History-Restore-Request": "true"})
    assert template(restore) == "stream.html"
    assert template(client.get(url, headers={"HX-Request": "true", "HX-Request-Type": "full"})) == (
        "stream.html"
    )


def test_every_pushed_url_renders_a_full_page(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}?step=1&policy=exact-key&path=client").text
    pushed = set(re.findall(r'hx-get="([^"]+)"[^>]*hx-push-url="true"', page))
    boosted = set(re.findall(r'href="([^"]+)"[^>]*hx-boost="true"[^>]*hx-push-url="true"', page))
    assert len(pushed) >= 3 and len(boosted) >= 3  # the timeline's rows are boosted
    pushed |= boosted
    for url in pushed:
        url = url.replace("&amp;", "&")
        response = client.get(url)
        assert response.status_code == 200, url
        assert template(response) == "stream.html"
        query = parse_qs(urlsplit(url).query)
        assert query["policy"] == ["exact-key"] and query["path"] == ["client"]
        assert f'data-step="{query["step"][0]}"' in response.text


def test_step_links_have_real_hrefs(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}?step=2").text
    for anchor in re.findall(r"<a [^>]*hx-get=[^>]*>", page):
        href = re.search(r'href="([^"]+)"', anchor)
        get = re.search(r'hx-get="([^"]+)"', anchor)
        assert href and get
        if "hx-push-url" in anchor:
            assert href.group(1) == get.group(1)


TWO_HEADERS = sse(
    chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")),
    chunk(frag(args='{"city": ')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
)
"""Two calls open, then bare continuations: anomalies at steps 1, 2 and at the end."""


def test_a_url_that_names_a_step_puts_the_stage_before_the_notes_and_findings(
    client: TestClient, store: Store
) -> None:
    """A shared step link lands on its answer (browser: tests/browser/test_share.py); the page
    without a step opens on the whole stream first, as before."""
    stream_id = store(TWO_HEADERS)
    for step in (1, 2):
        noted = client.post(f"/s/{stream_id}/notes", data={"step": str(step), "text": "look"})
        assert noted.status_code == 303

    def order(html: str) -> list[str]:
        marks = ['class="summary"', 'id="player"', 'id="stage"', 'id="notes"', 'id="overview"']
        marks.append('id="anomalies"')
        return sorted(marks, key=html.index)

    named = client.get(f"/s/{stream_id}?step=2").text
    assert order(named) == [
        'class="summary"', 'id="player"', 'id="stage"', 'id="notes"', 'id="overview"',
        'id="anomalies"',
    ]  # fmt: skip
    opened = client.get(f"/s/{stream_id}").text
    assert order(opened) == [
        'class="summary"', 'id="notes"', 'id="overview"', 'id="anomalies"', 'id="player"',
        'id="stage"',
    ]  # fmt: skip
    example = client.get("/examples/ambiguous").text  # an example opens on its story
    assert example.index('id="anomalies"') < example.index('id="stage"')
    example = client.get("/examples/ambiguous?step=2").text
    assert (
        example.index('id="story"') < example.index('id="stage"') < example.index('id="anomalies"')
    )
    # in the step's detail: its notes, what it did, then the form to add one
    detail = named[named.index('<section id="detail"') :]
    assert detail.index('class="step-note"') < detail.index("<h3>Fragments</h3>")
    assert detail.index("<h3>Fragments</h3>") < detail.index('class="add-note"')


def test_timeline_marks_rules_blocks_and_anomalies(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    adr = client.get(f"/s/{stream_id}?step=2&policy=adr-0019").text
    assert adr.count('<span class="badge rule-continuation">') == 2
    assert "→ #0 get_weather" in adr
    exact = client.get(f"/s/{stream_id}?step=2&policy=exact-key").text
    assert "rule-new phantom" in exact
    assert "⚠ phantom-call" in exact
    assert 'class="row kind-chunk flagged"' in exact


def test_legend_and_rules_page_read_the_rules_table(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}").text
    rules = client.get("/rules")
    assert template(rules) == "rules.html"
    for rule in RULES:
        assert f"legend-item rule-{rule.name}" in page
        assert f'id="{rule.name}"' in rules.text
        assert str(escape(rule.meaning)) in rules.text
        assert str(escape(rule.example)) in rules.text
    assert "this project's model" in rules.text


def test_detail_panel_shows_keys_reason_events_and_chunk(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    html = client.get(f"/s/{stream_id}?step=1", headers=HX).text
    assert "continuation onto block #0" in html
    assert "toolcall_delta" in html
    assert "absent or null: does not count" in html
    assert "&#34;arguments&#34;: &#34;{\\&#34;city\\&#34;:&#34;" in html  # the chunk, pretty


def test_state_panel_highlights_what_the_step_appended(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    html = client.get(f"/s/{stream_id}?step=2", headers=HX).text
    assert "{&#34;city&#34;:<mark>&#34;Paris&#34;}</mark>" in html
    assert 'class="parse parse-complete"' in html
    exact = client.get(f"/s/{stream_id}?step=2&policy=exact-key", headers=HX).text
    assert exact.count('class="block kind-toolCall') == 3
    assert "no name" in exact


def test_state_panel_clips_a_huge_block(client: TestClient, app: object, db_url: str) -> None:
    settings = Settings(db=db_url, max_bytes=5_000_000)
    big = create_app(settings)
    with TestClient(big) as big_client:
        text = sse(
            chunk(frag(0, "c", "f", "[")),
            chunk(frag(0, args="1," * 500_000)),
            chunk(frag(0, args="2]")),
            chunk(finish="tool_calls"),
        )
        stream_id = big_client.post("/api/streams", json={"text": text}).json()["id"]
        html = big_client.get(f"/s/{stream_id}?step=2", headers=HX).text
    assert len(html) < 200_000
    assert "more characters" in html
    assert "<mark>2]</mark>" in html


def test_unknown_stream_is_a_404_page(client: TestClient) -> None:
    for url in ("/s/nope", "/s/nope/compare", "/s/nope?step=3", "/nothing-here"):
        response = client.get(url)
        assert response.status_code == 404
        assert template(response) == "error.html"


@pytest.mark.parametrize(
    "query",
    [
        "step=-1",
        "step=abc",
        "step=1e3",
        "policy=both",
        "path=nowhere",
        "choice=2000",
        "server_tools=" + ",".join(f"t{n}" for n in range(60)),
    ],
)
def test_bad_query_values_are_400_pages(client: TestClient, store: Store, query: str) -> None:
    stream_id = store(CONTINUATION)
    for url in (f"/s/{stream_id}?{query}", f"/s/{stream_id}/compare?{query}"):
        response = client.get(url)
        if "step" in query and "compare" in url:
            continue  # the compare page has no step
        assert response.status_code == 400, url
        assert template(response) == "error.html"


@pytest.mark.parametrize("query", ["left=x", "right=y", "only=some", "start=-2", "start=z"])
def test_bad_compare_values_are_400(client: TestClient, store: Store, query: str) -> None:
    stream_id = store(CONTINUATION)
    assert client.get(f"/s/{stream_id}/compare?{query}").status_code == 400


def test_step_past_the_end_shows_the_last_step(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    response = client.get(f"/s/{stream_id}?step=999")
    assert response.status_code == 200
    assert 'data-step="5"' in response.text


def test_security_headers_on_pages_api_and_static(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url in ("/", f"/s/{stream_id}", f"/api/streams/{stream_id}/trace", "/static/app.css", "/x"):
        response = client.get(url)
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp
        assert "script-src 'self';" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert "HX-Request" in response.headers["vary"]


def test_no_inline_script_or_style_in_any_page(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url in ("/", f"/s/{stream_id}", f"/s/{stream_id}/compare", "/rules", "/nope"):
        html = client.get(url).text
        for tag in re.findall(r"<script[^>]*>", html):
            assert 'src="/static/' in tag
        assert "<style" not in html
        assert " style=" not in html
        assert re.search(r" on[a-z]+=", html) is None


def test_stream_data_is_escaped(client: TestClient, store: Store) -> None:
    payload = "<script>alert(1)</script><img src=x onerror=alert(1)>"
    text = sse(
        chunk(content=payload),
        chunk(frag(0, payload, payload)),
        chunk(frag(args=payload)),
        chunk(finish="tool_calls"),
    )
    stream_id = store(text, title=payload)
    for url in (f"/s/{stream_id}?step=2", f"/s/{stream_id}?step=3", f"/s/{stream_id}/compare"):
        html = client.get(url).text
        assert "<script>alert" not in html
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_lone_surrogates_render(client: TestClient, store: Store) -> None:
    text = CONTINUATION.replace("get_weather", "get_\\udc80x")
    stream_id = store(text)
    response = client.get(f"/s/{stream_id}?step=1")
    assert response.status_code == 200
    assert "get_\ufffdx" in response.text


def test_streams_survive_a_new_app_on_the_same_file(settings: Settings) -> None:
    with TestClient(create_app(settings)) as first:
        stream_id = first.post("/api/streams", json={"text": CONTINUATION}).json()["id"]
    with TestClient(create_app(settings)) as second:
        assert second.get(f"/api/streams/{stream_id}/raw").content == CONTINUATION.encode()
        assert second.get(f"/s/{stream_id}?step=1").status_code == 200


def test_compare_page_marks_the_differing_rows(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}/compare")
    assert template(page) == "compare.html"
    html = page.text
    assert "exact-key: 3 blocks, 2 phantom calls" in html
    assert "adr-0019: 1 block" in html
    assert len(re.findall(r'class="crow differs"', html)) == 3  # steps 1, 2 and the end
    assert 'id="crow-0"' in html and 'class="crow" id="crow-0"' in html
    only = client.get(f"/s/{stream_id}/compare?only=differing").text
    assert len(re.findall(r'class="crow', only)) == 3
    swapped = client.get(f"/s/{stream_id}/compare?left=adr-0019&right=exact-key").text
    assert "adr-0019: 1 block (no anomalies); exact-key: 3 blocks" in swapped


def test_compare_is_windowed(client: TestClient, store: Store) -> None:
    chunks = [chunk(frag(0, "c", "f"))]
    chunks += [chunk(frag(args=" ")) for _ in range(100)]
    stream_id = store(sse(*chunks, chunk(finish="tool_calls")))
    page = client.get(f"/s/{stream_id}/compare").text
    assert len(re.findall(r'class="crow', page)) == 40
    assert "later rows" in page
    more = client.get(f"/s/{stream_id}/compare?start=40", headers=HX)
    assert template(more) == "_compare_rows.html"
    assert 'id="crow-40"' in more.text
    assert "<html" not in more.text


def test_timeline_is_windowed_and_loads_more(client: TestClient, store: Store) -> None:
    chunks = [chunk(content=f"w{n} ") for n in range(200)]
    stream_id = store(sse(*chunks, chunk(finish="tool_calls")))
    page = client.get(f"/s/{stream_id}?step=100").text
    rows = re.findall(r'id="row-(\d+)"', page)
    assert len(rows) == 40
    assert "100" in rows
    after = re.search(r'hx-get="([^"]+direction=after[^"]*)"', page)
    before = re.search(r'hx-get="([^"]+direction=before[^"]*)"', page)
    assert after and before
    more = client.get(after.group(1).replace("&amp;", "&"), headers=HX)
    assert template(more) == "_rows.html"
    numbers = [int(n) for n in re.findall(r'id="row-(\d+)"', more.text)]
    assert numbers == list(range(int(rows[-1]) + 1, int(rows[-1]) + 41))
    earlier = client.get(before.group(1).replace("&amp;", "&"), headers=HX).text
    assert int(re.findall(r'id="row-(\d+)"', earlier)[-1]) == int(rows[0]) - 1
    window = client.get(f"/s/{stream_id}/timeline?step=190", headers=HX)
    assert template(window) == "_timeline.html"
    assert 'id="row-190"' in window.text and 'aria-current="step"' in window.text
    # without htmx these helper routes send the browser to the page at that step
    plain = client.get(f"/s/{stream_id}/timeline?step=190")
    assert plain.status_code == 303
    assert client.get(plain.headers["location"]).status_code == 200


def test_invalid_record_stands_out(client: TestClient, store: Store) -> None:
    first, rest = CONTINUATION.split("\n\n", 1)
    stream_id = store(f"{first}\n\ndata: {{oops\n\n{rest}")
    html = client.get(f"/s/{stream_id}?step=1").text
    assert "row kind-invalid" in html
    assert "invalid-chunk" in html
    assert "Invalid record" in html


def test_an_htmx_request_that_fails_sends_the_browser_to_the_full_error_page(
    client: TestClient, store: Store
) -> None:
    stream_id = store(CONTINUATION)
    url = f"/s/{stream_id}?step=x"
    response = client.get(url, headers=HX)
    assert response.status_code == 400
    assert response.headers["hx-redirect"] == url
    assert response.headers["hx-reswap"] == "none"
    assert "hx-redirect" not in client.get(url).headers


def test_compare_on_the_server_tools_path(client: TestClient) -> None:
    location = client.post("/examples/server-late").headers["location"]
    stream_id = urlsplit(location).path.rsplit("/", 1)[1]
    page = client.get(f"/s/{stream_id}/compare?path=server-tools&server_tools=openrouter:*").text
    assert "exact-key and adr-0019 agree" not in page
    assert "late-fragment" in page
    assert "path=client" in page  # a link to the same comparison on the client path


def test_every_template_is_compiled_when_the_app_starts(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first page after a restart does not compile templates (0.18 s of a reopen): once
    started, pages render without reading a template's source."""
    loader = app.state.templates.env.loader
    with TestClient(app) as started:

        def gone(*_: object) -> None:
            raise AssertionError("a template was loaded after the start")

        monkeypatch.setattr(loader, "get_source", gone)
        assert started.get("/").status_code == 200
        assert started.get("/rules").status_code == 200
        assert started.get("/no/such/page").status_code == 404  # error.html too
