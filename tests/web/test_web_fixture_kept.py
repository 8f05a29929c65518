"""fixture.zip is built once, under the bound on heavy work, and kept as an artefact of the
stream: every download after the first (in any worker) is read from the store, a rename is a
new bundle, deleting the stream deletes it."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import webapp.web.routes.triage as triage
from tests.web.webkit import Store
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.jobs.fixture import KIND

CHUNK = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
    '"function":{"arguments":"x"}}]}}]}\n\n'
)
HEAD = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"note","arguments":""}}]}}]}\n\n'
)
SMALL = HEAD + CHUNK * 3 + "data: [DONE]\n\n"


def _kept(app: FastAPI, stream_id: str) -> list[Any]:
    rows = app.state.service.storage.backend.run(
        "SELECT kind FROM artefacts WHERE stream_id = ? AND kind LIKE ?", (stream_id, f"{KIND}%")
    )
    return list(rows)


def test_a_bundle_is_built_once_and_served_from_the_store_by_every_worker(
    app: FastAPI, client: TestClient, store: Store, settings: Settings
) -> None:
    stream_id = store(SMALL, title="weather")
    first = client.get(f"/s/{stream_id}/fixture.zip")
    assert first.status_code == 200
    assert all(client.get(f"/s/{stream_id}/fixture.zip").content == first.content for _ in "abc")
    assert app.state.fixtures.built == 1 and len(_kept(app, stream_id)) == 1
    other = create_app(settings)  # another worker (or host) on the same store
    with TestClient(other) as there:
        assert there.get(f"/s/{stream_id}/fixture.zip").content == first.content
    assert other.state.fixtures.built == 0
    exact = client.get(f"/s/{stream_id}/fixture.zip?policy=exact-key")
    assert exact.status_code == 200 and app.state.fixtures.built == 2  # other options: its own
    app.state.service.storage.rename(stream_id, "renamed")
    renamed = zipfile.ZipFile(io.BytesIO(client.get(f"/s/{stream_id}/fixture.zip").content))
    assert "“renamed”" in renamed.read("README.md").decode()
    assert app.state.fixtures.built == 3
    assert app.state.service.storage.delete(stream_id)
    assert _kept(app, stream_id) == []
    assert client.get(f"/s/{stream_id}/fixture.zip").status_code == 404


def test_a_large_stream_s_bundle_is_built_inside_the_bound_on_heavy_work(
    app: FastAPI, client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = app.state.service.gate
    free: list[int] = []
    build = triage.fixture_bundle

    def watched(*args: Any, **kwargs: Any) -> bytes:
        free.append(gate.heavy._value)  # the bound's free places while the bundle is built
        return build(*args, **kwargs)

    monkeypatch.setattr(triage, "fixture_bundle", watched)
    monkeypatch.setattr(triage, "LIGHT_BELOW", 0)  # every stream large (uploads here are small)
    stream_id = store(SMALL)
    idle = gate.heavy._value
    assert client.get(f"/s/{stream_id}/fixture.zip").status_code == 200
    assert client.get(f"/s/{stream_id}/fixture.zip").status_code == 200
    assert free == [idle - 1]  # built once, holding one place of the bound
