"""The embedded view and presenter mode through TestClient: framing headers, read-only pages."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner
from fastapi.testclient import TestClient

from tests.web.webkit import CONTINUATION, HX, Store
from webapp.cli.serve import serve
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.http.framing import refusal
from webapp.web.http.links import Links
from webapp.web.http.security import embed_csp

ORIGINS = ("https://wiki.example.com", "https://slides.example.com")


def ancestors(response: object) -> str:
    policy = response.headers["content-security-policy"]  # type: ignore[attr-defined]
    found = re.search(r"frame-ancestors ([^;]*)", policy)
    assert found is not None, policy
    return found.group(1).strip()


def test_embed_pages_answer_for_a_stream_and_an_example(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url in (f"/embed/s/{stream_id}?step=1", "/embed/examples/clean"):
        page = client.get(url)
        assert page.status_code == 200, page.text
        assert 'id="stage"' in page.text and 'id="detail"' in page.text
        assert 'id="state"' in page.text and "embed-badges" in page.text
        # read-only: no forms, no notes, no team actions
        assert "<form" not in page.text
        assert "/notes" not in page.text and "/delete" not in page.text
        # stepping stays inside the embedded view
        steps = re.findall(
            r'id="(?:next|prev|first|last)" class="step-link" href="([^"]+)"', page.text
        )
        assert steps and all(step.startswith("/embed/") for step in steps)
    stepped = client.get(f"/embed/s/{stream_id}?step=2", headers=HX)
    assert stepped.status_code == 200
    assert stepped.text.lstrip().startswith('<section id="stage"')
    assert 'data-step="2"' in stepped.text
    assert client.get("/embed/examples/continuation").text.count('data-step="2"') == 1


def test_unknown_embeds_are_404(client: TestClient) -> None:
    assert client.get("/embed/s/nope?step=0").status_code == 404
    assert client.get("/embed/examples/nope").status_code == 404


def test_embeds_are_framable_by_nobody_by_default_and_pages_never(client: TestClient) -> None:
    embedded = client.get("/embed/examples/clean")
    assert ancestors(embedded) == "'none'"
    assert "x-frame-options" not in embedded.headers
    for url in ("/examples/clean", "/", "/tour"):
        page = client.get(url)
        assert page.headers["x-frame-options"] == "DENY"
        assert ancestors(page) == "'none'"


def test_embeds_are_framable_by_exactly_the_configured_origins(settings: Settings) -> None:
    app = create_app(Settings(db=settings.db, embed_origins=ORIGINS))
    with TestClient(app) as client:
        embedded = client.get("/embed/examples/clean")
        assert ancestors(embedded).split() == list(ORIGINS)
        assert "x-frame-options" not in embedded.headers
        assert ancestors(client.get("/embed/examples/nope")).split() == list(ORIGINS)
        page = client.get("/examples/clean")
        assert page.headers["x-frame-options"] == "DENY"
        assert ancestors(page) == "'none'"


def test_embed_origins_travel_through_the_environment() -> None:
    settings = Settings(db="x.sqlite3", embed_origins=ORIGINS)
    assert Settings.from_env(settings.to_env()).embed_origins == ORIGINS


@pytest.mark.parametrize("origin", ["https://a.example;script-src", "'self'", 'https://a"b'])
def test_an_origin_cannot_inject_into_the_policy(origin: str) -> None:
    with pytest.raises(ValueError):
        embed_csp((origin,))
    result = CliRunner().invoke(serve, ["--db", "x.sqlite3", "--embed-origins", origin])
    assert result.exit_code == 2
    assert "--embed-origins" in result.output


def test_present_adds_the_class_and_links_keep_it(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url in (
        f"/s/{stream_id}?step=1&present=1",
        f"/s/{stream_id}/compare?present=1",
        "/examples/continuation?present=1",
        "/examples/continuation/compare?present=1",
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        body = re.search(r'<body class="([^"]*)"', page.text)
        assert body is not None and "present" in body.group(1).split(), url
    plain = client.get(f"/s/{stream_id}?step=1")
    body = re.search(r'<body class="([^"]*)"', plain.text)
    assert body is not None and "present" not in body.group(1).split()
    stepping = client.get(f"/s/{stream_id}?step=1&present=1").text
    nexts = re.findall(r'id="next" class="step-link" href="([^"]+)"', stepping)
    assert nexts and "present=1" in nexts[0]
    assert client.get(f"/s/{stream_id}?step=1&present=yes").status_code == 400


def test_links_build_embed_and_present_urls() -> None:
    links = Links.for_example("clean", Options())
    assert links.embedded.step(3).startswith("/embed/examples/clean?step=3")
    assert Links("abc", Options()).embedded.step(0).startswith("/embed/s/abc?")
    presented = replace(Links("abc", Options(), present=True), embed=True)
    assert "present=1" in presented.step(1) and "present=1" in presented.compare()
    assert presented.compare().startswith("/s/abc/compare?")
    assert presented.page.step(1).startswith("/s/abc?") and "present=1" in presented.page.step(1)
    assert "present" not in Links("abc", Options()).step(1)


def test_links_inside_an_embed_leave_the_frame_unless_they_step(
    client: TestClient, store: Store
) -> None:
    """Pages other than /embed/ refuse framing, so a link to one opens a new tab instead."""
    stream_id = store(CONTINUATION)
    urls = [f"/embed/s/{stream_id}?step={step}&policy=exact-key" for step in range(5)]
    urls += ["/embed/examples/continuation", "/embed/examples/server-late"]
    for url in urls:
        page = client.get(url)
        assert page.status_code == 200, page.text
        anchors = re.findall(r"<a\b[^>]*>", page.text)
        assert any('href="/rules#' in anchor for anchor in anchors)
        for anchor in anchors:
            href = re.search(r'href="([^"]*)"', anchor)
            assert href is not None, anchor
            if href.group(1).startswith("/embed/"):
                assert " target=" not in anchor, anchor
            else:
                assert 'target="_blank"' in anchor and 'rel="noopener"' in anchor, anchor
    # the full pages keep their links in the same tab
    full = client.get(f"/s/{stream_id}?step=1&policy=exact-key").text
    assert re.search(r'<a class="badge rule-new" href="/rules#new">', full)


def _make_run(*assignments: str) -> list[str]:
    """The arguments `make run` gives `streamviz serve` (from `make -n`: nothing is run)."""
    root = Path(__file__).resolve().parents[2]
    printed = subprocess.run(
        ["make", "-n", "-C", str(root), "run", *assignments],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")
    [line] = [line for line in printed.splitlines() if "streamviz serve" in line]
    return shlex.split(line.split("streamviz serve", 1)[1])


def test_make_run_passes_embed_origins_to_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run EMBED_ORIGINS='A B'` starts the server with both origins allowed to frame."""
    assert "--embed-origins" not in _make_run()
    args = _make_run(f"EMBED_ORIGINS={ORIGINS[0]} {ORIGINS[1]}", f"DB={tmp_path / 'x.sqlite3'}")
    started: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: started.append(app))
    result = CliRunner().invoke(serve, args)
    assert result.exit_code == 0, result.output
    assert started[0].state.settings.embed_origins == ORIGINS


def test_compare_has_an_embed_that_stays_in_its_frame(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    for url in (f"/embed/s/{stream_id}/compare?step=2", "/embed/examples/continuation/compare"):
        page = client.get(url)
        assert page.status_code == 200, url
        assert 'id="compare-rows"' in page.text and 'id="compare-step"' in page.text
        assert "<form" not in page.text
        picks = re.findall(r'<a class="pick" href="([^"]+)" data-panel="([^"]+)"', page.text)
        assert picks and all(
            href.startswith("/embed/") and panel.startswith("/embed/") for href, panel in picks
        )
        for anchor in re.findall(r"<a\b[^>]*>", page.text):
            href = re.search(r'href="([^"]*)"', anchor)
            assert href is not None, anchor
            if not href.group(1).startswith("/embed/"):
                assert 'target="_blank"' in anchor and 'rel="noopener"' in anchor, anchor
    selected = client.get(f"/embed/s/{stream_id}/compare?step=2").text
    assert 'id="crow-2"' in selected and 'data-step="2"' in selected
    assert re.search(r'id="crow-2"[^>]*aria-current="step"', selected)
    panel = client.get(f"/embed/s/{stream_id}/compare/step?step=3", headers=HX)
    assert panel.status_code == 200 and 'data-step="3"' in panel.text
    assert 'id="share"' not in panel.text
    browser = client.get(f"/embed/s/{stream_id}/compare/step?step=3")
    assert browser.status_code == 303
    assert browser.headers["location"].startswith(f"/embed/s/{stream_id}/compare?")
    assert client.get("/embed/examples/nope/compare").status_code == 404
    assert client.get(f"/embed/s/{stream_id}/compare?step=x").status_code == 400


FRAMED = {"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Site": "cross-site"}


def test_a_frame_from_a_site_not_allowed_is_told_why(client: TestClient) -> None:
    """The browser would show a blank error; the frame gets a page that names the flag."""
    refused = client.get(
        "/embed/examples/clean", headers={**FRAMED, "Referer": "https://wiki.example.com/lesson"}
    )
    assert refused.status_code == 403
    assert ancestors(refused) == "*"  # so that the framing page can show it
    assert refused.headers["cache-control"] == "no-store"
    assert "Sec-Fetch-Dest" in refused.headers["vary"]
    text = refused.text
    assert "does not allow embedding from <code>https://wiki.example.com</code>" in text
    assert "--embed-origins &#39;https://wiki.example.com&#39;" in text
    assert 'id="stage"' not in text and "get_weather" not in text  # nothing of the stream
    # no parent named, and no site allowed: refused all the same, in general words
    blind = client.get("/embed/examples/clean/compare", headers=FRAMED)
    assert blind.status_code == 403 and "does not allow embedding here" in blind.text
    # not a frame's load: the view, saying who may frame it
    alone = client.get("/embed/examples/clean")
    assert alone.status_code == 200 and 'id="embed-framing"' in alone.text
    assert "This server lets no site frame it" in alone.text
    assert ancestors(alone) == "'none'"


def test_a_frame_from_an_allowed_site_gets_the_view(settings: Settings) -> None:
    app = create_app(Settings(db=settings.db, embed_origins=ORIGINS))
    with TestClient(app) as client:
        allowed = {**FRAMED, "Referer": f"{ORIGINS[0]}/page"}
        for url in ("/embed/examples/clean", "/embed/examples/clean/compare"):
            page = client.get(url, headers=allowed)
            assert page.status_code == 200, url
            assert ancestors(page).split() == list(ORIGINS)
            assert 'id="embed-framing"' not in page.text  # framed: no note about framing
        unknown = client.get("/embed/examples/clean", headers=FRAMED)  # no Referer: the
        assert unknown.status_code == 200  # browser decides from the policy
        other = client.get("/embed/examples/clean", headers={**FRAMED, "Referer": "https://x.io/"})
        assert other.status_code == 403
        assert f"--embed-origins &#39;{ORIGINS[0]} {ORIGINS[1]} https://x.io&#39;" in other.text
        alone = client.get("/embed/examples/clean").text
        assert f"Sites allowed to frame it: <code>{ORIGINS[0]}</code>" in alone


def test_only_the_embed_routes_refusal_keeps_its_own_policy(client: TestClient) -> None:
    """The page's policy cannot be loosened by a route outside /embed/."""
    page = client.get("/examples/clean", headers={**FRAMED, "Referer": "https://x.io/"})
    assert ancestors(page) == "'none'" and page.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    ("allowed", "referer", "refused"),
    [
        ((), "https://a.example/x", True),
        (("https://a.example",), "https://a.example/x", False),
        (("https://a.example",), "https://A.example:443/x", False),
        (("https://a.example",), "http://a.example/x", True),
        (("https://a.example:8443",), "https://a.example:8443/", False),
        (("https://a.example",), "https://b.example/", True),
        (("https:",), "https://b.example/", False),
        (("https:",), "http://b.example/", True),
        (("https://*.example.com",), "https://wiki.example.com/", False),
        (("https://*.example.com",), "https://example.org/", True),
        (("a.example",), "https://a.example/", False),  # left to the browser
        (("https://a.example",), "not a url", False),  # no parent known: the browser decides
        ((), None, True),
    ],
)
def test_which_frames_are_refused(
    allowed: tuple[str, ...], referer: str | None, refused: bool
) -> None:
    headers = {"sec-fetch-dest": "iframe"}
    if referer is not None:
        headers["referer"] = referer
    assert (refusal(headers, allowed) is not None) is refused
    assert refusal({"referer": referer or ""}, allowed) is None  # not a frame's load
