"""Titles, notes and authors print their invisible characters as escapes, and the fixture's
README.md holds its title as inert Markdown.

A right-to-left override (U+202E) in a title turned the rest of the line around on every page
that printed it ("Trojan Source"), and a zero-width space hid in an author's name; the
fixture's README embedded the title as Python's repr, so `[x](javascript:...)` stayed a link.
"""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from fastapi.testclient import TestClient

from tests.web.webkit import CONTINUATION
from webapp.core.words import visible

RLO, ZWSP, LRI, BOM = "\u202e", "\u200b", "\u2066", "\ufeff"
TITLE = f"invoice{RLO}fdp.exe{ZWSP} for{LRI} team{BOM}"
SHOWN = "invoice\\u202efdp.exe\\u200b for\\u2066 team\\ufeff"
HIDDEN = (RLO, ZWSP, LRI, BOM)


def test_visible_escapes_what_prints_as_nothing_and_keeps_the_rest() -> None:
    assert visible(TITLE) == SHOWN
    assert visible("café 東京 مرحبا 👍") == "café 東京 مرحبا 👍"
    assert visible("tag\U000e0041") == "tag\\U000e0041"
    assert visible(visible(TITLE)) == visible(TITLE)


def _pasted(client: TestClient, title: str) -> str:
    response = client.post("/streams", data={"text": CONTINUATION, "title": title})
    assert response.status_code == 303, response.text
    return response.headers["location"].split("/s/")[1].split("?")[0]


def _unseen(text: str) -> list[str]:
    return [hex(ord(char)) for char in HIDDEN if char in text]


@pytest.mark.parametrize(
    "page",
    ["/s/{id}", "/s/{id}?step=1", "/s/{id}/compare", "/s/{id}/delete", "/embed/s/{id}", "/streams"],
)
def test_pages_print_a_title_with_its_invisible_characters_escaped(
    client: TestClient, page: str
) -> None:
    stream_id = _pasted(client, TITLE)
    response = client.get(page.format(id=stream_id))
    assert response.status_code == 200, response.text[:300]
    assert SHOWN in response.text
    assert _unseen(response.text) == []


def test_the_api_answers_the_title_as_stored(client: TestClient) -> None:
    stream_id = _pasted(client, TITLE)
    assert f'value="{SHOWN}"' in client.get(f"/s/{stream_id}").text  # the rename form too
    assert client.get(f"/api/streams/{stream_id}").json()["title"] == TITLE


def test_notes_and_authors_print_escaped_on_the_step_page(client: TestClient) -> None:
    stream_id = _pasted(client, "plain")
    note = {"step": 1, "text": f"look{RLO} here", "author": f"ev{ZWSP}e"}
    assert client.post(f"/api/streams/{stream_id}/notes", json=note).status_code == 201
    page = client.get(f"/s/{stream_id}?step=1").text
    assert "look\\u202e here" in page and "ev\\u200be" in page
    assert _unseen(page) == []


def test_the_report_prints_title_notes_and_authors_escaped(client: TestClient) -> None:
    stream_id = _pasted(client, TITLE)
    note = {"step": 1, "text": f"look{RLO} here", "author": f"ev{ZWSP}e"}
    assert client.post(f"/api/streams/{stream_id}/notes", json=note).status_code == 201
    report = client.get(f"/s/{stream_id}/report.md").text
    assert "look\\\\u202e here" in report or "look\\u202e here" in report
    assert _unseen(report) == []


def test_the_fixture_readme_holds_the_title_as_inert_markdown(client: TestClient) -> None:
    title = f"[click](https://evil.example) <img src=x onerror=alert(1)> `x` #1 | a{RLO}b"
    stream_id = _pasted(client, title)
    bundle = zipfile.ZipFile(io.BytesIO(client.get(f"/s/{stream_id}/fixture.zip").content))
    readme = bundle.read("README.md").decode()
    assert "[click](" not in readme and "\\[click\\](https://evil.example)" in readme
    assert "\\<img src=x onerror=alert(1)\\>" in readme
    assert re.search(r"(?<!\\)[<`|#\[]", readme.split("”")[0]) is None
    assert "\\`x\\`" in readme and "\\| a" in readme
    assert _unseen(readme) == []
