"""Posts from another site's page are refused; same-origin, allowed and non-browser posts pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from webapp.cli import main
from webapp.settings import Settings
from webapp.web.app import create_app

SSE = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"f","arguments":"{}"}}]}}]}\n\ndata: [DONE]\n\n'
)


def post(client: TestClient, **headers: str) -> Any:
    return client.post("/api/streams", json={"text": SSE}, headers=headers)


def test_a_post_without_origin_passes(client: TestClient) -> None:
    assert post(client).status_code == 201


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        {"Origin": "http://testserver:80"},
        {"Origin": "https://testserver"},  # behind a proxy that ends TLS
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},
        # A form post from our own page: no-referrer makes the browser send Origin: null.
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    ],
)
def test_a_same_origin_post_passes(client: TestClient, headers: dict[str, str]) -> None:
    assert post(client, **headers).status_code == 201


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "https://evil.example"},
        {"Origin": "http://testserver:3000", "Sec-Fetch-Site": "same-site"},
        {"Origin": "null"},
        {"Origin": "null", "Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_a_cross_site_post_is_refused(client: TestClient, headers: dict[str, str]) -> None:
    response = post(client, **headers)
    assert response.status_code == 403
    assert response.headers["content-type"].startswith("text/plain")
    assert "another site" in response.text and "--allow-origins" in response.text
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_cross_site_form_post_to_a_page_is_refused(client: TestClient) -> None:
    response = client.post(
        "/streams", data={"text": SSE}, headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403


def test_a_cross_site_get_is_not_refused(client: TestClient) -> None:
    response = client.get(
        "/", headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    )
    assert response.status_code == 200


def test_an_allowed_origin_may_post(db_url: str) -> None:
    settings = Settings(db=db_url, allow_origins=("https://a.example/", "https://B.example"))
    with TestClient(create_app(settings)) as client:
        for origin in ("https://a.example", "https://b.example"):
            headers = {"Origin": origin, "Sec-Fetch-Site": "cross-site"}
            assert post(client, **headers).status_code == 201
        assert post(client, Origin="https://c.example").status_code == 403


def test_serve_passes_allow_origins_to_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: seen.update(app=app, **options))
    db = tmp_path / "db" / "s.sqlite3"
    args = ["serve", "--db", str(db), "--allow-origins", "https://a.example, https://b.example"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    settings = seen["app"].state.settings
    assert settings.allow_origins == ("https://a.example", "https://b.example")
    seen["app"].state.service.close()
