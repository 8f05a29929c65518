"""The teaching pages through TestClient: stable example URLs, stories, tour, record, diagram."""

from __future__ import annotations

import re
from dataclasses import replace
from html import unescape
from urllib.parse import parse_qs, urlsplit

from fastapi import FastAPI
from fastapi.testclient import TestClient
from markupsafe import escape

from tests.web.webkit import CONTINUATION, HX, Store
from webapp.core.assembler import assemble
from webapp.core.readers import decode, read
from webapp.core.rules import RULES
from webapp.examples import EXAMPLES, TOUR, decision
from webapp.web.views.decision import TERMS
from webapp.web.views.playground import MAX_CHUNKS
from webapp.web.views.stories import SEE_IT


def stored(app: FastAPI) -> int:
    return int(app.state.service.storage.count())


def template(response: object) -> str:
    return str(response.template.name)  # type: ignore[attr-defined]


def test_every_example_has_stable_urls_that_store_nothing(client: TestClient, app: FastAPI) -> None:
    before = stored(app)
    for example in EXAMPLES.values():
        page = client.get(f"/examples/{example.key}")
        assert page.status_code == 200, page.text
        assert template(page) == "stream.html"
        assert str(escape(example.title)) in page.text
        story = example.story
        # it opens at the step that matters, with the example's own options
        assert f'data-step="{story.start_step}"' in page.text
        assert page.context["links"].options == example.options  # type: ignore[attr-defined]
        compare = client.get(f"/examples/{example.key}/compare")
        assert compare.status_code == 200
        assert template(compare) == "compare.html"
        assert str(escape(story.line)) in compare.text
        for told in story.steps.values():
            assert str(escape(told)) in compare.text
    assert stored(app) == before
    assert client.get("/examples/nope").status_code == 404
    assert client.get("/examples/nope/compare").status_code == 404
    assert client.get("/examples/..%2F..%2Fetc%2Fpasswd").status_code == 404


def test_an_examples_links_stay_on_its_stable_url(client: TestClient) -> None:
    html = client.get("/examples/continuation").text
    hrefs = set(re.findall(r'href="([^"]+)"', html))
    steps = {unescape(h) for h in hrefs if "step=" in h and "compare" not in h}
    assert steps, "the page links to its steps"
    stable = ("/examples/continuation?", "/embed/examples/continuation?")  # the Share menu's
    assert all(h.startswith(stable) for h in steps), steps
    assert "/s/" not in html
    # the htmx routes beside it answer partials, and a browser is sent to the page
    assert client.get("/examples/continuation?step=3", headers=HX).status_code == 200
    rows = client.get("/examples/continuation/rows?start=0&end=4&step=0", headers=HX)
    assert rows.status_code == 200 and 'id="row-3"' in rows.text
    window = client.get("/examples/continuation/timeline?step=5", headers=HX)
    assert window.status_code == 200 and 'id="row-5"' in window.text
    found = client.get("/examples/continuation/anomalies?policy=exact-key", headers=HX)
    assert found.status_code == 200 and "phantom-call" in found.text
    assert client.get("/examples/continuation/timeline?step=2").status_code == 303
    raw = client.get("/api/streams/example:continuation/raw")
    assert raw.status_code == 200 and raw.content == EXAMPLES["continuation"].data()


def test_a_query_overrides_the_examples_opening(client: TestClient) -> None:
    page = client.get("/examples/server-late?step=1&policy=exact-key")
    links = page.context["links"]  # type: ignore[attr-defined]
    assert links.options.policy == "exact-key"
    assert links.options.path == "server-tools"  # the example's own path still applies
    assert 'data-step="1"' in page.text


def test_narration_is_shown_at_its_step_only(client: TestClient) -> None:
    story = EXAMPLES["continuation"].story
    said = str(escape(story.steps[2]))
    at_two = client.get("/examples/continuation?step=2", headers=HX).text
    assert 'class="narration"' in at_two and said in at_two
    silent = next(step for step in range(8) if step not in story.steps)
    at_silent = client.get(f"/examples/continuation?step={silent}", headers=HX).text
    assert 'class="narration"' not in at_silent


def test_stored_streams_have_no_story(client: TestClient) -> None:
    location = client.post("/examples/continuation").headers["location"]
    assert location.startswith("/s/")
    page = client.get(location).text
    assert 'id="story"' not in page and 'class="narration"' not in page
    assert 'id="player"' in page  # play works on any timeline


def test_the_home_page_links_the_stable_urls(client: TestClient) -> None:
    html = client.get("/").text
    for example in EXAMPLES.values():
        suffix = "/compare" if example.story.opens == "compare" else ""
        assert f'href="/examples/{example.key}{suffix}"' in html
    assert 'href="/tour"' in html


def test_the_tour_lists_every_example_in_teaching_order(client: TestClient) -> None:
    assert sorted(TOUR) == sorted(EXAMPLES)
    page = client.get("/tour")
    assert page.status_code == 200 and template(page) == "tour.html"
    found = re.findall(r'<li id="stop-([\w-]+)">', page.text)
    assert tuple(found) == TOUR
    assert TOUR[:3] == ("clean", "continuation", "dropped") and TOUR[-1] == "server-late"


def test_tour_next_and_previous_walk_the_order(client: TestClient) -> None:
    for at, key in enumerate(TOUR):
        opens = EXAMPLES[key].story.opens
        url = f"/examples/{key}" + ("/compare" if opens == "compare" else "")
        html = client.get(url).text
        prev = re.search(r'id="tour-prev" rel="prev" href="([^"]+)"', html)
        nxt = re.search(r'id="tour-next" rel="next" href="([^"]+)"', html)
        assert f"{at + 1} of {len(TOUR)}" in html
        if at == 0:
            assert prev is None
        else:
            assert prev is not None and prev.group(1).startswith(f"/examples/{TOUR[at - 1]}")
        if at == len(TOUR) - 1:
            assert nxt is None
        else:
            assert nxt is not None and nxt.group(1).startswith(f"/examples/{TOUR[at + 1]}")
            assert client.get(nxt.group(1)).status_code == 200


def test_the_record_renders_with_its_terms_linked(client: TestClient) -> None:
    page = client.get("/record")
    assert page.status_code == 200 and template(page) == "decision.html"
    html = page.text
    assert "<h2>Consequences</h2>" in html
    assert "<code>!toolCall.id</code>" in html
    for term in TERMS:
        assert f'href="{term.url}" title="{escape(term.title)}" class="term">' in html, term
        assert client.get(term.url.split("#")[0]).status_code == 200
    # the text is the record's own, unchanged
    words = re.sub(r"<[^>]+>", "", html)
    assert "strictly safer than inventing an empty-name call" in unescape(words)
    assert "Status: Trial" in decision()


def test_the_rules_page_has_the_flow_and_see_it_links(client: TestClient) -> None:
    html = client.get("/rules").text
    svg = re.search(r"<svg class=\"flow\".*?</svg>", html, re.S)
    assert svg is not None
    boxes = re.findall(r'<g class="flow-rule rule-([\w-]+)"', svg.group(0))
    assert boxes == [rule.name for rule in RULES]
    assert svg.group(0).count('class="flow-box"') == len(RULES)
    assert svg.group(0).count(">no</tspan>") == len(RULES) - 1  # the last rule always fires
    assert set(SEE_IT) == {rule.name for rule in RULES}
    links = re.findall(r'<p class="see-it"><a href="([^"]+)">', html)
    assert len(links) == len(RULES)
    for link in links:
        url = unescape(link)
        assert url.startswith("/examples/")
        assert client.get(url).status_code == 200
        assert "step" in parse_qs(urlsplit(url).query)


def test_each_see_it_step_fires_its_rule_and_each_story_opens_on_a_told_step() -> None:
    for rule, (key, step, _) in SEE_IT.items():
        example = EXAMPLES[key]
        trace = assemble(read(decode(example.data()), "auto").records, example.options)
        assert rule in {fragment.rule for fragment in trace.steps[step].fragments}, rule
    for example in EXAMPLES.values():
        story = example.story
        assert story.start_step in story.steps, example.key
        records = read(decode(example.data()), "auto").records
        for policy in ("adr-0019", "exact-key"):
            trace = assemble(records, replace(example.options, policy=policy))
            assert max(story.steps) < len(trace.steps), example.key


FORM = {
    "c0.f0.index": "0",
    "c0.f0.index.on": "1",
    "c0.f0.id": "call_1",
    "c0.f0.id.on": "1",
    "c0.f0.name": "get_weather",
    "c0.f0.name.on": "1",
    "c1.f0.index": "0",
    "c1.f0.index.on": "1",
    "c1.f0.arguments": '{"city":"Paris"}',
    "c1.f0.arguments.on": "1",
    "c1.finish": "tool_calls",
}


def test_the_playground_runs_both_policies_statelessly(client: TestClient, app: FastAPI) -> None:
    before = stored(app)
    agreed = client.post("/play/run", data=FORM)
    assert agreed.status_code == 200 and template(agreed) == "_play_result.html"
    assert agreed.context["page"].differing == 0  # type: ignore[attr-defined]
    # take the index out of the argument fragment: exact-key opens a phantom call
    bare = client.post("/play/run", data={**FORM, "c1.f0.index.on": ""})
    assert bare.context["page"].differing > 0  # type: ignore[attr-defined]
    assert "phantom-call" in bare.text
    # the URL it pushes holds the state, and the page it names shows the same stream
    url = bare.headers["HX-Replace-Url"]
    assert url.startswith("/play?s=")
    page = client.get(url)
    assert page.status_code == 200 and "phantom-call" in page.text
    assert 'name="c1.f0.index.on" value="1" checked' not in page.text
    assert stored(app) == before


def test_the_playground_refuses_bad_input_with_4xx(client: TestClient) -> None:
    assert client.post("/play/run", data={"c900.f0.index": "1"}).status_code == 400
    assert client.post("/play/run", data={"c0.f99.index.on": "1"}).status_code == 400
    too_long = {"c0.f0.arguments": "x" * 30_000, "c0.f0.arguments.on": "1"}
    assert client.post("/play/run", data=too_long).status_code == 400
    for token in ("xxxx", "!!", "eJwLycgsVgCiRIWS1OISABnXBH4", "A" * 60_000):
        assert client.get(f"/play?s={token}").status_code == 400, token
    assert client.get("/play?from=nope").status_code == 404
    assert client.post("/play/edit", data={"c900.f0.id": "x", "op": "del:0"}).status_code == 400


def test_structural_edits_and_save(client: TestClient, app: FastAPI) -> None:
    moved = client.post("/play/edit", data={**FORM, "op": "down:0"})
    assert moved.status_code == 303
    page = client.get(moved.headers["location"])
    chunks = page.context["chunks"]  # type: ignore[attr-defined]
    assert chunks[0].fragments[0].keys == {"index": 0, "arguments": '{"city":"Paris"}'}
    added = client.get(client.post("/play/edit", data={**FORM, "op": "frag:1"}).headers["location"])
    assert len(added.context["chunks"][1].fragments) == 2  # type: ignore[attr-defined]
    before = stored(app)
    saved = client.post("/play/save", data=FORM)
    assert saved.status_code == 303 and saved.headers["location"].startswith("/s/")
    assert stored(app) == before + 1
    assert client.get(saved.headers["location"]).status_code == 200


def test_edit_a_copy_opens_a_stream_in_the_playground(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}").text
    assert f'href="/play?from={stream_id}"' in page
    copy = client.get(f"/play?from={stream_id}")
    assert copy.status_code == 200 and "phantom-call" in copy.text
    line = 'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"x"}}]}}]}'
    long = store("\n\n".join([line] * (MAX_CHUNKS + 5)))
    refused = client.get(f"/play?from={long}")
    assert refused.status_code == 413 and 'id="play-readonly"' in refused.text
    assert client.get("/play").status_code == 200


def test_index_without_id_is_placed_by_index_where_a_last_open_rule_would_misroute() -> None:
    """continuedev/continue #13223: id-less pieces that carry an index. Exact-index places each
    on its own call under both policies; the most recently opened call (what a fallback that
    read only ids would use) is the wrong one for the first of them."""
    example = EXAMPLES["index-no-id"]
    records = read(decode(example.data()), "auto").records
    for policy in ("adr-0019", "exact-key"):
        trace = assemble(records, replace(example.options, policy=policy))
        opened: list[int] = []
        misrouted = 0
        for step in trace.steps:
            for fragment in step.fragments:
                if fragment.rule == "new":
                    assert fragment.block is not None
                    opened.append(fragment.block)
                    continue
                assert fragment.id is None and isinstance(fragment.index, int)
                assert fragment.rule == "exact-index"
                misrouted += fragment.block != opened[-1]
        assert misrouted == 1  # index 0's piece, while index 1 was the last opened
        assert ["".join(block.pieces) for block in trace.blocks] == [
            '{"target":"A_ONLY"}',
            '{"target":"B_ONLY"}',
        ]
    assert TOUR.index("index-no-id") == TOUR.index("interleaved") + 1
    origin = example.story.origin
    assert origin is not None
    assert origin.url == "https://github.com/continuedev/continue/issues/13223"


def test_the_tour_and_the_example_name_its_public_origin(client: TestClient) -> None:
    url = "https://github.com/continuedev/continue/issues/13223"
    tour = client.get("/tour").text
    stop = tour.split('id="stop-index-no-id"', 1)[1].split("</li>", 1)[0]
    assert f'href="{url}"' in stop and "continuedev/continue #13223" in stop
    page = client.get("/examples/index-no-id").text
    assert f'href="{url}"' in page and "minimal reproduction" in page
    assert 'class="story-origin"' not in client.get("/examples/interleaved").text


def test_every_page_takes_the_rule_colours_from_the_table(client: TestClient) -> None:
    """/rules.css is written from the rules table; every kind of page loads it before app.css
    (whose rules then win a tie, as when the colours were in it), and no stylesheet of the
    package declares a rule colour of its own."""
    sheet = client.get("/rules.css")
    assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/css")
    for rule in RULES:
        assert f"--rule-{rule.name}: {rule.colour.light};" in sheet.text
        assert f"--rule-{rule.name}: {rule.colour.dark};" in sheet.text
    again = client.get("/rules.css", headers={"If-None-Match": sheet.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    framed = {"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Site": "cross-site"}
    pages = {
        "page": client.get("/rules"),
        "embed": client.get("/embed/examples/clean"),
        "embedded compare": client.get("/embed/examples/continuation/compare"),
        "embed refused": client.get(
            "/embed/examples/clean", headers={**framed, "Referer": "https://a.example/"}
        ),
    }
    for kind, page in pages.items():
        text = page.text
        assert 0 < text.index('href="/rules.css"') < text.index('href="/static/app.css"'), kind
    from webapp.web.http.templating import STATIC

    names = "|".join(re.escape(rule.name) for rule in RULES)
    declared = re.compile(rf"--rule-({names})\s*:|\.rule-({names})\s*\{{|\.[rq]\d+\s*\{{")
    for css in STATIC.glob("*.css"):
        assert not declared.search(css.read_text()), css.name
