"""The timeline's diagnosis: the anomaly list, the overview strip, what a tool is called with,
the home form's server-tools switch, and a HAR file's entries."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, sse
from tests.web.test_web_scale import long_stream
from tests.web.webkit import HX, Store
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.rules import RULE_NAMES
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.trace.overview import buckets
from webapp.web.http.links import Links
from webapp.web.views.anomaly_list import PAGE, PREVIEW
from webapp.web.views.panels import DETAIL_ANOMALIES

TWO_HEADERS = sse(
    chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")),
    chunk(frag(args='{"city": ')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
)
"""Two headers, then bare continuations: decision 0019 guesses twice (2 errors, 1 warning)."""


def template(response: Any) -> str:
    return str(response.template.name)


def items(html: str) -> list[tuple[str, str]]:
    """The anomaly list's instance links: (the step's URL, text); each href is that URL
    scrolled to the anomaly's box in the detail panel (`#why-CODE`)."""
    found = re.findall(r'<a class="aitem" href="([^"]+)".*?>(.*?)</a>', html, re.S)
    links = []
    for href, text in found:
        url, _, anchor = href.replace("&amp;", "&").partition("#")
        assert anchor.startswith("why-"), href
        links.append((url, re.sub(r"<[^>]+>", "", text)))
    return links


def test_the_list_groups_by_code_errors_first_and_links_every_instance(
    client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_HEADERS)
    response = client.get(f"/s/{stream_id}?step=0")
    panel = response.context["anomalies"]
    assert [(g.code, g.severity, g.count) for g in panel.groups] == [
        ("ambiguous-continuation", "error", "\u00d72"),
        ("empty-arguments", "warning", "\u00d71"),
    ]
    assert panel.headline == "2 errors and 1 warning"
    assert panel.groups[0].steps == "steps 1\u20132" and panel.groups[0].blocks == "block #1"
    links = items(response.text)
    assert [href for href, _ in links] == [
        f"/s/{stream_id}?step=1&policy=adr-0019&path=client",
        f"/s/{stream_id}?step=2&policy=adr-0019&path=client",
        f"/s/{stream_id}?step=5&policy=adr-0019&path=client",
    ]
    assert "step 1 · line 3" in links[0][1] and "#1 book_flight" in links[0][1]
    assert "block #0 get_weather was also open" in links[0][1]
    # every instance link is a real link, with htmx layered on to swap the stage
    assert f'hx-get="/s/{stream_id}?step=1&amp;policy=adr-0019&amp;path=client"' in response.text


def test_summary_chips_link_to_the_list_filtered_by_their_code(
    client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_HEADERS)
    html = client.get(f"/s/{stream_id}?step=3").text
    chip = re.search(r'<a class="chip anomaly sev-warning" href="([^"]+)"', html)
    assert chip is not None
    href = chip.group(1).replace("&amp;", "&")
    assert (
        href
        == f"/s/{stream_id}?step=3&policy=adr-0019&path=client&anomaly=empty-arguments#anomalies"
    )
    page = client.get(href.split("#")[0])
    assert page.status_code == 200
    assert [g.code for g in page.context["anomalies"].groups] == ["empty-arguments"]
    assert [href for href, _ in items(page.text)] == [
        f"/s/{stream_id}?step=5&policy=adr-0019&path=client&anomaly=empty-arguments"
    ]


def test_the_filter_is_validated(client: TestClient, store: Store) -> None:
    stream_id = store(TWO_HEADERS)
    bad = client.get(f"/s/{stream_id}?anomaly=no-such-code")
    assert bad.status_code == 400
    assert "anomaly must be an anomaly code" in bad.text
    assert client.get(f"/s/{stream_id}?anomaly=&anomaly_start=").status_code == 200
    assert client.get(f"/s/{stream_id}?anomaly=phantom-call&anomaly_start=x").status_code == 400


def test_an_htmx_request_gets_the_list_alone_and_a_browser_the_page(
    client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_HEADERS)
    url = f"/s/{stream_id}/anomalies?step=2&anomaly=ambiguous-continuation"
    partial = client.get(url, headers=HX)
    assert partial.status_code == 200
    assert template(partial) == "_anomalies.html"
    assert '<section id="anomalies"' in partial.text and "<html" not in partial.text
    assert "HX-Request" in partial.headers["vary"]
    browser = client.get(url)
    assert browser.status_code == 303
    location = browser.headers["location"]
    assert (
        location
        == f"/s/{stream_id}?step=2&policy=adr-0019&path=client&anomaly=ambiguous-continuation"
    )
    assert template(client.get(location)) == "stream.html"


UNFINISHED = sse(
    *(chunk(frag(n, f"call_{n}", "f", '{"a":')) for n in range(2_000)), chunk(finish="tool_calls")
)
"""2,000 calls whose arguments never finish: 2,000 incomplete-arguments, all at the end step."""


def test_thousands_of_one_anomaly_render_a_bounded_page(tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "big.sqlite3"), max_bytes=5_000_000, timeline_window=40)
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": UNFINISHED}).json()["id"]
        page = client.get(f"/s/{stream_id}?step=2002")
        assert page.status_code == 200
        (group,) = page.context["anomalies"].groups
        assert (group.code, group.count, group.blocks) == (
            "incomplete-arguments",
            "\u00d72,000",
            "blocks #0\u2013#1,999",
        )
        assert len(items(page.text)) == PREVIEW
        assert "list all \u00d72,000 \u2192" in page.text
        # the end step's detail: a few boxes, the rest counted, with a link to the list
        detail = page.context["detail"]
        assert len(detail.anomalies) == DETAIL_ANOMALIES
        assert detail.more_anomalies == (("incomplete-arguments", 2_000 - DETAIL_ANOMALIES),)
        assert page.text.count('<p class="problem sev-') == DETAIL_ANOMALIES
        assert "incomplete-arguments \u00d71,995</a>" in page.text
        assert "anomaly=incomplete-arguments#anomalies" in page.text
        assert len(page.context["detail"].events) + page.context["detail"].more_events == 2_001
        assert len(page.text) < 150_000


def test_one_code_is_listed_a_page_at_a_time(tmp_path: Path) -> None:
    """exact-key on 3,000 bare continuations: 3,001 phantom calls, one at each step."""
    settings = Settings(db=str(tmp_path / "big.sqlite3"), max_bytes=5_000_000, timeline_window=40)
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": long_stream(3_000)}).json()["id"]
        query = "step=3004&policy=exact-key&anomaly=phantom-call&anomaly_start=100"
        paged = client.get(f"/s/{stream_id}?{query}")
        shown = items(paged.text)
        assert len(shown) == PAGE
        assert [g.shown for g in paged.context["anomalies"].groups] == ["101\u2013150 of 3,001"]
        assert "anomaly_start=150" in paged.text and "anomaly_start=50" in paged.text
        # every instance link keeps the filter, so a reload shows the same list
        assert all("anomaly=phantom-call&anomaly_start=100" in href for href, _ in shown)
        assert shown[0][0].startswith(f"/s/{stream_id}?step=101&")
        beyond = f"/s/{stream_id}?step=0&policy=exact-key&anomaly=phantom-call&anomaly_start=9999"
        groups = client.get(beyond).context["anomalies"].groups
        assert [g.shown for g in groups] == ["3,001\u20133,001 of 3,001"]


def test_a_clean_stream_says_so(client: TestClient, store: Store) -> None:
    stream_id = store(sse(chunk(frag(0, "c", "f", "{}")), chunk(finish="tool_calls")))
    html = client.get(f"/s/{stream_id}").text
    assert "No anomalies." in html and 'class="aitem"' not in html


def test_the_overview_has_a_column_per_step_each_a_link_marked_by_severity(
    client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_HEADERS)
    html = client.get(f"/s/{stream_id}?step=2").text
    cells = re.findall(r'<a class="(oc[^"]*)" href="([^"]+)" title="([^"]+)"', html)
    assert len(cells) == 6
    classes = [c for c, _, _ in cells]
    new, continuation = RULE_NAMES.index("new"), RULE_NAMES.index("continuation")
    assert classes[0] == f"oc r{new}"  # step 0: two `new` fragments
    # continuation, errors; bare pieces are a provider quirk too (`qk`, marked apart)
    assert classes[1] == f"oc r{continuation} e qk"
    assert classes[2] == f"oc r{continuation} e qk cur"
    assert classes[5] == "oc z w"  # the end: no fragments, a warning
    assert [urlsplit(href.replace("&amp;", "&")).query.split("&")[0] for _, href, _ in cells] == [
        f"step={n}" for n in range(6)
    ]
    assert cells[1][2] == (
        "step 1 · continuation 1 · 1 error · quirks: missing-index, bare-continuation"
    )


def test_buckets_cover_every_step_and_land_on_the_first_error() -> None:
    trace = assemble(read(long_stream(20)).records, Options(policy="exact-key"))
    found = buckets(trace, trace.anomalies_by_step(), limit=5)
    assert len(found) == 5
    assert found[0].first == 0 and found[-1].last == len(trace.steps) - 1
    assert all(a.last + 1 == b.first for a, b in itertools.pairwise(found))
    assert found[0].rules[0][0] == "new" and found[0].errors > 0
    assert found[0].target == min(a.step for a in trace.anomalies)
    whole = buckets(trace, trace.anomalies_by_step())
    assert [b.first for b in whole] == list(range(len(trace.steps)))


def test_the_state_panel_says_what_each_tool_would_be_called_with(
    client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_HEADERS)
    end = client.get(f"/s/{stream_id}?step=5")
    cards = {card.name: card for card in end.context["state"].cards}
    assert cards["get_weather"].delivered.head == "{}"
    assert cards["book_flight"].delivered.head == '{"city": "Paris"}'
    assert cards["book_flight"].delivered_final
    text = re.sub(r"<[^>]+>", "", end.text)
    assert "get_weather would be called with {}" in text
    assert "book_flight would be called with {&#34;city&#34;: &#34;Paris&#34;}" in text
    # before its last piece arrives, nothing is said; after it, it is, marked as not the end
    assert client.get(f"/s/{stream_id}?step=1").context["state"].cards[1].delivered is None
    at_two = client.get(f"/s/{stream_id}?step=2").context["state"].cards[1]
    assert at_two.delivered is not None and not at_two.delivered_final
    broken = store(sse(chunk(frag(0, "c", "f", '{"a": 1}{"b": 2}')), chunk(finish="tool_calls")))
    card = client.get(f"/s/{broken}?step=2").context["state"].cards[0]
    assert card.delivered.head == "{}"
    assert card.delivered_error and "not valid JSON" in card.delivered_error


def submit(client: TestClient, **fields: str) -> dict[str, list[str]]:
    data = {"text": TWO_HEADERS, "policy": "adr-0019", "format": "auto", **fields}
    response = client.post(
        "/streams", data=data, files={"file": ("", b"", "application/octet-stream")}
    )
    assert response.status_code == 303, response.text
    return parse_qs(urlsplit(response.headers["location"]).query)


def test_naming_server_tools_on_the_home_form_picks_their_path(client: TestClient) -> None:
    assert submit(client, path="", server_tools="web_search")["path"] == ["server-tools"]
    assert submit(client, server_tools="web_search")["path"] == ["server-tools"]
    assert submit(client, path="")["path"] == ["client"]
    assert submit(client, path="", server_tools=" , ")["path"] == ["client"]
    # a path the form chose itself wins, as it would name it on the command line
    assert submit(client, path="client", server_tools="web_search")["path"] == ["client"]
    home = client.get("/").text
    assert '<option value="" selected>auto' in home


def test_naming_server_tools_in_the_timelines_form_picks_their_path(
    client: TestClient, store: Store
) -> None:
    stream_id = store(TWO_HEADERS)
    page = client.get(f"/s/{stream_id}?step=1&policy=adr-0019&path=client").text
    form = page[page.index('<form class="inline-form"') :]
    form = form[: form.index("</form>")]
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
    assert "path" not in hidden and hidden["policy"] == "adr-0019"
    # what the browser sends when server tools are typed in: their path, as on the CLI
    answer = client.get(f"/s/{stream_id}", params={**hidden, "server_tools": "get_weather"})
    assert answer.context["options"].path == "server-tools"
    # a URL that names its path keeps it
    named = client.get(f"/s/{stream_id}?path=client&server_tools=get_weather")
    assert named.context["options"].path == "client"
    on_server = client.get(f"/s/{stream_id}?path=server-tools&server_tools=x").text
    assert '<input type="hidden" name="path" value="server-tools">' in on_server


ONE = sse(chunk(frag(0, "call_a", "alpha", "{}")), chunk(finish="tool_calls"))
TWO = sse(chunk(frag(0, "call_b", "beta", "{}")), chunk(finish="tool_calls"))


def har(*bodies: str) -> str:
    entries = [
        {
            "request": {"method": "POST", "url": "https://example.com/"},
            "response": {"status": 200, "content": {"mimeType": "text/html", "text": "<p>"}},
        }
    ]
    entries += [
        {
            "request": {"method": "POST", "url": f"https://api{n}.example/v1/chat/completions"},
            "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": body}},
        }
        for n, body in enumerate(bodies)
    ]
    return json.dumps({"log": {"entries": entries}})


def names(response: Any) -> list[str]:
    return [str(block.name) for block in response.context["state"].cards]


def test_a_har_with_several_streams_offers_each_entry(client: TestClient, store: Store) -> None:
    stream_id = store(har(ONE, TWO))
    first = client.get(f"/s/{stream_id}?step=2")
    assert names(first) == ["alpha"]
    offered = [(e.number, e.on, e.url) for e in first.context["entries"].links]
    assert offered == [
        (2, True, f"/s/{stream_id}?policy=adr-0019&path=client&har_entry=2"),
        (3, False, f"/s/{stream_id}?policy=adr-0019&path=client&har_entry=3"),
    ]
    assert "har_entry=3" in first.text and "other entries, not followed" not in first.text
    second = client.get(f"/s/{stream_id}?step=2&har_entry=3")
    assert second.status_code == 200
    assert names(second) == ["beta"]
    assert [e.on for e in second.context["entries"].links] == [False, True]
    # the entry flows through every link of the page and into the API
    api = f"/api/streams/{stream_id}/trace?policy=adr-0019&amp;path=client&amp;har_entry=3"
    assert f'href="{api}"' in second.text
    assert "&har_entry=3" in second.context["nav"].first_url
    assert "har_entry=3" in second.context["links"].compare()
    compare = client.get(f"/s/{stream_id}/compare?har_entry=3")
    assert compare.status_code == 200 and "beta" in compare.text and "alpha" not in compare.text
    trace = client.get(f"/api/streams/{stream_id}/trace?har_entry=3").json()
    assert [b["name"] for b in trace["blocks"]] == ["beta"]
    assert trace["input"]["meta"]["entry"] == 3


@pytest.mark.parametrize(
    ("value", "status", "says"),
    [
        ("x", 400, "har_entry must be a whole number"),
        ("0", 400, "har_entry must be a whole number, 1 or more"),
        ("-1", 400, "har_entry must be a whole number"),
        ("99999999", 400, "har_entry must be at most"),
        ("9", 422, "there is no entry 9 (the HAR has entries 1-3)"),
        ("1", 422, "entry 1 is not an event stream"),
    ],
)
def test_a_bad_har_entry_is_refused_in_words(
    client: TestClient, store: Store, value: str, status: int, says: str
) -> None:
    stream_id = store(har(ONE, TWO))
    page = client.get(f"/s/{stream_id}?har_entry={value}")
    assert page.status_code == status
    assert says in page.text
    api = client.get(f"/api/streams/{stream_id}/trace?har_entry={value}")
    assert api.status_code == status
    assert says in api.json()["detail"]


def test_an_entry_of_a_stream_that_is_no_har_is_refused(client: TestClient, store: Store) -> None:
    stream_id = store(TWO_HEADERS)
    page = client.get(f"/s/{stream_id}?har_entry=1")
    assert page.status_code == 422
    assert "the input is not a HAR file" in page.text
    assert client.get(f"/s/{stream_id}").context["entries"] is None


def test_links_carry_the_entry_and_the_filter() -> None:
    links = Links("abc", Options(), har_entry=3, anomaly="phantom-call", anomaly_start=50)
    assert links.step(1) == (
        "/s/abc?step=1&policy=adr-0019&path=client&har_entry=3"
        "&anomaly=phantom-call&anomaly_start=50"
    )
    assert links.with_entry(2).step(0) == "/s/abc?step=0&policy=adr-0019&path=client&har_entry=2"
    assert links.filtered("").step(0) == "/s/abc?step=0&policy=adr-0019&path=client&har_entry=3"
    assert links.with_policy("exact-key").anomaly == "phantom-call"
    assert ("har_entry", "3") in links.hidden_fields(0)
    assert links.anomalies(4).startswith("/s/abc/anomalies?step=4&")
