"""Whose fault, on the stream's pages: the quirk panel, the intended reading, the quirk marks on
the timeline and the overview strip, the compare page's headline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import webapp.web.backend.service
from tests.contract.streams import QUIRK_STREAMS
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import HX, Store
from webapp.core.contract import QUIRK, read_contract
from webapp.core.contract.quirks import CLAUSES
from webapp.core.readers import read
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.views.quirks import CALLS_SHOWN, INSTANCES_SHOWN, STEPS_SHOWN

ENVOY = Path("tests/corpus/no-index.sse").read_text(encoding="utf-8")
"""A header, then argument pieces with no index, no id and no name: the Envoy AI Gateway's
Bedrock translator before envoyproxy/ai-gateway PR #1468."""
TWO_OPEN = Path("tests/corpus/two-calls-open-continuations.sse").read_text(encoding="utf-8")
"""Two calls open, then bare continuations: no single reading."""
CLEAN = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)


def panel_html(html: str) -> str:
    start = html.index('<section id="quirks"')
    return html[start : html.index("</section>", start)]


def test_the_quirk_panel_names_each_quirk_with_the_table_and_its_steps(
    client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)
    page = client.get(f"/s/{stream_id}?step=0")
    assert page.status_code == 200
    panel = page.context["quirks"]
    assert [item.code for item in panel.items] == ["missing-index", "bare-continuation"]
    assert panel.headline == "2 quirks, 1 that can do silent harm"
    bare = panel.items[1]
    assert bare.meaning == QUIRK["bare-continuation"].meaning
    assert bare.clause == CLAUSES["index"]
    assert bare.harm == "silent" and bare.span == "steps 1\u20133, block #0"
    assert [link.step for link in bare.steps] == [1, 2, 3]
    html = panel_html(page.text)
    # each step a real link to the page at that step (htmx swaps the stage, inherited)
    for step in (1, 2, 3):
        assert f'href="/s/{stream_id}?step={step}&amp;policy=adr-0019&amp;path=client"' in html
    assert 'hx-target:inherited="#stage"' in html
    assert "clients typically</b> decision 0019 appends it" in html
    assert CLAUSES["index"] in html
    # the public sightings as links, from the table
    for seen in QUIRK["bare-continuation"].seen:
        assert seen.url and f'href="{seen.url}"' in html
    assert 'href="https://github.com/openai/openai-python/issues/2806"' in html  # missing-index
    assert f'href="/s/{stream_id}/clients"' in html  # whose fault: the clients graded


def test_the_panel_is_the_same_under_every_policy_and_path(
    client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)

    def shown(query: str) -> list[tuple[str, str, tuple[int, ...]]]:
        panel = client.get(f"/s/{stream_id}?{query}").context["quirks"]
        return [(i.code, i.span, tuple(s.step for s in i.steps)) for i in panel.items]

    base = shown("policy=adr-0019")
    assert base and shown("policy=exact-key") == base
    assert shown("path=server-tools") == base == shown("server_tools=search*")


def test_what_the_stream_means_is_said_in_words(client: TestClient, store: Store) -> None:
    html = client.get(f"/s/{store(ENVOY)}").text
    found = re.search(r'<div id="intended" class="intended">(.*?)</div>', html, re.S)
    assert found, html[:2000]
    said = re.sub(r"<[^>]+>", "", found.group(1)).replace("&#34;", '"')
    assert " ".join(said.split()) == (
        'What this stream means: search_docs {"query": "streaming tool calls", "limit": 5} '
        'id "call_1"'
    )


def test_a_stream_with_two_readings_says_so_and_why(client: TestClient, store: Store) -> None:
    stream_id = store(TWO_OPEN)
    page = client.get(f"/s/{stream_id}")
    reading = page.context["quirks"].reading
    assert reading.ambiguous and reading.calls is None
    assert "it could belong to either" in reading.why
    assert '<div id="intended" class="intended ambiguous">' in page.text
    said = "This stream admits more than one reading:</b> step 1: a piece with no index"
    assert said in page.text
    compare = client.get(f"/s/{stream_id}/compare").text
    assert 'id="compare-quirks"' in compare
    assert "It admits more than one reading, so neither side can be right by design." in compare


def test_the_repairs_are_listed_with_the_repaired_arguments(
    client: TestClient, store: Store
) -> None:
    page = client.get(f"/s/{store(QUIRK_STREAMS['cumulative-arguments'])}")
    reading = page.context["quirks"].reading
    assert [call.arguments for call in reading.calls] == ['{"city": "Paris"}']
    (repair,) = reading.repairs
    assert repair.startswith("cumulative-arguments on block 0: kept the last restatement")
    assert "read with 1 repair:" in page.text and repair in page.text


def test_a_stream_that_keeps_the_contract_says_so_and_marks_nothing(
    client: TestClient, store: Store
) -> None:
    stream_id = store(CLEAN)
    page = client.get(f"/s/{stream_id}")
    assert page.context["quirks"].headline == "none: the stream keeps the contract"
    assert page.context["quirks"].items == ()
    assert "quirk-flag" not in page.text and " qk" not in page.text
    assert 'id="compare-quirks"' not in client.get(f"/s/{stream_id}/compare").text


def test_the_timeline_marks_the_quirk_steps_apart_from_the_anomalies(
    client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)
    page = client.get(f"/s/{stream_id}?step=0")
    rows = {row.step: row.quirks for row in page.context["window"].rows}
    assert rows[0] == ("missing-index",)
    assert rows[1] == rows[2] == rows[3] == ("missing-index", "bare-continuation")
    assert rows[4] == rows[5] == ()
    flags = re.findall(r'id="row-(\d+)".*?</a>', page.text, re.S)
    assert len(flags) == 7
    row_two = page.text.split('id="row-2"', 1)[1].split("</a>", 1)[0]
    assert '<span class="quirk-flag"' in row_two and "◆ bare-continuation" in row_two
    assert "anomaly-flag" not in row_two  # no anomaly under adr-0019: the marks are apart
    # the htmx window and rows carry the same marks
    window = client.get(f"/s/{stream_id}/timeline?step=2", headers=HX).text
    assert "◆ bare-continuation" in window


def test_a_collapsed_run_counts_its_quirk_steps(tmp_path: Path) -> None:
    pieces = [chunk(frag(args=f'"k{n}": {n}, ')) for n in range(30)]
    text = sse(chunk(frag(0, "call_1", "f", "{")), *pieces, chunk(frag(args='"z": 0}')),
               chunk(finish="tool_calls"))  # fmt: skip
    settings = Settings(db=str(tmp_path / "runs.sqlite3"), timeline_window=40)
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
        page = client.get(f"/s/{stream_id}?step=0")
        runs = [row for row in page.context["window"].rows if row.is_run]
        assert runs and runs[0].quirk_steps == runs[0].last - runs[0].first + 1
        assert f"◆ {runs[0].quirk_steps} quirk steps" in page.text


def test_the_overview_marks_quirk_columns_with_a_legend(client: TestClient, store: Store) -> None:
    html = client.get(f"/s/{store(ENVOY)}?step=5").text
    cells = re.findall(r'<a class="(oc[^"]*)" href="[^"]+" title="([^"]+)"', html)
    marked = [n for n, (classes, _) in enumerate(cells) if "qk" in classes.split()]
    assert marked == [0, 1, 2, 3]
    assert cells[1][1].endswith(" · quirks: missing-index, bare-continuation")
    assert '<span class="k-q">provider quirk (below)</span>' in html
    assert all(" e" not in classes for classes, _ in cells)  # no anomaly: not an error mark


def test_the_compare_headline_names_the_quirks_and_links_them(
    client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)
    html = client.get(f"/s/{stream_id}/compare").text
    line = html.split('id="compare-quirks"', 1)[1].split("</p>", 1)[0]
    assert "The provider's stream departs from the contract" in line
    assert (
        f'<a href="/s/{stream_id}?step=1&amp;policy=adr-0019&amp;path=client">'
        "<code>bare-continuation</code></a>"
    ) in line
    assert "What it means: <code>search_docs {&#34;query&#34;" in line
    assert f'href="/s/{stream_id}?step=0&amp;policy=adr-0019&amp;path=client#quirks"' in line


def test_the_panel_stays_bounded_on_thousands_of_calls(tmp_path: Path) -> None:
    text = sse(*(chunk(frag(n, f"call_{n}", "f", "[1]")) for n in range(1_500)),
               chunk(finish="tool_calls"))  # fmt: skip
    settings = Settings(db=str(tmp_path / "many.sqlite3"), max_bytes=5_000_000)
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
        page = client.get(f"/s/{stream_id}")
        (item,) = page.context["quirks"].items
        assert item.code == "arguments-not-json" and item.count == 1_500
        assert len(item.instances) == INSTANCES_SHOWN and item.more == 1_500 - INSTANCES_SHOWN
        assert all(len(instance.steps) <= STEPS_SHOWN for instance in item.instances)
        reading = page.context["quirks"].reading
        assert len(reading.calls) == CALLS_SHOWN and reading.more == 1_500 - CALLS_SHOWN
        assert len(panel_html(page.text)) < 8_000
        assert "and 1,497 more calls like these" in page.text


def test_a_worker_that_loads_the_stored_trace_marks_the_same_steps(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webapp.web.backend.service, "STORE_FROM", 0)  # keep every trace
    with TestClient(create_app(settings)) as first:
        stream_id = first.post("/api/streams", json={"text": TWO_OPEN}).json()["id"]
        before = first.get(f"/s/{stream_id}?step=2")
        first.app.state.service.settle()  # type: ignore[attr-defined]

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("assembled although the trace was stored")

    monkeypatch.setattr(webapp.web.backend.service, "assemble", refuse)
    with TestClient(create_app(settings)) as second:
        after = second.get(f"/s/{stream_id}?step=2")
    assert after.status_code == 200
    assert after.context["quirks"] == before.context["quirks"]
    marks = [(row.step, row.quirks) for row in after.context["window"].rows]
    assert marks == [(row.step, row.quirks) for row in before.context["window"].rows]
    assert (2, ("missing-index", "bare-continuation")) in marks
    cells = [cell.classes for cell in after.context["overview"].cells]
    assert cells == [cell.classes for cell in before.context["overview"].cells]


def test_a_long_run_of_steps_is_counted_in_words() -> None:
    many = sse(chunk(frag(0, "call_1", "f", "")),
               *(chunk(frag(args=" ")) for _ in range(12)), chunk(frag(args="{}")),
               chunk(finish="tool_calls"))  # fmt: skip
    found = read_contract(read(many).records).quirks
    bare = next(item for item in found if item.code == "bare-continuation")
    assert bare.message.endswith("steps 1, 2, 3, 4, 5, 6, 7, 8 and 5 more)")  # not "5 mores"
