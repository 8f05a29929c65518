"""Fixtures for the web layer: an app on each store, a test client, stream helpers (the
browser tests and their Chromium are in tests/browser, so these run without one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.web.webkit import Store
from webapp.settings import Settings
from webapp.web.app import create_app


@pytest.fixture
def settings(db_url: str) -> Settings:
    """Every test that uses the app runs on each store (`db_url`, tests/conftest.py)."""
    return Settings(db=db_url, max_bytes=50_000, timeline_window=40)


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as test_client:
        yield test_client


@pytest.fixture
def store(client: TestClient) -> Store:
    """Store a text through the API and return its id."""

    def put(text: str, title: str = "test stream", **extra: Any) -> str:
        response = client.post("/api/streams", json={"text": text, "title": title, **extra})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    return put
