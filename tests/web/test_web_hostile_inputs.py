"""The round's 500s, each as the request that found it: the server answers a 4xx in words or
shows the odd value escaped.

The fuzz tests (tests/web/test_web_never_500.py, tests/test_fuzz.py) look for more of each kind;
these pin the cases as they were reported.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.lenses.fakes import answering
from tests.streamkit import chunk, frag, har, sse
from tests.web.webkit import Store
from webapp.web.routes.clients import ClientJobs

FORM = {"content-type": "application/x-www-form-urlencoded"}
ODD_TYPES: list[Any] = [[], ["message_start"], {"a": 1}, {"response.created": True}]


@pytest.mark.parametrize("kind", ODD_TYPES, ids=repr)
def test_a_chunk_whose_type_is_a_list_or_an_object_is_read_on_every_route(
    client: TestClient, kind: Any
) -> None:
    text = sse({"type": kind}, {"type": kind, "choices": []})
    created = client.post("/api/streams", json={"text": text})
    assert created.status_code == 201, created.text
    as_file = client.post("/api/streams", files={"file": ("x.sse", text.encode(), "text/plain")})
    assert as_file.status_code == 201, as_file.text
    pasted = client.post("/streams", data={"text": text})
    assert pasted.status_code == 303, pasted.text[:500]
    assert client.get(pasted.headers["location"]).status_code == 200


def _play(client: TestClient, url: str, form: dict[str, str]) -> int:
    body = urlencode(form, encoding="utf-8", errors="surrogatepass")
    return client.post(url, content=body, headers=FORM).status_code


@pytest.mark.parametrize(
    "form",
    [
        {"c¹.f0.arguments": "x", "c¹.f0.arguments.on": "on"},
        {"c0.f².arguments": "x"},
        {"c" + "9" * 5000 + ".f0.arguments": "x"},
        {"c0.f0.index": "[" * 20_000, "c0.f0.index.on": "on"},
        {"c0.f0.index": "[" * 900 + "]" * 900, "c0.f0.index.on": "on"},
        {"c0.f0.arguments": "\ud800", "c0.f0.arguments.on": "on", "op": "unfrag:0.¹"},
        {"c0.f0.arguments": "x", "op": "add:" + "9" * 5000},
    ],
    ids=["superscript chunk", "superscript fragment", "long place", "20,000 [", "900 deep",
         "surrogate", "long edit"],
)  # fmt: skip
def test_odd_playground_forms_get_a_4xx_or_a_page(client: TestClient, form: dict[str, str]) -> None:
    for url in ("/play/run", "/play/edit", "/play/save"):
        assert _play(client, url, form) in (200, 303, 400), url


def _link(data: bytes) -> str:
    token = base64.urlsafe_b64encode(zlib.compress(data, 9)).decode("ascii").rstrip("=")
    return f"/play?{urlencode({'s': token})}"


def test_a_small_link_holding_900_000_brackets_is_refused_in_words(client: TestClient) -> None:
    link = _link(b"[" * 900_000)
    assert len(link) < 1300  # 1.2 KB of link
    response = client.get(link)
    assert response.status_code == 400
    assert "nests deeper than 32 levels" in response.text
    deep_value = json.dumps([{"f": [{"index": json.loads("[" * 40 + "]" * 40)}]}])
    assert client.get(_link(deep_value.encode())).status_code == 400
    too_much = client.get(_link(b" " * 2_000_000))
    assert too_much.status_code == 400 and "holds too much" in too_much.text


@pytest.mark.parametrize("where", ["arguments", "name", "id", "index", "finish"])
def test_a_state_holding_lone_surrogates_is_shown(client: TestClient, where: str) -> None:
    odd = "x\ud800y\udfff"
    state = [{"f": [{"index": 0}], "finish": odd} if where == "finish" else {"f": [{where: odd}]}]
    data = json.dumps(state, ensure_ascii=False).encode("utf-8", "surrogatepass")
    page = client.get(_link(data))
    assert page.status_code == 200, page.text[:500]
    # shown as the replacement character, as everywhere else, or escaped (an index is JSON)
    assert "\ufffd" in page.text or "x\\ud800y\\udfff" in page.text
    again = client.get(_link(json.dumps(state).encode("ascii")))  # escaped in the JSON
    assert again.status_code == 200


def test_a_call_id_with_a_lone_surrogate_in_the_clients_json(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    call = {"id": "call_\ud800", "name": "get_weather", "arguments": "{}"}
    app.state.clients = ClientJobs((answering({"status": "ok", "calls": [call], "error": None}),))
    stream_id = store(sse(chunk(frag(0, "call_\ud800", "get_weather", "{}")), chunk(finish="stop")))
    response = client.get(f"/api/streams/{stream_id}/clients?wait=true")
    assert response.status_code == 200, response.text[:500]
    assert "call_\\ud800" in response.text  # escaped, as the rest of the API writes it
    assert response.json()["clients"][0]["status"] == "ok"


def _har_timed(timings: str) -> str:
    """A HAR of one tool-call stream whose entry's `timings` is the JSON text given."""
    document = json.loads(har(chunk(frag(0, "c", "f", "{}")), chunk(finish="tool_calls")))
    document["log"]["entries"][0]["timings"] = "TIMINGS"
    return json.dumps(document).replace('"TIMINGS"', timings)


@pytest.mark.parametrize(
    ("timings", "field"),
    [
        ('{"blocked": 1e308, "dns": 1e308, "connect": 1e308, "wait": 1, "receive": 1}', "blocked"),
        ('{"send": 0, "wait": 1' + "0" * 400 + ', "receive": 1}', "wait"),
        ('{"send": 0, "wait": 1e400}', "wait"),
        ('{"send": -5, "wait": 3, "receive": 1}', "send"),
    ],
    ids=["sum past the float range", "401 digits", "1e400", "negative"],
)
def test_har_timings_that_are_no_times_are_ignored_with_a_note_on_every_route(
    client: TestClient, timings: str, field: str
) -> None:
    text = _har_timed(timings)
    as_json = client.post("/api/streams", json={"text": text})
    assert as_json.status_code == 201, as_json.text
    as_file = client.post("/api/streams", files={"file": ("x.har", text.encode(), "text/plain")})
    assert as_file.status_code == 201, as_file.text
    pasted = client.post("/streams", data={"text": text})
    assert pasted.status_code == 303, pasted.text[:500]
    stream_id = as_json.json()["id"]
    page = client.get(f"/s/{stream_id}")
    assert page.status_code == 200 and f"timings.{field} is" in page.text
    assert "its timings are ignored" in page.text and 'id="timing"' not in page.text
    timing = client.get(f"/api/streams/{stream_id}/timing")
    assert timing.status_code == 200 and timing.json()["timing"] is None
    trace = client.get(f"/api/streams/{stream_id}/trace")
    assert trace.status_code == 200 and "timing" not in trace.json()
    assert client.get(pasted.headers["location"]).status_code == 200
