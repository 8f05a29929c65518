"""The diff page and its picker in Chromium: pick B on a stream page, paste B, follow a row to
either timeline, and the page at a laptop's and a phone's width."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.pagekit import Watched
from tests.streamkit import chunk, frag, sse

pytestmark = pytest.mark.browser

PARIS = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)
BARE = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(args='{"city":')),
    chunk(frag(args=' "Paris"}')),
    chunk(finish="tool_calls"),
)
CONTINUATION_EXAMPLE = sse(
    chunk(frag(0, "call_w1", "get_weather", '{"city": "Paris", "unit": "C"}')),
    chunk(finish="tool_calls"),
)
"""The call of the built-in example `continuation`, well formed."""
LYON_AND_TIME = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Lyon"}')),
    chunk(frag(1, "call_2", "get_time", "{}")),
    chunk(finish="tool_calls"),
)


def test_pick_an_example_on_a_stream_page_and_follow_a_row(watched: Watched) -> None:
    page = watched.page
    a = watched.store(CONTINUATION_EXAMPLE, "well formed")
    page.goto(f"{watched.base}/s/{a}")
    expect(page.locator("#compare-with .compare-with-body")).to_be_hidden()
    page.locator("#compare-with summary").click()
    page.select_option("#compare-b", "example:continuation")
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page).to_have_url(re.compile(r"/diff\?a=[\w-]+&b=example%3Acontinuation$"))
    expect(page.locator("#diff-verdict")).to_contain_text("Same calls.")
    expect(page.locator("#side-b")).to_contain_text("bare-continuation")
    page.locator("#call-1").get_by_role("link", name="B's timeline, step 1").click()
    expect(page).to_have_url(re.compile(r"/examples/continuation\?step=1"))
    page.go_back()
    page.locator("#call-1").get_by_role("link", name="A's timeline, step 0").click()
    expect(page).to_have_url(re.compile(rf"/s/{a}\?step=0"))
    watched.assert_clean()


def test_paste_b_and_see_where_the_calls_part(watched: Watched) -> None:
    page = watched.page
    a = watched.store(PARIS, "paris")
    page.goto(f"{watched.base}/s/{a}")
    page.locator("#compare-with summary").click()
    page.fill("#compare-text", LYON_AND_TIME)
    page.get_by_role("button", name="Store it and compare").click()
    expect(page).to_have_url(re.compile(rf"/diff\?a={a}&b=[\w-]+$"))
    expect(page.locator("#diff-verdict")).to_contain_text("Different calls.")
    expect(page.locator("#call-1 .differences")).to_contain_text(
        'arguments.city: "Paris" vs "Lyon"'
    )
    expect(page.locator("#call-2 h3")).to_contain_text("only in B")
    expect(page.locator("#call-2 .diff-absent")).to_contain_text("no such call")
    page.get_by_role("link", name="Swap A and B").click()
    expect(page.locator("#call-2 h3")).to_contain_text("only in A")
    page.get_by_role("link", name="compare A with another…").click()
    expect(page.locator("h1")).to_contain_text("Compare Pasted to compare with paris with")
    watched.assert_clean()


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_the_page_fits_the_screen(watch: object, width: int, height: int) -> None:
    watched = watch(width, height)  # type: ignore[operator]
    page = watched.page
    a, b = watched.store(BARE, "bare"), watched.store(LYON_AND_TIME, "lyon and time")
    page.goto(f"{watched.base}/diff?a={a}&b={b}")
    expect(page.locator("#call-2")).to_be_visible()
    overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    first, second = (page.locator(f"#call-1 .side-{x}").bounding_box() for x in "ab")
    assert first is not None and second is not None
    if width < 760:  # A above B on a phone, side by side on a laptop
        assert second["y"] > first["y"]
    else:
        assert second["x"] > first["x"] and abs(second["y"] - first["y"]) < 2
    page.goto(f"{watched.base}/s/{a}")
    page.locator("#compare-with summary").click()
    body = page.locator("#compare-with .compare-with-body").bounding_box()
    assert body is not None and body["x"] >= 0 and body["x"] + body["width"] <= width
    watched.assert_clean()
