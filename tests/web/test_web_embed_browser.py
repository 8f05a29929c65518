"""Embedding in a real browser, and the teacher's whole walk from the tour to an embed.

Three loopback servers, each its own origin (a port makes an origin): the app, started with
`embed_origins` naming the first host; that host, serving a page with an iframe; and a second
host the app does not name. Chromium enforces the app's CSP `frame-ancestors`, so the allowed
host's frame shows the app and the other host's frame shows Chromium's error page instead.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, Frame, Page, expect

from webapp.settings import Settings
from webapp.web.app import create_app

pytestmark = pytest.mark.browser


class _HostPage(BaseHTTPRequestHandler):
    """A wiki page of another site: `/?src=URL` frames URL."""

    def do_GET(self) -> None:
        src = parse_qs(urlsplit(self.path).query).get("src", [""])[0]
        body = (
            "<!doctype html><title>host</title><h1>Lesson</h1>"
            f'<iframe id="embed" src="{escape(src)}" width="1000" height="700"></iframe>'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test's output is the assertions'."""


def _host() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HostPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@dataclass(frozen=True)
class Origins:
    """The app's base URL, the host it lets frame its embeds, and one it does not."""

    app: str
    allowed: str
    other: str

    def host_page(self, host: str, path: str) -> str:
        """The host's page framing the app's `path`."""
        return f"{host}/?{httpx.QueryParams({'src': self.app + path})}"


@pytest.fixture(scope="module")
def origins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Origins]:
    allowed_server, allowed = _host()
    other_server, other = _host()
    folder: Path = tmp_path_factory.mktemp("embed")
    settings = Settings(db=str(folder / "embed.sqlite3"), embed_origins=(allowed,))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert httpx.get(f"{app}/", timeout=30).status_code == 200  # waits in the backlog
    yield Origins(app, allowed, other)
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()
    for host in (allowed_server, other_server):
        host.shutdown()
        host.server_close()


def embedded_frame(page: Page) -> Frame:
    """The iframe's frame, once it has navigated (to the app, or to an error page)."""
    handle = page.locator("#embed").element_handle()
    assert handle is not None
    frame = handle.content_frame()
    assert frame is not None
    return frame


def test_an_embed_is_refused_from_an_origin_not_allowed_and_shown_from_one_that_is(
    browser: Browser, origins: Origins
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text))
    path = "/embed/examples/continuation"
    # allowed: the frame shows the app, stepping stays inside it
    page.goto(origins.host_page(origins.allowed, path))
    frame = page.frame_locator("#embed")
    expect(frame.locator("#stage")).to_have_attribute("data-step", "2")
    expect(frame.locator(".stepper")).to_be_visible()
    frame.locator("#next").click()
    expect(frame.locator("#stage")).to_have_attribute("data-step", "3")
    assert page.url.startswith(origins.allowed)  # the host page itself did not move
    rule = frame.locator("#detail a.badge").first
    expect(rule).to_have_attribute("target", "_blank")
    assert not [text for text in refused if "frame-ancestors" in text]
    # not allowed: Chromium refuses to render the app in the frame
    with page.expect_event("console", lambda m: "frame-ancestors" in m.text) as message:
        page.goto(origins.host_page(origins.other, path))
    assert f"frame-ancestors {origins.allowed}" in message.value.text
    expect(page.locator("h1")).to_have_text("Lesson")  # the host page is there
    refused_frame = embedded_frame(page)
    assert not refused_frame.url.startswith(origins.app), refused_frame.url
    assert refused_frame.locator("#stage").count() == 0
    # the app's own pages are framable by no one, not even the allowed host
    with page.expect_event("console", lambda m: "frame" in m.text.lower()):
        page.goto(origins.host_page(origins.allowed, "/examples/continuation"))
    assert embedded_frame(page).locator("#stage").count() == 0
    context.close()


def test_a_teacher_walks_from_the_tour_to_an_embedded_step(
    browser: Browser, origins: Origins
) -> None:
    """The issue's "done means", step by step: tour, play, pause at the phantom call on
    compare, the playground (delete an index, see both policies re-run live), save, embed."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # the tour, and the continuation example on compare
    page.goto(f"{origins.app}/tour")
    page.locator("a.tour-stop", has_text="Continuation chunks").click()
    expect(page).to_have_url(re.compile(r"/examples/continuation/compare"))
    page.wait_for_load_state("load")  # the keys are handled once the page's scripts have run
    # play it from the start; it pauses by itself at the first phantom call
    current = page.locator("#compare-rows .crow[aria-current]")
    page.keyboard.press("Home")
    expect(current).to_have_attribute("id", "crow-0")
    page.select_option("#play-speed", "400")
    page.check("#play-stop")
    page.locator("#play").click()
    expect(page.locator("#play")).to_have_attribute("aria-pressed", "false")
    expect(current).to_have_attribute("id", "crow-2")
    expect(current.locator(".anomaly-flag")).to_have_text("⚠ phantom-call")
    step = page.locator("#compare-step")
    expect(step).to_have_attribute("data-step", "2")
    exact_key = step.locator(".step-side[data-policy='exact-key']")
    expect(exact_key.locator(".phantom-tag")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"[?&]step=2"))
    # the same stream in the playground
    page.locator("#edit-copy").click()
    expect(page).to_have_url(re.compile(r"/play\?from=example"))
    left = page.locator("#play-result .outcome[data-policy='exact-key'] p")
    right = page.locator("#play-result .outcome[data-policy='adr-0019'] p")
    expect(left).to_have_text("4 blocks, 3 phantom calls, toolcall_start fired 4 times for 1 call")
    expect(right).to_have_text("1 block")
    # deleting the header's index changes nothing: its id still keys the block
    page.locator("input[name='c1.f0.index.on']").uncheck()
    expect(page).to_have_url(re.compile(r"/play\?s=[\w-]+$"))
    expect(left).to_contain_text("3 phantom calls")
    expect(right).to_have_text("1 block")
    # deleting its name too: both policies change, live
    address = page.url
    page.locator("input[name='c1.f0.name.on']").uncheck()
    expect(left).to_have_text("4 blocks, 4 phantom calls, toolcall_start fired 4 times for 0 calls")
    expect(right).to_have_text("1 block, 1 phantom call, toolcall_start fired 1 time for 0 calls")
    expect(page).not_to_have_url(address)
    # saved as a new stream
    page.get_by_role("button", name="Save as a new stream").click()
    expect(page).to_have_url(re.compile(r"/s/[\w-]{22,}\?step=0"))
    stream_id = urlsplit(page.url).path.rsplit("/", 1)[1]
    # its phantom step, embedded in a page of the allowed origin
    page.goto(origins.host_page(origins.allowed, f"/embed/s/{stream_id}?step=2&policy=adr-0019"))
    frame = page.frame_locator("#embed")
    expect(frame.locator("#stage")).to_have_attribute("data-step", "2")
    expect(frame.locator("#detail .fragment .badge")).to_have_text("continuation")
    expect(frame.locator("#detail .target")).to_have_text("→ #0 (no name)")
    expect(frame.locator("#detail .target")).to_have_class(re.compile(r"\bphantom\b"))
    assert errors == []
    context.close()
