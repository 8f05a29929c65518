"""The Share menu, the stream as one HTML file, and compare's headline, through TestClient."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import unescape

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse
from tests.web.livekit import PIECES, start
from tests.web.webkit import CONTINUATION, HX, Store
from webapp.core.readers import read
from webapp.core.rules import RULES
from webapp.settings import Settings
from webapp.triage.compare import compare
from webapp.web.app import create_app
from webapp.web.http.text import Clipped
from webapp.web.views.comparison import headline
from webapp.web.views.export import shorter

TWO_OPEN = sse(
    chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")),
    chunk(frag(args='{"city": ')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
)
"""Two calls open, then bare continuations: adr-0019 ends with 2 blocks and guesses twice."""
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(1)>'


def share_of(html: str) -> str:
    """The Share menu of a page (its <details>)."""
    found = re.search(r'<details class="share" id="share">.*?</div>\s*</details>', html, re.S)
    assert found is not None, "no Share menu"
    return found.group(0)


def field(menu: str, name: str) -> str:
    """A field's value in the menu (an input's value, or a textarea's text), unescaped."""
    found = re.search(rf'id="{name}"[^>]*value="([^"]*)"', menu) or re.search(
        rf'<textarea id="{name}"[^>]*>(.*?)</textarea>', menu, re.S
    )
    assert found is not None, name
    return unescape(found.group(1))


def test_the_timeline_shares_its_step_and_follows_it(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}?step=2&policy=exact-key")
    menu = share_of(page.text)
    assert field(menu, "share-link") == (
        f"http://testserver/s/{stream_id}?step=2&policy=exact-key&path=client"
    )
    snippet = field(menu, "share-embed")
    assert snippet.startswith(
        f'<iframe src="http://testserver/embed/s/{stream_id}?step=2&amp;policy=exact-key'
    )
    assert 'width="960" height="540"' in snippet and "</iframe>" in snippet
    assert 'width="640" height="360"' in menu.replace("&#34;", '"')
    assert f'href="/s/{stream_id}/export.html?policy=exact-key&amp;path=client"' in menu
    assert "No site may frame it on this server yet" in menu and "--embed-origins" in menu
    assert 'href="#share-link" data-open-share' in page.text  # the button at the top
    # a step's swap brings the menu of that step
    stepped = client.get(f"/s/{stream_id}?step=3&policy=exact-key", headers=HX)
    assert stepped.text.lstrip().startswith('<section id="stage"')
    assert field(share_of(stepped.text), "share-link").startswith(
        f"http://testserver/s/{stream_id}?step=3&"
    )


def test_compare_shares_the_selected_step(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    base = f"/s/{stream_id}/compare?left=adr-0019&right=exact-key"
    menu = share_of(client.get(f"{base}&step=2").text)
    assert field(menu, "share-link") == (
        f"http://testserver/s/{stream_id}/compare?left=adr-0019&right=exact-key&path=client&step=2"
    )
    assert field(menu, "share-embed").startswith(
        f'<iframe src="http://testserver/embed/s/{stream_id}/compare?left=adr-0019'
    )
    unselected = share_of(client.get(base).text)
    assert "step=" not in field(unselected, "share-link")
    panel = client.get(f"/s/{stream_id}/compare/step?step=3", headers=HX).text
    assert field(share_of(panel), "share-link").endswith("&step=3")


def test_an_example_shares_its_stable_urls(client: TestClient) -> None:
    menu = share_of(client.get("/examples/continuation").text)
    assert field(menu, "share-link").startswith("http://testserver/examples/continuation?step=2")
    assert 'src="http://testserver/embed/examples/continuation?step=2' in field(menu, "share-embed")
    assert 'href="/examples/continuation/export.html?' in menu
    compare = share_of(client.get("/examples/continuation/compare").text)
    assert field(compare, "share-embed").startswith(
        '<iframe src="http://testserver/embed/examples/continuation/compare?'
    )


def test_the_menu_uses_the_public_url_and_names_the_allowed_sites(settings: Settings) -> None:
    configured = Settings(
        db=settings.db,
        public_url="https://viz.example.org",
        embed_origins=("https://wiki.example.com",),
    )
    with TestClient(create_app(configured)) as client:
        menu = share_of(client.get("/examples/clean").text)
    assert field(menu, "share-link").startswith("https://viz.example.org/examples/clean?")
    assert 'src="https://viz.example.org/embed/examples/clean?' in field(menu, "share-embed")
    assert "Sites allowed to frame it: <code>https://wiki.example.com</code>" in menu
    assert "No site may frame it" not in menu


def test_the_snippet_escapes_the_title(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION, title=HOSTILE)
    html = client.get(f"/s/{stream_id}?step=1").text
    assert "<script>alert" not in html and "<img src=x" not in html
    snippet = field(share_of(html), "share-embed")
    assert 'title="streamviz: &quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;' in snippet
    assert snippet.count("<iframe") == 1 and snippet.count('"') % 2 == 0


def present_link(html: str) -> tuple[str, str]:
    """The page's link into presenter mode (or out of it): its href, unescaped, and its text."""
    found = re.findall(
        r'<a class="present-link" id="present-link" href="([^"]*)"[^>]*>([^<]*)<', html
    )
    assert len(found) == 1, f"{len(found)} present links"
    return unescape(found[0][0]), found[0][1]


def test_every_stream_page_links_to_presenter_mode(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_OPEN)
    live = start(app.state.service.storage)
    live.add(PIECES[:3], [50.0] * 3)
    pages = {
        f"/s/{stream_id}": f"/s/{stream_id}?step=0&policy=adr-0019&path=client&present=1",
        f"/s/{stream_id}?step=2&policy=exact-key&anomaly=phantom-call": (
            f"/s/{stream_id}?step=2&policy=exact-key&path=client&anomaly=phantom-call&present=1"
        ),
        "/examples/continuation": "/examples/continuation?step=2&policy=adr-0019&path=client"
        "&present=1",
        f"/s/{stream_id}/compare?step=2": f"/s/{stream_id}/compare?left=exact-key&right=adr-0019"
        "&path=client&step=2&present=1",
        f"/s/{stream_id}/compare": f"/s/{stream_id}/compare?left=exact-key&right=adr-0019"
        "&path=client&present=1",
        "/examples/ambiguous/compare": "/examples/ambiguous/compare?left=exact-key&right=adr-0019"
        "&path=client&step=2&present=1",
        f"/s/{live.stream_id}": f"/s/{live.stream_id}?step=2&policy=adr-0019&path=client&present=1",
    }
    for page, presenting in pages.items():
        response = client.get(page)
        assert response.status_code == 200, page
        assert present_link(response.text) == (presenting, "Present"), page
        # in presenter mode, the same link leads out of it, at the same step
        shown = client.get(presenting).text
        assert 'class="page stream-page present"' in shown or "compare-page present" in shown
        leaving, label = present_link(shown)
        assert label == "Stop presenting" and leaving == presenting.replace("&present=1", ""), page
    # it follows the step, as the Share menu does: a step's swap brings its own
    stage = client.get(f"/s/{stream_id}?step=3", headers=HX).text
    assert present_link(stage)[0].startswith(f"/s/{stream_id}?step=3&") and "present=1" in stage
    panel = client.get(f"/s/{stream_id}/compare/step?step=1", headers=HX).text
    assert present_link(panel)[0].endswith("&step=1&present=1")
    # the framed, read-only view offers none
    assert "present-link" not in client.get(f"/embed/s/{stream_id}?step=1").text


def test_embeds_have_no_share_menu(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url in (f"/embed/s/{stream_id}?step=1", "/embed/examples/continuation/compare?step=2"):
        page = client.get(url)
        assert page.status_code == 200, url
        assert 'id="share"' not in page.text


# The stream as one HTML file.


def test_the_export_is_one_self_contained_file(client: TestClient, store: Store) -> None:
    stream_id = store(TWO_OPEN, title="two open")
    noted = client.post(f"/s/{stream_id}/notes", data={"step": "2", "text": "guessed <here>"})
    assert noted.status_code == 303
    response = client.get(f"/s/{stream_id}/export.html?policy=adr-0019")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    name = re.sub(r"[^0-9A-Za-z]", "-", stream_id)
    assert (
        response.headers["content-disposition"] == f'attachment; filename="streamviz-{name}.html"'
    )
    html = response.text
    # nothing to fetch: no script, no external stylesheet, image, font or frame
    assert "<script" not in html and "<link" not in html and "<iframe" not in html
    assert re.search(r"\ssrc=", html) is None and "url(" not in html and "@import" not in html
    hrefs = set(re.findall(r'href="([^"]*)"', html))
    assert all(h.startswith("#") or h.startswith("http://testserver/s/") for h in hrefs), hrefs
    # its own policy allows exactly its inline stylesheet
    css = re.search(r"<style>(.*?)</style>", html, re.S)
    assert css is not None
    digest = base64.b64encode(hashlib.sha256(css.group(1).encode()).digest()).decode()
    assert f"default-src 'none'; style-src 'sha256-{digest}'" in html
    # the stream: the timeline, every step with its rule and reason, the blocks, the rest
    assert "<h1>two open</h1>" in html
    assert len(re.findall(r'<article class="step" id="step-\d+"', html)) == 6
    assert html.count('href="#step-2"') >= 2  # the timeline row and the anomaly
    assert "continuation" in html and "no index, no id, no name" in html
    assert "ambiguous-continuation" in html and "missing-index" in html  # anomaly, quirk
    assert "guessed &lt;here&gt;" in html  # the note, escaped
    assert "would be called with" in html
    assert "exact-key: 4 blocks" in html and "adr-0019: 2 blocks (anomalies:" in html
    assert 'class="cut"' not in html


def test_the_export_escapes_everything(client: TestClient, store: Store) -> None:
    text = sse(
        chunk(content=HOSTILE),
        chunk(frag(0, HOSTILE, HOSTILE)),
        chunk(frag(args=HOSTILE)),
        chunk(finish="tool_calls"),
    )
    stream_id = store(text, title=HOSTILE)
    client.post(f"/s/{stream_id}/notes", data={"step": "1", "text": HOSTILE, "author": HOSTILE})
    html = client.get(f"/s/{stream_id}/export.html").text
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_long_stream_is_cut_and_says_so(settings: Settings) -> None:
    text = sse(
        chunk(frag(0, "call_1", "f")),
        *(chunk(frag(0, args=" ")) for _ in range(30)),
        chunk(frag(args="x")),
        chunk(finish="tool_calls"),
    )
    with TestClient(create_app(Settings(db=settings.db, export_steps=5))) as client:
        stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
        html = client.get(f"/s/{stream_id}/export.html").text
    assert len(re.findall(r'<article class="step" id="step-\d+"', html)) == 5
    cut = re.findall(r'<p class="cut" role="note">(.*?)</p>', html)
    assert cut and cut[0].startswith("This file holds the first 5 steps of 35: steps 5 to 34")
    assert "--export-steps" in cut[0]
    assert "(not in this file)" in html  # the anomaly past the cut is listed, not linked
    assert 'href="#step-32"' not in html


def test_the_export_follows_the_view_and_refuses_bad_queries(
    client: TestClient, store: Store
) -> None:
    stream_id = store(CONTINUATION)
    exact = client.get(f"/s/{stream_id}/export.html?policy=exact-key").text
    assert "Policy <b>exact-key</b>" in exact and "phantom-call" in exact
    assert "Policy <b>adr-0019</b>" in client.get(f"/s/{stream_id}/export.html").text
    example = client.get("/examples/server-late/export.html")
    assert example.status_code == 200 and "server-tools path" in example.text
    assert client.get(f"/s/{stream_id}/export.html?policy=nope").status_code == 400
    assert client.get("/s/nope/export.html").status_code == 404
    assert client.get("/examples/nope/export.html").status_code == 404


def test_shorter_clips_a_clipped_text_again() -> None:
    assert shorter(Clipped("abcdef"), 4) == Clipped("ab", 2, "ef")
    assert shorter(Clipped("abcdef"), 10) == Clipped("abcdef")
    assert shorter(Clipped("abcd", 10, "wxyz"), 4) == Clipped("ab", 14, "yz")
    assert shorter(Clipped("ab", 10, "yz"), 4) == Clipped("ab", 10, "yz")


def test_the_export_stylesheet_carries_the_apps_rule_colours(client: TestClient) -> None:
    from webapp.web.views.export import stylesheet

    def colours(css: str) -> list[tuple[str, str]]:
        return re.findall(r"--rule-([a-z-]+):\s*(#[0-9a-fA-F]{6})", css)

    served = client.get("/rules.css").text  # what the app's pages load
    assert colours(stylesheet()) == colours(served)
    assert len(colours(served)) == 2 * len(RULES)  # every rule, light and dark


# Compare's headline names each policy's own anomalies.


def test_compare_names_each_policys_anomalies(client: TestClient, store: Store) -> None:
    stream_id = store(TWO_OPEN)
    page = client.get(f"/s/{stream_id}/compare")
    summary = page.context["page"].summary
    adr = summary.split("; adr-0019: ", 1)[1]
    assert adr.startswith("2 blocks (anomalies: ambiguous-continuation \u00d72, ")
    assert "empty-arguments" in adr
    chips = re.findall(r'<div class="outcome" data-policy="adr-0019">.*?</div>', page.text, re.S)[0]
    assert "ambiguous-continuation 2" in chips
    assert (
        f'href="/s/{stream_id}?step=1&amp;policy=adr-0019&amp;path=client&amp;anomaly=ambiguous-continuation#anomalies"'
        in chips
    )
    clean = store(sse(chunk(frag(0, "c", "f", "{}")), chunk(finish="tool_calls")))
    agreed = compare(
        read(sse(chunk(frag(0, "c", "f", "{}")), chunk(finish="tool_calls")), "sse").records
    )
    assert headline(agreed) == "exact-key and adr-0019 agree on every step (no anomalies)"
    same = client.get(f"/s/{clean}/compare").context["page"].summary
    assert same == "exact-key and adr-0019 agree on every step (no anomalies)"


def test_the_menu_gives_the_replay_base_url_that_sends_the_stream_again(
    client: TestClient, store: Store
) -> None:
    stream_id = store(CONTINUATION)
    base = field(share_of(client.get(f"/s/{stream_id}?step=2").text), "share-replay")
    assert base == f"http://testserver/replay/{stream_id}/v1"
    replayed = client.post(base + "/chat/completions", json={"stream": True})
    assert replayed.status_code == 200
    assert replayed.content == client.get(f"/api/streams/{stream_id}/raw").content
    example = field(share_of(client.get("/examples/clean").text), "share-replay")
    assert example == "http://testserver/replay/example:clean/v1"
    entries = [
        {"request": {"method": "POST", "url": "https://api.example/v1/chat/completions"},
         "response": {"status": 200, "content": {"mimeType": "text/event-stream",
                                                 "text": text}}}
        for text in (CONTINUATION, TWO_OPEN)
    ]  # fmt: skip
    har = store(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    entry = field(share_of(client.get(f"/s/{har}?har_entry=1").text), "share-replay")
    assert entry == f"http://testserver/replay/{har}/1/v1"
    assert client.get(entry + "/chat/completions").text == CONTINUATION
