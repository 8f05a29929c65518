"""The API against its own /openapi.json (schemathesis): no 5xx, and answers that match it.

Each operation gets `SCHEMA_FUZZ_EXAMPLES` generated requests (40 by default, derandomised so
CI sees the same ones; set the variable to run many more, and `SCHEMA_FUZZ_SEED=random` to
draw new ones; `SCHEMA_FUZZ_LOG=FILE` appends each request's method, path and status). The
app holds two stored streams with a note each; half of the requests that name a stream or a
note are pointed at a real one (chosen from the case, so it is deterministic), and a quarter
carry the stream's delete token, so the handlers past the 404 are fuzzed too.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.python import asgi

from tests.streamkit import chunk, frag, sse
from webapp.settings import Settings
from webapp.web.app import create_app

EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "40"))
RANDOM = os.environ.get("SCHEMA_FUZZ_SEED", "") == "random"
LOG = os.environ.get("SCHEMA_FUZZ_LOG", "")
"""A file to append "METHOD PATH STATUS" to for every request (to count a long run's cases)."""
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_headers_conformance,
    schemathesis.checks.response_schema_conformance,
]
STREAM = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": '), model="m"),
    chunk(frag(0, args='"Paris"}')),
    chunk(finish="tool_calls"),
)


class Real:
    """What the fixture stored: stream ids, their delete tokens and a note id of each."""

    def __init__(self) -> None:
        self.streams: list[tuple[str, str, str]] = []


def _stored(app: FastAPI) -> Real:
    real = Real()
    with asgi.get_client(app) as client:
        for n in range(2):
            answer = client.post("/api/streams", json={"text": STREAM, "title": f"fuzz {n}"})
            assert answer.status_code == 201, answer.text
            body = answer.json()
            note = client.post(f"/api/streams/{body['id']}/notes", json={"step": 1, "text": "x"})
            assert note.status_code == 201, note.text
            real.streams.append((body["id"], body["delete_token"], note.json()["id"]))
    return real


def _settings(db: str) -> Settings:
    return Settings(db=db, max_bytes=50_000, timeline_window=20)


# The schema is read once, from an app on a throwaway store; every test gets its own app.
# (`schemathesis.pytest.from_fixture` would read it per test, but fails on pytest 9.2:
# "'Function' object has no attribute '_nodeid'".)
schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(_settings(str(Path(tempfile.mkdtemp()) / "schema.sqlite3")))
)


@pytest.fixture
def fuzzed(db_url: str) -> tuple[FastAPI, Real]:
    """A new app on each store for each operation (its lifespan ends with the test)."""
    app = create_app(_settings(db_url))
    return app, _stored(app)


def _aim(case: Any, real: Real) -> dict[str, str]:
    """Point some cases at a stored stream and note; return the headers to add."""
    params = case.path_parameters or {}
    if "stream_id" not in params:
        return {}
    pick = zlib.crc32(repr(sorted(params.items())).encode("utf-8", "surrogatepass")) % 8
    if pick >= 4:
        return {}
    stream_id, token, note_id = real.streams[pick % 2]
    params["stream_id"] = stream_id
    if "note_id" in params and pick < 3:
        params["note_id"] = note_id
    return {"Authorization": f"Bearer {token}"} if pick < 2 else {}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=not RANDOM,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_answers_every_generated_request_without_a_server_error(
    case: Any, fuzzed: tuple[FastAPI, Real]
) -> None:
    app, real = fuzzed
    answer = case.call_and_validate(app=app, headers=_aim(case, real), checks=CHECKS)
    if LOG:
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"{case.method} {case.path} {answer.status_code}\n")
