"""A real browser against a real server: swaps, keys, pushed URLs, Back, nothing injected runs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Route, expect

from tests.browser.pagekit import Watched
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import CONTINUATION

pytestmark = pytest.mark.browser

STEP = re.compile(r"[?&]step=(\d+)")


def step_of(url: str) -> int:
    found = STEP.search(url)
    assert found, url
    return int(found.group(1))


def test_paste_a_stream_and_land_on_its_timeline(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/")
    page.fill("#text", CONTINUATION)
    page.select_option("select[name=policy]", "exact-key")
    page.get_by_role("button", name="Show the timeline").click()
    expect(page).to_have_url(re.compile(r"/s/[\w-]{22,}\?policy=exact-key&path=client$"))
    expect(page.locator("#timeline .row")).to_have_count(6)
    expect(page.locator("#stage")).to_have_attribute("data-step", "0")
    expect(page.locator(".summary")).to_contain_text("phantom-call")
    watched.assert_clean()


def test_upload_a_file(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/")
    page.set_input_files(
        "#file",
        files=[{"name": "w.sse", "mimeType": "text/plain", "buffer": CONTINUATION.encode()}],
    )
    page.get_by_role("button", name="Show the timeline").click()
    expect(page.locator("h1")).to_have_text("get_weather (w.sse)")  # titled from what it holds
    watched.assert_clean()


def test_keyboard_steps_and_the_url_and_panels_follow(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}?step=0&policy=exact-key&path=client")
    page.evaluate("window.__sameDocument = true")
    stage = page.locator("#stage")
    page.keyboard.press("ArrowRight")
    expect(stage).to_have_attribute("data-step", "1")
    expect(page).to_have_url(re.compile(r"step=1&policy=exact-key&path=client$"))
    expect(page.locator("#detail h2")).to_contain_text("Step 1")
    expect(page.locator("#state .block")).to_have_count(2)
    expect(page.locator("#state mark")).to_have_text('{"city":')
    expect(page.locator("#detail")).to_contain_text("phantom")
    expect(page.locator("#row-1")).to_have_attribute("aria-current", "step")
    page.keyboard.press("j")
    expect(stage).to_have_attribute("data-step", "2")
    expect(page.locator("#state .block")).to_have_count(3)
    expect(page.locator("#state mark")).to_have_text('"Paris"}')
    expect(page.locator("#row-2")).to_have_attribute("aria-current", "step")
    expect(page.locator("#row-1")).not_to_have_attribute("aria-current", "step")
    page.keyboard.press("k")
    expect(stage).to_have_attribute("data-step", "1")
    page.keyboard.press("End")
    expect(stage).to_have_attribute("data-step", "5")
    expect(page.locator("#detail")).to_contain_text("toolcall_end")
    page.keyboard.press("Home")
    expect(stage).to_have_attribute("data-step", "0")
    page.keyboard.press("n")
    expect(stage).to_have_attribute("data-step", "1")  # the first phantom-call
    expect(page.locator("#detail .problem")).to_contain_text("phantom-call")
    page.locator("#next-new").click()
    expect(stage).to_have_attribute("data-step", "2")
    page.keyboard.press("?")
    expect(page.locator("#keys dl")).to_be_visible()
    # every step was an htmx swap: the document never reloaded
    assert page.evaluate("window.__sameDocument") is True
    watched.assert_clean()


def test_nothing_done_during_a_swap_is_undone_after_it(watched: Watched) -> None:
    """htmx 4's settle phase restores swapped elements' attributes after a timer, which undid
    a `?` pressed in that window and left fresh links unwired (a key press then loaded a whole
    page). The app turns settling off; this opens the keys list at the instant of the swap."""
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    page.evaluate(
        """window.__sameDocument = true;
        document.addEventListener("htmx:before:settle", () => {
            document.getElementById("keys").open = true;
        }, {once: true});"""
    )
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stage")).to_have_attribute("data-step", "1")
    expect(page.locator("#keys dl")).to_be_visible()
    assert page.evaluate("document.getElementById('keys').open") is True
    assert page.evaluate("window.__sameDocument") is True
    watched.assert_clean()


def test_reload_and_back_keep_the_step(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}?step=0&policy=adr-0019&path=client")
    stage = page.locator("#stage")
    for expected in ("1", "2", "3"):
        page.keyboard.press("ArrowRight")
        expect(stage).to_have_attribute("data-step", expected)
    page.reload()
    expect(stage).to_have_attribute("data-step", "3")
    expect(page.locator("#row-3")).to_have_attribute("aria-current", "step")
    page.go_back()
    expect(page).to_have_url(re.compile(r"step=2&"))
    expect(stage).to_have_attribute("data-step", "2")
    expect(page.locator("#detail h2")).to_contain_text("Step 2")
    page.go_back()
    expect(stage).to_have_attribute("data-step", "1")
    page.go_forward()
    expect(stage).to_have_attribute("data-step", "2")
    page.keyboard.press("ArrowRight")  # the keys still work after a history restore
    expect(stage).to_have_attribute("data-step", "3")
    watched.assert_clean()


def test_clicking_a_row_selects_it(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}")
    page.locator("#row-4").click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "4")
    expect(page).to_have_url(re.compile(r"step=4&"))
    expect(page.locator("#row-4")).to_have_attribute("aria-current", "step")
    watched.assert_clean()


def test_long_timeline_loads_rows_on_scroll_and_around_a_far_step(watched: Watched) -> None:
    page = watched.page
    headers = (chunk(frag(0, "call_a", "f", "")), chunk(frag(1, "call_b", "g", "")))
    pieces = (chunk(frag(n % 2, args=f"{n},")) for n in range(298))  # two calls in turn: no
    stream_id = watched.store(sse(*headers, *pieces, chunk(finish="tool_calls")))  # run folds
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    rows = page.locator("#timeline .row")
    expect(rows).to_have_count(40)
    page.locator("#row-39").scroll_into_view_if_needed()
    expect(page.locator("#row-79")).to_be_attached()
    page.keyboard.press("End")
    expect(page.locator("#stage")).to_have_attribute("data-step", "302")
    expect(page.locator("#row-302")).to_have_attribute("aria-current", "step")
    expect(page.locator("#row-302")).to_be_in_viewport()
    watched.assert_clean()


def test_compare_page_marks_the_differing_rows(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}/compare")
    expect(page.locator("#verdict")).to_contain_text("exact-key: 3 blocks, 2 phantom calls")
    expect(page.locator(".crow")).to_have_count(6)
    differing = page.locator(".crow.differs")
    expect(differing).to_have_count(3)
    expect(page.locator("#crow-1")).to_have_class(re.compile(r"\bdiffers\b"))
    expect(page.locator("#crow-0")).not_to_have_class(re.compile(r"\bdiffers\b"))
    page.get_by_role("link", name=re.compile("differing only")).click()
    expect(page.locator(".crow")).to_have_count(3)
    watched.assert_clean()


PAYLOADS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


def test_injected_markup_is_shown_as_text_and_runs_nothing(watched: Watched) -> None:
    page = watched.page
    both = "".join(PAYLOADS)
    text = sse(
        chunk(content=both),
        chunk(reasoning_content=both),
        chunk(frag(0, both, both, "")),
        chunk(frag(args=PAYLOADS[0])),
        chunk(frag(args=PAYLOADS[1])),
        chunk(frag(1, name=PAYLOADS[1])),
        chunk(finish="tool_calls"),
    )
    stream_id = watched.store(text, title=both)
    page.goto(f"{watched.base}/s/{stream_id}?step=0&policy=exact-key&path=client")
    expect(page.locator("h1")).to_have_text(both)
    stage = page.locator("#stage")
    for step in range(1, 9):
        page.keyboard.press("ArrowRight")
        expect(stage).to_have_attribute("data-step", str(step))
        if step == 5:
            expect(page.locator("#state")).to_contain_text(PAYLOADS[1])
            expect(page.locator("#state")).to_contain_text(PAYLOADS[0])
    page.goto(f"{watched.base}/s/{stream_id}/compare")
    expect(page.locator(".crow")).to_have_count(9)
    page.goto(f"{watched.base}/s/{stream_id}?step=4&policy=adr-0019&path=client")
    expect(page.locator("#detail")).to_contain_text(PAYLOADS[0])
    assert page.locator("img[src=x]").count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    watched.assert_clean()


def test_a_failing_swap_shows_the_full_error_page(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}?step=1")
    page.evaluate(
        "document.getElementById('next').setAttribute('hx-get', location.pathname + '?step=oops')"
    )
    page.keyboard.press("ArrowRight")
    expect(page.locator(".error-page h1")).to_contain_text("does not understand")
    expect(page.locator("#stage")).to_have_count(0)
    assert [e for e in watched.errors if "400" not in e] == []


def test_api_docs_render_their_operations_from_this_server_alone(watched: Watched) -> None:
    page = watched.page
    here = urlsplit(watched.base).netloc
    elsewhere: list[str] = []

    def only_here(route: Route) -> None:
        if urlsplit(route.request.url).netloc == here:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_here)
    page.goto(f"{watched.base}/docs")
    # 4 + the team's 8 (test_web_team.py) + minimise's 3 (test_web_minimise.py) + capture's 2
    # + the diff's 1 (test_web_diff.py) + POST /api/play
    expect(page.locator(".opblock")).to_have_count(19)
    expect(page.locator(".opblock-summary-path").first).to_contain_text("/api/streams")
    assert elsewhere == []
    watched.assert_clean()


TWO_HEADERS = sse(
    chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")),
    chunk(frag(args='{"city": ')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
)


def test_clicking_an_anomaly_lands_on_its_step(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(TWO_HEADERS)
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    page.evaluate("window.__sameDocument = true")
    page.locator("#anomalies .aitem").nth(1).click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "2")
    expect(page).to_have_url(re.compile(r"[?&]step=2&"))
    expect(page.locator("#detail h2")).to_contain_text("Step 2")
    expect(page.locator("#detail .problem")).to_contain_text("ambiguous-continuation")
    expect(page.locator("#row-2")).to_have_attribute("aria-current", "step")
    expect(page.locator("#overview .oc").nth(2)).to_have_class(re.compile(r"\bcur\b"))
    # the filter swaps the list alone and pushes its URL
    page.locator("#anomalies .afilter", has_text="empty-arguments").click()
    expect(page.locator("#anomalies .agroup")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"anomaly=empty-arguments"))
    page.locator("#anomalies .aitem").first.click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "5")
    expect(page).to_have_url(re.compile(r"step=5&.*anomaly=empty-arguments"))
    assert page.evaluate("window.__sameDocument") is True
    page.reload()
    expect(page.locator("#anomalies .agroup")).to_have_count(1)
    watched.assert_clean()


def test_clicking_an_overview_mark_lands_on_its_step(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(TWO_HEADERS)
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    page.evaluate("window.__sameDocument = true")
    marked = page.locator("#overview .oc.e")
    expect(marked).to_have_count(2)
    marked.nth(0).click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "1")
    expect(page).to_have_url(re.compile(r"[?&]step=1&"))
    expect(page.locator("#detail h2")).to_contain_text("Step 1")
    expect(page.locator("#overview .oc.cur")).to_have_count(1)
    expect(page.locator("#overview .oc").nth(1)).to_have_class(re.compile(r"\bcur\b"))
    page.locator("#overview .oc.w").click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "5")
    expect(page.locator("#state")).to_contain_text("get_weather would be called with {}")
    assert page.evaluate("window.__sameDocument") is True
    watched.assert_clean()
