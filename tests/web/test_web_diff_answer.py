"""`/diff` and `/api/diff` with a non-stream `chat.completion` answer on either side (issue 35,
the twin): the answer's calls held to the stream's meaning; an answer that cannot be read is a
422 saying why, never a 500."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.streamanswer import answer_text
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import Store

STREAM = sse(
    chunk(frag(0, "call_1", "get_weather", '{"ci')),
    chunk(frag(0, args='ty": "Paris"}')),
    chunk(finish="tool_calls"),
)
SAME = answer_text(("call_9", "get_weather", '{"city":"Paris"}'))
LYON = answer_text(("call_9", "get_weather", '{"city":"Lyon"}'))


def test_an_answer_with_the_same_calls(client: TestClient, store: Store) -> None:
    stream, answer = store(STREAM, "stream"), store(SAME, "answer")
    response = client.get("/diff", params={"a": stream, "b": answer})
    assert response.status_code == 200, response.text
    page = response.context["page"]
    assert page.diff.same and page.b.side.answer
    assert "B is the non-stream answer" in response.text
    assert "same calls as the stream&#39;s intended reading" in response.text
    assert "chunks" not in dict(page.b.facts)


def test_an_answer_that_differs_on_either_side(client: TestClient, store: Store) -> None:
    stream, answer = store(STREAM, "stream"), store(LYON, "answer")
    for query, letter in (({"a": stream, "b": answer}, "b"), ({"a": answer, "b": stream}, "a")):
        document = client.get("/api/diff", params=query).json()
        assert document["same"] is False
        assert document["twin"]["answer"] == letter
        assert document["twin"]["reading"]["words"] == (
            "differs from the stream's intended reading at call 1, `arguments.city`"
        )
    response = client.get("/diff", params={"a": stream, "b": answer})
    assert (
        "differs from the stream&#39;s intended reading at call 1, <code>arguments.city</code>"
        in (response.text)
    )
    assert "in B's message.tool_calls" in response.text  # not a timeline's step


def test_an_answer_with_no_choices_is_a_422_saying_why(client: TestClient, store: Store) -> None:
    stream = store(STREAM, "stream")
    answer = store(json.dumps({"object": "chat.completion", "choices": []}), "no choices")
    response = client.get("/diff", params={"a": stream, "b": answer})
    assert response.status_code == 422
    assert "has no choices" in response.text
    api = client.get("/api/diff", params={"a": stream, "b": answer})
    assert api.status_code == 422 and "has no choices" in api.json()["detail"]


def test_an_answer_that_is_not_json_is_refused_when_pasted(
    client: TestClient, store: Store
) -> None:
    stream = store(STREAM, "stream")
    response = client.post("/diff/paste", data={"a": stream, "text": "this is not JSON {"})
    assert response.status_code == 422
    assert "not a stream streamviz can read" in response.text


def test_a_stored_answer_has_a_page_of_its_calls_not_a_timeline(
    client: TestClient, store: Store
) -> None:
    answer = store(LYON, "answer")
    response = client.get(f"/s/{answer}")
    assert response.status_code == 200 and response.template.name == "answer.html"
    assert "A non-stream answer, not a stream." in response.text
    assert "&#34;city&#34;: &#34;Lyon&#34;" in response.text
    assert f"/diff?a={answer}" in response.text  # compare it with a stream
    assert client.get(f"/s/{store(STREAM, 'stream')}").template.name == "stream.html"


def test_an_answer_whose_calls_cannot_be_read_says_why_on_its_page(
    client: TestClient, store: Store
) -> None:
    answer = store(json.dumps({"object": "chat.completion", "choices": []}), "no choices")
    response = client.get(f"/s/{answer}")
    assert response.status_code == 200
    assert "Its calls cannot be read:</b> the chat.completion answer on line 1 has no choices" in (
        response.text
    )


def test_an_answer_has_no_steps_to_compare_grade_report_or_export(
    client: TestClient, store: Store
) -> None:
    """Its sub-pages would judge an empty stream ("keeps the contract", "no tool call"): each
    sends to its page, which lists its calls."""
    answer = store(LYON, "answer")
    for tail in ("/compare", "/clients", "/report.md", "/export.html"):
        response = client.get(f"/s/{answer}{tail}", follow_redirects=False)
        assert response.status_code == 303, tail
        assert response.headers["location"].split("?")[0] == f"/s/{answer}"
    stream = store(STREAM, "stream")
    assert client.get(f"/s/{stream}/report.md").status_code == 200
