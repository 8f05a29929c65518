"""The teaching layer in a real browser: play/pause, space, compare stepping, narration."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.pagekit import Watched
from tests.web.webkit import CONTINUATION

pytestmark = pytest.mark.browser


def test_play_advances_the_timeline_and_space_pauses_it(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}?step=0&policy=adr-0019&path=client")
    page.evaluate("window.__sameDocument = true")
    stage = page.locator("#stage")
    expect(page.locator("#player")).to_be_visible()
    page.select_option("#play-speed", "2000")  # slow: a step every two seconds
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press(" ")
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "true")
    expect(stage).to_have_attribute("data-step", "1")  # one step played, as by hand
    expect(page).to_have_url(re.compile(r"step=1&"))
    expect(page.locator("#detail h2")).to_contain_text("Step 1")
    page.keyboard.press(" ")
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    # paused before the next tick: a hand step lands exactly one further
    page.keyboard.press("ArrowRight")
    expect(stage).to_have_attribute("data-step", "2")
    page.select_option("#play-speed", "400")
    page.locator("#play").click()  # play again, to the end, where it stops by itself
    expect(stage).to_have_attribute("data-step", "5")
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    assert page.evaluate("window.__sameDocument") is True
    watched.assert_clean()


def test_play_stops_at_an_anomaly_when_asked(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(CONTINUATION)
    page.goto(f"{watched.base}/s/{stream_id}?step=0&policy=exact-key&path=client")
    page.select_option("#play-speed", "400")
    page.check("#play-stop")
    page.locator("#play").click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "1")
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#stage")).to_have_attribute("data-step", "1")  # the first phantom-call
    expect(page.locator("#detail .problem")).to_contain_text("phantom-call")
    watched.assert_clean()


def test_an_example_opens_at_its_step_and_narrates_as_it_plays(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/examples/continuation")
    expect(page.locator("#stage")).to_have_attribute("data-step", "2")
    expect(page.locator("#detail .narration")).to_contain_text("continuation of block #0")
    expect(page.locator("#story li.now")).to_have_attribute("data-step", "2")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#detail .narration")).to_contain_text("Another bare fragment")
    expect(page.locator("#story li.now")).to_have_attribute("data-step", "3")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stage")).to_have_attribute("data-step", "4")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#stage")).to_have_attribute("data-step", "5")
    expect(page.locator("#detail .narration")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"/examples/continuation\?step=5&"))
    watched.assert_clean()


def test_compare_steps_with_keys_and_plays(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/examples/continuation/compare")
    current = page.locator("#compare-rows .crow[aria-current]")
    expect(current).to_have_attribute("id", "crow-2")
    expect(page.locator("#narration")).to_contain_text("Step 2: A bare argument fragment")
    page.keyboard.press("ArrowRight")
    expect(current).to_have_attribute("id", "crow-3")
    expect(page).to_have_url(re.compile(r"[?&]step=3"))
    page.keyboard.press("k")
    expect(current).to_have_attribute("id", "crow-2")
    page.keyboard.press("Home")
    expect(current).to_have_attribute("id", "crow-0")
    page.select_option("#play-speed", "400")
    page.check("#play-stop")
    page.locator("#play").click()
    expect(current).to_have_attribute("id", "crow-2")  # the first row with an anomaly
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    page.uncheck("#play-stop")
    page.locator("#play").click()
    expect(current).to_have_attribute("id", "crow-7")  # to the end
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    page.locator("#story .told-step").first.click()
    expect(current).to_have_attribute("id", "crow-1")
    watched.assert_clean()


def test_the_playground_updates_live_as_the_user_types(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/play")
    page.evaluate("window.__sameDocument = true")
    verdict = page.locator("#play-verdict")
    expect(verdict).to_contain_text("phantom")
    before = verdict.inner_text()
    address = page.url
    # give every bare continuation an index: exact-key then agrees with adr-0019
    for c in (2, 3, 4):
        page.locator(f"input[name='c{c}.f0.index.on']").check()
        page.locator(f"input[name='c{c}.f0.index']").type("0")
    expect(verdict).not_to_have_text(before)
    expect(verdict).not_to_contain_text("phantom")
    expect(page).to_have_url(re.compile(r"/play\?s=[\w-]+$"))
    assert page.url != address
    assert page.evaluate("window.__sameDocument") is True
    # the address holds the variant: loading it shows the same result
    page.goto(page.url)
    expect(page.locator("#play-verdict")).not_to_contain_text("phantom")
    watched.assert_clean()
    chunks = page.locator("fieldset.play-chunk")
    count = chunks.count()
    page.locator("#chunk-1 button[value='del:1']").click()
    expect(chunks).to_have_count(count - 1)
    page.get_by_role("button", name="Save as a new stream").click()
    expect(page).to_have_url(re.compile(r"/s/[\w-]{22,}\?policy="))  # its findings first
    watched.assert_clean()


def test_compare_panel_follows_the_selected_step(watched: Watched) -> None:
    page = watched.page
    page.goto(f"{watched.base}/examples/continuation/compare?step=1")
    page.evaluate("window.__sameDocument = true")
    panel = page.locator("#compare-step")
    exact_key = panel.locator(".step-side[data-policy='exact-key'] .step-blocks li")
    adr = panel.locator(".step-side[data-policy='adr-0019'] .step-blocks li")
    expect(panel).to_have_attribute("data-step", "1")
    expect(exact_key).to_have_count(1)
    page.keyboard.press("j")  # the timeline's key for the next step
    expect(panel).to_have_attribute("data-step", "2")
    expect(exact_key).to_have_count(2)
    expect(exact_key.nth(1)).to_contain_text("phantom")
    expect(adr).to_have_count(1)
    expect(page).to_have_url(re.compile(r"[?&]step=2"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(panel).to_have_attribute("data-step", "4")
    expect(exact_key).to_have_count(4)
    expect(adr.first).to_contain_text('"unit":"C"}')
    # the input of the selected step: index, id and name struck through as absent
    expect(panel.locator(".step-input del.absent")).to_have_text(["index", "id", "name"])
    page.locator("#crow-1 a.pick").click()
    expect(panel).to_have_attribute("data-step", "1")
    expect(page.locator("#compare-rows .crow[aria-current]")).to_have_attribute("id", "crow-1")
    # playing moves the panel with the selection, and pausing leaves it on the row shown
    page.select_option("#play-speed", "400")
    page.check("#play-stop")
    page.locator("#play").click()
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#compare-rows .crow[aria-current]")).to_have_attribute("id", "crow-2")
    expect(panel).to_have_attribute("data-step", "2")
    assert page.evaluate("window.__sameDocument") is True
    watched.assert_clean()


def test_compare_steps_without_javascript(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server}/examples/continuation/compare?step=1")
    page.locator("#crow-3 a.pick").click()
    expect(page).to_have_url(re.compile(r"[?&]step=3"))
    expect(page.locator("#compare-step")).to_have_attribute("data-step", "3")
    expect(page.locator("#crow-3")).to_have_attribute("aria-current", "step")
    context.close()
