"""Inputs that hold no chat-completions stream are refused, saying what was expected and what
was seen; every shape of a real stream, however thin, is still read (other APIs' streams are
read in their own terms: test_native_streams)."""

# ruff: noqa: E501  (the streams are pasted as they come off the wire, one event per line)

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.readers.not_streams import JS_STACK, LOG_LINE, NGINX_502, TRACEBACK
from webapp.core.readers import read, read_plain
from webapp.core.readers.refusal import EXPECTED
from webapp.core.records import ReaderError

NODE_INSPECTED = """{
  id: 'chatcmpl-AB1',
  object: 'chat.completion.chunk',
  created: 1733300000,
  model: 'gpt-4o-2024-08-06',
  choices: [ { index: 0, delta: [Object], logprobs: null, finish_reason: null } ]
}
"""
"""What `for await (const chunk of stream) console.log(chunk)` prints with openai-node: keys
unquoted, and the delta (three levels down) cut to [Object]."""

REFUSED = [
    pytest.param(
        TRACEBACK,
        [
            "no chat-completions chunk in the input",
            'this is a Python traceback (ending "openai.InternalServerError: Error code: 502',
        ],
        id="python-traceback",
    ),
    pytest.param(
        LOG_LINE,
        ['this is a log line ("2024-05-01 12:00:01,123 ERROR stream failed'],
        id="a-log-line",
    ),
    pytest.param(
        'INFO:     127.0.0.1:52344 - "POST /v1/chat/completions HTTP/1.1" 502 Bad Gateway\n',
        ['this is a log line ("INFO:'],
        id="a-uvicorn-access-line",
    ),
    pytest.param(NGINX_502, ["this is an HTML page (nginx 502 Bad Gateway)"], id="nginx-502"),
    pytest.param(
        "HTTP/1.1 502 Bad Gateway\r\nServer: nginx\r\nContent-Type: text/html\r\n\r\n" + NGINX_502,
        [
            "in the HTTP response body (HTTP/1.1 502 Bad Gateway), which is neither SSE nor JSON",
            "this is an HTML page (nginx 502 Bad Gateway)",
        ],
        id="nginx-502-with-its-status-line",
    ),
    pytest.param(
        TRACEBACK + LOG_LINE + NGINX_502,
        [
            "this holds a Python traceback (ending",
            'a log line ("2024-05-01 12:00:01,123 ERROR',
            "line 8)",
            "and an HTML page (nginx 502 Bad Gateway, line 9)",
        ],
        id="all-three-pasted-together",
    ),
    pytest.param(JS_STACK, ["this is a JavaScript stack trace (line 2)"], id="js-stack-trace"),
    pytest.param(
        "42\n",
        ['it reads as 1 record, none a JSON object: the first value, on line 1, is "42"'],
        id="a-number",
    ),
    pytest.param(
        '{"detail": "Not Found"}',
        ['none an object shaped like a chunk: the first object, on line 1, has the keys "detail"'],
        id="another-apis-json-error",
    ),
    pytest.param(
        "data: hello\n\ndata: world\n\n",
        ['it reads as 2 records, none of which parses: line 1 is "hello"'],
        id="sse-of-plain-words",
    ),
    pytest.param(
        'data: {"status": "queued"}\n\n',
        ['the first object, on line 1, has the keys "status"'],
        id="sse-of-other-objects",
    ),
    pytest.param(
        '[{"id": 1}, {"id": 2}]',
        ["it reads as 2 records, none an object shaped like a chunk"],
        id="a-json-array-of-other-objects",
    ),
    pytest.param(
        NODE_INSPECTED,
        [
            "this is Node's console.log of chunk objects (JavaScript, not JSON; what is nested "
            "deeper, the deltas and their calls, is cut to [Object]): log JSON.stringify(chunk)"
        ],
        id="node-console-log-of-chunks",
    ),
    pytest.param(
        NODE_INSPECTED.replace("[Object]", "{ tool_calls: [ { index: 0 } ] }"),
        ["this is Node's console.log of chunk objects (JavaScript, not JSON): log JSON"],
        id="node-console-dir-deep",
    ),
]


@pytest.mark.parametrize(("text", "needles"), REFUSED)
def test_an_input_without_a_chunk_is_refused_with_what_was_seen(
    text: str, needles: list[str]
) -> None:
    with pytest.raises(ReaderError) as caught:
        read(text)
    message = str(caught.value)
    assert message.startswith("no chat-completions chunk in ")
    for needle in needles:
        assert needle in message, message
    assert EXPECTED in message and "Paste the stream itself" in message
    assert "invalid-chunk" not in message and "no-finish" not in message


def test_a_plain_streams_bytes_are_refused_as_its_text() -> None:
    data = b"data: hello\n\ndata: world\n\n"
    with pytest.raises(ReaderError) as from_bytes:
        read_plain(data)
    with pytest.raises(ReaderError) as from_text:
        read(data.decode())
    assert str(from_bytes.value) == str(from_text.value)


CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
}
KEPT = [
    pytest.param("data: [DONE]\n\n", "sse", [("done", 1)], id="an-empty-stream"),
    pytest.param(
        'event: error\ndata: {"error":{"message":"Internal server error","type":"internal_server_error"}}\n\n',
        "sse",
        [("chunk", 1)],
        id="only-a-provider-error-groq",
    ),
    pytest.param(
        "event: error\ndata: upstream timed out\n\n",
        "sse",
        [("invalid", 1)],
        id="an-error-event-in-words",
    ),
    pytest.param(
        'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\ndata: [DONE]\n\n',
        "sse",
        [("chunk", 1), ("done", 3)],
        id="a-usage-only-final-chunk",
    ),
    pytest.param(
        '{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}',
        "json",
        [("chunk", 1)],
        id="a-non-streamed-chat-completion",
    ),
    pytest.param(
        f"data: {json.dumps(CHUNK)}\n\ndata: <html>\n\n2024-01-01 00:00 oops\ndata: 42\n\ndata: [DONE]\n\n",
        "sse",
        [("chunk", 1), ("invalid", 3), ("chunk", 5), ("done", 8)],
        id="real-chunks-and-broken-lines",
    ),
    pytest.param(
        'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"ci',
        "sse",
        [("invalid", 1)],
        id="one-chunk-cut-short",
    ),
    pytest.param(
        'data: {"choices":[{"delta":{"content":"a"}}]}\ndata: [DONE]\n',
        "sse",
        [("invalid", 1)],
        id="a-chunk-and-done-with-no-blank-line",
    ),
    pytest.param('{"content": "hi"}', "json", [("chunk", 1)], id="a-bare-delta"),
]


@pytest.mark.parametrize(("text", "fmt", "records"), KEPT)
def test_a_thin_or_broken_stream_is_still_read(
    text: str, fmt: str, records: list[tuple[str, int]]
) -> None:
    result = read(text)
    assert result.format == fmt
    assert [(r.kind, r.line) for r in result.records] == records


# Pieces of what people paste that is no stream: none is a chunk, [DONE] or an error event,
# however they are joined.
_PIECES = [
    TRACEBACK, LOG_LINE, NGINX_502, JS_STACK, "\n", "\n\n", "42", "-1", "true", "null", '"x"',
    '{"detail": "Not Found"}', '{"status": 502, "message": "Bad gateway"}', "[1, 2]", "{", "}",
    "[", "]", ",", "data: ", "data: hello", 'data: {"id": 7}', ": keep-alive", "event: ping",
    '{"model": "m", "created": 1}', "ChatCompletion", "HTTP/1.1 502 Bad Gateway\n",
]  # fmt: skip
NOT_A_STREAM = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(NOT_A_STREAM)
def test_no_text_without_a_chunk_is_given_a_provider_quirk(text: str) -> None:
    """Nothing is read of such a text, so no trace and no contract (and no quirk) is made of
    it: it is refused, by the reader of the format it looks like or for holding no chunk."""
    with pytest.raises(ReaderError):
        read(text)
