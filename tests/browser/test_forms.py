"""The paste form and the playground's form in a real browser: the button on screen, Ctrl+Enter,
a file and a paste together, typing into an unticked key."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.pagekit import Watched
from tests.web.webkit import CONTINUATION
from webapp.web.views.playground import decode

pytestmark = pytest.mark.browser

STORED = re.compile(r"/s/[\w-]{22,}\?policy=")
"""Where a paste lands: its page under its options, no step named (the findings first)."""
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
FILE = {"name": "w.sse", "mimeType": "text/plain", "buffer": CONTINUATION.encode()}


def in_viewport(page: Page, selector: str) -> bool:
    """The element's whole box lies inside the window, as it is drawn now."""
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None
    return (
        box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= size["width"]
        and box["y"] + box["height"] <= size["height"]
    )


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_the_submit_button_is_on_screen_when_the_home_page_opens(
    watch: Callable[[int, int], Watched], width: int, height: int
) -> None:
    """On a laptop and on a phone alike (where the box is shorter), with its shortcut beside."""
    watched = watch(width, height)
    page = watched.page
    page.goto(f"{watched.base}/")
    expect(page.locator("#submit-button")).to_have_text("Show the timeline")
    assert page.evaluate("window.scrollY") == 0
    assert in_viewport(page, "#submit-button")
    expect(page.locator("#submit-hint")).to_be_visible()
    expect(page.locator("#submit-hint")).to_contain_text("Enter")
    assert page.get_attribute("#text", "aria-describedby") == "submit-hint"
    watched.assert_clean()


def test_a_paste_lands_on_what_broke_where_and_whose_fault_on_a_laptops_first_screen(
    watch: Callable[[int, int], Watched],
) -> None:
    """Every call on index 0 (a provider's quirk, two anomalies): pasted, the page opens on its
    anomalies and the quirk's panel, each heading on screen without a scroll (the landing URL
    named step 0, which puts the stage first: the findings were below 768 px)."""
    watched = watch(1366, 768)
    page = watched.page
    page.goto(f"{watched.base}/")
    page.fill("#text", (CORPUS / "parallel-calls-all-index-0.sse").read_text(encoding="utf-8"))
    page.get_by_role("button", name="Show the timeline").click()
    expect(page).to_have_url(STORED)
    expect(page.locator("#quirks-title")).to_contain_text("Provider quirks")
    expect(page.locator("#quirks")).to_contain_text("shared-index")
    expect(page.locator("#anomalies")).to_contain_text("id-conflict")
    assert page.evaluate("window.scrollY") == 0
    for heading in ("#anomalies-title", "#quirks-title"):
        assert in_viewport(page, heading), heading
    watched.assert_clean()


@pytest.mark.parametrize("keys", ["Control+Enter", "Meta+Enter"])
def test_ctrl_enter_in_the_box_submits_it(watched: Watched, keys: str) -> None:
    page = watched.page
    page.goto(f"{watched.base}/")
    page.fill("#text", CONTINUATION)
    page.locator("#text").press(keys)
    expect(page).to_have_url(STORED)
    expect(page.locator("#timeline .row")).to_have_count(6)
    watched.assert_clean()


def test_a_file_chosen_while_the_box_holds_text_is_named_before_submitting(
    watched: Watched,
) -> None:
    page = watched.page
    page.goto(f"{watched.base}/")
    note = page.locator("#pair-note")
    page.set_input_files("#file", files=[FILE])
    expect(note).to_be_hidden()  # a file alone is fine
    page.fill("#text", "data: something pasted\n")
    expect(note).to_be_visible()
    expect(note).to_contain_text("w.sse")
    expect(note).to_contain_text("one stream at a time")
    # submitting anyway is held here (the server would refuse it and the file would be lost)
    page.get_by_role("button", name="Show the timeline").click()
    expect(page.get_by_role("button", name="Use the file (clear the box)")).to_be_focused()
    assert page.url == f"{watched.base}/"
    page.get_by_role("button", name="Use the file (clear the box)").click()
    expect(note).to_be_hidden()
    expect(page.locator("#text")).to_have_value("")
    expect(page.locator("#submit-button")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("get_weather (w.sse)")
    watched.assert_clean()


def test_the_note_s_other_choice_keeps_the_pasted_text(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/")
    page.fill("#text", CONTINUATION)
    page.set_input_files("#file", files=[FILE])
    page.get_by_role("button", name="Use the pasted text (clear the file)").click()
    expect(page.locator("#pair-note")).to_be_hidden()
    assert page.eval_on_selector("#file", "input => input.files.length") == 0
    page.locator("#text").press("Control+Enter")
    expect(page).to_have_url(STORED)
    watched.assert_clean()


def test_without_javascript_the_server_refuses_the_pair_and_keeps_the_text(
    browser: Browser, live_server: str
) -> None:
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1366, "height": 768}
    )
    page = context.new_page()
    page.goto(f"{live_server}/")
    expect(page.locator("#submit-hint")).to_be_hidden()  # no shortcut without the script
    page.fill("#text", "data: pasted\n")
    page.set_input_files("#file", files=[FILE])
    page.get_by_role("button", name="Show the timeline").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("You pasted 13 characters and chose the file 'w.sse'")
    expect(page.locator("#text")).to_have_value("data: pasted\n")
    assert in_viewport(page, "#submit-button")
    context.close()


def holds_both(url: str) -> bool:
    """The playground's address holds chunk 2's index 0 and chunk 3's name "x"."""
    token = parse_qs(urlsplit(url).query).get("s")
    if not token:
        return False
    chunks = decode(token[0])
    return (
        chunks[2].fragments[0].keys.get("index") == 0
        and chunks[3].fragments[0].keys.get("name") == "x"
    )


def test_typing_into_an_unticked_key_ticks_it_and_the_link_keeps_it(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/play")
    verdict = page.locator("#play-verdict")
    expect(verdict).to_contain_text("adr-0019: 1 block (")
    address = page.url
    box = page.locator("input[name='c2.f0.index.on']")
    expect(box).not_to_be_checked()
    page.locator("input[name='c2.f0.index']").press_sequentially("0")
    expect(box).to_be_checked()
    # said once, after that fragment, and to a screen reader
    told = page.locator("#frag-2-0 .play-ticked")
    expect(told).to_contain_text("index is ticked")
    expect(page.locator("#play-status")).to_contain_text("index is ticked")
    page.locator("input[name='c3.f0.name']").press_sequentially("x")
    expect(page.locator("input[name='c3.f0.name.on']")).to_be_checked()
    expect(page.locator(".play-ticked")).to_have_count(1)
    # the run used both, and the page's address holds the ticked keys
    page.wait_for_url(holds_both)
    assert page.url != address
    expect(verdict).to_contain_text("adr-0019: 2 blocks")  # the name "x" opened a call
    page.goto(page.url)
    expect(page.locator("input[name='c2.f0.index.on']")).to_be_checked()
    expect(page.locator("input[name='c2.f0.index']")).to_have_value("0")
    expect(page.locator("input[name='c3.f0.name.on']")).to_be_checked()
    expect(page.locator("input[name='c3.f0.name']")).to_have_value("x")
    watched.assert_clean()
