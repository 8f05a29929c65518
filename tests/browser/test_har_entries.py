"""A HAR file opened in Chromium: the page opens on its broken entry, and the picker's counts
and the sentence saying why are on screen, not only in the DOM (and stay there on load)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Locator, expect

from tests.browser.pagekit import Watched
from tests.streamkit import har_of
from tests.web.test_web_har_entries import BROKEN, CLEAN, QUIRKY

pytestmark = pytest.mark.browser


def inside(locator: Locator, width: int, height: int) -> None:
    """The element's whole box is inside the viewport."""
    box = locator.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, box


def test_the_picker_shows_each_entrys_counts_on_screen(
    watch: Callable[[int, int], Watched],
) -> None:
    watched = watch(1366, 768)
    page = watched.page
    stream_id = watched.store(har_of(CLEAN, BROKEN, QUIRKY), "a HAR")
    page.goto(f"{watched.base}/s/{stream_id}")
    page.wait_for_load_state("networkidle")
    entries = page.locator("#entries li")
    expect(entries).to_have_count(3)
    shown = entries.nth(1)
    expect(shown.locator("a.entry")).to_have_attribute("aria-current", "true")
    counts = {
        entries.nth(0).locator(".counts"): "clean",
        shown.locator(".chip.sev-error"): "1 error",
        shown.locator(".chip.quirk"): "3 quirks",
        entries.nth(2).locator(".chip.quirk"): "2 quirks",
    }
    for locator, said in counts.items():
        expect(locator).to_have_text(said)
        inside(locator, 1366, 768)
    opened = page.locator("#entry-opened")
    expect(opened).to_have_text(
        "Showing entry 2, the first of the 3 event streams with errors; entry 1 is clean."
    )
    inside(opened, 1366, 768)
    # the page shows entry 2's anomaly, and its next step stays on entry 2
    expect(page.locator(".fact-anomalies")).to_contain_text("invalid-arguments 1")
    page.locator("#next").click()
    expect(page).to_have_url(
        f"{watched.base}/s/{stream_id}?step=1&policy=adr-0019&path=client&har_entry=2"
    )
    watched.assert_clean()
