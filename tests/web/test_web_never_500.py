"""Whatever a user sends, the server answers it without a 500: random streams, odd fragments."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzzkit import PLAY_FORMS, PLAY_OPS, PLAY_TOKENS
from tests.streamkit import sse
from webapp.settings import Settings
from webapp.web.app import create_app

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["", "call_1", "<img src=x onerror=alert(1)>", "\ud800"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=4)
INDEX = st.one_of(st.just(0), st.just(1), VALUES)
CALL_ID = st.one_of(st.sampled_from(["call_1", "call_2", ""]), VALUES)
NAME = st.one_of(st.sampled_from(["get_weather", "web_search", "get_x"]), VALUES)
ARGUMENTS = st.one_of(st.sampled_from(['{"a":', "1}", "}", ""]), st.text(max_size=5), VALUES)
FRAGMENT = st.fixed_dictionaries(
    {},
    optional={
        "index": INDEX,
        "id": CALL_ID,
        "type": st.just("function"),
        "function": st.one_of(
            st.fixed_dictionaries({}, optional={"name": NAME, "arguments": ARGUMENTS}),
            VALUES,
        ),
    },
)
DELTA = st.fixed_dictionaries(
    {},
    optional={
        "content": VALUES,
        "reasoning_content": VALUES,
        "tool_calls": st.one_of(st.lists(FRAGMENT, min_size=1, max_size=3), VALUES),
    },
)
TOOL_CHUNK = st.builds(
    lambda calls, finish: {
        "choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": finish}]
    },
    st.lists(FRAGMENT, min_size=1, max_size=3),
    st.one_of(st.none(), st.sampled_from(["tool_calls", "stop", "length", "weird"])),
)
ODD_CHUNK = st.one_of(
    st.fixed_dictionaries(
        {"choices": st.lists(st.fixed_dictionaries({"index": INDEX, "delta": DELTA}), max_size=2)},
        optional={"error": st.just({"message": "boom"})},
    ),
    VALUES,
    # Another API's event, or what looks like one: its `type` may be anything (a list or an
    # object broke every upload route, looked up among the event names).
    st.fixed_dictionaries(
        {
            "type": st.one_of(
                st.sampled_from(["message_start", "response.created"]),
                VALUES,
                st.dictionaries(st.text(max_size=3), VALUES, max_size=2),
            )
        },
        optional={"object": VALUES, "candidates": VALUES, "delta": VALUES, "choices": VALUES},
    ),
)
CHUNK = st.one_of(TOOL_CHUNK, TOOL_CHUNK, TOOL_CHUNK, ODD_CHUNK)


def test_random_streams_never_get_a_500(db_url: str) -> None:
    app = create_app(Settings(db=db_url, timeline_window=20))
    with TestClient(app, follow_redirects=False) as client:

        @settings(
            max_examples=80,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(
            chunks=st.lists(CHUNK, max_size=8),
            garbage=st.lists(st.text(max_size=8), max_size=2),
            policy=st.sampled_from(["adr-0019", "exact-key"]),
            path=st.sampled_from(["client", "server-tools"]),
            step=st.integers(0, 12),
        )
        def check(chunks: list[Any], garbage: list[str], policy: str, path: str, step: int) -> None:
            text = sse(*map(json.dumps, chunks), *garbage)
            created = client.post("/api/streams", json={"text": text})
            assert created.status_code in (201, 422), created.text
            if created.status_code != 201:
                return
            stream_id = created.json()["id"]
            query = f"policy={policy}&path={path}&server_tools=get_*,x&step={step}"
            for url in (
                f"/s/{stream_id}?{query}",
                f"/s/{stream_id}/compare?{query}",
                f"/s/{stream_id}/timeline?{query}",
                f"/api/streams/{stream_id}/trace?{query}",
            ):
                response = client.get(url, headers={"HX-Request": "true"})
                assert response.status_code < 500, (url, response.text[:2000])
            full = client.get(f"/s/{stream_id}?{query}")
            assert full.status_code == 200, full.text[:2000]

        check()


def test_random_bytes_never_get_a_500(db_url: str) -> None:
    app = create_app(Settings(db=db_url))
    with TestClient(app, follow_redirects=False) as client:

        @given(st.binary(max_size=300))
        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        def check(data: bytes) -> None:
            files = {"file": ("x", data, "application/octet-stream")}
            response = client.post("/streams", data={"text": ""}, files=files)
            assert response.status_code in (303, 422), response.text[:2000]
            if response.status_code == 303:
                assert client.get(response.headers["location"]).status_code == 200

        check()


TIME_TEXTS = st.one_of(
    st.integers().map(str),
    st.integers(min_value=10**300, max_value=10**420).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1e400", "1e308", "-1", "true", "null", '"7"', "[]", "{}"]),
)
TIMINGS = st.dictionaries(
    st.sampled_from(["blocked", "dns", "connect", "ssl", "send", "wait", "receive"]), TIME_TEXTS
).map(lambda phases: "{" + ", ".join(f'"{k}": {v}' for k, v in phases.items()) + "}")


def test_random_har_timings_never_get_a_500(db_url: str) -> None:
    # A HAR entry whose timings added past the float range (3 x 1e308) gave a 500 on the stream
    # page and the timing API, a 401-digit timing one on upload (issue 31).
    app = create_app(Settings(db=db_url))
    stream = sse(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    entry = {
        "request": {"method": "POST", "url": "https://api.example.com/v1/chat/completions"},
        "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": stream}},
        "timings": "TIMINGS",
    }
    template = json.dumps({"log": {"entries": [entry]}})
    with TestClient(app, follow_redirects=False) as client:

        @settings(
            max_examples=40,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(TIMINGS | TIME_TEXTS)
        def check(timings: str) -> None:
            text = template.replace('"TIMINGS"', timings)
            created = client.post("/api/streams", json={"text": text})
            assert created.status_code == 201, created.text
            stream_id = created.json()["id"]
            for url in (
                f"/s/{stream_id}",
                f"/api/streams/{stream_id}/timing",
                f"/api/streams/{stream_id}/trace",
            ):
                response = client.get(url)
                assert response.status_code == 200, (url, response.text[:2000])

        check()


def _form_body(form: dict[str, str]) -> bytes:
    """A urlencoded body as a browser sends it; a lone surrogate goes as its WTF-8 bytes."""
    return urlencode(form, encoding="utf-8", errors="surrogatepass").encode("ascii")


FORM = {"content-type": "application/x-www-form-urlencoded"}
URL_MOST = 60_000
"""Longer links the test client refuses to send (the server refuses tokens over 50,000)."""


@pytest.mark.filterwarnings("ignore:Generating overly large repr")  # a failure's huge example
def test_random_playground_forms_edits_and_links_never_get_a_500(db_url: str) -> None:
    # The form parser and the link decoder fuzzed through the routes (tests/fuzzkit.py has the
    # strategies): a field named `c¹`, an index of 20,000 `[`, a link holding 900,000 nested
    # brackets and lone surrogates each gave a 500.
    app = create_app(Settings(db=db_url, max_bytes=200_000))
    with TestClient(app, follow_redirects=False) as client:

        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(PLAY_FORMS, PLAY_OPS, PLAY_TOKENS)
        def check(form: dict[str, str], op: str, token: str) -> None:
            body = _form_body(form)
            for url, extra in (("/play/run", {}), ("/play/edit", {"op": op}), ("/play/save", {})):
                sent = body + b"&" + _form_body(extra) if extra else body
                response = client.post(url, content=sent, headers=FORM)
                assert response.status_code < 500, (url, response.text[:2000])
            query = urlencode({"s": token}, encoding="utf-8", errors="surrogatepass")
            if len(query) < URL_MOST:
                response = client.get(f"/play?{query}")
                assert response.status_code < 500, response.text[:2000]

        check()
