"""Embedding in a real browser, and the teacher's whole walk from the tour to an embed.

Three loopback servers, each its own origin (a port makes an origin): the app, started with
`embed_origins` naming the first host; that host, serving a page with an iframe; and a second
host the app does not name. Chromium enforces the app's CSP `frame-ancestors`, so the allowed
host's frame shows the app; the other host's frame shows the app's refusal, which names the
flag that would allow it (instead of Chromium's blank error page).
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
    """A wiki page of another site: `/?src=URL&w=W&h=H` frames URL at W x H (1000 x 700)."""

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        src = query.get("src", [""])[0]
        width, height = int(query.get("w", ["1000"])[0]), int(query.get("h", ["700"])[0])
        body = (
            "<!doctype html><title>host</title><h1>Lesson</h1>"
            f'<iframe id="embed" src="{escape(src)}" width="{width}" height="{height}" '
            'style="border:0"></iframe>'
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

    def host_page(self, host: str, path: str, size: tuple[int, int] = (1000, 700)) -> str:
        """The host's page framing the app's `path` in a frame of `size`."""
        query = {"src": self.app + path, "w": size[0], "h": size[1]}
        return f"{host}/?{httpx.QueryParams(query)}"


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
    # not allowed: the frame says so, and which flag would allow it; nothing of the stream
    page.goto(origins.host_page(origins.other, path))
    expect(page.locator("h1")).to_have_text("Lesson")  # the host page is there
    refusal = page.frame_locator("#embed").locator(".embed-refused")
    expect(refusal.locator("h1")).to_have_text(
        f"This streamviz server does not allow embedding from {origins.other}"
    )
    expect(refusal).to_contain_text(f"--embed-origins '{origins.allowed} {origins.other}'")
    expect(refusal.locator("a")).to_have_attribute("target", "_blank")
    assert page.frame_locator("#embed").locator("#stage").count() == 0
    assert not [text for text in refused if "frame-ancestors" in text]
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
    expect(page).to_have_url(re.compile(r"/s/[\w-]{22,}\?policy="))
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


@pytest.mark.parametrize("size", [(960, 540), (640, 360)])
@pytest.mark.parametrize(
    ("path", "changed"),
    [
        ("/embed/examples/ambiguous", "#state .block.touched"),
        ("/embed/examples/ambiguous/compare?step=2", "#compare-step .step-blocks li.touched"),
        ("/embed/examples/continuation/compare?step=4", "#compare-step .step-blocks li.touched"),
    ],
)
def test_a_16_9_frame_keeps_the_state_in_view(
    browser: Browser, origins: Origins, size: tuple[int, int], path: str, changed: str
) -> None:
    """In a slide's 16:9 frame the block the step changed is on screen, and stays there when
    stepping; the frame never scrolls as a whole."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(origins.host_page(origins.allowed, path, size))
    frame = page.frame_locator("#embed")
    block = frame.locator(changed).first
    expect(block).to_be_visible()
    framed = page.locator("#embed").bounding_box()
    assert framed is not None

    def in_frame() -> None:
        box = block.bounding_box()
        assert box is not None
        assert framed["y"] <= box["y"] and box["y"] + 24 <= framed["y"] + framed["height"], box
        assert framed["x"] <= box["x"] and box["x"] + box["width"] <= framed["x"] + size[0], box

    in_frame()
    handle = page.locator("#embed").element_handle()
    assert handle is not None
    content = handle.content_frame()
    assert content is not None
    assert content.evaluate("document.documentElement.scrollHeight <= innerHeight")
    assert content.evaluate("document.documentElement.scrollWidth <= innerWidth")
    if "compare" not in path:
        frame.locator("#prev").click()
        expect(frame.locator("#stage")).to_have_attribute("data-step", "1")
        in_frame()
    context.close()


def test_an_embed_opened_in_a_tab_says_who_may_frame_it(browser: Browser, origins: Origins) -> None:
    """Opened on its own (a teacher checking the link), the embed names the sites allowed to
    frame it; framed, it does not."""
    context = browser.new_context(viewport={"width": 960, "height": 540})
    page = context.new_page()
    page.goto(origins.app + "/embed/examples/continuation/compare")
    expect(page.locator("#embed-framing")).to_contain_text(
        f"Sites allowed to frame it: {origins.allowed}"
    )
    expect(page.locator("#compare-step")).to_be_visible()
    page.goto(origins.host_page(origins.allowed, "/embed/examples/continuation/compare"))
    frame = page.frame_locator("#embed")
    expect(frame.locator("#compare-rows .crow").first).to_be_visible()
    expect(frame.locator("#embed-framing")).to_have_count(0)
    context.close()
