"""Take the README screenshots from the real app: `.venv/bin/python scripts/screenshots.py`.

Starts uvicorn on a free port of 127.0.0.1 with a throwaway database, opens built-in examples
in Debian's headless Chromium, and writes docs/screenshots/: timeline, compare, home, the
diagnosis at laptop (1366 px) and phone (390 px) widths, the provider's quirks beside the
anomalies on the Envoy AI Gateway's shape (tests/corpus/no-index.sse) at both widths, the
Share menu open, compare embedded in a 960x540 (16:9) frame, two streams side by side
(diff), the clients page's verdict at a laptop's size, and a teammate's library searched for a
tool name, a captured stream's page with its non-stream twin (`serve --twin`, a loopback
fake provider), and a gateway's outer capture with its hops. `scripts/screenshots.py library`
(or `twin`, or `hops`) takes only that one.
"""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
from pathlib import Path

import httpx
import uvicorn
from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from webapp.settings import Settings  # noqa: E402
from webapp.web.app import create_app  # noqa: E402
from webapp.web.http.links import diff_url  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def serve(db: Path) -> tuple[str, uvicorn.Server, threading.Thread]:
    """The app on a free port, in a thread; returns once it answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(db=str(db))), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    httpx.get(f"{base}/", timeout=30).raise_for_status()
    return base, server, thread


def open_example(base: str, key: str) -> str:
    """Store a built-in example; the URL of its timeline."""
    response = httpx.post(f"{base}/examples/{key}")
    assert response.status_code == 303, response.text
    return base + response.headers["location"]


def store(base: str, path: Path, title: str | None = None) -> str:
    """Store a stream file through the API (with no title: titled from what it holds); the URL
    of its timeline."""
    text = path.read_text(encoding="utf-8")
    body = {"text": text} if title is None else {"text": text, "title": title}
    response = httpx.post(f"{base}/api/streams", json=body)
    assert response.status_code == 201, response.text
    return base + response.json()["url"]


def shoot_quirks(page: Page, url: str, name: str) -> None:
    """The stream page with its silent quirk opened, scrolled to the quirk panel."""
    page.goto(url)
    page.wait_for_load_state("networkidle")
    page.locator("#quirks details.harm-silent summary").click()
    page.evaluate("document.getElementById('overview').scrollIntoView()")
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"wrote {path.relative_to(ROOT)}")


def shoot(page: Page, url: str, name: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"wrote {path.relative_to(ROOT)}")


LIBRARY = ("clean-single-call", "reasoning-model", "two-calls-open-continuations", "no-index",
           "server-late-fragment", "text-then-tool-call", "trailing-whitespace")  # fmt: skip
"""The corpus streams a teammate has opened, stored untitled: each titled from what it holds."""


def shoot_library(page: Page, base: str) -> None:
    """A teammate's library (the streams this browser opened), searched for a tool name."""
    page.set_viewport_size({"width": 1366, "height": 640})
    for name in LIBRARY:
        page.goto(store(base, ROOT / "tests" / "corpus" / f"{name}.sse"))
    page.goto(f"{base}/streams")
    page.get_by_role("searchbox").fill("weather")
    page.get_by_role("button", name="Search").click()
    expect(page).to_have_url(f"{base}/streams?q=weather")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(OUT / "library-search.png"))
    print("wrote docs/screenshots/library-search.png")


def shoot_twin(page: Page) -> None:
    """A captured stream's page with its non-stream twin (`serve --twin`): a loopback fake
    provider streams Paris and answers Lyon without a stream, so the line says where they
    differ."""
    import json

    stream = (ROOT / "tests" / "corpus" / "clean-single-call.sse").read_bytes()
    call = {"id": "call_twin", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}  # fmt: skip
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    answer = json.dumps({"object": "chat.completion", "model": "gpt-4o-mini", "choices": [choice]})

    async def provider(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()  # type: ignore[operator]
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        streamed = json.loads(body or b"{}").get("stream") is True
        kind = b"text/event-stream" if streamed else b"application/json"
        await send({"type": "http.response.start", "status": 200,  # type: ignore[operator]
                    "headers": [(b"content-type", kind)]})  # fmt: skip
        await send({"type": "http.response.body",  # type: ignore[operator]
                    "body": stream if streamed else answer.encode()})  # fmt: skip

    with tempfile.TemporaryDirectory() as folder:
        upstream, up_server, up_thread = _serve_app(provider)
        settings = Settings(db=str(Path(folder) / "twin.sqlite3"),
                            upstreams=(f"default={upstream}",), twin=True)  # fmt: skip
        base, server, thread = _serve_app(create_app(settings))
        try:
            sent = httpx.post(f"{base}/proxy/default/v1/chat/completions", json={
                "model": "gpt-4o-mini", "stream": True,
                "messages": [{"role": "user", "content": "Weather in Paris?"}]})  # fmt: skip
            stream_id = sent.headers["streamviz-stream-id"]
            for _ in range(300):
                if httpx.get(f"{base}/api/streams/{stream_id}").json()["twin"]:
                    break
                threading.Event().wait(0.05)
            page.set_viewport_size({"width": 1366, "height": 768})
            page.goto(f"{base}/s/{stream_id}")
            page.locator("#twin").scroll_into_view_if_needed()
            page.screenshot(path=str(OUT / "twin-1366.png"))
            print("wrote docs/screenshots/twin-1366.png")
        finally:
            for one, its_thread in ((server, thread), (up_server, up_thread)):
                one.should_exit = True
                its_thread.join(timeout=30)


def _serve_app(app: object) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


def shoot_hops(page: Page, out: Path = OUT) -> None:
    """A gateway's two hops recorded by one server (the fakes of tests/capture/test_hops.py):
    the outer capture's page at its Gateway hops section."""
    from contextlib import ExitStack

    from tests.capture.fake import Fake, serving
    from tests.capture.gateway import PROVIDER_SCRIPT, Gateway

    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        gateway = Gateway()
        provider = stack.enter_context(serving(Fake(script=list(PROVIDER_SCRIPT))))
        gateway_url = stack.enter_context(serving(gateway))
        settings = Settings(db=str(Path(folder) / "hops.sqlite3"),
                            upstreams=(f"gw={gateway_url}", f"provider={provider}"))  # fmt: skip
        base = stack.enter_context(serving(create_app(settings)))
        gateway.target = f"{base}/proxy/provider/v1"
        tools = [{"type": "function", "function": {"name": name, "parameters": {}}}
                 for name in ("get_weather", "get_time")]  # fmt: skip
        body = {"model": "claude-sonnet-4-5", "stream": True, "tools": tools,
                "messages": [{"role": "user", "content": "Paris: weather, time?"}]}  # fmt: skip
        answer = httpx.post(f"{base}/proxy/gw/v1/chat/completions", json=body, timeout=30)
        outer = answer.headers["streamviz-stream-id"]
        for _ in range(300):  # until the server has ended both captures and linked them
            if httpx.get(f"{base}/api/streams/{outer}").json()["hops"]["inner"]:
                break
            threading.Event().wait(0.05)
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(f"{base}/s/{outer}")
        page.locator("#hops").scroll_into_view_if_needed()
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out / "hops-1366.png"))
        print(f"wrote {out / 'hops-1366.png'}")


def main() -> None:
    only = sys.argv[1:]
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        base, server, thread = serve(Path(folder) / "shots.sqlite3")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1440, "height": 860})
                if only == ["library"]:
                    shoot_library(page, base)
                    return
                if only == ["twin"]:
                    shoot_twin(page)
                    return
                if only == ["hops"]:
                    shoot_hops(page)
                    return
                timeline = open_example(base, "backfill")
                page.goto(timeline)
                for step in ("1", "2", "3", "4"):  # step there with the keyboard, as a user would
                    page.keyboard.press("ArrowRight")
                    expect(page.locator("#stage")).to_have_attribute("data-step", step)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(OUT / "timeline.png"))
                print("wrote docs/screenshots/timeline.png")
                continuation = open_example(base, "continuation").split("?")[0]
                page.set_viewport_size({"width": 1440, "height": 760})
                shoot(page, f"{continuation}/compare", "compare")
                page.set_viewport_size({"width": 1440, "height": 900})
                shoot(page, f"{base}/", "home")
                # A laptop: a link to the step where two calls are open when a continuation
                # arrives, as it lands.
                page.set_viewport_size({"width": 1366, "height": 900})
                ambiguous = open_example(base, "ambiguous").split("?")[0]
                shoot(page, f"{ambiguous}?step=2", "diagnosis-1366")
                # A phone: the same step, the stepper pinned within reach.
                page.set_viewport_size({"width": 390, "height": 844})
                shoot(page, f"{ambiguous}?step=2", "phone-390")
                # Whose fault: the Envoy AI Gateway's Bedrock shape, its quirks beside the
                # anomalies, at a laptop's and a phone's size (the page as it opens, with no
                # step named: the findings before the timeline).
                envoy = store(base, ROOT / "tests" / "corpus" / "no-index.sse",
                              "Envoy AI Gateway (Bedrock) before PR #1468")  # fmt: skip
                for width, height in ((1366, 768), (390, 844)):
                    page.set_viewport_size({"width": width, "height": height})
                    shoot_quirks(page, envoy, f"quirks-{width}")
                # The Share menu, opened from the button at the top of the page.
                page.set_viewport_size({"width": 1366, "height": 768})
                page.goto(f"{ambiguous}?step=2")
                page.locator(".share-jump").click()
                expect(page.locator("#share")).to_have_attribute("open", "")
                page.screenshot(path=str(OUT / "share.png"))
                print("wrote docs/screenshots/share.png")
                # compare embedded in a slide's frame
                page.set_viewport_size({"width": 960, "height": 540})
                shoot(page, f"{base}/embed/examples/continuation/compare?step=2", "embed-960")
                # Two streams side by side: two calls open when continuations come, and the
                # clean call (/diff opens examples by their ids, storing nothing).
                page.set_viewport_size({"width": 1366, "height": 900})
                shoot(page, f"{base}{diff_url('example:ambiguous', 'example:clean')}", "diff")
                # Whose fault, at a glance: the clients page's headline over the grades, on the
                # same-index example (the real libraries run on it: the page waits for them).
                page.set_viewport_size({"width": 1366, "height": 768})
                same = open_example(base, "same-index").split("?")[0]
                page.goto(f"{same}/clients")
                expect(page.locator("#verdict")).to_be_visible(timeout=120_000)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(OUT / "clients-1366.png"))
                print("wrote docs/screenshots/clients-1366.png")
                shoot_library(page, base)
                shoot_twin(page)
                shoot_hops(page)
                browser.close()
        finally:
            server.should_exit = True
            thread.join(timeout=30)


if __name__ == "__main__":
    main()
