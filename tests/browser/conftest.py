"""Fixtures for the browser tests: Debian's Chromium driven by Playwright, and the app served
by a real uvicorn. Playwright is imported here and in these tests only: the fast suites
(tests/web and the rest) run without a browser."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Dialog, sync_playwright

from tests.browser.pagekit import Watched
from webapp.settings import Settings
from webapp.web.app import create_app

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright; a clear failure when it is missing.

    Package-scoped: Playwright's sync API keeps an event loop running in the main thread while
    it is started, so it stops after the last browser test, before the suites that call
    `asyncio.run` (tests/capture and others come after tests/browser)."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"the browser tests need Debian's chromium at {CHROMIUM}: run `make chromium` "
            "(apt-get install chromium)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real uvicorn serving the app on a free port of 127.0.0.1, in a thread."""
    folder = tmp_path_factory.mktemp("live")
    app = create_app(Settings(db=str(folder / "live.sqlite3"), timeline_window=40))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    # The socket already listens, so this waits (in the kernel's backlog) until uvicorn serves.
    assert httpx.get(f"{base}/", timeout=30).status_code == 200
    yield base
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()


@pytest.fixture
def watch(browser: Browser, live_server: str) -> Iterator[Callable[[int, int], Watched]]:
    """Open a watched page in a fresh browser context of the given viewport (width, height)."""
    contexts: list[BrowserContext] = []

    def open_page(width: int, height: int) -> Watched:
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        seen = Watched(page, live_server)

        def on_console(message: ConsoleMessage) -> None:
            if message.type in ("error", "warning"):
                seen.errors.append(f"console {message.type}: {message.text}")

        def on_dialog(dialog: Dialog) -> None:
            seen.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("console", on_console)
        page.on("pageerror", lambda error: seen.errors.append(f"page error: {error}"))
        page.on("dialog", on_dialog)
        return seen

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def watched(watch: Callable[[int, int], Watched]) -> Watched:
    return watch(1440, 900)
