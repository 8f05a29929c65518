"""Whose fault in a real browser: a quirk's step link selects that step, a grade cell says why on
hover and on focus, the headline is on screen as the clients page loads. The server runs fake
client lenses (no library is run)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from playwright.sync_api import expect

from tests.browser.pagekit import Watched
from tests.lenses.fakes import CRASHES, answering, missing, program
from webapp.settings import Settings
from webapp.triage.headline import HEADLINE
from webapp.web.app import create_app
from webapp.web.routes.clients import ClientJobs

pytestmark = pytest.mark.browser

ENVOY = Path("tests/corpus/no-index.sse").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real uvicorn on a free port (as conftest's), its clients page on fake lenses."""
    folder = tmp_path_factory.mktemp("fault")
    app = create_app(Settings(db=str(folder / "fault.sqlite3"), timeline_window=40))
    pi_ai = answering(
        {"status": "ok", "error": None,
         "calls": [{"id": "call_1", "name": "search_docs", "arguments": "{}"}]},
        "pi-ai",
    )  # fmt: skip
    app.state.clients = ClientJobs((pi_ai, program(CRASHES, "openai-python"), missing("litellm")))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert httpx.get(f"{base}/", timeout=30).status_code == 200
    yield base
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()


def test_clicking_a_quirks_step_selects_it(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(ENVOY, "envoy")
    page.goto(f"{watched.base}/s/{stream_id}?step=0")
    page.evaluate("window.__sameDocument = true")
    group = page.locator("#quirks details.harm-silent", has_text="bare-continuation")
    expect(group).not_to_have_attribute("open", "")  # two quirks: each opens on demand
    group.locator("summary").click()
    expect(group.locator(".clause")).to_be_visible()
    expect(group.locator(".seen a").first).to_have_attribute(
        "href", "https://github.com/envoyproxy/ai-gateway/pull/1468"
    )
    group.locator(".qsteps a", has_text="3").click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "3")
    expect(page).to_have_url(re.compile(r"step=3&policy=adr-0019&path=client$"))
    expect(page.locator("#row-3")).to_have_attribute("aria-current", "step")
    expect(page.locator("#row-3 .quirk-flag", has_text="bare-continuation")).to_be_visible()
    assert page.evaluate("window.__sameDocument") is True  # swapped, not reloaded
    expect(group).to_have_attribute("open", "")  # the panel stayed as it was
    watched.assert_clean()


def test_a_grade_cell_says_why_on_hover_and_on_focus(watched: Watched) -> None:
    page = watched.page
    stream_id = watched.store(ENVOY, "envoy")
    page.goto(f"{watched.base}/s/{stream_id}/clients")
    expect(page.locator("#grades")).to_be_visible(timeout=30_000)  # polled until computed
    expect(page.locator("#verdict")).to_contain_text("The provider (example-model) broke")
    cell = page.locator("#grade-pi-ai td.grade")
    tip = page.locator("#why-pi-ai")
    expect(cell).to_have_text(re.compile(r"^\s*damaged"))
    expect(tip).to_be_hidden()
    cell.hover()
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("damaged: it receives other calls or arguments and says nothing")
    expect(page.locator("#grade-pi-ai td.detail")).to_contain_text("search_docs gets {} instead")
    page.mouse.move(0, 0)
    expect(tip).to_be_hidden()
    page.locator("#grade-openai-python td.grade").focus()
    expect(page.locator("#why-openai-python")).to_be_visible()
    expect(page.locator("#why-openai-python")).to_contain_text("flagged")
    page.keyboard.press("Tab")  # on to the next grade cell: it says why in its turn
    expect(page.locator("#why-openai-python")).to_be_hidden()
    expect(page.locator("#why-litellm")).to_be_visible()
    watched.assert_clean()


@pytest.mark.parametrize("computed", [True, False], ids=["kept", "polled"])
@pytest.mark.parametrize("size", [(1366, 768), (390, 844)], ids=["1366x768", "390x844"])
def test_the_headline_is_on_screen_when_the_clients_page_loads(
    watch: Callable[[int, int], Watched], size: tuple[int, int], computed: bool
) -> None:
    """The headline (at most 400 characters) is the first thing in the panel, its whole box
    inside the viewport as the page loads, whether the verdict was kept or is polled for; it
    and what to file are each on screen once."""
    width, height = size
    watched = watch(width, height)
    page = watched.page
    stream_id = watched.store(ENVOY, f"envoy {width} {computed}")
    if computed:
        answer = httpx.get(f"{watched.base}/api/streams/{stream_id}/clients?wait=true", timeout=60)
        assert answer.status_code == 200
    page.goto(f"{watched.base}/s/{stream_id}/clients")
    headline = page.locator("#verdict")
    expect(headline).to_contain_text("The provider (example-model) broke the contract",
                                     timeout=30_000)  # fmt: skip
    assert page.evaluate("window.scrollY") == 0
    box = headline.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0
    assert box["x"] >= 0 and box["y"] >= 0, box
    assert box["x"] + box["width"] <= width and box["y"] + box["height"] <= height, box
    text = headline.inner_text()
    assert len(text) <= HEADLINE
    shown = page.locator("main").inner_text()  # what is rendered: no tooltip, no folded block
    assert shown.count(text) == 1
    says = page.locator(".file-with p").first.inner_text()
    assert says.startswith("File with the provider") and shown.count(says) == 1
    watched.assert_clean()


CLEAN = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_Qx7","type":'
    '"function","function":{"name":"get_weather","arguments":"{\\"city\\": \\"Paris\\"}"}}]}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)
"""A stream that keeps the contract: the libraries that mishandle it are at fault."""


@pytest.mark.parametrize("size", [(1366, 768), (390, 844)], ids=["1366x768", "390x844"])
def test_where_to_file_links_each_library_to_a_prefilled_issue_and_shows_the_text(
    watch: Callable[[int, int], Watched], size: tuple[int, int]
) -> None:
    width, height = size
    watched = watch(width, height)
    page = watched.page
    stream_id = watched.store(CLEAN, f"clean {width}")
    page.goto(f"{watched.base}/s/{stream_id}/clients")
    party = page.locator('section.file-with[aria-label="File with @earendil-works/pi-ai 1.6.0"]')
    expect(party).to_be_visible(timeout=30_000)
    link = party.locator("a.file-link")
    expect(link).to_have_text("Open a new issue on pi-ai's tracker")
    href = link.get_attribute("href") or ""
    assert href.startswith("https://github.com/earendil-works/pi/issues/new?template=bug.yml&")
    assert "&description=" in href and len(href) <= 8_000
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    link.focus()
    expect(link).to_be_focused()
    text = party.locator("pre.file-text")
    expect(text).to_be_hidden()  # folded until asked for
    party.locator("details.text-box summary").click()
    expect(text).to_be_visible()
    expect(text).to_contain_text("**Quirks:** none: the stream keeps the contract.")
    expect(text).to_contain_text('"id":"call_1"')  # pseudonymised
    assert "call_Qx7" not in text.inner_text()
    box = text.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    watched.assert_clean()
