"""Input and wording on the pages: a pasted log, a paste that is no stream, the secrets
preview."""

from __future__ import annotations

import html
import json

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from tests.core.readers.not_streams import (
    LOG_LINE,
    NGINX_502,
    TRACEBACK,
)
from tests.streamkit import chunk, frag


def test_a_pasted_log_without_chunks_says_it_is_a_log(client: TestClient) -> None:
    log = "".join(f"2026-01-01 12:00:0{n} INFO worker: step {n} done\n" for n in range(9))
    page = client.post("/streams", data={"text": log})
    assert page.status_code == 422
    assert "this looks like a log, not a stream" in page.text
    assert "paste the stream itself" in page.text and "invalid-chunk" not in page.text


def test_a_pasted_log_with_data_lines_is_stored_as_its_chunks(client: TestClient) -> None:
    chunks = [chunk(frag(0, "call_1", "get_weather", '{"city":"Paris"}')), chunk(finish="stop")]
    log = "2026-01-01 12:00:00 INFO POST /v1/chat/completions\n" + "".join(
        f"2026-01-01 12:00:01 DEBUG data: {json.dumps(c)}\n" for c in chunks
    )
    stored = client.post("/streams", data={"text": log})
    assert stored.status_code == 303
    stream_id = stored.headers["location"].split("/")[2].split("?")[0]
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert [block["name"] for block in trace["blocks"]] == ["get_weather"]
    assert not [a for a in trace["anomalies"] if a["code"] == "invalid-chunk"]
    page = client.get(f"/s/{stream_id}").text
    assert "this looks like a log" in page  # the reader's note is on the page


def test_the_secrets_preview_shows_enough_of_each_secret_to_recognise(
    client: TestClient,
) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2 + "4kQz"
    text = "\n\n".join(
        f"data: {json.dumps(c)}"
        for c in (chunk(frag(0, "call_1", "f", json.dumps({"key": key}))), chunk(finish="stop"))
    )
    page = client.post("/streams", data={"text": text})
    assert page.status_code == 200 and "Secrets found before storing" in page.text
    table = page.text.split("<textarea")[0]
    assert "sk-pr…4kQz" in table  # recognisable: its start and end
    assert key not in table and key[5:-4] not in table  # the middle masked


NOT_STREAMS = [
    pytest.param(
        TRACEBACK + LOG_LINE + NGINX_502,
        "this holds a Python traceback (ending &#34;openai.InternalServerError",
        id="traceback-log-line-and-nginx-page",
    ),
    pytest.param(NGINX_502, "this is an HTML page (nginx 502 Bad Gateway)", id="nginx-502-page"),
]


@pytest.mark.parametrize(("text", "said"), NOT_STREAMS)
def test_a_paste_that_is_no_stream_gets_the_form_back_saying_what_it_is(
    client: TestClient, text: str, said: str
) -> None:
    page = client.post("/streams", data={"text": text, "title": "mine"})
    assert page.status_code == 422
    assert said in page.text and 'role="alert"' in page.text
    assert f"{escape(text)}</textarea>" in page.text  # the paste, shown again to edit
    assert "no-finish" not in page.text and "invalid-chunk" not in page.text


@pytest.mark.parametrize(("text", "said"), NOT_STREAMS)
def test_the_api_refuses_what_is_no_stream_with_a_422_saying_what_it_is(
    client: TestClient, text: str, said: str
) -> None:
    sent = client.post("/api/streams", json={"text": text})
    assert sent.status_code == 422
    assert html.unescape(said) in sent.json()["detail"]
    uploaded = client.post("/api/streams", files={"file": ("paste.txt", text.encode())})
    assert uploaded.status_code == 422
    assert uploaded.json()["detail"] == sent.json()["detail"]
    assert client.get("/api/streams").json()["total"] == 0  # nothing was stored
