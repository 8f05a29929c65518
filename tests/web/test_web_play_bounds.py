"""The playground's posts are bounded like uploads: `--max-bytes`, worker threads, upload slots.

It read its form with `request.form()` on the event loop and no size bound: a 48 MB form held
every other request for seconds, a 100 MB body was accepted. Now the body is refused (413,
naming the limit) as soon as it passes `--max-bytes`, parsing and running happen in a worker
thread, and a large post takes one of the worker's upload slots.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.web.webkit import post_chunked
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.service import LIGHT_BELOW
from webapp.web.routes import teach

QUOTED = "50,000 bytes"
"""The test app's `max_bytes` (tests/web/conftest.py), as a 413 must name it."""
FORM = {"content-type": "application/x-www-form-urlencoded"}
ROUTES = ("/play/run", "/play/edit", "/play/save")
ONE = b"c0.f0.arguments=%7B%7D&c0.f0.arguments.on=on&c0.f0.index=0&c0.f0.index.on=on"


@pytest.mark.parametrize("url", ROUTES)
def test_a_form_over_max_bytes_gets_a_413_naming_the_limit(client: TestClient, url: str) -> None:
    body = ONE + b"&pad=" + b"x" * 200_000  # the limit, and room for the form around it
    response = client.post(url, content=body, headers=FORM)
    assert response.status_code == 413, response.text[:500]
    assert QUOTED in response.text and "--max-bytes" in response.text


@pytest.mark.parametrize("url", ROUTES)
def test_a_declared_length_over_the_limit_is_refused_unread(client: TestClient, url: str) -> None:
    headers = {**FORM, "content-length": str(10**9)}
    response = client.post(url, content=ONE, headers=headers)
    assert response.status_code == 413 and QUOTED in response.text


def test_a_chunked_form_is_refused_once_it_passes_the_limit(app: FastAPI) -> None:
    sent = post_chunked(app, "/play/run", FORM["content-type"], ONE + b"&pad=", chunks=100)
    assert sent.status == 413
    assert sent.pulled < 100  # refused as soon as it passed the limit, not read to the end


def test_a_form_within_the_limit_still_runs(client: TestClient) -> None:
    response = client.post("/play/run", content=ONE, headers=FORM)
    assert response.status_code == 200
    assert "HX-Replace-Url" in response.headers
    multipart = client.post("/play/run", files={"c0.f0.arguments": (None, "{}")})
    assert multipart.status_code == 200  # a multipart form is read as before


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, set[int]]]:
    """Which threads received the body (the event loop's) and did the work."""
    seen: dict[str, set[int]] = {}

    def spy(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, set()).add(threading.get_ident())
            return function(*args, **kwargs)

        return run

    read_body = teach.read_body

    async def reading(*args: Any, **kwargs: Any) -> Any:
        seen.setdefault("loop", set()).add(threading.get_ident())
        return await read_body(*args, **kwargs)

    monkeypatch.setattr(teach, "read_body", reading)
    for name in ("parse_form", "from_form", "compare", "render"):
        monkeypatch.setattr(teach, name, spy(name, getattr(teach, name)))
    yield seen


@pytest.mark.parametrize("url", ROUTES)
def test_parsing_and_running_happen_off_the_event_loop(
    client: TestClient, threads: dict[str, set[int]], url: str
) -> None:
    response = client.post(url, content=ONE + b"&op=add%3A0", headers=FORM)
    assert response.status_code in (200, 303), response.text[:500]
    (loop,) = threads["loop"]
    worked = set().union(*(threads.get(name, set()) for name in ("parse_form", "from_form")))
    assert worked and loop not in worked
    if url == "/play/run":
        assert loop not in threads["compare"] | threads["render"]


def test_a_large_post_waits_for_no_one_but_takes_an_upload_slot(db_url: str) -> None:
    app = create_app(Settings(db=db_url, max_bytes=4 * LIGHT_BELOW, max_uploads=1))
    large = ONE + b"&pad=" + b"x" * LIGHT_BELOW
    with TestClient(app) as client, app.state.uploads.slot():  # the one slot is taken
        busy = client.post("/play/run", content=large, headers=FORM)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "2"
        small = client.post("/play/run", content=ONE, headers=FORM)
        assert small.status_code == 200  # an ordinary edit does not queue behind uploads
    # a new app (the first one's lifespan closed its store): with the slot free, it is read
    again = create_app(Settings(db=db_url, max_bytes=4 * LIGHT_BELOW, max_uploads=1))
    with TestClient(again) as client:
        assert client.post("/play/run", content=large, headers=FORM).status_code == 400


def _large_state(chunks: int = 24, size: int = 900) -> bytes:
    """A form of `chunks` chunks whose arguments are random hex: its link passes 8,000
    characters (random text does not compress)."""
    import random
    from urllib.parse import urlencode

    rng = random.Random(18)
    fields: dict[str, str] = {}
    for c in range(chunks):
        fields |= {f"c{c}.f0.index": "0", f"c{c}.f0.index.on": "on"}
        fields |= {f"c{c}.f0.arguments": rng.randbytes(size // 2).hex()}
        fields[f"c{c}.f0.arguments.on"] = "on"
    return urlencode(fields).encode()


def test_a_large_answer_keeps_its_url_out_of_the_header_and_says_so(db_url: str) -> None:
    """A large state's answer carried an 86 KB HX-Replace-Url (over common header limits)."""
    app = create_app(Settings(db=db_url, max_bytes=400_000))
    with TestClient(app) as client:
        response = client.post("/play/run", content=_large_state(), headers=FORM)
        assert response.status_code == 200, response.text[:500]
        assert "HX-Replace-Url" not in response.headers
        assert 'id="play-unlinked"' in response.text and "links stop at 8,000" in response.text
        assert 'formaction="/play/save"' in response.text  # the way to a link that lasts
        small = client.post("/play/run", content=ONE, headers=FORM)
        assert len(small.headers["HX-Replace-Url"]) < 200
        assert 'id="play-unlinked"' not in small.text


def test_an_edit_of_a_large_state_is_shown_not_redirected_to_a_huge_url(db_url: str) -> None:
    app = create_app(Settings(db=db_url, max_bytes=400_000))
    with TestClient(app, follow_redirects=False) as client:
        body = _large_state() + b"&op=add%3A0"
        response = client.post("/play/edit", content=body, headers=FORM)
        assert response.status_code == 200, response.text[:500]
        assert "location" not in response.headers
        assert 'id="play-unlinked"' in response.text and 'id="chunk-24"' in response.text
        small = client.post("/play/edit", content=ONE + b"&op=add%3A0", headers=FORM)
        assert small.status_code == 303 and len(small.headers["location"]) < 200
