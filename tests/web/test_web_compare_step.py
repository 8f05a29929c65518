"""The compare page's rows show their input, and a selected step shows both sides' blocks."""

from __future__ import annotations

import re
from html import unescape

from fastapi.testclient import TestClient

from tests.streamkit import ABSENT, chunk, frag, sse
from tests.web.webkit import CONTINUATION, HX, Store

KEYS_STREAM = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(index=ABSENT, id="", name=None, args='{"a"')),
    chunk(frag(args=":1}")),
    chunk(finish="tool_calls"),
)
"""A header with every key; then `""` and null keys with no index; then a bare fragment."""


def row(page: str, step: int) -> str:
    """The HTML of one compare row."""
    found = re.search(
        rf'<div class="crow[^"]*" id="crow-{step}".*?(?=<div class="crow|$)', page, re.S
    )
    assert found is not None, f"no row {step}"
    return found.group(0)


def panel(page: str) -> str:
    """The HTML of the selected step's panel."""
    found = re.search(r'<section id="compare-step".*?</section>', page, re.S)
    assert found is not None, "no step panel"
    return found.group(0)


def shown_keys(html: str) -> list[tuple[str, str]]:
    """(key, value) per key shown in `html`, value "ABSENT" for a struck-through key."""
    keys = re.findall(
        r'<del class="key absent" title="absent[^"]*">(\w+)</del>'
        r'|<span class="key">(\w+)</span>&nbsp;<code class="val">([^<]*)</code>',
        html,
    )
    return [(gone, "ABSENT") if gone else (name, unescape(value)) for gone, name, value in keys]


def test_each_row_shows_its_fragments_keys_and_strikes_the_absent_ones(
    client: TestClient, store: Store
) -> None:
    stream_id = store(KEYS_STREAM)
    page = client.get(f"/s/{stream_id}/compare").text
    assert shown_keys(row(page, 0)) == [
        ("index", "0"), ("id", '"call_1"'), ("name", '"get_weather"'), ("arguments", '""'),
    ]  # fmt: skip
    # present but empty ("") and null are values, not absent keys
    assert shown_keys(row(page, 1)) == [
        ("index", "ABSENT"), ("id", '""'), ("name", "null"), ("arguments", '"{\\"a\\""'),
    ]  # fmt: skip
    assert shown_keys(row(page, 2)) == [
        ("index", "ABSENT"), ("id", "ABSENT"), ("name", "ABSENT"), ("arguments", '":1}"'),
    ]  # fmt: skip
    assert shown_keys(row(page, 3)) == []  # the finish chunk carries no fragments


def test_long_arguments_are_excerpted_in_the_row(client: TestClient, store: Store) -> None:
    long = '{"text":"' + "x" * 500 + '"}'
    stream_id = store(sse(chunk(frag(0, "c", "f", long)), chunk(finish="tool_calls")))
    shown = row(client.get(f"/s/{stream_id}/compare").text, 0)
    assert "more characters" in shown and "x" * 100 not in shown


def test_a_selected_step_shows_both_sides_blocks_as_of_that_step(client: TestClient) -> None:
    page = client.get("/examples/continuation/compare?step=3").text
    assert 'id="crow-3"' in page and 'aria-current="step"' in row(page, 3)
    assert "aria-current" not in row(page, 2)
    shown = panel(page)
    assert 'data-step="3"' in shown
    left, right = shown.split('data-policy="adr-0019"')
    assert 'data-policy="exact-key"' in left
    # exact-key: the header and two phantoms so far; the third opens at step 4
    assert "#0 get_weather" in left and "#1 (no name)" in left and "#2 (no name)" in left
    assert "#3 (no name)" not in left
    assert left.count(">phantom</span>") == 2 and "opened here" in left
    # adr-0019: one block, its arguments as of step 3 (the "unit" comes at step 4)
    assert "#0 get_weather" in right and "#1 (no name)" not in right
    assert '"Paris",' in unescape(right) and "unit" not in right
    later = panel(client.get("/examples/continuation/compare?step=4").text)
    assert "#3 (no name)" in later and "unit" in later
    assert shown_keys(panel(page))[:3] == [
        ("index", "ABSENT"),
        ("id", "ABSENT"),
        ("name", "ABSENT"),
    ]


def test_without_a_step_nothing_is_selected(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}/compare").text
    assert "aria-current" not in page
    assert "No step selected" in panel(page)


def test_rows_select_with_plain_links_and_the_panel_comes_alone_for_htmx(
    client: TestClient, store: Store
) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}/compare").text
    picks = re.findall(r'<a class="pick" href="([^"]+)" data-panel="([^"]+)"', page)
    assert len(picks) == 6  # four chunks, [DONE] and the end
    href, part = (unescape(url) for url in picks[2])
    assert "step=2" in href and href.startswith(f"/s/{stream_id}/compare?")
    followed = client.get(href).text
    assert 'aria-current="step"' in row(followed, 2) and 'data-step="2"' in panel(followed)
    assert part.startswith(f"/s/{stream_id}/compare/step?") and "step=2" in part
    alone = client.get(part, headers=HX)
    assert alone.status_code == 200
    assert alone.text.lstrip().startswith('<section id="compare-step"')
    assert 'data-step="2"' in alone.text and "<html" not in alone.text
    # without htmx, the panel's URL sends the browser to the page with that step selected
    moved = client.get(part)
    assert moved.status_code == 303 and "step=2" in moved.headers["location"]
    assert "/compare?" in moved.headers["location"]
    example = client.get("/examples/continuation/compare/step?step=4", headers=HX)
    assert example.status_code == 200 and 'data-step="4"' in example.text
    assert client.get("/examples/nope/compare/step?step=1", headers=HX).status_code == 404


def test_the_selected_row_is_in_the_window_shown(client: TestClient, store: Store) -> None:
    chunks = [chunk(frag(0, "c", "f", ""))] + [chunk(frag(args="x")) for _ in range(90)]
    stream_id = store(sse(*chunks, chunk(finish="tool_calls")))
    page = client.get(f"/s/{stream_id}/compare?step=85").text  # windows of 40 rows
    assert 'aria-current="step"' in row(page, 85)
    assert 'id="crow-0"' not in page and 'data-step="85"' in panel(page)
    clamped = client.get(f"/s/{stream_id}/compare?step=999").text
    assert 'data-step="93"' in panel(clamped)  # 92 chunks, [DONE], the end
    assert client.get(f"/s/{stream_id}/compare?step=x").status_code == 400


def test_compare_opens_its_stream_in_the_playground(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url, source in (
        (f"/s/{stream_id}/compare", stream_id),
        ("/examples/continuation/compare", "example%3Acontinuation"),
    ):
        found = re.search(r'id="edit-copy" href="([^"]+)"', client.get(url).text)
        assert found is not None
        assert unescape(found.group(1)) == f"/play?from={source}"
        assert client.get(unescape(found.group(1))).status_code == 200
