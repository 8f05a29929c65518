"""The README's screenshots of a capture: its live page, then its page with timing, at 1366x768.

`PYTHONPATH=$PWD .venv/bin/python scripts/screenshots_live.py` runs the loopback fake provider of
tests/capture/ and a streamviz that records it, makes one streamed request through the proxy, and
shoots the page while the fake holds back the rest (docs/screenshots/live-1366.png), then once
the stream has ended after two stalls of about 1.5 s (docs/screenshots/timing-1366.png).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from tests.capture.fake import Fake, corpus_pieces, serving  # noqa: E402
from webapp.settings import Settings  # noqa: E402
from webapp.web.app import create_app  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
STALL_S = 1.5


def main(folder: Path) -> None:
    pieces = corpus_pieces("interleaved-parallel-calls.sse")
    last = len(pieces) - 1
    gates = {4: threading.Event(), last: threading.Event()}
    fake = Fake(script=pieces, gates=gates, pause_s=0.08)
    stream: dict[str, str] = {}
    arrived = threading.Event()

    def call(base: str) -> None:
        body = {"model": "gpt-4o", "stream": True, "messages": []}
        url = f"{base}/proxy/default/v1/chat/completions"
        with httpx.stream("POST", url, json=body, timeout=60) as response:
            stream["id"] = response.headers["streamviz-stream-id"]
            arrived.set()
            for _ in response.iter_raw():
                pass

    with serving(fake) as upstream:
        settings = Settings(db=str(folder / "shots.sqlite3"), upstreams=(f"default={upstream}",),
                            capture_batch_ms=20, live_poll_ms=300)  # fmt: skip
        with serving(create_app(settings)) as base, sync_playwright() as playwright:
            client = threading.Thread(target=call, args=(base,))
            client.start()
            assert arrived.wait(30)
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                                 headless=True, args=ARGS)  # fmt: skip
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.goto(f"{base}/s/{stream['id']}")
            expect(page.locator("#timeline .row")).to_have_count(3)
            page.screenshot(path=str(OUT / "live-1366.png"))
            print("wrote docs/screenshots/live-1366.png")
            threading.Event().wait(STALL_S)
            gates[4].set()
            threading.Event().wait(STALL_S)
            gates[last].set()
            client.join(60)
            expect(page.locator("#live-view")).to_have_count(0)
            page.goto(f"{base}/s/{stream['id']}")
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(OUT / "timing-1366.png"))
            print("wrote docs/screenshots/timing-1366.png")
            browser.close()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        main(Path(where))
