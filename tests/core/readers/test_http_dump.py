"""HTTP response dumps: `curl -i`, `curl -v 2>&1`; the head is skipped, line numbers kept."""

from __future__ import annotations

import pytest

from webapp.core.readers import read
from webapp.core.records import ReaderError

CHUNK = '{"choices":[{"index":0,"delta":{"content":"hi"}}]}'

CURL_I = (
    "HTTP/1.1 200 OK\r\n"
    "Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
    "Content-Type: text/event-stream; charset=utf-8\r\n"
    "Transfer-Encoding: chunked\r\n"
    "\r\n"
    f"data: {CHUNK}\n"
    "\n"
    "data: [DONE]\n"
    "\n"
)

CURL_V = f"""Note: Unnecessary use of -X or --request, POST is already inferred.
  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current
                                 Dload  Upload   Total   Spent    Left  Speed
\r  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0*   Trying ::1
* Connected to localhost (127.0.0.1) port 8080
> POST /v1/chat/completions HTTP/1.1
> Host: localhost:8080
> User-Agent: curl/8.5.0
> Accept: */*
> Authorization: Bearer sk-test-not-real
> Content-Type: application/json
> Content-Length: 71
>
}} [71 bytes data]
< HTTP/1.1 200 OK
< content-type: text/event-stream
< transfer-encoding: chunked
<
{{ [57 bytes data]
data: {CHUNK}

{{ [14 bytes data]
data: [DONE]

100   142    0    71  100    71   1000   1000 --:--:-- --:--:-- --:--:--  2000
* Connection #0 to host localhost left intact
"""


def test_curl_i_skips_status_and_headers_and_keeps_line_numbers() -> None:
    result = read(CURL_I)
    assert result.format == "sse"
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 6), ("done", 8)]
    assert result.meta["status"] == 200
    assert result.meta["status_line"] == "HTTP/1.1 200 OK"
    assert result.meta["content_type"] == "text/event-stream; charset=utf-8"
    assert any("skipped 5 lines" in note and "HTTP/1.1 200 OK" in note for note in result.notes)


def test_curl_i_with_an_explicit_format_still_skips_the_head() -> None:
    assert [(r.kind, r.line) for r in read(CURL_I, "sse").records] == [("chunk", 6), ("done", 8)]


def test_curl_v_mixed_with_stderr_is_read() -> None:
    result = read(CURL_V)
    assert [(r.kind, r.line) for r in result.records] == [("chunk", 21), ("done", 24)]
    assert result.meta["status"] == 200
    assert not any("not an SSE field" in note for note in result.notes)
    assert any("curl's own output" in note for note in result.notes)


def test_curl_v_line_numbers_count_lone_cr_lines() -> None:
    lines = CURL_V.replace("\r", "\n").split("\n")
    assert lines[20] == f"data: {CHUNK}"
    assert read(CURL_V).records[0].line == 21


def test_http2_status_line_and_a_json_body() -> None:
    text = f"HTTP/2 200 \ncontent-type: application/x-ndjson\n\n{CHUNK}\n{CHUNK}\n"
    result = read(text)
    assert result.format == "jsonl"
    assert [r.line for r in result.records] == [4, 5]
    assert result.meta["status"] == 200


def test_continue_then_ok_keeps_the_last_status() -> None:
    text = (
        "HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
        f"data: {CHUNK}\n\n"
    )
    result = read(text)
    assert result.meta["status"] == 200
    assert result.records[0].line == 6
    assert not any("not a success" in note for note in result.notes)


def test_error_status_is_noted_and_its_json_body_read() -> None:
    text = (
        "HTTP/1.1 429 Too Many Requests\nContent-Type: application/json\n\n"
        '{"error": {"message": "slow down"}}\n'
    )
    result = read(text)
    assert result.meta["status"] == 429
    assert result.records[0].value == {"error": {"message": "slow down"}}
    assert result.records[0].line == 4
    assert any("429" in note and "not a success" in note for note in result.notes)


def test_a_pasted_curl_command_before_the_dump_is_skipped() -> None:
    text = (
        "$ curl -i https://api.example.com/v1/chat/completions \\\n"
        "    -H 'Content-Type: application/json' \\\n"
        '    -d \'{"model": "m",\n'
        '         "stream": true}\'\n'
        f"HTTP/1.1 200 OK\n\ndata: {CHUNK}\n\n"
    )
    result = read(text)
    assert [r.line for r in result.records] == [7]


def test_response_without_body_is_an_error() -> None:
    with pytest.raises(ReaderError, match=r"HTTP/1.1 401 Unauthorized.*has no body"):
        read("HTTP/1.1 401 Unauthorized\nContent-Length: 0\n\n")


def test_body_that_is_neither_sse_nor_json_is_an_error() -> None:
    with pytest.raises(ReaderError, match="neither SSE nor JSON"):
        read("HTTP/1.1 502 Bad Gateway\n\n<html>bad gateway</html>\n")


def test_text_with_a_data_line_but_no_status_is_plain_sse() -> None:
    result = read(f"> quoted\ndata: {CHUNK}\n\n")
    assert "status" not in result.meta
