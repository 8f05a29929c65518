"""`serve --upstream ... --twin`: each captured stream's request sent once more with
`"stream": false` after the stream ended, the answer kept beside it, and the stream's page and
`GET /api/streams/ID` saying whether it holds the same calls (issue 35, the non-stream twin).

A real openai-python client streams through a real streamviz to a loopback fake provider that
answers both ways (`twinfake.TwinFake`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai

from tests.capture.conftest import KEY, Rig
from tests.capture.fake import Fake, corpus_pieces, serving
from tests.capture.test_proxy import MESSAGES, TOOLS, ended, wait_for
from tests.capture.twinfake import TwinFake
from tests.streamanswer import answer_text

PARIS = answer_text(("call_twin", "get_weather", '{"city": "Paris"}')).encode()
LYON = answer_text(("call_twin", "get_weather", '{"city": "Lyon"}')).encode()


def _rig(make_rig: Callable[..., Rig], answer: bytes, **settings: Any) -> tuple[Rig, TwinFake]:
    fake = Fake(script=corpus_pieces("clean-single-call.sse"))
    both = TwinFake(fake, answer)
    rig = make_rig(both, **{"twin": True, **settings})  # type: ignore[arg-type]
    return rig, both


def _stream(rig: Rig) -> str:
    """Stream one request with openai-python (as an application does); the capture's id."""
    client = openai.OpenAI(base_url=rig.proxy, api_key=KEY, max_retries=0)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, stream=True,  # type: ignore[arg-type]
        stream_options={"include_usage": True},
    )  # fmt: skip
    calls = [
        piece.function.arguments
        for chunk in response.parse()
        for choice in chunk.choices
        for piece in choice.delta.tool_calls or ()
        if piece.function is not None and piece.function.arguments
    ]
    assert "".join(calls) == '{"city":"Paris"}'
    stream_id = response.headers["streamviz-stream-id"]
    ended(rig, stream_id)
    return stream_id


def _twin(rig: Rig, stream_id: str) -> dict[str, Any]:
    """`GET /api/streams/ID`'s `twin`, once there is one."""

    def found() -> Any:
        return httpx.get(f"{rig.base}/api/streams/{stream_id}").json()["twin"]

    wait_for(found, "the twin to be recorded")
    twin: dict[str, Any] = found()
    return twin


def test_the_twin_of_a_stream_with_the_same_calls(make_rig: Callable[..., Rig]) -> None:
    rig, both = _rig(make_rig, PARIS)
    stream_id = _stream(rig)
    twin = _twin(rig, stream_id)
    assert twin["same"] is True and twin["status"] == 200 and twin["error"] is None
    assert len(both.answered) == 1
    sent, original = both.answered[0], both.stream.seen[0]
    body = json.loads(sent.body)
    assert body["stream"] is False and "stream_options" not in body
    assert body["messages"] == MESSAGES and body["tools"] == TOOLS
    assert sent.path == original.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"  # the same headers, same host
    page = httpx.get(f"{rig.base}/s/{stream_id}")
    assert "The non-stream twin:" in page.text and "same calls" in page.text
    assert f"/diff?a={stream_id}&amp;b={twin['id']}" in page.text
    diff = httpx.get(f"{rig.base}/api/diff", params={"a": stream_id, "b": twin["id"]}).json()
    assert diff["same"] is True and diff["twin"]["answer"] == "b"
    captured = httpx.get(f"{rig.base}/api/streams/{twin['id']}/timing").json()["capture"]
    assert captured["twin_of"] == stream_id and captured["stream"] is False
    # the twin is this server's own request, not a gateway's hop of the stream (nor it of the twin)
    assert httpx.get(f"{rig.base}/api/streams/{stream_id}").json()["hops"] == {
        "inner": [],
        "outer": [],
    }
    assert "Gateway hops" not in page.text
    own = httpx.get(f"{rig.base}/s/{twin['id']}").text  # the twin's page: no step to follow
    assert "A non-stream answer, not a stream." in own and "get_weather" in own
    assert f"/diff?a={stream_id}&amp;b={twin['id']}" in own


def test_a_twin_with_other_arguments_differs(make_rig: Callable[..., Rig]) -> None:
    rig, _ = _rig(make_rig, LYON)
    stream_id = _stream(rig)
    twin = _twin(rig, stream_id)
    assert twin["same"] is False and twin["where"] == "call 1, `arguments.city`"
    page = httpx.get(f"{rig.base}/s/{stream_id}").text
    assert "differs at call 1, <code>arguments.city</code>" in page
    diff = httpx.get(f"{rig.base}/api/diff", params={"a": stream_id, "b": twin["id"]}).json()
    assert diff["twin"]["reading"]["words"] == (
        "differs from the stream's intended reading at call 1, `arguments.city`"
    )


def test_a_twin_that_fails_is_shown_with_its_status_never_retried(
    make_rig: Callable[..., Rig],
) -> None:
    error = {"error": {"message": "The server is overloaded", "type": "server_error"}}
    rig, both = _rig(make_rig, json.dumps(error).encode())
    both.status = 503
    stream_id = _stream(rig)
    twin = _twin(rig, stream_id)
    assert twin["same"] is None and twin["status"] == 503
    assert twin["error"] == "status 503: The server is overloaded"
    page = httpx.get(f"{rig.base}/s/{stream_id}").text
    assert "<b>The non-stream twin failed:</b> status 503: The server is overloaded" in page
    assert len(both.answered) == 1


def test_the_twin_waits_for_no_one(make_rig: Callable[..., Rig]) -> None:
    """The client's stream ends, and its capture with it, while the twin is still unanswered."""
    rig, both = _rig(make_rig, PARIS)
    both.hold = threading.Event()
    try:
        stream_id = _stream(rig)  # returns: the client was not kept waiting
        wait_for(lambda: both.answered, "the twin to be sent")
        assert httpx.get(f"{rig.base}/api/streams/{stream_id}").json()["twin"] is None
    finally:
        both.hold.set()
    assert _twin(rig, stream_id)["same"] is True


def test_without_twin_nothing_is_sent_again(make_rig: Callable[..., Rig]) -> None:
    rig, both = _rig(make_rig, PARIS, twin=False)
    stream_id = _stream(rig)
    assert httpx.get(f"{rig.base}/api/streams/{stream_id}").json()["twin"] is None
    assert both.answered == [] and len(both.stream.seen) == 1


def test_a_twin_that_is_no_answer_is_said_so_never_a_500(make_rig: Callable[..., Rig]) -> None:
    rig, _ = _rig(make_rig, b"<html><body>Bad gateway</body></html>")
    stream_id = _stream(rig)
    twin = _twin(rig, stream_id)
    assert twin["same"] is None and twin["status"] == 200
    assert "not a stream streamviz can read" in twin["error"] or "HTML page" in twin["error"]
    assert httpx.get(f"{rig.base}/s/{stream_id}").status_code == 200


def test_openai_python_through_the_serve_command_with_twin(tmp_path: Path) -> None:
    """The real command, `streamviz serve --upstream URL --twin`, as a process: a client's
    stream, then its twin, and neither the key nor the prompt in its log."""
    from tests.capture.test_processes import running

    both = TwinFake(Fake(script=corpus_pieces("clean-single-call.sse")), LYON)
    with serving(both) as upstream:
        db = str(tmp_path / "t.sqlite3")
        args = ("serve", "--db", db, "--upstream", f"default={upstream}", "--twin")
        with running(*args) as (base, stderr):
            rig = Rig(both.stream, upstream, base, tmp_path)
            stream_id = _stream(rig)
            twin = _twin(rig, stream_id)
            assert twin["same"] is False and twin["where"] == "call 1, `arguments.city`"
            assert len(both.answered) == 1
    assert KEY not in "".join(stderr)
