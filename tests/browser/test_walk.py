"""Issue 10's "done means", walked in two browsers: paste, mask, store, rename, note, minimise,
download, share the note's link, delete, and every link answers 404."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.browser.pagekit import Watched
from tests.streamkit import chunk, frag, sse

pytestmark = pytest.mark.browser

KEY = "sk-proj-" + "Q7w8E9r0T1y2U3i4O5p6" * 2
"""An API key the user left in the prompt."""
NOTE = "exact-key opens a phantom call here"
CONTINUATIONS = 8


def har_with_a_key_in_the_prompt() -> str:
    """One HAR entry: a prompt holding KEY, an Authorization header, and a stream whose bare
    continuations exact-key turns into phantom calls."""
    pieces = ['{"ci', 'ty":', ' "Pa', "ris", '", ', '"u":', ' "C"', "}"]
    stream = sse(
        chunk(frag(0, "call_1", "get_weather", "")),
        *[chunk(frag(args=piece)) for piece in pieces],
        chunk(finish="tool_calls"),
    )
    prompt = {
        "model": "gpt-demo",
        "stream": True,
        "messages": [{"role": "user", "content": f"my key is {KEY}; what is the weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
    }
    entry = {
        "request": {
            "method": "POST",
            "url": "https://api.example.com/v1/chat/completions",
            "headers": [{"name": "Authorization", "value": "Bearer sk-live-HEADER-0123456789"}],
            "postData": {"mimeType": "application/json", "text": json.dumps(prompt)},
        },
        "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": stream}},
    }
    return json.dumps({"log": {"version": "1.2", "entries": [entry]}}, indent=1)


def test_two_browsers_triage_a_stream_together(
    watched: Watched, browser: Browser, tmp_path: Path
) -> None:
    page, base = watched.page, watched.base

    # 1. Paste a HAR with a key in the prompt: the preview lists it masked.
    page.goto(f"{base}/")
    page.fill("#text", har_with_a_key_in_the_prompt())
    page.fill("input[name=title]", "weather call")
    page.get_by_role("button", name="Show the timeline").click()
    expect(page.locator("h1")).to_have_text("Secrets found before storing")
    rows = page.locator(".redact-preview tbody tr")
    expect(rows.filter(has_text="API key")).to_have_count(1)
    masked = rows.filter(has_text="API key").locator("code:not(.secret-hint)").inner_text()
    assert KEY not in masked and masked.startswith("sk-proj-X0x0")  # the mask, shortened
    hint = rows.filter(has_text="API key").locator("code.secret-hint").inner_text()
    assert hint == f"{KEY[:5]}…{KEY[-4:]}"  # enough of the key to recognise it
    assert KEY not in page.locator(".redact-preview table").inner_text()

    # 2. Store: the stored bytes hold neither the key nor the Authorization header.
    page.get_by_role("button", name="Store with these masked").click()
    expect(page).to_have_url(re.compile(r"/s/[\w-]{22,}\?"))
    found = re.search(r"/s/([\w-]+)\?", page.url)
    assert found
    stream_id = found.group(1)
    raw = httpx.get(f"{base}/api/streams/{stream_id}/raw").text
    assert KEY not in raw and "sk-proj-X0x0X0x0" in raw
    assert "sk-live-HEADER" not in raw
    expect(page.locator(".notice.redacted")).to_contain_text("Secrets were removed")

    # 3. Rename in place.
    page.locator("#stream-title summary").click()
    page.fill("#title-input", "weather call: phantom calls under exact-key")
    page.locator("#title-input").press("Enter")
    title = "weather call: phantom calls under exact-key"
    expect(page.locator("#stream-title h1")).to_have_text(title)

    # 4. A note on the faulty step: the first anomaly under exact-key.
    page.goto(f"{base}/s/{stream_id}?policy=exact-key&step=0")
    page.keyboard.press("n")
    faulty = page.locator("#stage")
    expect(faulty).not_to_have_attribute("data-step", "0")
    step = faulty.get_attribute("data-step")
    assert step is not None
    expect(page.locator("#stage")).to_contain_text("phantom-call")
    page.fill("#note-text", NOTE)
    page.fill(".add-note input[name=author]", "Ann")
    page.get_by_role("button", name="Add note").click()
    expect(page).to_have_url(re.compile(rf"step={step}.*#note-\d+$"))
    note_link = page.url
    note_anchor = note_link.rsplit("#", 1)[1]

    # 5. Minimise to a handful of chunks, keeping the phantom call (the choices load when the
    # section is opened).
    page.locator("#minimise summary").click()
    page.select_option("#minimise-target", "exact-key anomaly:phantom-call")
    page.locator("#minimise-start").click()
    expect(page.locator("#minimise-job")).to_have_attribute("data-status", "done", timeout=60_000)
    result = page.locator("#minimise-result")
    sizes = re.search(r"([\d,]+) chunks → ([\d,]+) chunks", result.inner_text())
    assert sizes
    before, after = (int(n.replace(",", "")) for n in sizes.groups())
    assert before == CONTINUATIONS + 2 and 1 <= after <= 5
    result.click()
    expect(page.locator("#minimised-from")).to_contain_text(f"minimised from “{title}”")
    expect(page.locator(".fact-anomalies")).to_contain_text("phantom-call")
    child_url = page.url

    # 6. Download the report and the fixture.
    page.goto(f"{base}/s/{stream_id}?policy=exact-key&step={step}")
    report_url = page.locator(".team-bar a", has_text="report.md").get_attribute("href")
    assert report_url
    report = page.context.request.get(f"{base}{report_url}")
    assert report.ok and title in report.text() and NOTE in report.text()
    with page.expect_download() as download:
        page.locator(".team-bar a", has_text="fixture.zip").click()
    saved = tmp_path / "fixture.zip"
    download.value.save_as(saved)
    with zipfile.ZipFile(io.BytesIO(saved.read_bytes())) as bundle:
        names = set(bundle.namelist())
        assert {"stream.sse", "expected.adr-0019.json", "expected.exact-key.json"} <= names
        replay = bundle.read("stream.sse").decode()
        assert replay.endswith("data: [DONE]\n\n") and KEY not in replay
        assert json.loads(bundle.read("expected.exact-key.json"))["anomalies"]

    # 7. The other browser opens the note's link and lands on the step with the note.
    other = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        theirs = other.new_page()
        theirs.goto(note_link)
        assert theirs.url.endswith(f"#{note_anchor}")
        expect(theirs.locator("#stage")).to_have_attribute("data-step", step)
        shown = theirs.locator(f"#stage #{note_anchor}")
        expect(shown).to_be_visible()
        expect(shown).to_contain_text(NOTE)
        expect(theirs.locator("#delete-stream")).to_have_count(0)

        # 8. The first deletes the stream: both links answer 404 in both browsers.
        page.locator("#delete-stream").click()
        page.get_by_role("button", name="Delete it for everyone").click()
        expect(page).to_have_url(f"{base}/streams?deleted=1")
        stream_url = f"{base}/s/{stream_id}"
        for browser_page in (page, theirs):
            for url in (stream_url, note_link):
                answer = browser_page.goto(url)
                assert answer is not None and answer.status == 404, url
        expect(theirs.locator("h1")).to_have_text("This stream was deleted")  # a tombstone
        # the minimised copy stays, and says its original is gone
        assert theirs.goto(child_url).status == 200  # type: ignore[union-attr]
        expect(theirs.locator("#minimised-from")).to_contain_text("since been deleted")
    finally:
        other.close()
    assert all("status of 404" in error for error in watched.errors), watched.errors
    assert watched.dialogs == []
