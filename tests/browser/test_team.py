"""Two browsers working one stream: rename in place, a note's link, delete for everyone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.pagekit import Watched
from tests.web.webkit import CONTINUATION

pytestmark = pytest.mark.browser


def paste(watched: Watched, title: str) -> str:
    """Store through the home page's form (so this browser holds the delete cookie); its id."""
    page = watched.page
    page.goto(f"{watched.base}/")
    page.fill("#text", CONTINUATION)
    page.fill("input[name=title]", title)
    page.get_by_role("button", name="Show the timeline").click()
    expect(page).to_have_url(re.compile(r"/s/[\w-]{22,}\?policy="))
    page.wait_for_load_state("load")  # the URL changes before app.js binds the keys
    found = re.search(r"/s/([\w-]+)\?", page.url)
    assert found
    return found.group(1)


def test_rename_in_place(watched: Watched) -> None:
    page = watched.page
    stream_id = paste(watched, "before")
    page.evaluate("window.__sameDocument = true")
    page.locator("#stream-title summary").click()
    title = page.locator("#title-input")
    title.fill("after <b>the</b> fix")
    title.press("Enter")
    expect(page.locator("#stream-title h1")).to_have_text("after <b>the</b> fix")
    expect(page.locator("#stream-title h1 b")).to_have_count(0)
    assert page.evaluate("window.__sameDocument") is True  # an htmx swap, not a reload
    page.goto(f"{watched.base}/s/{stream_id}?step=2")
    expect(page.locator("h1")).to_have_text("after <b>the</b> fix")
    expect(page).to_have_title("after <b>the</b> fix · step 2 · streamviz")
    watched.assert_clean()


def test_a_notes_link_opens_its_step_in_another_browser(watched: Watched, browser: Browser) -> None:
    page = watched.page
    stream_id = paste(watched, "noted")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stage")).to_have_attribute("data-step", "1")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stage")).to_have_attribute("data-step", "2")
    expect(page).to_have_title("noted · step 2 · streamviz")
    page.fill("#note-text", "the city arrives here, <i>bare</i>")
    page.fill(".add-note input[name=author]", "Ann")
    page.get_by_role("button", name="Add note").click()
    expect(page).to_have_url(re.compile(r"step=2#note-\d+$"))
    note = page.locator(".step-note")
    expect(note).to_contain_text("the city arrives here, <i>bare</i>")
    expect(page.locator("#row-2 .note-flag")).to_have_count(1)
    expect(page.locator("#notes li")).to_have_count(1)
    link = page.url
    assert f"/s/{stream_id}?" in link

    other = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        theirs = other.new_page()
        theirs.goto(link)
        expect(theirs.locator("#stage")).to_have_attribute("data-step", "2")
        note_id = link.rsplit("#", 1)[1]
        expect(theirs.locator(f"#{note_id}")).to_be_visible()
        expect(theirs.locator(f"#{note_id}")).to_contain_text("Ann")
        expect(theirs.locator("#delete-stream")).to_have_count(0)  # not the browser that stored it
    finally:
        other.close()
    watched.assert_clean()


def test_delete_and_both_links_answer_404(watched: Watched, browser: Browser) -> None:
    page = watched.page
    stream_id = paste(watched, "to delete")
    link = f"{watched.base}/s/{stream_id}?step=1"
    other = browser.new_context()
    try:
        theirs = other.new_page()
        assert theirs.goto(link).status == 200  # type: ignore[union-attr]
        page.goto(link)
        page.locator("#delete-stream").click()
        expect(page.locator("h1")).to_contain_text("Delete “to delete”?")
        page.get_by_role("button", name="Delete it for everyone").click()
        expect(page).to_have_url(f"{watched.base}/streams?deleted=1")
        expect(page.locator(".notice")).to_contain_text("deleted")
        assert page.goto(link).status == 404  # type: ignore[union-attr]
        assert theirs.goto(link).status == 404  # type: ignore[union-attr]
        expect(theirs.locator("h1")).to_have_text("This stream was deleted")
        expect(theirs.locator("main")).to_contain_text("by the browser that stored it")
    finally:
        other.close()
    # the only complaint is the browser's own, about the deleted stream's 404
    assert all("status of 404" in error for error in watched.errors), watched.errors
    assert watched.dialogs == []
