"""An accessibility audit of every kind of page, in Chromium, in both colour schemes.

axe-core (the npm package in tests/a11y/, installed by `make a11y`, part of `make test`) is
injected into each page from its file with Playwright's `add_script_tag`; the pages' CSP
forbids scripts from anywhere but the app, so the audit's browser context bypasses it. A
serious or critical violation (contrast below WCAG AA's 4.5:1 among them) fails the test with
what axe says and where. The colour scheme is the browser's (`prefers-color-scheme`), as a
user's system sets it; presenter mode (`?present=1`) is audited under both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from tests.streamanswer import answer_text
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import CONTINUATION

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[1] / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
FAILING = ("serious", "critical")
SCHEMES = ("light", "dark")

LONG_RUN = sse(
    chunk(frag(0, "call_1", "get_weather")),
    *(chunk(frag(args="a")) for _ in range(60)),
    chunk(finish="tool_calls"),
)
"""A call whose arguments come in 60 bare pieces: the timeline folds them into a run row."""


def axe_script() -> Path:
    """axe.min.js, or a failure that says how to install it (never a skip)."""
    if not AXE.exists():
        pytest.fail(f"the accessibility audit needs axe-core at {AXE}: run `make a11y`")
    return AXE


def violations(page: Page) -> list[str]:
    """axe's serious and critical violations on the page as it is now, one line per node."""
    page.add_script_tag(path=str(axe_script()))
    result: dict[str, Any] = page.evaluate(
        "async () => await axe.run(document, {resultTypes: ['violations']})"
    )
    found = []
    for violation in result["violations"]:
        if violation["impact"] not in FAILING:
            continue
        for node in violation["nodes"][:8]:
            checks = node.get("any") or node.get("all") or node.get("none") or [{}]
            why = checks[0].get("message", violation["help"])
            found.append(f"{violation['id']} ({violation['impact']}) at {node['target']}: {why}")
    return found


@pytest.fixture(scope="module")
def streams(live_server: str) -> dict[str, str]:
    """A stored stream with a note and a folded run; the clients' results computed for one."""
    ids = {}
    answer = answer_text(("call_9", "get_weather", '{"city": "Lyon"}'))
    for name, text in (("run", LONG_RUN), ("continuation", CONTINUATION), ("answer", answer)):
        response = httpx.post(f"{live_server}/api/streams", json={"text": text, "title": name})
        assert response.status_code == 201, response.text
        ids[name] = response.json()["id"]
    noted = httpx.post(
        f"{live_server}/s/{ids['run']}/notes",
        data={"step": "3", "text": "the pieces start here", "author": "ann"},
    )
    assert noted.status_code == 303, noted.text
    computed = httpx.get(
        f"{live_server}/api/streams/example:ambiguous/clients?wait=true", timeout=300
    )
    assert computed.status_code == 200, computed.text
    return ids


PAGES = {
    "home": "/",
    "home-pair": "/#both",
    "stream": "/s/{run}?step=3",
    "stream-end": "/s/{continuation}?step=5&policy=exact-key",
    "example": "/examples/ambiguous",
    "compare": "/s/{run}/compare?step=3",
    "example-compare": "/examples/ambiguous/compare",
    "clients": "/examples/ambiguous/clients",
    "rules": "/rules",
    "play-ticked": "/play#tick",
    "tour": "/tour",
    "present-stream": "/examples/ambiguous?present=1",
    "present-compare": "/examples/continuation/compare?present=1&step=2",
    "library": "/streams",
    "share-open": "/s/{run}?step=3#open-share",
    "compare-share-open": "/examples/ambiguous/compare?step=2#open-share",
    "embed": "/embed/examples/ambiguous",
    "embed-compare": "/embed/examples/ambiguous/compare?step=2",
    "diff": "/diff?a={run}&b={continuation}",
    "diff-examples": "/diff?a=example:ambiguous&b=example:clean",
    "diff-pick": "/diff?a={run}",
    "diff-answer": "/diff?a={continuation}&b={answer}",
    "answer": "/s/{answer}",
    "compare-with-open": "/s/{continuation}#open-compare-with",
}
"""Each page audited; `#open-share`: with its Share menu (and the other size's snippet) open;
`#open-compare-with`: with its "compare with..." control open; `#both`: text pasted and a file
chosen (the note about the pair shown); `#tick`: an unticked key typed into (ticked, said)."""


@pytest.fixture(scope="module", params=SCHEMES)
def scheme(request: pytest.FixtureRequest, browser: Browser) -> Iterator[BrowserContext]:
    """A browser context in one colour scheme that lets the audit's script in."""
    context = browser.new_context(
        viewport={"width": 1366, "height": 768}, color_scheme=request.param, bypass_csp=True
    )
    yield context
    context.close()


@pytest.mark.parametrize("name", list(PAGES))
def test_no_serious_or_critical_violation(
    scheme: BrowserContext, live_server: str, streams: dict[str, str], name: str
) -> None:
    page = scheme.new_page()
    page.set_default_timeout(15_000)
    url, _, then = PAGES[name].format(**streams).partition("#")
    page.goto(live_server + url)  # "load": the scripts have run (nothing polls these pages)
    if then == "open-share":
        page.locator("#share > summary").click()
        page.locator("#share .share-size > summary").click()
    if then == "open-compare-with":
        page.locator("#compare-with > summary").click()
    if then == "both":
        page.fill("#text", CONTINUATION)
        page.set_input_files(
            "#file", files=[{"name": "w.sse", "mimeType": "text/plain", "buffer": b"x"}]
        )
        page.locator("#pair-note button").first.wait_for()
    if then == "tick":
        page.locator("input[name='c2.f0.index']").press_sequentially("0")
        page.locator("#play-ticked").wait_for()
    found = violations(page)
    page.close()
    assert found == [], "\n".join(found)


def test_the_audit_catches_low_contrast(scheme: BrowserContext, live_server: str) -> None:
    """The audit can fail: pale text added to a page is reported as a contrast violation."""
    page = scheme.new_page()
    page.goto(f"{live_server}/rules")
    page.evaluate(
        "() => { const p = document.createElement('p'); p.textContent = 'pale';"
        " p.style.color = '#cccccc'; p.style.background = '#ffffff';"
        " document.querySelector('main').append(p); }"
    )
    found = violations(page)
    page.close()
    assert any(line.startswith("color-contrast (serious)") for line in found), found
