"""The Share menu and the exported file in Chromium, what a click brings into view, and where
a link to a step lands.

The exported file is opened the way a teammate opens an attachment: from disk, in a browser
context that is offline, with every request it makes recorded (there must be none).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.streamkit import chunk, frag, sse
from tests.web.webkit import CONTINUATION

pytestmark = pytest.mark.browser

TWO_OPEN = sse(
    chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")),
    chunk(frag(args='{"city": ')),
    chunk(frag(args='"Paris"}')),
    chunk(content="and a few words of text after the calls"),
    chunk(finish="tool_calls"),
)
"""Two calls open, then bare continuations: ambiguous continuations at steps 1 and 2."""


def stored(base: str, text: str, title: str) -> str:
    response = httpx.post(f"{base}/api/streams", json={"text": text, "title": title})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture
def laptop(browser: Browser) -> Iterator[BrowserContext]:
    """1366x768, the clipboard allowed (the copy buttons write to it)."""
    context = browser.new_context(
        viewport={"width": 1366, "height": 768},
        permissions=["clipboard-read", "clipboard-write"],
        accept_downloads=True,
    )
    yield context
    context.close()


def open_page(context: BrowserContext, url: str) -> tuple[Page, list[str]]:
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return page, errors


def in_view(page: Page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    height = page.evaluate("innerHeight")
    # a pixel of slack: scrolling "nearest" lines the bottom up to a fraction of a pixel
    return bool(box["y"] >= -1 and box["y"] + box["height"] <= height + 1)


def test_share_a_step_copy_its_link_and_snippet(laptop: BrowserContext, live_server: str) -> None:
    stream_id = stored(live_server, CONTINUATION, "share me")
    page, errors = open_page(laptop, f"{live_server}/s/{stream_id}?step=1")
    page.locator(".share-jump").click()  # the Share button at the top
    menu = page.locator("#share")
    expect(menu).to_have_attribute("open", "")
    expect(page.locator("#share-link")).to_be_focused()
    assert in_view(page, "#share .share-body")
    link = page.locator("#share-link").input_value()
    assert link == f"{live_server}/s/{stream_id}?step=1&policy=adr-0019&path=client"
    page.locator("#share .share-copy", has_text="Copy link").click()
    assert page.evaluate("navigator.clipboard.readText()") == link
    page.locator("[data-copy-from='share-embed']").click()
    expect(page.locator("[data-copy-from='share-embed']")).to_have_text("Snippet copied")
    snippet = page.evaluate("navigator.clipboard.readText()")
    assert snippet.startswith(f'<iframe src="{live_server}/embed/s/{stream_id}?step=1&amp;')
    assert 'width="960" height="540"' in snippet
    page.locator("[data-copy-from='share-replay']").click()
    expect(page.locator("[data-copy-from='share-replay']")).to_have_text("Base URL copied")
    assert page.evaluate("navigator.clipboard.readText()") == f"{live_server}/replay/{stream_id}/v1"
    # the menu follows the step
    page.keyboard.press("Escape")
    page.locator("#next").click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "2")
    expect(page.locator("#share-link")).to_have_value(re.compile(r"\?step=2&"))
    assert errors == []


def test_compare_shares_the_row_it_selects(laptop: BrowserContext, live_server: str) -> None:
    page, errors = open_page(laptop, f"{live_server}/examples/continuation/compare")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#compare-step")).to_have_attribute("data-step", "3")
    page.locator("#compare-step #share > summary").click()
    expect(page.locator("#share-link")).to_have_value(
        re.compile(r"/examples/continuation/compare\?.*&step=3$")
    )
    embed = page.locator("#share-embed").input_value()
    assert f'src="{live_server}/embed/examples/continuation/compare?' in embed
    assert errors == []


def test_the_exported_file_opens_offline_and_fetches_nothing(
    laptop: BrowserContext, browser: Browser, live_server: str, tmp_path: Path
) -> None:
    stream_id = stored(live_server, TWO_OPEN, "two calls open")
    noted = httpx.post(
        f"{live_server}/s/{stream_id}/notes", data={"step": "2", "text": "the guess"}
    )
    assert noted.status_code == 303
    page, _ = open_page(laptop, f"{live_server}/s/{stream_id}?step=2")
    page.locator(".share-jump").click()
    with page.expect_download() as downloading:
        page.locator("#share-export").click()
    download = downloading.value
    assert download.suggested_filename.endswith(".html")
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    offline = browser.new_context(offline=True, viewport={"width": 1366, "height": 768})
    requests: list[str] = []
    offline.on("request", lambda request: requests.append(request.url))
    opened = offline.new_page()
    problems: list[str] = []
    opened.on("console", lambda m: problems.append(m.text))
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.goto(saved.as_uri())
    expect(opened.locator("h1")).to_have_text("two calls open")
    expect(opened.locator("article.step")).to_have_count(7)
    expect(opened.locator("#step-2")).to_contain_text("ambiguous-continuation")
    expect(opened.locator("#notes")).to_contain_text("the guess")
    opened.locator("#timeline a[href='#step-2']").click()
    assert in_view(opened, "#step-2 h2")
    # the inline stylesheet applied (its hash matches the file's own policy): panels are boxed
    border = opened.locator("#step-2").evaluate("e => getComputedStyle(e).borderTopStyle")
    assert border == "solid"
    assert requests == [saved.as_uri()]
    assert problems == []
    offline.close()


def test_clicking_an_anomaly_brings_its_reason_into_view(
    browser: Browser, live_server: str
) -> None:
    """At 1366x768, with and without JavaScript: the step's box of that anomaly (what fired
    and why) is on screen after the click."""
    stream_id = stored(live_server, TWO_OPEN, "two open")
    httpx.post(f"{live_server}/s/{stream_id}/notes", data={"step": "2", "text": "a note"})
    for scripts in (True, False):
        context = browser.new_context(
            viewport={"width": 1366, "height": 768}, java_script_enabled=scripts
        )
        page, errors = open_page(context, f"{live_server}/s/{stream_id}?step=0")
        item = page.locator("#anomalies .aitem[data-step='2']").first
        item.click()
        if scripts:
            expect(page.locator("#stage")).to_have_attribute("data-step", "2")
        else:
            page.wait_for_url(re.compile(r"step=2.*#why-ambiguous-continuation$"))
        reason = "#detail #why-ambiguous-continuation"
        expect(page.locator(reason)).to_contain_text("a continuation went to")
        page.wait_for_function(
            "s => { const b = document.querySelector(s).getBoundingClientRect();"
            " return b.top >= 0 && b.bottom <= innerHeight; }",
            arg=reason,
        )
        assert in_view(page, reason), scripts
        assert errors == []
        context.close()


@pytest.mark.parametrize("key", ["continuation", "ambiguous", "same-index", "server-late"])
@pytest.mark.parametrize("where", ["", "/compare"])
def test_an_example_opens_with_its_story_in_view(
    browser: Browser, live_server: str, key: str, where: str
) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page, errors = open_page(context, f"{live_server}/examples/{key}{where}")
    expect(page.locator("#story .told li.now")).to_have_count(1)
    assert in_view(page, "#story .story-line")
    assert in_view(page, "#story .told li.now")
    assert page.evaluate("scrollY") == 0
    assert errors == []
    context.close()


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/s/{id}?step=2",
        "/s/{id}/compare?step=2",
        "/examples/ambiguous",
        "/examples/ambiguous/compare",
        "/streams",
    ],
)
def test_a_phone_never_scrolls_sideways(browser: Browser, live_server: str, path: str) -> None:
    stream_id = stored(live_server, TWO_OPEN, "a long title " * 6)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page, errors = open_page(context, live_server + path.format(id=stream_id))
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), path
    if page.locator("#share").count():
        page.locator("#share > summary").click()
        expect(page.locator("#share .share-body")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), path
        box = page.locator("#share .share-body").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert errors == []
    context.close()


# Where a link to a step lands, and where stepping brings the eye.

ON_SCREEN = (
    "s => { const e = document.querySelector(s); if (!e) return false;"
    " const b = e.getBoundingClientRect();"
    " const bar = document.querySelector('.step-buttons');"
    " const fixed = bar && getComputedStyle(bar).position === 'fixed';"
    " const bottom = fixed ? bar.getBoundingClientRect().top : innerHeight;"
    " const hit = document.elementFromPoint(b.left + 4, b.top + Math.min(b.height, 16) / 2);"
    " return b.top >= 0 && b.bottom <= bottom + 1 && !!hit && e.contains(hit); }"
)
"""Whether the element's box is inside the window, above a pinned stepping bar (phones), and
its top is not covered by something else (a sticky panel)."""


def on_screen(page: Page, selector: str) -> bool:
    return bool(page.evaluate(ON_SCREEN, selector))


def noted(base: str, stream_id: str, *notes: tuple[int, str]) -> None:
    for step, text in notes:
        response = httpx.post(f"{base}/s/{stream_id}/notes", data={"step": str(step), "text": text})
        assert response.status_code == 303


@pytest.mark.parametrize("scripts", [True, False])
def test_a_shared_step_link_lands_on_its_answer(
    browser: Browser, live_server: str, scripts: bool
) -> None:
    """At 1366x768, a link to a step of a stream with anomalies and notes opens, without
    scrolling, on the step's heading, its rule's reason and the blocks after it, under the
    summary's line (title, anomaly chips); the notes and findings follow below."""
    stream_id = stored(live_server, TWO_OPEN, "two open")
    noted(live_server, stream_id, (1, "check this one"), (2, "the guess"), (3, "text after"))
    context = browser.new_context(
        viewport={"width": 1366, "height": 768}, java_script_enabled=scripts
    )
    page, errors = open_page(context, f"{live_server}/s/{stream_id}?step=2")
    expect(page.locator("#detail-title")).to_contain_text("Step 2")
    expect(page.locator("#detail .step-note")).to_contain_text("the guess")
    reason = "#detail .fragment .reason"
    expect(page.locator(reason).first).to_contain_text("continuation onto block #1")
    for selector in ("#detail-title", reason, "#state-title", ".summary h1", ".fact-anomalies"):
        assert on_screen(page, selector), selector
    assert page.evaluate("scrollY") == 0
    expect(page.locator("#notes li")).to_have_count(3)
    expect(page.locator("#anomalies .agroup")).to_have_count(2)
    assert errors == []
    context.close()


@pytest.mark.parametrize("motion", ["reduce", "no-preference"])
def test_stepping_on_a_phone_brings_the_steps_detail_into_view(
    browser: Browser, live_server: str, motion: Literal["reduce", "no-preference"]
) -> None:
    """At 390x844 the timeline comes before the stage: next and previous, pressed or by their
    keys, show the step's detail, not only the row's highlight (smoothly unless the user
    asks for reduced motion)."""
    stream_id = stored(live_server, TWO_OPEN, "two open")
    noted(live_server, stream_id, (2, "the guess"))
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, reduced_motion=motion
    )
    page, errors = open_page(context, f"{live_server}/s/{stream_id}?step=1")
    assert not on_screen(page, "#detail-title")
    presses = [("#next", "2"), ("ArrowLeft", "1"), ("j", "2"), ("#prev", "1")]
    for press, step in presses:
        page.evaluate("scrollTo(0, 0)")
        if press.startswith("#"):
            page.locator(press).click()
        else:
            page.keyboard.press(press)
        expect(page.locator("#stage")).to_have_attribute("data-step", step)
        expect(page.locator("#detail-title")).to_contain_text(f"Step {step}")
        page.wait_for_function(ON_SCREEN, arg="#detail .fragment .reason")  # the scroll's end
        assert on_screen(page, "#detail-title"), press
    assert errors == []
    context.close()


def test_the_overview_below_the_stage_brings_its_step_into_view(
    laptop: BrowserContext, live_server: str
) -> None:
    """On a page opened at a step the overview strip is below the stage: a click on it shows
    the step it picked."""
    stream_id = stored(live_server, TWO_OPEN, "two open")
    page, errors = open_page(laptop, f"{live_server}/s/{stream_id}?step=0")
    page.locator("#overview").scroll_into_view_if_needed()
    assert not on_screen(page, "#detail-title")
    page.locator("#overview .oc").nth(2).click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "2")
    page.wait_for_function(ON_SCREEN, arg="#detail-title")
    assert errors == []


def test_presenter_mode_is_one_click_from_the_stage(
    laptop: BrowserContext, live_server: str
) -> None:
    stream_id = stored(live_server, TWO_OPEN, "two open")
    page, errors = open_page(laptop, f"{live_server}/s/{stream_id}?step=1")
    link = page.locator("#present-link")
    expect(link).to_be_visible()
    expect(link).to_have_text("Present")
    assert on_screen(page, "#present-link")
    page.locator("#next").click()  # the link follows the step
    expect(link).to_have_attribute("href", re.compile(r"\?step=2&.*present=1"))
    link.click()
    expect(page.locator("body")).to_have_class(re.compile(r"\bpresent\b"))
    expect(page.locator("#stage")).to_have_attribute("data-step", "2")
    expect(link).to_have_text("Stop presenting")
    assert on_screen(page, "#present-link")
    link.click()
    expect(page.locator("body")).not_to_have_class(re.compile(r"\bpresent\b"))
    expect(page).to_have_url(re.compile(r"\?step=2&policy=adr-0019&path=client$"))
    assert errors == []
