"""Fixtures for the web layer: an app on a fresh SQLite file, a test client, stream helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from webapp.app import create_app
from webapp.settings import Settings

Store = Callable[..., str]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(db_path=tmp_path / "streams.sqlite3", max_bytes=50_000, timeline_window=40)


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
