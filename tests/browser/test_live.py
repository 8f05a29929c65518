"""A live capture's page in a real browser: it grows while the loopback fake provider is still
sending, keeps a step the user chose, and becomes the ordinary page once the stream ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from tests.capture.fake import Fake, corpus_pieces, serving
from webapp.settings import Settings
from webapp.web.app import create_app

pytestmark = pytest.mark.browser

WAIT = 15.0


@dataclass
class Rig:
    """The fake provider (held at its gates), a streamviz recording it, and a client."""

    fake: Fake
    base: str
    pieces: list[bytes]
    stream_id: str = ""
    received: bytearray = field(default_factory=bytearray)
    headers: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    def call(self) -> None:
        """The application: one streamed request through the proxy, read to its end."""
        url = f"{self.base}/proxy/default/v1/chat/completions"
        body = {"model": "gpt-4o", "stream": True, "messages": []}
        with httpx.stream("POST", url, json=body, timeout=WAIT) as response:
            self.stream_id = response.headers["streamviz-stream-id"]
            self.headers.set()
            for piece in response.iter_raw():
                self.received += piece
        self.done.set()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    pieces = corpus_pieces("interleaved-parallel-calls.sse")
    gates = {3: threading.Event(), 5: threading.Event(), len(pieces) - 1: threading.Event()}
    fake = Fake(script=pieces, gates=gates)
    with serving(fake) as upstream:
        settings = Settings(
            db=str(tmp_path / "live.sqlite3"), upstreams=(f"default={upstream}",),
            live_poll_ms=200, capture_batch_ms=20,
        )  # fmt: skip
        with serving(create_app(settings)) as base:
            found = Rig(fake, base, pieces)
            client = threading.Thread(target=found.call, daemon=True)
            client.start()
            try:
                yield found
            finally:
                for gate in fake.gates.values():
                    gate.set()
                client.join(timeout=WAIT)


@pytest.fixture
def page(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    opened = context.new_page()
    opened.set_default_timeout(WAIT * 1000)
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            errors.append(f"console {message.type}: {message.text}")

    opened.on("console", on_console)
    opened.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    yield opened, errors
    context.close()


def stored_first(rig: Rig, count: int) -> bool:
    """Whether the capture holds the fake's first `count` pieces, and no more (they may come
    in one read of the upstream or several: a stored piece is a read)."""
    raw = httpx.get(f"{rig.base}/api/streams/{rig.stream_id}/raw", timeout=WAIT).content
    return raw == b"".join(rig.pieces[:count])


def wait_until(condition: object, what: str) -> None:
    assert callable(condition)
    done = threading.Event()
    for _ in range(int(WAIT * 100)):
        if condition():
            return
        done.wait(0.01)
    pytest.fail(f"waited {WAIT} s for {what}")


def test_the_live_page_grows_then_becomes_the_ordinary_page(
    rig: Rig, page: tuple[Page, list[str]]
) -> None:
    browser_page, errors = page
    assert rig.headers.wait(WAIT)
    wait_until(lambda: stored_first(rig, 3), "the first three pieces to be stored")
    loads: list[str] = []
    browser_page.on("load", lambda: loads.append(browser_page.url))
    browser_page.goto(f"{rig.base}/s/{rig.stream_id}")
    rows = browser_page.locator("#timeline .row")
    stage = browser_page.locator("#stage")
    expect(browser_page.locator("#live")).to_contain_text("Live")
    expect(rows).to_have_count(2)  # a comment, then two chunks: two records so far
    expect(stage).to_have_attribute("data-step", "1")  # following the last record
    browser_page.evaluate("window.scrollTo(0, 0)")  # the reader looks at the top
    rig.fake.gates[3].set()  # the fake sends two more pieces
    expect(rows).to_have_count(4)
    expect(stage).to_have_attribute("data-step", "3")
    assert len(loads) == 1  # it grew in place: no reload...
    assert browser_page.evaluate("window.scrollY") == 0  # ... and did not scroll the page
    browser_page.locator("#row-1").click()  # the user chooses a step while it arrives
    expect(stage).to_have_attribute("data-step", "1")
    expect(browser_page.locator("#live-pin")).to_have_attribute("value", "1")
    rig.fake.gates[5].set()  # two more, up to the fake's last piece
    expect(rows).to_have_count(6)
    expect(browser_page.locator("#live")).to_contain_text("you are looking at step 1")
    expect(stage).to_have_attribute("data-step", "1")  # the chosen step stays
    assert not rig.fake.finished.is_set() and not rig.done.is_set()  # still sending
    assert len(loads) == 1
    rig.fake.gates[len(rig.pieces) - 1].set()  # the last piece: the stream ends
    assert rig.done.wait(WAIT)
    expect(browser_page.locator("#live-view")).to_have_count(0)
    expect(browser_page.locator("#timing")).to_be_visible()
    expect(browser_page.locator(".add-note")).to_be_visible()  # the ordinary page's stage
    expect(stage).to_have_attribute("data-step", "1")  # at the step the user chose
    expect(rows).to_have_count(len(rig.pieces))  # the [DONE] and the end step are there now
    browser_page.wait_for_load_state("load")
    assert len(loads) == 2, loads  # one load as it ended...
    assert browser_page.locator("[hx-trigger^=every]").count() == 0  # ... and nothing polls
    assert bytes(rig.received) == b"".join(rig.pieces)
    raw = httpx.get(f"{rig.base}/api/streams/{rig.stream_id}/raw", timeout=WAIT).content
    assert raw == bytes(rig.received)
    assert errors == []


def test_a_page_that_followed_the_latest_chunk_ends_at_the_end_step(
    rig: Rig, page: tuple[Page, list[str]]
) -> None:
    browser_page, errors = page
    assert rig.headers.wait(WAIT)
    wait_until(lambda: stored_first(rig, 3), "the first three pieces to be stored")
    browser_page.goto(f"{rig.base}/s/{rig.stream_id}")
    stage = browser_page.locator("#stage")
    expect(stage).to_have_attribute("data-step", "1")  # following the last record
    for gate in rig.fake.gates.values():
        gate.set()
    assert rig.done.wait(WAIT)
    expect(browser_page.locator("#live-view")).to_have_count(0)
    end = len(rig.pieces) - 1  # a comment, then one record per piece; the end step after
    expect(stage).to_have_attribute("data-step", str(end))  # the end, not step 0
    assert f"step={end}" in browser_page.url
    assert errors == []
