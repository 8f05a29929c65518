"""The timeline in a real browser: End scrolls to the last row, runs step with the keyboard,
the laptop and phone layouts keep the state panel and the stepper in view."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.browser.pagekit import Watched
from tests.streamkit import chunk, frag, sse
from tests.web.test_web_rows import long_run

pytestmark = pytest.mark.browser


def interleaved(n: int) -> str:
    """Two calls whose fragments alternate: every row differs from the one before (no runs)."""
    return sse(
        chunk(frag(0, "call_a", "first", "[")),
        chunk(frag(1, "call_b", "second", "[")),
        *(chunk(frag(k % 2, args=f"{k},")) for k in range(n)),
        chunk(frag(0, args="0]")),
        chunk(frag(1, args="1]"), finish="tool_calls"),
    )


IN_ITS_BOX = (
    "s => { const r = document.querySelector(s); if (!r) return false;"
    " const row = r.getBoundingClientRect();"
    " const box = document.querySelector('#timeline .rows').getBoundingClientRect();"
    " return row.top >= box.top - 1 && row.bottom <= box.bottom + 1; }"
)
"""Whether a timeline row is scrolled into view inside the rows' own box."""


def test_end_puts_the_last_row_in_the_viewport(watch: Callable[[int, int], Watched]) -> None:
    """On a laptop the row is in the window; on a phone, where the timeline is above the stage,
    the step's detail is, and the row is in view in the timeline's own box."""
    for width, height in ((1366, 900), (390, 844)):
        watched = watch(width, height)
        page = watched.page
        stream_id = watched.store(interleaved(400))
        page.goto(f"{watched.base}/s/{stream_id}?step=0")
        page.locator("#row-0").scroll_into_view_if_needed()
        expect(page.locator("#row-0")).to_be_in_viewport()
        stage = page.locator("#stage")
        for key, step in (("End", 405), ("Home", 0)):
            page.keyboard.press(key)
            expect(stage).to_have_attribute("data-step", str(step))
            row = page.locator(f"#row-{step}")
            expect(row).to_have_attribute("aria-current", "step")
            if width > 700:
                expect(row).to_be_in_viewport(ratio=0.9)
            else:
                page.wait_for_function(IN_ITS_BOX, arg=f"#row-{step}")
                expect(page.locator("#detail-title")).to_be_in_viewport()
        watched.assert_clean()


def test_the_keyboard_steps_through_a_collapsed_run(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(long_run(60))
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    page.evaluate("window.__sameDocument = true")
    run = page.locator("#run-1")
    expect(run).to_contain_text("steps 1\u201360: 60 continuations onto #0 write_file")
    expect(page.locator("#row-5")).to_have_count(0)
    stage = page.locator("#stage")
    for step in range(1, 5):
        page.keyboard.press("ArrowRight")
        expect(stage).to_have_attribute("data-step", str(step))
        row = page.locator(f"#row-{step}")
        expect(row).to_have_attribute("aria-current", "step")
        expect(row).to_be_in_viewport()
    expect(row).to_contain_text('+"line 3 "')
    expect(page.locator("#run-1.run-head")).to_contain_text("skip to step 61")
    page.locator("#skip-run-1").click()
    expect(stage).to_have_attribute("data-step", "61")
    expect(page.locator("#row-61")).to_have_attribute("aria-current", "step")
    page.keyboard.press("ArrowLeft")
    expect(stage).to_have_attribute("data-step", "60")
    expect(page.locator("#row-60")).to_have_attribute("aria-current", "step")
    expect(page).to_have_url(re.compile(r"step=60&"))
    assert page.evaluate("window.__sameDocument") is True
    watched.assert_clean()


def test_clicking_a_collapsed_run_shows_its_rows(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(long_run(60))
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    page.locator("#run-1").click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "1")
    expect(page.locator("#row-1")).to_have_attribute("aria-current", "step")
    expect(page.locator("#row-20")).to_be_attached()
    expect(page.locator("#run-1.run-head")).to_be_visible()
    watched.assert_clean()


def test_a_laptop_keeps_the_state_panel_in_view(watch: Callable[[int, int], Watched]) -> None:
    watched = watch(1366, 900)
    page = watched.page
    stream_id = watched.store(interleaved(40))
    page.goto(f"{watched.base}/s/{stream_id}?step=12")
    expect(page.locator("#state .block").first).to_be_in_viewport()
    expect(page.locator("#detail .whole-chunk pre")).not_to_be_visible()
    page.get_by_text("show the whole chunk").click()
    expect(page.locator("#detail .whole-chunk pre")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator("#state .block").first).to_be_in_viewport()
    page.locator("#detail .whole-chunk pre").evaluate("(e) => e.scrollIntoView(false)")
    expect(page.locator("#state .block").first).to_be_in_viewport()
    watched.assert_clean()


def test_a_phone_keeps_the_stepper_in_reach(watch: Callable[[int, int], Watched]) -> None:
    watched = watch(390, 844)
    page = watched.page
    stream_id = watched.store(interleaved(40))
    page.goto(f"{watched.base}/s/{stream_id}?step=2")
    following = page.locator("#next")
    expect(following).to_be_in_viewport(ratio=0.9)
    for where in ("document.body.scrollHeight", "document.body.scrollHeight / 2"):
        page.evaluate(f"window.scrollTo(0, {where})")
        expect(following).to_be_in_viewport(ratio=0.9)
    following.click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "3")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stage")).to_have_attribute("data-step", "4")
    # the step's detail comes into view; the row, in the timeline's own box
    expect(page.locator("#detail-title")).to_be_in_viewport()
    expect(page.locator("#row-4")).to_have_attribute("aria-current", "step")
    page.wait_for_function(IN_ITS_BOX, arg="#row-4")
    # the fragment's key table: a note column wide enough for words, not one letter a line
    notes = page.locator("#detail .keys-table .why")
    expect(notes.first).to_be_visible()
    for index in range(notes.count()):
        box = notes.nth(index).bounding_box()
        assert box is not None and box["width"] > 200, box
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    watched.assert_clean()


NUMBERS_FIT = (
    "() => { const ink = el => { const r = document.createRange(); r.selectNodeContents(el);"
    " return r.getBoundingClientRect(); };"
    " return [...document.querySelectorAll('#timeline .row:not(.run)')].every(row => {"
    " const [n, line, kind] = ['.n', '.line', '.kind'].map(s => ink(row.querySelector(s)));"
    " return n.right <= line.left && line.right <= kind.left; }); }"
)
"""Whether every step row's number, line and kind (their text, which may overflow its cell)
sit side by side, none over the next."""


def test_a_long_streams_step_and_line_numbers_do_not_run_together(watched: Watched) -> None:
    """`12,345` and `L24,691` are wider than a short stream's numbers: the columns grow."""
    page = watched.page
    stream_id = watched.store(long_run(12_000))
    page.goto(f"{watched.base}/s/{stream_id}?step=11000")
    expect(page.locator("#row-11000")).to_have_attribute("aria-current", "step")
    expect(page.locator("#row-11000 .line")).to_have_text(re.compile(r"L2\d,\d{3}"))
    assert page.evaluate(NUMBERS_FIT)
    rows = page.locator("#timeline .row")
    drawn = rows.count()
    page.locator("#timeline .more").last.scroll_into_view_if_needed()  # rows loaded later
    expect(rows).not_to_have_count(drawn)
    assert page.evaluate(NUMBERS_FIT)
    watched.assert_clean()
